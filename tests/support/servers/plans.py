"""Large Kiro-style task files for tests/test_task_parser.py and benchmarks/parse_speed.py."""

from __future__ import annotations


def kiro_plan(tops: int) -> bytes:
    """`tops` top-level tasks, each with four ticked sub-tasks that carry a detail line, a
    `Verify:` and a `_Requirements:` line: 5 x `tops` steps."""
    lines = ["# Implementation Plan", ""]
    for top in range(1, tops + 1):
        lines.append(f"- [ ] {top}. Top-level task {top}")
        for sub in range(1, 5):
            lines += [
                f"  - [x] {top}.{sub} Sub-task {sub}",
                "    - Implement it carefully",
                f"    - Verify: `pytest -q tests/test_{top}_{sub}.py`",
                f"    - _Requirements: 1.{sub}, 2.{sub}_",
                "",
            ]
    return "\n".join(lines).encode()
