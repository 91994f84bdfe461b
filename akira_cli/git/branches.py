"""No branch but the task's moves during a run (the person's other branches are
theirs): the branches are read before an attempt and after it, and one that a
step moved, made or deleted is named with the commands to look at it and to put it back. akira
never sets it back itself: the person decides, and the run pauses until they resume it.

Inside the sandbox `.git/` is read-only and no step can move a branch; this is what holds for a
run without it (`--no-sandbox`, `sandbox.mode: off`). akira's own step branches of parallel
steps (`akira-step/...`) are not read (`Plumbing.branches`).
"""

from __future__ import annotations

from akira_cli.git.run import GitRun
from akira_cli.workspace import in_quotes

HEADS = "refs/heads/"


class BranchWatch:
    def __init__(self, run: GitRun) -> None:
        self.run = run
        self._known: dict[str, str] | None = None
        """The branches as last read: kept while attempts run (a wave's run at once), so that a
        move in between is found by the next `moved`."""

    def watch(self) -> None:
        """Before an attempt: the branches as they are, unless already known."""
        if self._known is None:
            self._known = self.run.plumb.branches()

    def moved(self, step_id: str, task_branch: str) -> tuple[str, list[str]] | None:
        """After an attempt: what moved since, but `task_branch`, as one line, and the refs."""
        before, now = self._known, self.run.plumb.branches()
        self._known = now
        if before is None:
            return None
        own = HEADS + task_branch
        moved = sorted(
            ref for ref in before.keys() | now.keys() if ref != own and before.get(ref) != now.get(ref)
        )
        if not moved:
            return None
        name, was, is_now = moved[0].removeprefix(HEADS), before.get(moved[0]), now.get(moved[0])
        if was is None:
            what, fix = f"made the branch {name} at {is_now}", self.run.shown("branch", "-D", name)
        elif is_now is None:
            what, fix = f"deleted the branch {name} (it was at {was})", self.run.shown("branch", name, was)
        else:
            what, fix = (
                f"moved the branch {name} from {was} to {is_now}",
                self.run.shown("branch", "-f", name, was),
            )
        more = ", ".join(ref.removeprefix(HEADS) for ref in moved[1:6])
        look = self.run.shown("log", "--oneline", "-5", is_now or was or name)
        line = (
            f"step {step_id} {what}{f' (and moved {more})' if more else ''}; only the task branch "
            f"{task_branch} may move during a run, and akira left it as it is: look with "
            f"{in_quotes(look)}, and if it is wrong, put it back with {in_quotes(fix)}"
        )
        return line, moved
