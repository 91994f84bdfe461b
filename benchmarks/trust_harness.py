"""Crash-and-fault harness (docs/guarantees.md): hostile agents, kill -9 storms, racing starts, leaks.

Each scenario prints what it tried and its defect count; every defect count should be 0.

    .venv/bin/python benchmarks/trust_harness.py [--kills 40] [--races 20] [--swaps 5000]

It runs offline, in temp folders, in about two to four minutes on a 2-core machine.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path

from _common import akira_command, init_workspace, temp_dir

from akira_cli.agents.tools import Toolbox
from akira_cli.control_plane import ControlPlane
from akira_cli.events import EventBus
from akira_cli.runner import CommandRunner
from tests.support.servers.races import SWAPPER

SECRET = "sk-harness-0123456789abcdef"
OUTSIDE = "content of a file outside the workspace"


def akira(root: Path, *args: str, env: dict[str, str] | None = None, timeout: float = 120) -> tuple[int, str]:
    done = subprocess.run(
        [*akira_command(), *args, "--root", str(root)],
        capture_output=True,
        text=True,
        timeout=timeout,
        env={**os.environ, **(env or {})},
    )
    return done.returncode, done.stderr


def state_files(root: Path) -> list[Path]:
    return [*root.glob(".state/autonomous_loop_*.json"), *root.glob(".state/archive/autonomous_loop_*.json")]


def kill_storm(kills: int) -> dict[str, int]:
    """kill -9 at random moments, resume each time: corrupt state files, and completed steps
    run again (a run of a step that started after the state recorded it completed)."""
    corrupt = 0
    with temp_dir("akira-storm-") as root:
        init_workspace(root)
        steps = 12
        lines = []
        for n in range(1, steps + 1):
            pause = f"0.{random.randint(1, 4)}"
            lines += [
                f"- [ ] {n}. step {n}",
                f"  - Run: `echo $AKIRA_STEP_ID $(date +%s%N) >> ran.txt; sleep {pause}`",
            ]
        (root / "Specs" / "storm").mkdir(parents=True)
        (root / "Specs" / "storm" / "tasks.md").write_text("\n".join(lines) + "\n")
        command = [*akira_command(), "loop", "start", "--task", "Specs/storm/tasks.md", "--root", str(root)]
        process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        done_kills = 0
        for _ in range(kills):
            time.sleep(random.uniform(0.05, 0.6))
            if process.poll() is not None:
                break
            process.send_signal(signal.SIGKILL)
            process.wait()
            done_kills += 1
            for path in state_files(root):
                try:
                    json.loads(path.read_bytes())
                except ValueError:
                    corrupt += 1
            ids = sorted(p.stem.removeprefix("autonomous_loop_") for p in state_files(root))
            if ids:
                command = [*akira_command(), "loop", "resume", "--task-id", ids[-1], "--root", str(root)]
            process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        process.wait(timeout=300)
        runs = [line.split() for line in (root / "ran.txt").read_text().splitlines() if line.strip()]
        state = json.loads(state_files(root)[0].read_bytes())
        completed = {s["step_id"]: iso_ns(s["completed_at"]) for s in state["completed_steps"]}
        reruns = sum(1 for step, at in runs if step in completed and int(at) > completed[step])
        done = state["status"] == "completed" and len(completed) == steps
    print(
        f"kill -9 storm: {done_kills} kills at random moments; corrupt state files {corrupt}; "
        f"completed steps run again {reruns}; all {steps} steps done {done}"
    )
    return {"corrupt_state": corrupt, "reruns": reruns, "not_done": int(not done)}


def iso_ns(text: str) -> int:
    from datetime import datetime

    return int(datetime.fromisoformat(text.replace("Z", "+00:00")).timestamp() * 1e9)


def orphan_check(trials: int) -> dict[str, int]:
    """kill -9 during a long command, resume: the old command must be dead before the step
    runs again (two copies of one step never run at once)."""
    overlaps = 0
    with temp_dir("akira-orphans-") as root:
        init_workspace(root)
        for trial in range(trials):
            feature = f"o{trial}"
            (root / "Specs" / feature).mkdir(parents=True)
            marker = root / f"{feature}.pids"
            (root / "Specs" / feature / "tasks.md").write_text(
                f"- [ ] 1. long\n  - Run: `echo $$ >> {marker}; sleep 30`\n  - Timeout: 60\n"
            )
            first = subprocess.Popen(
                [
                    *akira_command(),
                    "loop",
                    "start",
                    "--task",
                    f"Specs/{feature}/tasks.md",
                    "--root",
                    str(root),
                ],
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
            )
            wait_for(lambda m=marker: m.exists() and m.read_text().strip() != "")  # type: ignore[misc]
            first.send_signal(signal.SIGKILL)
            first.wait()
            old = int(marker.read_text().split()[0])
            task_id = sorted(p.stem.removeprefix("autonomous_loop_") for p in state_files(root))[-1]
            second = subprocess.Popen(
                [*akira_command(), "loop", "resume", "--task-id", task_id, "--root", str(root)],
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
            )
            wait_for(lambda m=marker: len(m.read_text().split()) >= 2)  # type: ignore[misc]
            overlaps += alive(old)
            second.send_signal(signal.SIGTERM)
            second.wait(timeout=30)
            new = int(marker.read_text().split()[1])
            overlaps += alive(new)  # SIGTERM to akira kills its command's group too
    print(f"orphans: {trials} kill -9 + resume, then SIGTERM; commands left running {overlaps}")
    return {"orphans": overlaps}


def alive(pid: int) -> int:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return 0
    stat = Path(f"/proc/{pid}/stat")
    return int(not stat.exists() or stat.read_text().split(")")[-1].split()[0] != "Z")


def wait_for(predicate: object, timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            if predicate():  # type: ignore[operator]
                return
        except OSError:
            pass
        time.sleep(0.02)
    raise SystemExit("harness: timed out waiting for a condition")


def start_races(races: int) -> dict[str, int]:
    """Two `loop start` on the same file at the same moment: exactly one may run it."""
    doubles = 0
    with temp_dir("akira-race-") as root:
        init_workspace(root)
        for race in range(races):
            (root / "Specs" / f"r{race}").mkdir(parents=True)
            (root / "Specs" / f"r{race}" / "tasks.md").write_text(
                f"- [ ] 1. once\n  - Run: `echo x >> r{race}.runs; sleep 0.3`\n"
            )
            command = [
                *akira_command(),
                "loop",
                "start",
                "--task",
                f"Specs/r{race}/tasks.md",
                "--root",
                str(root),
            ]
            both = [
                subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE) for _ in range(2)
            ]
            codes = [p.wait(timeout=60) for p in both]
            runs = (root / f"r{race}.runs").read_text().count("x") if (root / f"r{race}.runs").exists() else 0
            doubles += int(runs != 1 or sorted(codes) != [0, 1])
        ids = [p.stem for p in state_files(root)]
    print(f"racing starts: {races} pairs; double runs or lost runs {doubles}; state files {len(ids)}")
    return {"double_runs": doubles, "duplicate_ids": len(ids) - len(set(ids))}


def hostile_tools(swaps: int) -> dict[str, int]:
    """A hostile tool-call script against the llm agent's tools, plus a racing symlink swap."""
    escapes = calls = 0
    with temp_dir("akira-hostile-") as base:
        root, outside = base / "ws", base / "outside"
        (root / "Specs" / "f").mkdir(parents=True)
        (root / ".git" / "hooks").mkdir(parents=True)
        outside.mkdir()
        (outside / "secret.txt").write_text(OUTSIDE)
        task = root / "Specs" / "f" / "tasks.md"
        task.write_text("- [ ] 1. step\n")
        os.link(outside / "secret.txt", root / "hard.txt")
        os.mkfifo(root / "fifo")
        (root / "up").symlink_to(outside)
        box = Toolbox(
            root,
            CommandRunner(root),
            allow_run_command=False,
            max_output_chars=4000,
            bus=EventBus(),
            step_id="1",
            control=ControlPlane(root, lambda: task),
        )
        hostile = [
            ("read_file", {"path": "../outside/secret.txt"}),
            ("read_file", {"path": "up/secret.txt"}),
            ("read_file", {"path": str(outside / "secret.txt")}),
            ("read_file", {"path": "hard.txt"}),
            ("read_file", {"path": "fifo"}),
            ("write_file", {"path": "fifo", "content": "x"}),
            ("write_file", {"path": "hard.txt", "content": "x"}),
            ("write_file", {"path": "up/new.txt", "content": "x"}),
            ("write_file", {"path": "Specs/f/tasks.md", "content": "- [x] 1. step\n"}),
            ("write_file", {"path": "config/autonomous_loop.yaml", "content": "checks: []"}),
            ("write_file", {"path": ".hooks/stop_autonomous_loop.md", "content": "x"}),
            ("write_file", {"path": ".git/hooks/pre-commit", "content": "x"}),
            ("write_file", {"path": ".state/x.json", "content": "{}"}),
            ("write_file", {"path": "a\x00b", "content": "x"}),
            ("write_file", {"path": "x" * 5000, "content": "x"}),
            ("run_command", {"command": "touch pwned"}),
            ("list_files", {"path": "up"}),
        ]
        for name, args in hostile:
            calls += 1
            result = box.call(name, json.dumps(args))
            escapes += int(not result.error)
        tampered = (outside / "secret.txt").read_text() != OUTSIDE or task.read_text() != "- [ ] 1. step\n"
        escapes += int(tampered or (root / "pwned").exists())
        swapper = subprocess.Popen(
            [
                sys.executable,
                "-c",
                SWAPPER,
                str(root / "d"),
                str(root / "parked"),
                str(outside),
                str(base / "stop"),
            ]
        )
        (root / "d").mkdir()
        for n in range(swaps):
            calls += 2
            box.call("write_file", json.dumps({"path": f"d/f{n}.txt", "content": "x"}))
            escapes += int(OUTSIDE in box.call("read_file", json.dumps({"path": "d/secret.txt"})).output)
        (base / "stop").touch()
        swapper.wait(timeout=30)
        escapes += len([p for p in outside.iterdir() if p.name != "secret.txt"])
    print(f"hostile tool calls: {calls} calls ({swaps} under a racing symlink swap); escapes {escapes}")
    return {"escapes": escapes}


def secrets_and_claims() -> dict[str, int]:
    """An agent that prints the key and ticks every box: leaks and unchecked ticks accepted."""
    with temp_dir("akira-leak-") as root:
        init_workspace(root)
        agent = root / "agent.sh"
        agent.write_text(
            f'echo "the key is $OPENAI_API_KEY"\necho "{SECRET}" >&2\n'
            "sed -i 's/- \\[ \\]/- [x]/' Specs/f/tasks.md\n"
            '[ "$AKIRA_STEP_ID" = 1 ] && touch one.txt\nexit 1\n'
        )
        (root / "config" / "autonomous_loop.yaml").write_text(f"agent:\n  command: bash {agent}\n")
        (root / "Specs" / "f").mkdir(parents=True)
        (root / "Specs" / "f" / "tasks.md").write_text(
            "- [ ] 1. one\n  - Exists: `one.txt`\n- [ ] 2. two\n  - Exists: `two.txt`\n- [ ] 3. three\n"
            "  - Exists: `three.txt`\n"
        )
        _, err = akira(root, "loop", "start", "--task", "Specs/f/tasks.md", env={"OPENAI_API_KEY": SECRET})
        leaks = [
            str(p)
            for p in root.rglob("*")
            if p.is_file() and p != agent and SECRET.encode() in p.read_bytes()
        ]
        leaks += ["stderr"] if SECRET in err else []
        state = json.loads(next(iter(state_files(root))).read_bytes())
        unchecked = [s["step_id"] for s in state["completed_steps"] if s["step_id"] in ("2", "3")]
    print(f"secrets: 1 scenario (key in agent output, stderr, prompts); leaks {len(leaks)} {leaks}")
    print(f"ticks without checks: agent ticked 3 boxes with failing checks; accepted {len(unchecked)}")
    return {"secret_leaks": len(leaks), "unchecked_ticks": len(unchecked)}


def bad_inputs() -> dict[str, int]:
    """Bad inputs of every kind: no traceback, one line, exit 1."""
    tracebacks = 0
    cases = 0
    with temp_dir("akira-bad-") as root:
        init_workspace(root)
        config = root / "config" / "autonomous_loop.yaml"
        original = config.read_bytes()
        inputs: list[tuple[str, bytes]] = [
            ("binary config", bytes(range(256)) * 8),
            ("deep config", b"a: " + b"[" * 2000 + b"]" * 2000),
            (
                "alias bomb",
                b"a: &a [x,x,x,x,x,x]\nb: &b [*a,*a,*a,*a,*a,*a]\nc: [*b,*b,*b,*b,*b,*b]\n",
            ),
            ("nul in config", b'agent:\n  workdir: "a\\0b"\n'),
            ("unknown key", b"autonomous_loop:\n  max_iteration: 3\n"),
            ("wrong type", b"autonomous_loop:\n  max_iterations: many\n"),
            ("unreachable endpoint", b"llm:\n  base_url: http://127.0.0.1:9/v1\n  max_retries: 0\n"),
        ]
        for name, content in inputs:
            config.write_bytes(content)
            code, err = akira(
                root,
                "loop",
                "start",
                "--task",
                "Specs/example/tasks.md",
                "--agent",
                "llm" if "endpoint" in name else "auto",
                timeout=60,
            )
            cases += 1
            tracebacks += int("Traceback" in err or code == 0)
            for path in state_files(root):
                path.unlink()
        config.write_bytes(original)
        for args in (
            ("loop", "start", "--task", "Specs/missing/tasks.md"),
            ("loop", "status", "--task-id", "../../etc/passwd"),
            ("loop", "resume", "--task-id", "task_../../x"),
            ("loop", "stop", "--task-id", "nope"),
        ):
            code, err = akira(root, *args)
            cases += 1
            tracebacks += int("Traceback" in err or code == 0)
        (root / ".state" / "autonomous_loop_task_20260101_000000.json").write_text(
            '{"task_id": "../../README"}'
        )
        code, err = akira(root, "loop", "status")
        cases += 1
        tracebacks += int("Traceback" in err)
    print(f"bad inputs: {cases} inputs; tracebacks or wrong exits {tracebacks}")
    return {"tracebacks": tracebacks}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--kills", type=int, default=40)
    parser.add_argument("--races", type=int, default=20)
    parser.add_argument("--swaps", type=int, default=5000)
    parser.add_argument("--orphans", type=int, default=5)
    options = parser.parse_args()
    figures: dict[str, int] = {}
    figures |= hostile_tools(options.swaps)
    figures |= secrets_and_claims()
    figures |= bad_inputs()
    figures |= start_races(options.races)
    figures |= orphan_check(options.orphans)
    figures |= kill_storm(options.kills)
    print("\ndefects (each should be 0):")
    for name, value in figures.items():
        print(f"  {name:>16}: {value}")
    print("verdict:", "PASS" if not any(figures.values()) else "FAIL")


if __name__ == "__main__":
    main()
