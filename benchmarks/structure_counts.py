"""Counts of how the run's parts are wired (docs/design.md, "who owns the state").

    .venv/bin/python benchmarks/structure_counts.py [CHECKOUT]

Reads the package of CHECKOUT (default: this one) without importing it, and prints:
- **state writes**: the places outside `loop/iteration.py` that write a `LoopState` field (an
  assignment, an augmented assignment or a mutating call such as `.append` on `state.X`,
  `self.state.X`, `loop.state.X`...), in total and for the iteration's part of the state (the
  counter, the running step or steps, the completed steps), and the modules they sit in;
- **late assignments**: an attribute of one of the run's parts (the engine, the loop, a runner,
  the git run, the limits, the follower, the waves, the reviewer) set from outside that part after
  it was built (`engine.reviewer = ...`, `loop.engine.runner.wrapper = ...`), and the
  `type: ignore` comments in `loop/`, `api/`, `follow/` and `review/`;
- **adapters writing the state**: the state writes in `git/`, `follow/`, `review/`,
  `reflection/`, `exam/`, `agents/`.

Run it on two checkouts (`git worktree add /tmp/before REV`) to compare. Complexity is counted
with radon apart (`radon cc -s -n C akira_cli`), which is not a dependency of akira.
"""

from __future__ import annotations

import ast
import sys
from collections import Counter
from pathlib import Path

ITERATION_PART = {"iteration", "current_step", "current_steps", "completed_steps"}
MUTATORS = {"add", "append", "extend", "remove", "pop", "clear", "insert", "update", "setdefault"}
WIRED = ("loop", "api", "follow", "review")
ADAPTERS = ("git", "follow", "review", "reflection", "exam", "agents")


def state_fields(package: Path) -> set[str]:
    tree = ast.parse((package / "state" / "models.py").read_text())
    for node in tree.body:
        if isinstance(node, ast.ClassDef) and node.name == "LoopState":
            fields = (n.target for n in node.body if isinstance(n, ast.AnnAssign))
            return {target.id for target in fields if isinstance(target, ast.Name)}
    raise SystemExit("no LoopState in state/models.py")


def is_state(node: ast.expr) -> bool:
    return (isinstance(node, ast.Name) and node.id == "state") or (
        isinstance(node, ast.Attribute) and node.attr == "state"
    )


def targets(node: ast.AST) -> list[ast.expr]:
    if isinstance(node, ast.Assign):
        found: list[ast.expr] = []
        for target in node.targets:
            found.extend(target.elts if isinstance(target, ast.Tuple) else [target])
        return found
    if isinstance(node, ast.AugAssign | ast.AnnAssign) and node.value is not None:
        return [node.target]
    return []


def state_writes(tree: ast.AST, fields: set[str]) -> list[str]:
    """The LoopState fields written in `tree`, once per write."""
    written = []
    for node in ast.walk(tree):
        for target in targets(node):
            while isinstance(target, ast.Subscript):
                target = target.value  # state.steps[x] = ... writes `steps`
            if isinstance(target, ast.Attribute) and target.attr in fields and is_state(target.value):
                written.append(target.attr)
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in MUTATORS:
            owner = node.func.value
            if isinstance(owner, ast.Attribute) and owner.attr in fields and is_state(owner.value):
                written.append(owner.attr)
    return written


PARTS = {"engine", "loop", "host", "run", "runner", "limits", "follower", "waves", "commits", "reviewer"}


def chain(node: ast.expr) -> list[str]:
    names = []
    while isinstance(node, ast.Attribute):
        names.append(node.attr)
        node = node.value
    if isinstance(node, ast.Name):
        names.append(node.id)
    return names


def late_assignments(tree: ast.AST) -> list[int]:
    """The lines that set an attribute of one of the run's parts from outside that part: the
    owner is reached through a part's name (`engine.reviewer = ...`, `loop.engine.runner.wrapper
    = ...`, `self.engine.held = ...`), never `self.x = ...` itself."""
    lines = []
    for node in ast.walk(tree):
        for target in targets(node):
            if isinstance(target, ast.Attribute) and set(chain(target.value)) & PARTS:
                lines.append(node.lineno)
    return lines


def main() -> None:
    root = Path(sys.argv[1] if len(sys.argv) > 1 else Path(__file__).resolve().parent.parent)
    package = root / "akira_cli"
    fields = state_fields(package)
    writes: Counter[str] = Counter()
    iteration_writes: Counter[str] = Counter()
    late: Counter[str] = Counter()
    sites: dict[str, list[int]] = {}
    ignores = 0
    for path in sorted(package.rglob("*.py")):
        name = str(path.relative_to(package))
        text = path.read_text()
        tree = ast.parse(text)
        if name != "loop/iteration.py":
            found = state_writes(tree, fields)
            writes[name] += len(found)
            iteration_writes[name] += sum(field in ITERATION_PART for field in found)
        if not name.startswith("reasoning/"):  # its `run` is a record of one reasoning pass
            lines = late_assignments(tree)
            late[name] += len(lines)
            sites[name] = lines
        if name.split("/")[0] in WIRED:
            ignores += text.count("type: ignore")
    adapters = {n: c for n, c in writes.items() if c and n.split("/")[0] in ADAPTERS}
    print(f"checkout: {root}")
    modules = sum(1 for count in writes.values() if count)
    print(f"state writes outside loop/iteration.py: {sum(writes.values())} in {modules} modules")
    part = ", ".join(sorted(ITERATION_PART))
    print(f"  of the iteration's part ({part}): {sum(iteration_writes.values())}")
    for name, count in sorted(iteration_writes.items()):
        if count:
            print(f"    {name}: {count}")
    print(f"  in adapters: {sum(adapters.values())}")
    for name, count in sorted(adapters.items()):
        print(f"    {name}: {count}")
    print(f"late assignments of a wired part's attributes: {sum(late.values())}")
    for name, count in sorted(late.items()):
        if count:
            print(f"    {name}: {count} (lines {', '.join(map(str, sites[name]))})")
    print(f"type: ignore in {', '.join(WIRED)}: {ignores}")


if __name__ == "__main__":
    main()
