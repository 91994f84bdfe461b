"""The ending every preset's reader shares: a failed run, its usage limit, else its provider fault.

A usage limit is read first: a plan's limit is a wait until its reset, not a fault. Only a run
that failed is read for either: a successful answer may well talk about limits or a 429.
"""

from __future__ import annotations

from akira_cli.agents.presets import faults, limits
from akira_cli.agents.presets.base import CliReport


def failed(
    report: CliReport, error: str, *, limit_in: str, fault_in: str | None = None, status: int | None = None
) -> CliReport:
    """`report` marked failed with `error`; its limit read from `limit_in`, else its fault from
    `fault_in` (the error when not given) and the HTTP `status` the CLI reported."""
    report.failed, report.error = True, error
    report.limit = limits.detect(limit_in)
    report.fault = None if report.limit else faults.classify(error if fault_in is None else fault_in, status)
    return report
