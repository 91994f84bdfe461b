"""A storm of idle connections against the sandbox's proxy (docs/sandbox.md): one sandboxed command opens
N connections to it (processes of 800 each) and holds them. The proxy takes a bounded number,
answers the rest 503, and akira stays under its open-file limit, prints no traceback, warns
once, and serves the next command's request as it did before the storm.

    .venv/bin/python benchmarks/proxy_storm.py [--connections 24000]

akira's side runs in-process (`open_sandbox`, as a run does); its open files are sampled while
the storm lasts. Printed: the connections the storm opened, akira's open files at the peak
against its limit, the warnings, the tracebacks written to stderr, and one request through the
proxy after the storm against one before it (ratio). The suite's short version is
`tests/test_sandbox_network.py` (3,200 connections).
"""

from __future__ import annotations

import argparse
import os
import resource
import sys
import tempfile
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from _common import temp_dir

STORM = r"""
import os, socket, sys, time
port, count = int(os.environ["HTTPS_PROXY"].rsplit(":", 1)[1]), int(sys.argv[1])
children = []
for start in range(0, count, 800):
    pid = os.fork()
    if pid == 0:
        held = []
        for _ in range(min(800, count - start)):
            try:
                held.append(socket.create_connection(("127.0.0.1", port), timeout=30))
            except OSError:
                pass
        print(len(held), flush=True)
        time.sleep(2)
        os._exit(0)
    children.append(pid)
for pid in children:
    os.waitpid(pid, 0)
"""


class Hello(BaseHTTPRequestHandler):
    def do_GET(self) -> None:
        self.send_response(200)
        self.send_header("Content-Length", "5")
        self.end_headers()
        self.wfile.write(b"hello")

    def log_message(self, *args: object) -> None:
        pass


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--connections", type=int, default=24_000)
    args = parser.parse_args()

    from akira_cli.config import Config
    from akira_cli.runner import CommandRunner
    from akira_cli.sandbox.session import open_sandbox

    server = ThreadingHTTPServer(("127.0.0.1", 0), Hello)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    port = server.server_address[1]
    config = Config()
    config.sandbox.mode, config.sandbox.allow_hosts = "on", [f"127.0.0.1:{port}"]
    request = f"{sys.executable} -c \"import urllib.request as u; u.urlopen('http://127.0.0.1:{port}/')\""
    warnings: list[str] = []
    peak, storming = [0], threading.Event()

    def sample() -> None:
        while storming.is_set():
            peak[0] = max(peak[0], len(os.listdir("/proc/self/fd")))

    with temp_dir("akira-bench-storm-") as tree, tempfile.TemporaryFile() as errors:
        (tree / "storm.py").write_text(STORM)
        saved = os.dup(2)
        os.dup2(errors.fileno(), 2)  # what akira would print, counted below
        try:
            with open_sandbox(config, tree, tree, lambda: None, lambda _: None, warn=warnings.append) as box:
                runner = CommandRunner(tree)
                runner.wrapper = box
                runner.run("true", 120)  # the run's first command makes its room
                before = runner.run(request, 120)
                storming.set()
                sampler = threading.Thread(target=sample)
                sampler.start()
                storm = runner.run(f"{sys.executable} storm.py {args.connections}", 600)
                storming.clear()
                sampler.join()
                after = runner.run(request, 120)
        finally:
            os.dup2(saved, 2)
            os.close(saved)
        errors.seek(0)
        said = errors.read().decode("utf-8", "replace")
    server.shutdown()
    held = sum(int(line) for line in storm.output.split() if line.isdigit())
    limit = resource.getrlimit(resource.RLIMIT_NOFILE)[0]
    print(f"proxy storm: {args.connections} idle connections from one sandboxed command")
    print(f"  connections the storm opened: {held} (the proxy serves a bounded number, answers the rest 503)")
    print(f"  akira's open files at the peak: {peak[0]} (its limit {limit})")
    print(f"  warnings: {len(warnings)}{': ' + warnings[0] if warnings else ''}")
    print(f"  tracebacks on stderr: {said.count('Traceback')}")
    print(f"  a request before the storm: {before.duration * 1000:.1f} ms, {'ok' if before.ok else 'FAILED'}")
    print(f"  a request after the storm: {after.duration * 1000:.1f} ms, {'ok' if after.ok else 'FAILED'}")
    print(f"  ratio after / before: {after.duration / before.duration:.2f}")
    ok = before.ok and after.ok and "Traceback" not in said and len(warnings) <= 2
    print(f"  verdict: {'PASS' if ok else 'FAIL'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
