"""A failed check's log as akira keeps it, and its failure signature.

The log is the failure context of the fix step: its last `LOG_LINES` lines at most, redacted
(a CI log echoes tokens and URLs with credentials). The signature is the check's name and its
failing lines (the error, the failed test, the finding; never a summary line such as `Found 1
error.` alone) with timestamps, durations, hex ids and line numbers taken out: two rounds whose
logs differ only in those fail "the same way", and a second such round needs a person.
"""

from __future__ import annotations

import hashlib
import re

from akira_cli.redaction import redact

LOG_LINES = 200
LOG_CHARS = 40_000
"""A bound on the kept tail's characters too: 200 lines of minified output can be megabytes."""
FAILING = re.compile(
    r"error|fail|exception|traceback|assert|fatal|panic|not ok|expected|\u2717|\u2718", re.IGNORECASE
)
FINDING = re.compile(r"^\S+?:\d+(?::\d+)?:?\s+\S|\b[A-Z]{1,4}\d{2,5}\b")
"""A linter's or compiler's finding: `calc.py:3:1: W999 ...`, or a rule code (`E501`, `TS2304`)."""
SUMMARY = re.compile(
    r"^(?:=+\s*)?\d+ (?:failed|passed|errors?|error|skipped|warnings?)\b.*\bin [\d.]+\s?s\b"
    r"|^Found \d+ (?:errors?|problems?|issues?)\b"
    r"|^\d+ (?:errors?|problems?|issues?) found\b"
    r"|^(?:Error: )?Process completed with exit code \d+"
    r"|^##\[error\]Process completed with exit code \d+"
    r"|exited with (?:exit )?(?:code|status) \d+\.?$"
    r"|^g?make(?:\[\d+\])?: \*\*\* .*Error \d+"
    r"|^FAILED \((?:failures|errors)=\d+"
    r"|^Tests?:\s+\d+ failed"
    r"|^npm ERR! (?:code|errno|Failed at|A complete log)"
    r"|^error: Recipe `.*` failed"
    r"|^Ran \d+ tests? in"
    r"|^=+ (?:short test summary info|FAILURES|ERRORS) =+$",
    re.IGNORECASE,
)
"""A line that only sums up (`Found 1 error.`, `1 failed in 0.2s`, `Process completed with exit
code 1.`): two different findings end with the same one, so it never makes a signature alone."""
NOISE: list[tuple[re.Pattern[str], str]] = [
    (re.compile(r"\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}:\d{2}(?:[.,]\d+)?(?:Z|[+-]\d{2}:?\d{2})?"), "<time>"),
    (re.compile(r"\b\d{1,2}:\d{2}:\d{2}(?:[.,]\d+)?\b"), "<time>"),
    (re.compile(r"\b[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}\b", re.I), "<id>"),
    (re.compile(r"\b0x[0-9a-f]+\b", re.I), "<id>"),
    (re.compile(r"\b(?=[0-9a-f]*\d)(?=[0-9a-f]*[a-f])[0-9a-f]{7,}\b", re.I), "<id>"),
    (
        re.compile(
            r"\b\d+(?:\.\d+)?\s?(?:ms|msec|s|secs?|seconds?|m|mins?|minutes?|h|hours?)\b", re.IGNORECASE
        ),
        "<duration>",
    ),
    (re.compile(r"(?<=\w):\d+(?::\d+)?\b"), ":<line>"),
    (re.compile(r"\b(line|ln|L)\s?\d+\b", re.IGNORECASE), r"\1 <line>"),
    (re.compile(r"\s+"), " "),
]
STEP_PREFIX = re.compile(r"^[^\t\n]*\t[^\t\n]*\t")
"""`gh run view --log-failed` puts the job's and the step's names before each line."""


def log_tail(text: str) -> str:
    """The last `LOG_LINES` lines of a job's log, bounded and redacted, without ANSI colours."""
    clean = re.sub(r"\x1b\[[0-9;?]*[A-Za-z]", "", text).replace("\r\n", "\n")
    lines = clean.rstrip("\n").splitlines()[-LOG_LINES:]
    return redact("\n".join(lines)[-LOG_CHARS:])


def failing_lines(log: str) -> list[str]:
    """The lines that tell the failure: errors, failed tests, assertions, a linter's findings.
    A summary line is never one of them; a log with nothing else gives its last lines that are
    not a summary (what the check printed before it summed up), and only then its summary."""
    lines = [NOISE[0][0].sub("", STEP_PREFIX.sub("", line)).strip() for line in log.splitlines()]
    lines = [line for line in lines if line]
    telling = [line for line in lines if not SUMMARY.search(line)]
    found = [line for line in telling if FAILING.search(line) or FINDING.search(line)]
    return found or telling[-10:] or lines[-5:]


def normalised(line: str) -> str:
    for pattern, mask in NOISE:
        line = pattern.sub(mask, line)
    return line.strip()


def signature(check: str, log: str) -> str:
    """The check's name and its failing lines, the noise taken out, as a short hash."""
    text = "\n".join([check, *(normalised(line) for line in failing_lines(log))])
    return hashlib.sha256(text.encode()).hexdigest()[:16]


TELLING = [
    re.compile(r"^E\s+\S"),  # pytest's line of the failed assertion
    re.compile(r"\b\w*(?:Error|Exception)\b:?\s*\S"),
    re.compile(r"\berror\b(?!.*exit code)", re.IGNORECASE),
]


def first_failing_line(log: str, limit: int = 160) -> str:
    """One line for the report: the most telling failing line (an assertion, an error), with
    its timestamp and the job's prefix left out."""
    lines = [NOISE[0][0].sub("", line).strip() for line in failing_lines(log)]
    if not lines:
        return "(no log)"
    line = next((line for pattern in TELLING for line in lines if pattern.search(line)), lines[0])
    return line[:limit] + ("…" if len(line) > limit else "")
