"""Runs inside the sandbox, before the step's command (`python -I -S forward.py SOCKET PORT --
COMMAND...`): listens on the sandbox's own 127.0.0.1:PORT and hands each connection to akira's
proxy through SOCKET, then becomes COMMAND. Standard library only; nothing of akira is imported."""

import contextlib
import os
import socket
import sys
import threading


def pump(source: socket.socket, sink: socket.socket) -> None:
    try:
        while data := source.recv(65536):
            sink.sendall(data)
    except OSError:
        pass
    finally:
        for end, how in ((sink, socket.SHUT_WR), (source, socket.SHUT_RD)):
            with contextlib.suppress(OSError):
                end.shutdown(how)


def serve(server: socket.socket, path: str) -> None:
    while True:
        client, _ = server.accept()
        upstream = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            upstream.connect(path)
        except OSError:
            client.close()
            upstream.close()
            continue
        threading.Thread(target=pump, args=(client, upstream), daemon=True).start()
        threading.Thread(target=pump, args=(upstream, client), daemon=True).start()


def main() -> None:
    path, port, command = sys.argv[1], int(sys.argv[2]), sys.argv[4:]
    server = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    server.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
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
