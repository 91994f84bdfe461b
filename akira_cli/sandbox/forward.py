"""The fallback where a work tree's room cannot be made (`netns.py`: no `nsenter`, ...). Runs
inside the sandbox, before the step's command (`python -I -S forward.py SOCKET PORT --
COMMAND...`): listens on the sandbox's own 127.0.0.1:PORT, forks, and becomes COMMAND; the fork
hands each connection to akira's proxy through SOCKET. Only C modules are imported (`_socket`,
`select`, `os`): this start is on every sandboxed command's path, and `socket` or `threading`
would double it. Nothing of akira is imported."""

import _socket
import os
import select
import sys


def pump(one: _socket.socket, two: _socket.socket) -> None:
    """Both directions until both are closed."""
    other = {one.fileno(): (one, two), two.fileno(): (two, one)}
    live = set(other)
    while live:
        ready, _, _ = select.select(list(live), [], [])
        for fd in ready:
            source, sink = other[fd]
            try:
                data = source.recv(65536)
            except OSError:
                data = b""
            if data:
                try:
                    sink.sendall(data)
                except OSError:
                    return
                continue
            live.discard(fd)
            try:  # noqa: SIM105 (contextlib is a Python module: not on this path)
                sink.shutdown(_socket.SHUT_WR)
            except OSError:
                pass


def serve(server: _socket.socket, path: str) -> None:
    while True:
        fd, _ = server._accept()  # type: ignore[attr-defined]
        client = _socket.socket(fileno=fd)
        if os.fork() == 0:
            server.close()
            upstream = _socket.socket(_socket.AF_UNIX, _socket.SOCK_STREAM)
            try:
                upstream.connect(path)
                pump(client, upstream)
            except OSError:
                pass
            os._exit(0)
        client.close()
        try:
            while os.waitpid(-1, os.WNOHANG)[0] > 0:
                pass
        except ChildProcessError:
            pass


def main() -> None:
    path, port, command = sys.argv[1], int(sys.argv[2]), sys.argv[4:]
    server = _socket.socket(_socket.AF_INET, _socket.SOCK_STREAM)
    server.setsockopt(_socket.SOL_SOCKET, _socket.SO_REUSEADDR, 1)
    server.bind(("127.0.0.1", port))
    server.listen(128)
    if os.fork() == 0:  # the forwarder; it dies with the sandbox's PID namespace when COMMAND ends
        null = os.open(os.devnull, os.O_RDWR)
        for fd in (0, 1, 2):
            os.dup2(null, fd)
        serve(server, path)
        os._exit(0)
    server.close()
    os.execvp(command[0], command)


if __name__ == "__main__":
    main()
