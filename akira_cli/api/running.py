"""The bound on the runs a server starts (`akira mcp`, `akira web`): at most `mcp.max_running`
of the runs it started or resumed run at once; one more is refused, naming them."""

from __future__ import annotations

import threading
from pathlib import Path
from typing import TYPE_CHECKING

from akira_cli.errors import AkiraError

if TYPE_CHECKING:
    from akira_cli.api.models import Resumed, Started

LIVE = ("running", "following")


class Running:
    """The runs this server started or resumed, at most `limit` of them running at once.
    `stop_hint`: how the server's client stops one (`stop_loop`, the page's Stop)."""

    def __init__(self, root: Path, limit: int, stop_hint: str = "stop one") -> None:
        self.root, self.limit, self.stop_hint = root, limit, stop_hint
        self.mine: list[str] = []
        self.lock = threading.Lock()

    def live(self) -> list[str]:
        from akira_cli.api.models import LoopSummary
        from akira_cli.api.views import status

        found = []
        for task_id in self.mine:
            try:
                summary = status(self.root, task_id)
            except AkiraError:
                continue
            if isinstance(summary, LoopSummary) and summary.status in LIVE:
                found.append(task_id)
        return found

    def refuse_more(self) -> None:
        live = self.live()
        if len(live) >= self.limit:
            raise AkiraError(
                f"mcp.max_running is {self.limit}, and {len(live)} runs this server started are "
                f"running ({', '.join(live)}); wait for one to end, or {self.stop_hint}"
            )

    def started(self, answer: Started | Resumed) -> None:
        if answer.task_id and answer.task_id not in self.mine:
            self.mine.append(answer.task_id)
