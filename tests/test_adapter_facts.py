"""The adapters return what they found or did and leave the state to the loop (and the API):
read from the source with `ast`, no adapter module sets, deletes or grows a field of a
`LoopState` it holds (`state.x = ...`, `self.loop.state.x += ...`, `del state.x[...]`,
`state.x.append(...)`)."""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[1] / "akira_cli"
ADAPTERS = ("git", "follow", "review", "reflection", "exam", "agents")
GROWING = {"append", "add", "extend", "insert", "pop", "remove", "clear", "update"}


def state_field(node: ast.expr) -> str | None:
    """The `LoopState` field `node` reaches (`state.x`, `self.state.x`, `self.loop.state.x`,
    and anything below it), else None."""
    while isinstance(node, ast.Subscript):
        node = node.value
    chain: list[str] = []
    while isinstance(node, ast.Attribute):
        chain.append(node.attr)
        node = node.value
    if not isinstance(node, ast.Name):
        return None
    chain.append(node.id)
    chain.reverse()  # root first: ["self", "loop", "state", "git", "pr_url"]
    at = chain.index("state") if "state" in chain else -1
    if at < 0 or chain[:at] not in ([], ["self"], ["self", "loop"]) or len(chain) <= at + 1:
        return None
    return chain[at + 1]


def writes(path: Path) -> list[tuple[int, str]]:
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        targets: list[ast.expr] = []
        if isinstance(node, ast.Assign):
            targets = [
                t
                for target in node.targets
                for t in (target.elts if isinstance(target, ast.Tuple) else [target])
            ]
        elif isinstance(node, ast.AugAssign | ast.AnnAssign):
            targets = [node.target]
        elif isinstance(node, ast.Delete):
            targets = node.targets
        elif (
            isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in GROWING
        ):
            targets = [node.func.value]
        found += [(node.lineno, name) for target in targets if (name := state_field(target)) is not None]
    return found


def test_the_checker_sees_every_way_of_writing_a_field() -> None:
    def seen(line: str) -> str | None:
        node = ast.parse(line).body[0]
        if isinstance(node, ast.Expr):
            assert isinstance(node.value, ast.Call) and isinstance(node.value.func, ast.Attribute)
            return state_field(node.value.func.value)
        target = node.targets[0] if isinstance(node, ast.Assign | ast.Delete) else node.target  # type: ignore[attr-defined]
        return state_field(target.elts[0] if isinstance(target, ast.Tuple) else target)

    assert seen("state.status = 'paused'") == "status"
    assert seen("self.loop.state.pull_request = watch") == "pull_request"
    assert seen("state.reviews[verdict] -= 1") == "reviews"
    assert seen("del state.completed_steps[3:]") == "completed_steps"
    assert seen("state.metrics.reflection_tokens += 3") == "metrics"
    assert seen("self.state.systemic_issues.append(signature)") == "systemic_issues"
    assert seen("state.moved_from, other = None, 1") == "moved_from"
    assert seen("record.phase = 'green'") is None
    assert seen("other.state.x = 1") is None


def test_no_adapter_writes_the_loop_state() -> None:
    found = [
        f"{where}:{line} sets state.{name}"
        for folder in ADAPTERS
        for path in sorted((PACKAGE / folder).rglob("*.py"))
        for line, name in writes(path)
        if (where := path.relative_to(PACKAGE).as_posix())
    ]
    assert found == []
