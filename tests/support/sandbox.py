"""What the sandbox's attacks are made of: the secrets planted in a home of the test's own, and
the HTTP server that counts the requests it gets (the allowed one and the forbidden one)."""

from __future__ import annotations

from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

SSH_KEY = "SSH-PRIVATE-KEY-5d1c0a9e7b3f"
AWS_KEY = "AWS-SECRET-8c2e4f6a1b9d"
NETRC = "NETRC-PASSWORD-3e7a9c1d5f2b"


class Counter(BaseHTTPRequestHandler):
    def do_GET(self) -> None:
        assert isinstance(self.server, Server)
        self.server.hits.append(self.path)
        body = b"reached"
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: object) -> None:
        pass


class Server(ThreadingHTTPServer):
    hits: list[str]
    """The paths requested, in order."""


def plant(tmp_path: Path) -> Path:
    home = tmp_path / "home"
    for path, text in (
        (".ssh/id_rsa", SSH_KEY),
        (".aws/credentials", AWS_KEY),
        (".netrc", NETRC),
        (".bashrc", "# the person's bashrc\n"),
        (".claude/keep.txt", "claude-state-readable"),
    ):
        (home / path).parent.mkdir(parents=True, exist_ok=True)
        (home / path).write_text(text)
    (tmp_path / "sibling").mkdir()
    return home
