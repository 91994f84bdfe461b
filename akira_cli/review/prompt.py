"""The reviewer's prompt (the morning review): the step, its requirements and their criteria, the checks
that passed with their output, the diff, and how to answer."""

from __future__ import annotations

from akira_cli.redaction import redact
from akira_cli.runner import tail
from akira_cli.state.records import Attempt, ReviewResult
from akira_cli.tasks.model import Step

ANSWER = """## Your answer
Judge whether this change does what the step and its requirements ask, correctly and
completely, beyond what its checks prove: wrong behaviour, a missed case or criterion, a check
that proves nothing, code that cannot work. Do not change any file; read and judge.

Answer with one JSON object, and nothing after it:
{"verdict": "approve", "reasons": ["what you checked"]}
or
{"verdict": "changes", "reasons": ["file: what is wrong, and what to do instead"]}
(or end with a last line `VERDICT: approve` or `VERDICT: changes`, your reasons above it).
Ask for changes only for real defects, each reason specific enough to act on.
"""


def exam_lines(attempt: Attempt) -> list[str]:
    """What the step did to its own exam, in so many words (docs/design.md, the exam)."""
    exam = attempt.exam
    if exam is None:
        return []
    lines = []
    if exam.changed:
        files = ", ".join(exam.changed)
        if exam.changed_exam:
            who = "a person allowed it" if exam.allowed == "person" else "its text asks for it"
            lines += [
                "",
                "## The step changed its own exam",
                f"This step changed the files its checks run ({files}), and its checks pass ONLY with "
                f"those changes: with them as they were before the step, they fail ({who}). Judge "
                "whether each change to the tests, their configuration or CI is what the step asks, "
                "and not a way around a check.",
            ]
        else:
            lines += [
                "",
                "## The step changed files its checks run",
                f"It changed {files}; the same checks also passed with those files as they were "
                "before the step. Judge whether those changes are right.",
            ]
    if exam.own_tests:
        lines += ["", f"Its checks ran tests the step wrote itself: {', '.join(exam.own_tests)}."]
    return lines


def review_prompt(
    step: Step,
    requirements: list[str],
    attempt: Attempt,
    diff: str,
    earlier: list[ReviewResult],
    whole_branch: bool = False,
) -> str:
    what = "the whole task branch, ending with its last step" if whole_branch else "one step"
    lines = [
        f"You review {what}, carried out by another agent. Its checks passed; you decide "
        "whether the work is right.",
        "",
        f"## The step\n{step.id} {step.title}",
    ]
    if step.heading:
        lines.append(f"Under: {step.heading}")
    lines += [f"- {detail}" for detail in step.details]
    if requirements:
        lines += ["", "## The requirements it serves, with their acceptance criteria"]
        lines += [text if text.startswith("-") else f"- {text}" for text in requirements]
    lines += ["", "## The checks that ran (all passed)"]
    checks = attempt.evaluation.checks if attempt.evaluation else []
    shown = [check for check in checks if check.name != "agent result"]
    if not shown:
        lines.append("- none: no check proves this step, so read the diff closely")
    for check in shown:
        lines.append(f"- {check.name}: {'passed' if check.passed else 'failed'}")
        output = tail(check.output or check.detail, 1500).strip()
        if output:
            lines.append(f"  ```\n{output}\n  ```")
    lines += exam_lines(attempt)
    for result in earlier:
        lines += ["", f"## Your review of an earlier attempt (round {result.round}) asked for changes"]
        lines.append(result.reasons or "(no reasons given)")
    lines += ["", "## The diff (against the tree the attempt started from)", diff, "", ANSWER]
    return redact("\n".join(lines))  # the reviewer's model provider gets the masked text
