"""What one step costs with akira's own `llm` agent: calls, tokens and seconds per attempt.

    .venv/bin/python benchmarks/llm_step_cost.py                     # against the fake server
    .venv/bin/python benchmarks/llm_step_cost.py --base-url http://127.0.0.1:8080/v1 [--model M]

Three cases, each run through the real CLI (`akira loop start`, `akira reason --json`):
- (a) the hello step: "Create the file hello.txt containing exactly: hi", `Verify: grep -qx hi hello.txt`;
- (b) a step whose first attempt fails its check (the check fails once by design, whatever the
  model did), so the second attempt is a retry;
- (c) `akira reason` on one question.

Against the fake server a scripted model answers every call (the tool turns write hello.txt and
call finish; the reasoning calls get valid replies), so the figures count akira's own calls and
do not depend on a model. It also reports the replies akira abandoned (the server saw the client
go): each one is a reply a single-slot server would have kept generating. Goals:
(a) at most 4 calls an attempt; in (b) the engine runs only on the retry; (c) no more than before.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from _common import akira_command, init_workspace, temp_dir

HELLO = "- [ ] 1. Create the file hello.txt containing exactly: hi\n  - Verify: `grep -qx hi hello.txt`\n"
ONCE = "test -f .checked || { touch .checked; exit 1; }"
RETRY = HELLO.replace("`grep", f"`{ONCE}; grep")
QUESTION = "What is 2 + 3? Answer with the number and one sentence."

PROFILE = {
    "reasoning_depth": 1,
    "information_sufficiency": 0.9,
    "expected_tool_usage": "minimal",
    "output_breadth": "narrow",
    "confidence_requirement": "low",
    "raw_inference": "one small file",
}
ANSWERS: dict[str, Any] = {
    "task profile": PROFILE,
    "profile reassessment": PROFILE,
    "plan": {"steps": [{"id": "s1", "description": "Write hello.txt containing hi"}]},
    "validate plan": {"issues": []},
    "validate execution": {"issues": []},
    "validate refinement": {"issues": []},
    "convergence": {"completeness": 1.0, "coherence": 1.0, "consistency": 1.0, "rationale": "done"},
    "refine plan": {"deltas": []},
    "synthesize answer": {"answer": "5: two plus three is five."},
    "execute step": {"step_output": "2 + 3 = 5", "clarity_state": "CLEAR"},
}


def scripted_model(body: dict[str, Any]) -> Any:
    """The fake server's responder: tool turns write hello.txt then finish; reasoning calls get
    the reply their prompt's heading asks for."""
    from tests.support.servers.fake_openai import json_reply, tool_call

    messages = body["messages"]
    if body.get("tools"):
        turn = sum(1 for message in messages if message["role"] == "assistant")
        if turn == 0:
            return tool_call("write_file", {"path": "hello.txt", "content": "hi\n"}, prompt_tokens=400)
        return tool_call("finish", {"summary": "hello.txt holds hi"}, prompt_tokens=450)
    heading = messages[1]["content"].splitlines()[0].removeprefix("# Reasoning: ")
    return json_reply(ANSWERS[heading], prompt_tokens=600, completion_tokens=60)


def workspace(root: Path, server: str, model: str | None, timeout: float) -> None:
    init_workspace(root)
    lines = [f"llm:\n  base_url: {server}\n  timeout: {timeout}\n  max_retries: 1\n"]
    lines += [f"  model: {model}\n"] if model else []
    lines += ["reflection:\n  use_llm: false\n", "resource_limits:\n  max_api_calls_per_minute: 0\n"]
    (root / "config" / "autonomous_loop.yaml").write_text("".join(lines))


def run_step(root: Path, feature: str, text: str) -> list[dict[str, Any]]:
    (root / "Specs" / feature).mkdir(parents=True)
    (root / "Specs" / feature / "tasks.md").write_text(text)
    for name in ("hello.txt", ".checked"):
        (root / name).unlink(missing_ok=True)
    began = time.monotonic()
    done = subprocess.run(
        [
            *akira_command(),
            "loop",
            "start",
            "--task",
            f"Specs/{feature}/tasks.md",
            "--no-wait",
            "--root",
            str(root),
        ],
        capture_output=True,
        text=True,
        timeout=3600,
    )
    wall = time.monotonic() - began
    state = json.loads(
        subprocess.run(
            [*akira_command(), "loop", "state", "--task-id", feature, "--json", "--root", str(root)],
            capture_output=True,
            text=True,
            timeout=60,
        ).stdout
    )
    attempts = state["steps"]["1"]["attempts"]
    print(f"  exit {done.returncode}, status {state['status']}, {wall:.1f} s in all")
    return attempts


def show(case: str, attempts: list[dict[str, Any]]) -> None:
    print(f"({case})")
    for attempt in attempts:
        usage = attempt["usage"]
        estimated = f" ({usage['estimated_calls']} estimated)" if usage.get("estimated_calls") else ""
        print(
            f"  attempt {attempt['number']}: {attempt['approach']:<16} {attempt['outcome']:<8} "
            f"{usage['calls']:>2} calls, {usage['prompt_tokens']:>6} prompt + "
            f"{usage['completion_tokens']:>5} completion tokens{estimated}, "
            f"{attempt['duration_seconds']:.1f} s"
        )


def reason(root: Path) -> None:
    began = time.monotonic()
    done = subprocess.run(
        [*akira_command(), "reason", QUESTION, "--json", "--root", str(root)],
        capture_output=True,
        text=True,
        timeout=3600,
    )
    wall = time.monotonic() - began
    if done.returncode != 0:
        print(f"(c) akira reason: exit {done.returncode}: {done.stderr.strip()[:300]}")
        return
    data = json.loads(done.stdout)
    print(
        f"(c) akira reason: {data['calls']} calls, {data['prompt_tokens']} prompt + "
        f"{data['completion_tokens']} completion tokens, {wall:.1f} s, {data['label']}"
    )


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--base-url", help="a real OpenAI-compatible server (default: the fake one)")
    parser.add_argument("--model", help="the model to ask for (default: the server's first)")
    parser.add_argument("--timeout", type=float, default=120, help="llm.timeout for the run")
    options = parser.parse_args()
    server = None
    if options.base_url is None:
        from tests.support.servers.fake_openai import FakeOpenAI

        server = FakeOpenAI()
        server.set_responder(scripted_model)
    url = options.base_url or server.base_url  # type: ignore[union-attr]
    print(f"server: {url}")
    with temp_dir("akira-llm-cost-") as root:
        workspace(root, url, options.model, options.timeout)
        show("a", run_step(root, "hello", HELLO))
        show("b", run_step(root, "retry", RETRY))
        reason(root)
    if server is not None:
        print(f"replies akira abandoned: {len(server.abandoned)}")
        server.close()


if __name__ == "__main__":
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    main()
