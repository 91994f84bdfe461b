"""What each guarantee costs an iteration: loop_overhead's run with one part switched off.

    .venv/bin/python benchmarks/overhead_ablation.py [--steps 1000] [--repeat 3]

Diagnostic only. Each variant patches akira in this process (never on disk) to skip one thing
docs/guarantees.md promises, runs `loop start` on N `- Run: \\`true\\`` steps, and prints its median
ms/step next to the full run and to the bare crash-safe loop of loop_overhead.py. The runs are
interleaved so that drift of the machine spreads over all variants. The figure for a part is
what the loop would save without it; none of these is an option of akira.
"""

from __future__ import annotations

import argparse
import contextlib
import sys
from collections.abc import Callable, Iterator
from typing import Any

from _common import median, temp_dir
from loop_overhead import fresh_workspace, run_in_process, run_plain, warm_up


@contextlib.contextmanager
def patched(owner: Any, name: str, value: Any) -> Iterator[None]:
    real = getattr(owner, name)
    setattr(owner, name, value)
    try:
        yield
    finally:
        setattr(owner, name, real)


def variants() -> dict[str, Callable[[], contextlib.AbstractContextManager[None]]]:
    from akira_cli.children.ledger import ChildLedger
    from akira_cli.control_plane import ControlPlane
    from akira_cli.events import EventBus
    from akira_cli.loop.taskbook import TaskBook
    from akira_cli.loop.witness import Witness

    real_mark = TaskBook.mark

    def no_progress_mark(self: TaskBook, path: Any, step_id: str, box: str) -> Any:
        return None if box == "-" else real_mark(self, path, step_id, box)

    @contextlib.contextmanager
    def no_pgid() -> Iterator[None]:
        with (
            patched(ChildLedger, "started", lambda self, pgid: None),
            patched(ChildLedger, "ended", lambda self, pgid: None),
        ):
            yield

    return {
        "everything (akira as shipped)": contextlib.nullcontext,
        "no files-changed walks (evidence)": lambda: patched(Witness, "files", lambda self: None),
        "no control-plane snapshots": lambda: patched(ControlPlane, "snapshot", lambda self, names=(): {}),
        "no events (log, display)": lambda: patched(EventBus, "emit", lambda self, *a, **k: None),
        "no in-progress [-] box": lambda: patched(TaskBook, "mark", no_progress_mark),
        "no pgid sidecar (orphans)": no_pgid,
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=1000)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    steps = args.steps
    kinds = variants()
    times: dict[str, list[float]] = {name: [] for name in kinds}
    bare: list[float] = []
    with temp_dir("akira-bench-ablation-") as parent:
        warm_up(fresh_workspace(parent, "warm-up", 3))
        for k in range(args.repeat):
            bare.append(run_plain(steps, parent))
            for n, (name, patch) in enumerate(kinds.items()):
                with patch():
                    times[name].append(run_in_process(fresh_workspace(parent, f"v{k}_{n}", steps), steps))
    full = median(times["everything (akira as shipped)"]) / steps
    floor = median(bare) / steps
    print(f"ablation: {steps} steps of `- Run: \\`true\\``, median of {args.repeat} interleaved runs")
    print(f"  {'bare crash-safe loop':<36} {1000 * floor:6.2f} ms/step")
    for name, values in times.items():
        each = median(values) / steps
        saved = "" if each == full else f"   saves {1000 * (full - each):+.2f} ms"
        print(f"  {name:<36} {1000 * each:6.2f} ms/step  ratio {each / floor:.2f}{saved}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
