"""A scripted GitHub server for the real `gh`, over HTTPS on a loopback address.

gh reaches it as a GitHub Enterprise host: `GH_HOST` is the address, `GH_ENTERPRISE_TOKEN` any
token, `SSL_CERT_FILE` the self-signed certificate made here with the `openssl` CLI, and
`GH_CONFIG_DIR` a folder of the test's (`GitHubServer.environment`). gh drops the port from a
pull request's URL, so the server listens on port 443 of an address of 127.0.0.0/8 that no other
run holds (as root, as the suite runs).

What it answers is what gh 2.102 asks for `pr create`, `pr view`, `pr edit`, `pr ready`,
`pr checks`, `pr comment`, `run view --log-failed` and `api` (the REST calls and the GraphQL
operations by name, `github_pulls.Forge`); any other call is answered 501 and recorded in
`unknown`, so a test shows it. Pushes go to a real bare repository: the checks of a pull request
are the script's verdict on the head that repository holds now.
"""

from __future__ import annotations

import contextlib
import errno
import json
import random
import re
import shutil
import ssl
import subprocess
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from types import TracebackType
from typing import Any

from tests.support.servers.github_pulls import Forge

OPERATION = re.compile(r"\b(query|mutation)\s+(\w+)")


def certificate(folder: Path, address: str) -> tuple[Path, Path]:
    """A self-signed certificate for `address` (and localhost), with its key."""
    folder.mkdir(parents=True, exist_ok=True)
    cert, key = folder / "cert.pem", folder / "key.pem"
    openssl = shutil.which("openssl")
    if openssl is None:
        raise RuntimeError("the scripted GitHub server needs the openssl CLI to make its certificate")
    subprocess.run(
        [openssl, "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", str(key), "-out", str(cert),
         "-days", "2", "-subj", f"/CN={address}", "-addext", f"subjectAltName=IP:{address},DNS:localhost"],
        check=True, capture_output=True, timeout=60,
    )  # fmt: skip
    return cert, key


class _Quiet(ThreadingHTTPServer):
    daemon_threads = True

    def handle_error(self, request: Any, client_address: Any) -> None:
        pass  # a client that hung up mid-answer is not the test's business


def bind_loopback() -> tuple[_Quiet, str]:
    """A server on port 443 of a free address of 127.0.0.0/8 (never the one another run holds)."""
    addresses = [f"127.{random.randint(1, 254)}.{random.randint(0, 255)}.{random.randint(2, 254)}"]
    addresses += [f"127.0.{random.randint(0, 255)}.{n}" for n in random.sample(range(2, 255), 40)]
    for address in addresses:
        try:
            return _Quiet((address, 443), BaseHTTPRequestHandler, bind_and_activate=True), address
        except OSError as exc:
            if exc.errno not in (errno.EADDRINUSE, errno.EADDRNOTAVAIL):
                raise
    raise RuntimeError("no free loopback address with port 443 for the scripted GitHub server")


class GitHubServer:
    """`with GitHubServer(forge, folder) as hub:` serves `forge` until the block ends."""

    def __init__(self, forge: Forge, folder: Path) -> None:
        self.forge = forge
        self.folder = folder
        self.server, self.address = bind_loopback()
        forge.host = self.address
        cert, key = certificate(folder / "tls", self.address)
        self.cert = cert
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        context.load_cert_chain(str(cert), str(key))
        self.server.socket = context.wrap_socket(self.server.socket, server_side=True)
        self.server.RequestHandlerClass = _handler(self)
        self.unknown: list[str] = []
        self._thread = threading.Thread(target=self.server.serve_forever, name="github", daemon=True)

    def environment(self) -> dict[str, str]:
        """What gh needs to take this server for a GitHub Enterprise host."""
        (self.folder / "gh-config").mkdir(parents=True, exist_ok=True)
        return {
            "GH_HOST": self.address,
            "GH_REPO": f"{self.address}/{self.forge.owner}/{self.forge.name}",
            "GH_ENTERPRISE_TOKEN": "ghe-scripted-token-0123456789",
            "SSL_CERT_FILE": str(self.cert),
            "GH_CONFIG_DIR": str(self.folder / "gh-config"),
            # gh keeps a run's logs in its cache by run id and start time: a run id an earlier
            # test's server gave out would answer with that test's log
            "XDG_CACHE_HOME": str(self.folder / "gh-cache"),
            "GH_NO_UPDATE_NOTIFIER": "1",
            "GH_PROMPT_DISABLED": "1",
        }

    def __enter__(self) -> GitHubServer:
        self._thread.start()
        return self

    def __exit__(
        self, kind: type[BaseException] | None, value: BaseException | None, trace: TracebackType | None
    ) -> None:
        self.server.shutdown()
        self.server.server_close()

    def answer(self, method: str, path: str, body: bytes) -> tuple[int, bytes, str]:
        """Status, body and content type for one request; an unknown call is 501, recorded."""
        route = path.split("?", 1)[0]
        if route == "/api/graphql" and method == "POST":
            request = json.loads(body or b"{}")
            found = OPERATION.search(request.get("query", ""))
            name = found.group(2) if found else request.get("query", "")[:60]
            answer = self.forge.graphql(name, request.get("query", ""), request.get("variables") or {})
            if answer is None:
                return self.refuse(f"graphql {name}")
            return 200, json.dumps({"data": answer}).encode(), "application/json"
        if route.startswith("/api/v3/"):
            found_rest = self.forge.rest(method, route.removeprefix("/api/v3"), body)
            if found_rest is None:
                return self.refuse(f"{method} {route}")
            status, payload, kind = found_rest
            data = payload if isinstance(payload, bytes) else json.dumps(payload).encode()
            return status, data, kind
        return self.refuse(f"{method} {route}")

    def refuse(self, call: str) -> tuple[int, bytes, str]:
        self.unknown.append(call)
        message = {"message": f"the scripted GitHub server does not know {call}"}
        return 501, json.dumps(message).encode(), "application/json"


def _handler(hub: GitHubServer) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, format: str, *args: Any) -> None:
            pass

        def serve(self) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            body = self.rfile.read(length) if length else b""
            try:
                status, data, kind = hub.answer(self.command, self.path, body)
            except Exception as exc:  # a bug of the script: the test reads it as an unknown call
                status, data, kind = hub.refuse(f"{self.command} {self.path}: {exc!r}")
            self.send_response(status)
            self.send_header("Content-Type", kind)
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            with contextlib.suppress(TimeoutError, BrokenPipeError, ConnectionResetError):
                self.wfile.write(data)

        do_GET = do_POST = do_PATCH = do_PUT = do_DELETE = serve

    return Handler
