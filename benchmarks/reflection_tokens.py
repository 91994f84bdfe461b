"""Prompt-token overhead that reflection adds per retry.

Runs a real loop with the `command` agent: a fake agent CLI that fails every attempt with a
different error (so no persistent-failure stop) and saves nothing. akira keeps every prompt it
sends in .state/prompts/; this script measures the retry prompt after 1, 3 and 10 failed
attempts against the first prompt. Tokens are estimated as characters / 4 (no tokenizer is
installed offline); the seed budgets about 275 tokens of reflection per cycle.

    .venv/bin/python benchmarks/reflection_tokens.py
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from _common import quiet, temp_dir

from akira_cli.cli import main

WORDS = [
    "alpha",
    "bravo",
    "charlie",
    "delta",
    "echo",
    "foxtrot",
    "golf",
    "hotel",
    "india",
    "juliet",
    "kilo",
    "lima",
]
AGENT = f"""
import os, sys
sys.stdin.read()
word = {WORDS!r}[int(os.environ["AKIRA_ATTEMPT"]) - 1]
print("Traceback (most recent call last):")
print(f"  File 'src/app.py', in build_{{word}}")
print(f"ValueError: the {{word}} stage rejected its input")
sys.exit(1)
"""


def tokens(text: str) -> int:
    return len(text) // 4


def run(failures: int) -> dict[int, int]:
    with temp_dir("akira-bench-tokens-") as tmp:
        root = tmp / "ws"
        with quiet():
            main(["init", str(root)])
        agent = root / "agent.py"
        agent.write_text(AGENT)
        (root / "config" / "autonomous_loop.yaml").write_text(
            f"agent:\n  kind: command\n  command: {sys.executable} {agent}\n"
            f"reflection:\n  max_iterations: {failures + 1}\n"
            f"autonomous_loop:\n  failure_threshold: {failures + 5}\n"
        )
        task = root / "Specs" / "bench" / "tasks.md"
        task.parent.mkdir(parents=True)
        task.write_text("- [ ] 1. Build the pipeline\n  - Wire the stages together\n  - Verify: `false`\n")
        with quiet():
            main(["loop", "start", "--root", str(root), "--task", str(task)])
        prompts = sorted((root / ".state" / "prompts").glob("*.md"))
        return {int(p.stem.rsplit("_", 1)[1]): tokens(p.read_text()) for p in prompts}


def main_() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--failures", type=int, default=10)
    args = parser.parse_args()
    sizes = run(args.failures)
    first = sizes[1]
    print("reflection prompt overhead (retry prompt tokens - first prompt tokens, chars/4)")
    print(f"  first prompt: {first} tokens")
    for after in (1, 3, args.failures):
        attempt = after + 1
        if attempt in sizes:
            extra = sizes[attempt] - first
            print(
                f"  after {after:2d} failed attempt(s): {sizes[attempt]} tokens, +{extra} "
                f"(+{extra / after:.0f} per failure)"
            )
    growth = [sizes[n + 1] - sizes[n] for n in range(2, args.failures) if n + 1 in sizes]
    print(f"  growth per extra failure after the first retry: {max(growth) if growth else 0} tokens at most")
    return 0


if __name__ == "__main__":
    sys.path.insert(0, str(Path(__file__).parent))
    raise SystemExit(main_())
