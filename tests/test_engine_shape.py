"""The engine's shape, read from the package's source (with `ast`): the engine runs every
attempt the same way and the lane it is handed is what differs between the main work tree and a
wave step's slot; what an outcome does is a part it holds, not a base class; the follower is
handed what it works with and never holds the loop; the agent's work folder is computed in one
place, and every wait of the loop before a try again goes through one `Retries`."""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[1] / "akira_cli"


def tree(module: str) -> ast.Module:
    return ast.parse((PACKAGE / module).read_text(encoding="utf-8"))


def cls(module: str, name: str) -> ast.ClassDef:
    for node in tree(module).body:
        if isinstance(node, ast.ClassDef) and node.name == name:
            return node
    raise AssertionError(f"{name} is not in {module}")


def named(node: ast.expr) -> str:
    return node.id if isinstance(node, ast.Name) else node.attr if isinstance(node, ast.Attribute) else ""


def fields(node: ast.ClassDef) -> list[str]:
    return [
        item.target.id
        for item in node.body
        if isinstance(item, ast.AnnAssign) and isinstance(item.target, ast.Name)
    ]


def test_the_engine_asks_no_lane_which_mode_it_is() -> None:
    comparisons = [
        ast.unparse(node)
        for node in ast.walk(tree("loop/engine.py"))
        if isinstance(node, ast.Compare)
        and any(isinstance(op, ast.Is | ast.IsNot) for op in node.ops)
        and any("lane" in named(side) for side in [node.left, *node.comparators])
    ]
    assert comparisons == []
    engine = cls("loop/engine.py", "StepEngine")
    assert engine.bases == [], "the engine holds its parts; it inherits none"
    assert "outcomes" in fields(engine)
    for lane in ("MainLane", "WaveLane"):  # each answers every hook of the Lane protocol
        hooks = {item.name for item in cls("loop/lanes.py", "Lane").body if isinstance(item, ast.FunctionDef)}
        methods = {item.name for item in cls("loop/lanes.py", lane).body if isinstance(item, ast.FunctionDef)}
        assert hooks - {"runner", "witness", "workdir", "agent_for", "slot", "path"} <= methods, lane


def test_the_follower_is_handed_what_it_works_with() -> None:
    follower = tree("follow/follower.py")
    assert not [n.name for n in follower.body if isinstance(n, ast.ClassDef) and n.name == "Host"]
    assert "loop" not in fields(cls("follow/follower.py", "Follower"))
    reaching = [
        ast.unparse(node)
        for node in ast.walk(follower)
        if isinstance(node, ast.Attribute) and named(node.value) == "loop"
    ]
    assert reaching == [], "the follower reaches into the loop"
    loop = fields(cls("loop/core.py", "AutonomousLoop"))
    assert "follower" in loop and "make_follower" not in loop
    assert "type: ignore" not in (PACKAGE / "api/run.py").read_text(encoding="utf-8")


def test_the_agents_work_folder_is_computed_in_one_place() -> None:
    """`agent.workdir` joined to a folder anywhere but `workspace.work_folder` is a second
    way of computing it."""
    joined = []
    for path in PACKAGE.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Div):
                right = node.right
                if (
                    isinstance(right, ast.Attribute)
                    and right.attr == "workdir"
                    and named(right.value) == "agent"
                ):
                    joined.append(f"{path.relative_to(PACKAGE)}:{node.lineno}")
    assert joined == []
    for module in ("api/run.py", "loop/engine.py", "doctor/__init__.py"):
        assert "work_folder(" in (PACKAGE / module).read_text(encoding="utf-8"), module


def test_every_wait_of_the_loop_before_a_try_again_goes_through_one_retries() -> None:
    for module in sorted((PACKAGE / "loop").glob("*.py")):
        calls = [
            node.lineno
            for node in ast.walk(ast.parse(module.read_text(encoding="utf-8")))
            if isinstance(node, ast.Call) and named(node.func) == "backoff"
        ]
        assert calls == [], f"loop/{module.name} computes its own backoff at lines {calls}"
    for module in ("loop/engine.py", "loop/provider_faults.py", "loop/usage_limits.py"):
        made = [
            node
            for node in ast.walk(tree(module))
            if isinstance(node, ast.Call) and named(node.func) == "Retries"
        ]
        assert made, f"{module} waits without Retries"
