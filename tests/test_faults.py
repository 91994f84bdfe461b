"""Faults of the machine and odd inputs: one line on stderr, exit 1, no traceback, and the state
left valid and resumable (docs/guarantees.md, faults). Real subprocesses on real (tmpfs) file systems."""

from __future__ import annotations

import contextlib
import http.server
import json
import os
import resource
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from akira_cli.cli import main
from akira_cli.state.models import LoopState
from tests.support.workspace import Akira, Result

pytestmark = pytest.mark.slow


def one_line(result: Result, *needles: str) -> None:
    """Exit 1 and one error line (a progress line such as 'started ...' may come before it)."""
    assert result.code == 1, (result.code, result.err)
    lines = [line for line in result.err.strip().splitlines() if not line.startswith("akira: started")]
    assert len(lines) == 1 and "Traceback" not in result.err, result.err
    for needle in needles:
        assert needle in lines[0], (needle, lines[0])


@contextlib.contextmanager
def small_disk(folder: Path, size: str = "400k") -> Iterator[bool]:
    """A tmpfs of `size` at `folder` when we may mount (root, as CI runs); else nothing, and the
    test limits the file size of its akira process instead (EFBIG, the same failed write)."""
    folder.mkdir(parents=True, exist_ok=True)
    mounted = (
        os.geteuid() == 0
        and subprocess.run(
            ["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(folder)], capture_output=True
        ).returncode
        == 0
    )
    try:
        yield mounted
    finally:
        if mounted:
            subprocess.run(["umount", "-l", str(folder)], check=False)


def limited(akira: Akira, mounted: bool, *args: str) -> Result:
    """Runs akira; without a small disk, with its file size limited to 200 kB."""

    def limit() -> None:
        if not mounted:
            resource.setrlimit(resource.RLIMIT_FSIZE, (200_000, 200_000))

    process = subprocess.Popen(
        [sys.executable, "-m", "akira_cli", *args, "--root", str(akira.root)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        preexec_fn=limit,
    )
    out, err = process.communicate(timeout=90)
    return Result(process.returncode, out, err)


@pytest.mark.timeout(120)
def test_a_full_disk_is_one_line_and_the_loop_resumes_after_space_is_freed(tmp_path: Path) -> None:
    root = tmp_path / "disk"
    with small_disk(root) as mounted:
        assert main(["init", str(root)]) == 0
        akira = Akira(root)
        akira.write_task(
            "fill",
            """
            - [ ] 1. Fill the disk
              - Run: `test -f filled || { touch filled; head -c 5000000 /dev/zero > big.bin; }; true`
            - [ ] 2. Finish
              - Run: `echo done > done.txt`
            """,
        )
        result = limited(akira, mounted, "loop", "start", "--task", "Specs/fill/tasks.md", "--no-wait")
        one_line(result, "free some disk space" if mounted else "size limit", "akira loop resume")
        state = akira.state()  # still valid JSON, and resumable
        assert state.status == "running"
        status = akira.cli("loop", "status", "--task-id", state.task_id, "--json")
        assert json.loads(status.out)["status"] == "interrupted"
        (root / "big.bin").unlink()
        resumed = akira.cli("loop", "resume", "--task-id", state.task_id, "--no-wait")
        assert resumed.code == 0, resumed.err
        assert (root / "done.txt").read_text() == "done\n"


PATHS_TASK = """
- [ ] 1. Write
  - Run: `echo one > one.txt`
- [ ] 2. Fail once
  - Run: `test -f two.txt || { touch two.txt; echo no >&2; exit 3; }`
  - Fallback: `echo ok > two.txt`
- [ ] 3. Write again
  - Run: `echo three > three.txt`
"""


@pytest.mark.timeout(240)
def test_every_fault_line_names_the_path_it_failed_on(tmp_path: Path) -> None:
    """A disk filled to a few pages short of full (or, where we may not mount, a file-size limit):
    the first write past it fails on a descriptor, which names no file, and each amount of room
    lands in another writer: the state file, the save log, the event log, the pgid sidecar, a
    reflection, a report. Every line names the path."""
    disk = tmp_path / "disk"
    where: dict[int, str] = {}
    with small_disk(disk, "4m") as mounted:
        for room in range(0, 64, 3) if mounted else (0, 3, 600, 4_096):
            root = disk / f"ws{room}"
            assert main(["init", str(root)]) == 0
            Akira(root).write_task("paths", PATHS_TASK)
            filler = disk / "filler"
            if mounted:
                subprocess.run(
                    ["dd", "if=/dev/zero", f"of={filler}", "bs=4k"], capture_output=True, check=False
                )
                with filler.open("r+b") as handle:
                    handle.truncate(max(0, filler.stat().st_size - room * 4096))

            def limit(room: int = room) -> None:
                if not mounted:
                    resource.setrlimit(resource.RLIMIT_FSIZE, (room, room))

            process = subprocess.run(
                [
                    sys.executable,
                    "-m",
                    "akira_cli",
                    "loop",
                    "start",
                    "--task",
                    "Specs/paths/tasks.md",
                    "--no-wait",
                ],
                capture_output=True,
                text=True,
                timeout=90,
                cwd=root,
                preexec_fn=limit,
            )
            filler.unlink(missing_ok=True)
            subprocess.run(["rm", "-rf", str(root)], check=True)
            if process.returncode == 0:
                continue
            errors = [line for line in process.stderr.splitlines() if line.startswith("akira: error: ")]
            assert process.returncode == 1 and len(errors) == 1, (room, process.stderr)
            assert "Traceback" not in process.stderr, process.stderr
            path = errors[0].removeprefix("akira: error: ").split(": ")[0]
            assert Path(path).is_absolute() and Path(path).is_relative_to(root), (room, errors[0])
            where[room] = str(Path(path).relative_to(root))
    assert len(set(where.values())) >= (3 if mounted else 1), where  # several writers were reached


@pytest.mark.skipif(os.geteuid() != 0, reason="needs to mount a read-only file system")
def test_a_read_only_workspace_is_one_line_and_nothing_changes(tmp_path: Path) -> None:
    root = tmp_path / "ro"
    with small_disk(root, "2m") as mounted:
        assert mounted
        assert main(["init", str(root)]) == 0
        akira = Akira(root)
        (root / ".hooks" / "stop_autonomous_loop.md").write_text("pause all\n")
        paused = akira.cli("loop", "start", "--task", "Specs/example/tasks.md", "--no-wait")
        assert paused.code == 3, paused.err
        before = akira.state_files()[0].read_bytes()
        subprocess.run(["mount", "-o", "remount,ro", str(root)], check=True)
        try:
            result = akira.cli("loop", "resume", "--task-id", akira.task_id(), "--no-wait")
            one_line(result, "read-only")
            assert akira.state_files()[0].read_bytes() == before
        finally:
            subprocess.run(["mount", "-o", "remount,rw", str(root)], check=True)
        assert LoopState.model_validate_json(before).status == "paused"


def test_state_folder_that_is_a_file(akira: Akira) -> None:
    (akira.root / ".state").rmdir()
    (akira.root / ".state").write_text("not a folder")
    one_line(akira.cli("loop", "start", "--task", "Specs/example/tasks.md"), ".state", "move that file away")
    assert (akira.root / ".state").read_text() == "not a folder"


@pytest.mark.parametrize(
    ("content", "needle"),
    [
        (bytes(range(256)) * 4, "autonomous_loop.yaml"),
        (b"a: " + b"[" * 500 + b"]" * 500, "nested deeper"),
        (
            b"a: &a [x,x,x,x,x,x,x,x]\nb: &b [*a,*a,*a,*a,*a,*a,*a,*a]\nc: [*b,*b,*b,*b,*b,*b,*b,*b]\n",
            "aliases",
        ),
        (b'agent:\n  workdir: "a\\0b"\n', "autonomous_loop.yaml"),
    ],
)
@pytest.mark.timeout(30)
def test_hostile_config_files(akira: Akira, content: bytes, needle: str) -> None:
    (akira.root / "config" / "autonomous_loop.yaml").write_bytes(content)
    one_line(akira.cli("loop", "start", "--task", "Specs/example/tasks.md"), needle)
    assert not akira.state_files()


@pytest.mark.timeout(30)
def test_an_alias_bomb_in_a_hook_does_not_hang_the_loop(akira: Akira) -> None:
    bomb = "---\n" + "".join(
        f"l{n}: &l{n} [{','.join([f'*l{n - 1}'] * 9 if n else ['x'] * 9)}]\n" for n in range(9)
    )
    (akira.root / ".hooks" / "stop_autonomous_loop.md").write_text(bomb + "task_id: *l8\n---\n")
    result = akira.cli("loop", "start", "--task", "Specs/example/tasks.md", "--no-wait", timeout=25)
    assert result.code == 3  # a hook whose front matter is refused pauses every loop, at once
    (akira.root / ".hooks" / "stop_autonomous_loop.md").unlink()
    os.mkfifo(akira.root / ".hooks" / "stop_autonomous_loop.md")  # a FIFO must not block a reader
    status = akira.cli("loop", "status", timeout=25)
    assert status.code == 0 and "Traceback" not in status.err
    resumed = akira.cli("loop", "resume", "--task-id", akira.task_id(), "--no-wait", timeout=25)
    assert resumed.code == 0, resumed.err


class HtmlHandler(http.server.BaseHTTPRequestHandler):
    def do_GET(self) -> None:
        self._html()

    def do_POST(self) -> None:
        self.rfile.read(int(self.headers.get("Content-Length") or 0))
        self._html()

    def _html(self) -> None:
        body = b"<html><body>It works!</body></html>"
        self.send_response(200)
        self.send_header("Content-Type", "text/html")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: object) -> None:
        pass


@pytest.mark.timeout(90)
def test_an_endpoint_that_answers_html(akira: Akira) -> None:
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), HtmlHandler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        base = f"http://127.0.0.1:{server.server_address[1]}/v1"
        akira.write_config(f"llm:\n  base_url: {base}\n  model: m\n  max_retries: 0\n")
        for args in (("reason", "plan a picnic", "--json"), ("reason", "plan a picnic")):
            result = akira.cli(*args, timeout=80)
            assert result.code == 1 and "Traceback" not in result.err, result.err
            assert len(result.err.strip().splitlines()) == 1 and base in result.err, result.err
    finally:
        server.shutdown()
