"""The running command's output as it comes, for a page that watches the run (`akira web`):
`.state/logs/<task_id>.live` holds the command line, then its output, masked of secrets line by
line before it is written (as everything akira writes), and once the command ended one last
line that says so. It holds one command at a time and stays bounded: past `LIMIT` bytes it is
cut back to its last lines. Nothing here is durable (no fsync): it is a view, not a record."""

from __future__ import annotations

import os
import selectors
import stat
import subprocess
import time
from collections.abc import Callable
from pathlib import Path

from akira_cli.nofollow import FILE_FLAGS
from akira_cli.redaction import redact_bytes

LIMIT = 256 * 1024
"""The file's bound; past it, it keeps its first line and its last `KEEP` bytes of lines."""
KEEP = 32 * 1024
PARTIAL = 8 * 1024
"""A line longer than this is written (masked) without waiting for its end."""
ENDED = "[akira] "
"""The start of the line written once the command ended."""
PIPE_BUF = 512


class LiveOutput:
    """Where one runner's commands' output goes while they run (`CommandRunner(live=...)`)."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._fd = -1
        self._heads: tuple[str, bytes] = ("", b"")
        """The last command and its masked line: a step's checks run the same commands again."""

    def slot(self, number: int) -> LiveOutput:
        """The output of a `[P]` wave step's commands, in worktree slot `number`: a file of its
        own beside this one (`<task_id>.slot<N>.live`), as the slot's commands run beside the others."""
        return LiveOutput(self.path.with_name(f"{self.path.stem}.slot{number}{self.path.suffix}"))

    def started(self, command: str) -> LiveWriter:
        """A new command: the file starts again with its command line. A view, never the run's
        failure: a full disk or a folder it cannot write leaves it out (the writer writes nothing)."""
        if self._heads[0] != command:
            self._heads = (command, redact_bytes(("$ " + " ".join(command.split())[:500] + "\n").encode()))
        head = self._heads[1]
        try:
            if self._fd < 0:
                self.path.parent.mkdir(parents=True, exist_ok=True)
                flags = os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC
                self._fd = os.open(self.path, flags, 0o600)
            os.ftruncate(self._fd, 0)
            os.pwrite(self._fd, head, 0)
        except OSError:
            return LiveWriter(-1, len(head), head)
        return LiveWriter(self._fd, len(head), head)

    def close(self) -> None:
        if self._fd >= 0:
            os.close(self._fd)
            self._fd = -1

    def __del__(self) -> None:
        self.close()


class LiveWriter:
    """One command's output into the file: whole lines masked, a partial one kept back."""

    def __init__(self, fd: int, size: int, head: bytes) -> None:
        self.fd, self.size, self.head = fd, size, head
        self.partial = b""
        self.started = time.monotonic()

    def write(self, data: bytes) -> None:
        data = self.partial + data
        cut = data.rfind(b"\n") + 1
        if not cut and len(data) > PARTIAL:
            cut = len(data)
        self.partial = data[cut:]
        if cut:
            self._append(redact_bytes(data[:cut]))

    def close(self, exit_code: int | None) -> None:
        tail = redact_bytes(self.partial) + b"\n" if self.partial else b""
        said = f"exited {exit_code}" if exit_code is not None else "ended"
        took = time.monotonic() - self.started
        self._append(tail + f"{ENDED}{said} after {took:.1f}s\n".encode())

    def _append(self, data: bytes) -> None:
        if self.fd < 0:
            return
        try:
            if self.size + len(data) > LIMIT:
                kept = os.pread(self.fd, KEEP, max(len(self.head), self.size - KEEP))
                kept = kept[kept.find(b"\n") + 1 :] + data
                if len(kept) > LIMIT // 2:
                    kept = kept[-LIMIT // 2 :]
                    kept = kept[kept.find(b"\n") + 1 :]
                os.ftruncate(self.fd, 0)
                os.pwrite(self.fd, self.head + kept, 0)
                self.size = len(self.head) + len(kept)
                return
            os.pwrite(self.fd, data, self.size)
            self.size += len(data)
        except OSError:
            pass  # a full disk: the view stops; the run itself says so where it matters


def tail_lines(path: Path, count: int) -> tuple[str, list[str], bool] | None:
    """The file's command line, its last `count` output lines and whether the command ended;
    None when there is none (no command ran yet). Reads at most `KEEP` bytes and its head."""
    try:
        fd = os.open(path, FILE_FLAGS)  # a link or a FIFO planted in its place is never read
    except OSError:
        return None
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            os.close(fd)
            return None
        with os.fdopen(fd, "rb") as handle:
            head = handle.readline(1024)
            size = handle.seek(0, 2)
            start = max(len(head), size - KEEP)
            handle.seek(start)
            data = handle.read(KEEP)
    except OSError:
        return None
    lines = data.decode("utf-8", "replace").splitlines()
    if start > len(head) and lines:
        lines = lines[1:]  # the first may be cut
    ended = bool(lines) and lines[-1].startswith(ENDED)
    command = head.decode("utf-8", "replace").rstrip("\n").removeprefix("$ ")
    return command, lines[-count:], ended


def communicate(
    process: subprocess.Popen[bytes],
    data: bytes,
    timeout: float,
    live: LiveWriter | None,
    kill: Callable[[subprocess.Popen[bytes]], None],
) -> tuple[bytes, bytes, bool]:
    """A command with input to feed (an agent's prompt): the output, the stderr (when it is a
    pipe of its own) and whether it timed out (then its process group is killed with `kill` and
    the rest read). With `live`, each piece of output is handed to it as it comes."""
    if live is None:  # the standard library's way
        try:
            out, err = process.communicate(data, timeout)
            return out, err or b"", False
        except subprocess.TimeoutExpired:
            kill(process)
            out, err = process.communicate()
            return out, err or b"", True
    chunks: dict[int, list[bytes]] = {}
    deadline, timed_out, offset = time.monotonic() + timeout, False, 0
    with selectors.DefaultSelector() as selector:
        assert process.stdin is not None and process.stdout is not None
        if data:
            selector.register(process.stdin, selectors.EVENT_WRITE)
        else:
            process.stdin.close()
        for stream in (process.stdout, process.stderr):
            if stream is not None:
                selector.register(stream, selectors.EVENT_READ)
                chunks[stream.fileno()] = []
        while selector.get_map():
            remaining = deadline - time.monotonic()
            if remaining <= 0 and not timed_out:
                timed_out = True
                kill(process)
            for key, _ in selector.select(None if timed_out else remaining):
                if key.fileobj is process.stdin:
                    try:
                        offset += os.write(key.fd, data[offset : offset + PIPE_BUF])
                    except BrokenPipeError:
                        offset = len(data)
                    if offset >= len(data):
                        selector.unregister(key.fileobj)
                        process.stdin.close()
                elif piece := os.read(key.fd, 65536):
                    chunks[key.fd].append(piece)
                    live.write(piece)
                else:
                    selector.unregister(key.fileobj)
    out = b"".join(chunks[process.stdout.fileno()])
    err = b"".join(chunks[process.stderr.fileno()]) if process.stderr is not None else b""
    for stream in (process.stdout, process.stderr):
        if stream is not None:
            stream.close()
    process.wait()
    return out, err, timed_out
