"""Fake agent CLIs that replay what the real ones printed, as captured from the pinned versions.

Each fake is a real executable put first on PATH. For every run it takes the next case from a
script (`FAKE_SCRIPT`, a JSON list; the last case repeats), and replays that case's capture:
stdout, stderr and exit code, from `tests/data/clis/<cli>/<pinned version>/<case>.*` (real
captures) or else `tests/data/cli_fakes/<cli>/<case>.*` (written from the outputs the issue
and the CLIs' sources quote). A case `name+write` also writes `step_<AKIRA_STEP_ID>.txt`, as the
model's tool call would have. `$RESET_IN_2S` in a capture becomes the epoch 2 seconds ahead.

The fakes check their arguments the way the pinned CLIs do, and then replay the real refusal:
codex 0.169 exits 2 on `--full-auto` (and on `--sandbox` after `exec resume`) and 1 outside a
git repository without `--skip-git-repo-check`; gemini 0.61 exits 55 in an untrusted folder
without `--skip-trust` and offers no write tools without `--approval-mode auto_edit|yolo`.
"""

from __future__ import annotations

import json
import os
import stat
import sys
from pathlib import Path

from akira_cli.agents.presets.versions import PINS

DATA = Path(__file__).parents[1] / "data"

FAKE = """\
#!{python}
import fcntl, json, os, pathlib, sys, time
prompt = sys.stdin.read()
cli, argv = {cli!r}, sys.argv[1:]
with open(os.environ["FAKE_SCRIPT"], "r+") as held:  # parallel steps call at once
    fcntl.flock(held, fcntl.LOCK_EX)
    cases = json.loads(held.read())
    case = cases.pop(0) if len(cases) > 1 else cases[0]
    held.seek(0)
    held.truncate()
    held.write(json.dumps(cases))
step = os.environ.get("AKIRA_STEP_ID", "x")
with open(os.environ["FAKE_LOG"], "a") as log:
    log.write(json.dumps({{"cli": cli, "argv": argv, "case": case, "step": step, "prompt": prompt}}) + "\\n")
case, _, effect = case.partition("+")

def in_git(folder):
    return any((p / ".git").exists() for p in [folder, *folder.parents])

refusal = None
if cli == "codex":
    if "--full-auto" in argv:
        refusal = "full_auto"
    elif argv[:2] == ["exec", "resume"] and ("--sandbox" in argv or "-s" in argv):
        refusal = "resume_sandbox"
    elif "--skip-git-repo-check" not in argv and not in_git(pathlib.Path.cwd()):
        refusal = "not_git"
if cli == "gemini":
    trusted = "--skip-trust" in argv or os.environ.get("GEMINI_CLI_TRUST_WORKSPACE") == "true"
    modes = [argv[i + 1] for i, a in enumerate(argv[:-1]) if a == "--approval-mode"]
    writes = "--yolo" in argv or "-y" in argv or any(m in ("auto_edit", "yolo") for m in modes)
    if not trusted:
        refusal = "untrusted"
    elif not writes and effect == "write":
        case, effect = "no_write_tools", ""
if refusal:
    case, effect = refusal, ""
if effect == "write":
    pathlib.Path(f"step_{{step}}.txt").write_text("done")
for folder in json.loads(os.environ["FAKE_CAPTURES"])[cli]:
    base = pathlib.Path(folder) / case
    if base.with_suffix(".exit").exists():
        break
else:
    sys.exit(f"fake {{cli}}: no capture for case {{case!r}}")
reset = str(int(time.time()) + 2)  # a limit that resets in 2 seconds
sys.stdout.write(base.with_suffix(".stdout").read_text().replace("$RESET_IN_2S", reset))
sys.stdout.flush()
sys.stderr.write(base.with_suffix(".stderr").read_text())
sys.exit(int(base.with_suffix(".exit").read_text().strip()))
"""


def capture_folders() -> dict[str, list[str]]:
    """Per CLI: the real captures of the pinned version first, then the written ones."""
    return {
        cli: [str(DATA / "clis" / cli / pin.version), str(DATA / "cli_fakes" / cli)]
        for cli, pin in PINS.items()
    }


def install(bin_dir: Path) -> dict[str, str]:
    """Writes the four fakes into `bin_dir`; returns the environment they need."""
    bin_dir.mkdir(parents=True, exist_ok=True)
    for cli in PINS:
        path = bin_dir / cli
        path.write_text(FAKE.format(python=sys.executable, cli=cli))
        path.chmod(path.stat().st_mode | stat.S_IEXEC)
    return {"PATH": f"{bin_dir}:{os.environ['PATH']}", "FAKE_CAPTURES": json.dumps(capture_folders())}


def replay(cli: str, case: str) -> tuple[str, str, int]:
    """A case's capture as text, for reading it with a preset directly."""
    for folder in capture_folders()[cli]:
        base = Path(folder) / case
        if base.with_suffix(".exit").exists():
            return (
                base.with_suffix(".stdout").read_text(),
                base.with_suffix(".stderr").read_text(),
                int(base.with_suffix(".exit").read_text().strip()),
            )
    raise FileNotFoundError(f"no capture for {cli} {case}")
