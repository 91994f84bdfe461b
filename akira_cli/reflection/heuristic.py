"""Reflections without a model: read the error output and name the likely category and fix."""

from __future__ import annotations

import re
import uuid
from dataclasses import dataclass

from akira_cli.failures import key_line
from akira_cli.reflection.memory import Category, Reflection
from akira_cli.reflection.models import FailureContext


@dataclass(frozen=True)
class Rule:
    pattern: re.Pattern[str]
    category: Category
    analysis: str
    suggestion: str
    actions: tuple[str, ...]


def _rule(pattern: str, category: Category, analysis: str, suggestion: str, *actions: str) -> Rule:
    return Rule(re.compile(pattern, re.I), category, analysis, suggestion, actions)


RULES = (
    _rule(
        r"^changed_exam: ",
        "verification",
        "The checks passed only with the files they run changed (the exam): {line}",
        "Make the code pass the checks as they are: put the tests, their configuration, hooks and "
        "CI back as they were, and change the code instead.",
        "Run the step's checks with its exam as it was",
        "Change the code, not the tests",
    ),
    _rule(
        r"changes hold a secret, so they were not committed",
        "root_cause",
        "The step wrote a secret into the tree, so its commit was not made: {line}",
        "Keep secrets out of the tree: take the secret out of the file, read it from the "
        "environment at run time, and never write a key, token or password into a file, a log or "
        "a fixture.",
        "Remove the secret from the files named above",
        "Read it from the environment instead",
    ),
    _rule(
        r"the sandbox refused \S+; to allow it|is hidden by the sandbox; to allow it",
        "environment",
        "The sandbox refused the step something it needs, not the code: {line}",
        "Do not change the code for what the sandbox refused: work without it if the step can, "
        "else say so; a person allows it with the line above, or runs with --no-sandbox.",
        "Read which host or path the sandbox refused",
        "Work without it, or leave it to a person to allow",
    ),
    _rule(
        r"ModuleNotFoundError|No module named|ImportError|command not found|not installed|"
        r"exited 127",
        "environment",
        "A module or command the step needs is missing from the environment: {line}",
        "Install or vendor the missing dependency first, or use a tool that is available.",
        "Check which interpreter and PATH the command runs with",
        "Install the missing package or pick an available command",
    ),
    _rule(
        r"Permission denied|No such file or directory|cannot access|Read-only file system",
        "environment",
        "The step touched a path that is missing or not accessible: {line}",
        "Create the path or fix its permissions before running the step's commands again.",
        "List the directory the command expects",
        "Create missing folders first",
    ),
    _rule(
        r"timed out|Timeout",
        "approach_error",
        "The approach took longer than the step's timeout: {line}",
        "Use a faster approach or split the work; do not rerun the same slow command.",
        "Find what blocks or waits",
        "Reduce the work per command",
    ),
    _rule(
        r"AssertionError|assert |FAILED|Verify .* failed|does not contain|does not exist|"
        r"expected .* got",
        "verification",
        "The work ran but the result does not pass its checks: {line}",
        "Read the failing check's output and change the code until that check passes.",
        "Run the failing check locally",
        "Compare expected and actual output",
    ),
    _rule(
        r"SyntaxError|TypeError|NameError|AttributeError|KeyError|IndexError|ValueError|"
        r"Traceback",
        "root_cause",
        "The code raised an error: {line}",
        "Fix the error at the line the traceback names before anything else.",
        "Read the last frame of the traceback",
        "Fix that line and rerun",
    ),
)
FALLBACK = _rule(
    r"",
    "approach_error",
    "The attempt failed: {line}",
    "Try a different approach than the previous attempt.",
    "Re-read the step and its checks",
    "Choose another way to reach them",
)


SANDBOX_LINE = re.compile(r"^.*(?:the sandbox refused \S+|is hidden by the sandbox); to allow it.*$", re.M)
"""What the sandbox refused, as `sandbox.blame` says it: the line a reflection names."""
PYTEST_FAILED_RE = re.compile(r"^FAILED (?P<test>\S+::[^\s]+)", re.M)
PYTEST_E_RE = re.compile(r"^E {2,}(?P<text>\S.*)$", re.M)


def pytest_failure(output: str) -> str | None:
    """For a pytest run: the failing test's name and the assertion that failed ('E   assert ...')."""
    failed = PYTEST_FAILED_RE.search(output)
    asserted = PYTEST_E_RE.search(output)
    if failed is None and asserted is None:
        return None
    test = failed["test"].split(" - ")[0] if failed else "a test"
    return f"{test} failed: {asserted['text'].strip()}" if asserted else f"{test} failed"


class HeuristicGenerator:
    source = "heuristic"

    def generate(self, failure: FailureContext) -> Reflection:
        rule = next((r for r in RULES if r.pattern.search(failure.error_output)), FALLBACK)
        refused = SANDBOX_LINE.search(failure.error_output)
        line = (
            refused[0] if refused else pytest_failure(failure.error_output) or key_line(failure.error_output)
        )
        return Reflection(
            id=f"ref-{uuid.uuid4().hex[:12]}",
            task_id=failure.task_id,
            step_id=failure.step_id,
            attempt=failure.attempt,
            category=rule.category,
            analysis=rule.analysis.format(line=line),
            suggestion=rule.suggestion,
            action_items=list(rule.actions),
            confidence=0.5,
            source="heuristic",
            signature=failure.signature,
        )
