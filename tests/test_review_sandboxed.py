"""The reviewer and a preset's gateway under the sandbox, for real: real `bwrap`,
the real proxy, real HTTP servers on 127.0.0.1.

- The reviewer (a fake `claude` first on PATH) runs with the work tree read-only: what it tries
  to write there fails, nothing appears, and its verdict still lands.
- The reviewer's prompt carries the texts of the criteria its step names, read from a Kiro
  requirements.md beside tasks.md.
- A preset pointed at a gateway by its base-URL variable (claude's `ANTHROPIC_BASE_URL`) reaches
  that gateway through the proxy with no `sandbox.allow_hosts`, and another port stays refused."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import pytest

from akira_cli.sandbox.probe import probe
from akira_cli.sections import SandboxSettings
from tests.support.git import git, trailers
from tests.support.review_night import Night
from tests.support.sandbox import Server
from tests.support.workspace import Akira

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(not probe(SandboxSettings()).ok, reason="needs a working bwrap"),
]

WRITING_REVIEWER = """\
#!{python}
import json, os, pathlib, sys
sys.stdin.read()
tree = pathlib.Path(os.environ["FAKE_TREE"])
tries = {{
    "new file": pathlib.Path("reviewer_was_here.txt"),
    "by absolute path": tree / "reviewer_abs.txt",
    "the step's file": tree / f"step_{{os.environ['AKIRA_STEP_ID']}}.txt",
    "inside .git": tree / ".git" / "reviewer_was_here",
}}
seen = {{}}
for name, path in tries.items():
    try:
        with open(path, "a") as handle:
            handle.write("the reviewer wrote this\\n")
        seen[name] = "written"
    except OSError as exc:
        seen[name] = exc.strerror
with open(os.environ["FAKE_REVIEW_LOG"], "a") as log:
    log.write(json.dumps({{"cwd": os.getcwd(), "tries": seen}}) + "\\n")
answer = json.dumps({{"verdict": "approve", "reasons": ["looked, wrote nothing"]}})
print(json.dumps({{"type": "result", "subtype": "success", "is_error": False, "result": answer,
    "session_id": "r-1", "total_cost_usd": 0.01, "usage": {{"input_tokens": 10, "output_tokens": 5}}}}))
"""


def test_the_reviewer_cannot_write_the_work_tree_and_its_review_still_lands(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    night = Night(tmp_path, monkeypatch)
    reviewer = tmp_path / "bin" / "claude"
    reviewer.write_text(WRITING_REVIEWER.format(python=sys.executable))
    monkeypatch.setenv("FAKE_TREE", str(night.root))
    night.setup("  agent: claude\n")
    code, err = night.start()
    assert code == 0, err
    state = night.akira.state()
    assert state.sandboxed is True
    assert [(s.step_id, s.review) for s in state.completed_steps] == [("1", "approved"), ("2", "approved")]
    assert [trailers(night.root, f"akira/feat~{n}")["Akira-Review"] for n in (2, 1)] == ["approved"] * 2
    logged = [json.loads(line) for line in (tmp_path / "reviews.jsonl").read_text().splitlines()]
    assert len(logged) == 2 and all(Path(entry["cwd"]) == night.root for entry in logged)
    for entry in logged:  # every write refused by the read-only mount, each an ordinary error
        assert entry["tries"] == dict.fromkeys(entry["tries"], "Read-only file system"), entry
    assert not (night.root / "reviewer_was_here.txt").exists()
    assert not (night.root / "reviewer_abs.txt").exists()
    assert not (night.root / ".git" / "reviewer_was_here").exists()
    for step in ("1", "2"):  # the implementing agent's files as it wrote them, on the branch too
        assert (night.root / f"step_{step}.txt").read_text() == "attempt 1\n"
        assert git(night.root, "show", f"akira/feat:step_{step}.txt") == "attempt 1"
    assert "reviewer" not in git(night.root, "status", "--porcelain", "--ignored")


REQUIREMENTS = """\
# Requirements Document

## Requirements

### Requirement 1

**User Story:** As a visitor, I want a greeting, so that I feel welcome.

#### Acceptance Criteria

1. WHEN the greeting step runs THEN the system SHALL write step_1.txt with the attempt number
2. WHEN the visitor gives no name THEN the system SHALL greet the whole world
"""


def test_the_reviewers_prompt_carries_the_texts_of_the_criteria_its_step_names(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    night = Night(tmp_path, monkeypatch)
    spec = night.root / "Specs" / "feat"
    spec.mkdir(parents=True)
    (spec / "requirements.md").write_text(REQUIREMENTS)  # beside tasks.md: step 1 names 1.1
    night.verdicts("approve")
    night.setup("  agent: claude\n")
    code, err = night.start()
    assert code == 0, err
    prompts = {json.loads(line)["prompt"] for line in (tmp_path / "reviews.jsonl").read_text().splitlines()}
    first = next(p for p in prompts if "Write the greeting" in p)
    second = next(p for p in prompts if "Write the farewell" in p)
    named = "1.1: WHEN the greeting step runs THEN the system SHALL write step_1.txt with the attempt number"
    assert named in first
    assert "greet the whole world" not in first  # 1.2: a criterion the step does not name
    assert "WHEN" not in second and "SHALL" not in second  # step 2 names no criterion


GATEWAY_CLAUDE = """\
#!{python}
import json, os, pathlib, sys, urllib.error, urllib.request
sys.stdin.read()
seen = {{}}
for name, url in (("gateway", os.environ["FAKE_GATEWAY"] + "/v1/messages"),
                  ("other port", os.environ["FAKE_OTHER"] + "/other")):
    try:
        seen[name] = urllib.request.urlopen(url, timeout=30).read().decode()
    except urllib.error.HTTPError as exc:
        seen[name] = exc.code
    except OSError as exc:
        seen[name] = str(exc)
seen["base url"] = os.environ.get("ANTHROPIC_BASE_URL")
with open(os.environ["FAKE_LOG"], "a") as log:
    log.write(json.dumps(seen) + "\\n")
pathlib.Path("step_" + os.environ["AKIRA_STEP_ID"] + ".txt").write_text("done")
print(json.dumps({{"type": "result", "subtype": "success", "is_error": False, "result": "Done.",
    "session_id": "g-1", "total_cost_usd": 0.0, "usage": {{"input_tokens": 1, "output_tokens": 1}}}}))
"""


@pytest.mark.parametrize("pointed", [True, False], ids=["base-url-set", "base-url-unset"])
def test_a_presets_gateway_named_by_its_base_url_variable_passes_the_proxy(
    akira: Akira,
    tmp_path: Path,
    servers: tuple[Server, Server],
    monkeypatch: pytest.MonkeyPatch,
    pointed: bool,
) -> None:
    gateway, other = (f"http://127.0.0.1:{s.server_address[1]}" for s in servers)
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "claude").write_text(GATEWAY_CLAUDE.format(python=sys.executable))
    (bin_dir / "claude").chmod(0o755)
    monkeypatch.setenv("PATH", f"{bin_dir}:{os.environ['PATH']}")
    monkeypatch.setenv("FAKE_LOG", str(tmp_path / "claude.jsonl"))
    monkeypatch.setenv("FAKE_GATEWAY", gateway)
    monkeypatch.setenv("FAKE_OTHER", other)
    if pointed:
        monkeypatch.setenv("ANTHROPIC_BASE_URL", gateway)  # as a person points claude at a gateway
    else:
        monkeypatch.delenv("ANTHROPIC_BASE_URL", raising=False)
    task = akira.write_task("gw", "- [ ] 1. Ask the model\n  - Exists: `step_1.txt`\n")
    done = akira.cli("loop", "start", "--agent", "claude", "--task", str(task), timeout=120)
    assert done.code == 0, done.err
    assert akira.state().sandboxed is True
    (seen,) = [json.loads(line) for line in (tmp_path / "claude.jsonl").read_text().splitlines()]
    assert seen["other port"] == 403 and servers[1].hits == []  # never reached, either way
    denied = [(e.step_id, e.data["host"]) for e in akira.events() if e.type == "sandbox_denied"]
    assert ("1", "127.0.0.1") in denied
    if pointed:
        assert seen["gateway"] == "reached" and servers[0].hits == ["/v1/messages"]
        assert seen["base url"] == gateway  # the variable reaches the CLI as it was set
    else:  # without the variable the same gateway is just another host: the test sees a refusal
        assert seen["gateway"] == 403 and servers[0].hits == []
