"""Captures what the pinned real agent CLIs print, case by case, for the fakes to replay.

    python tests/realcli/capture.py [claude|codex|gemini|aider ...] [--case NAME]

Each CLI runs its preset's default command in a fresh folder with a HOME of its own,
pointed at a scripted model server (`tests/support/servers`), once per case of `cases.py`. It
writes `tests/data/clis/<cli>/<version>/<case>.stdout`, `.stderr` and `.exit`, and `cases.json`
(what each case scripted, the requests the CLI made, how long it took). The run's folders are
written as `/work/ws` and `/work/home`, the install cache as `/opt/test-clis`, so captures do not change with the machine. The CLIs
must be installed first (`python tests/realcli/install.py`).
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # for tests.support
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from realcli.cases import CASES, Case, apply_env
from realcli.clis import CLIS, RealCli
from tests.support.servers.scripted import Script, ScriptedServer

DATA = Path(__file__).resolve().parents[1] / "data" / "clis"
PROMPT = "Create the file hello.txt with a short greeting, then say that you are done.\n"


def run_case(cli: RealCli, case: Case, base: Path, timeout: float = 600) -> dict[str, object]:
    workdir, home = base / "ws", base / "home"
    workdir.mkdir(parents=True)
    prompt_file = base / "prompt.md"
    prompt_file.write_text(PROMPT, encoding="utf-8")
    script = Script(workdir, faults=list(case.faults), bad_key=case.bad_key)
    with ScriptedServer(cli.dialect(), script) as server:
        env = apply_env(cli.environment(home, server.url, workdir), case)
        started = time.monotonic()
        done = subprocess.run(
            cli.argv(prompt_file),
            input=PROMPT,
            capture_output=True,
            text=True,
            cwd=workdir,
            env=env,
            timeout=timeout,
        )
        seconds = time.monotonic() - started
        requests = [
            {"path": r.path.split("?")[0], "main": r.main, "status": r.status} for r in server.requests
        ]

    def clean(text: str) -> str:
        return (
            text.replace(str(workdir), "/work/ws")
            .replace(str(home), "/work/home")
            .replace(str(base), "/work")
        )

    return {
        "stdout": clean(done.stdout),
        "stderr": clean(done.stderr),
        "exit": done.returncode,
        "wrote": (workdir / script.file).is_file(),
        "seconds": round(seconds, 1),
        "requests": requests,
    }


def capture(name: str, only: str | None) -> None:
    cli = CLIS[name]
    if not cli.executable.exists():
        raise SystemExit(
            f"{name} {cli.pin.version} is not installed: run python tests/realcli/install.py {name}"
        )
    folder = DATA / name / cli.pin.version
    folder.mkdir(parents=True, exist_ok=True)
    index_path = folder / "cases.json"
    index = json.loads(index_path.read_text()) if index_path.exists() else {}
    for case in CASES[name].values():
        if only and case.name != only:
            continue
        with tempfile.TemporaryDirectory(prefix=f"akira-capture-{name}-") as base:
            result = run_case(cli, case, Path(base))
        (folder / f"{case.name}.stdout").write_text(str(result.pop("stdout")), encoding="utf-8")
        (folder / f"{case.name}.stderr").write_text(str(result.pop("stderr")), encoding="utf-8")
        (folder / f"{case.name}.exit").write_text(f"{result.pop('exit')}\n", encoding="utf-8")
        env = {k: ("<set>" if "KEY" in k or "TOKEN" in k else v) for k, v in case.env.items()}
        index[case.name] = {"note": case.note, "command": cli.command, "env": env, **result}
        print(
            f"{name} {case.name}: exit {(folder / f'{case.name}.exit').read_text().strip()}, {result['seconds']} s"
        )
    index_path.write_text(json.dumps(index, indent=2, sort_keys=True) + "\n", encoding="utf-8")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("clis", nargs="*", default=list(CLIS))
    parser.add_argument("--case")
    args = parser.parse_args()
    for name in args.clis:
        capture(name, args.case)


if __name__ == "__main__":
    main()
