"""The house's structure, read from the package's source (its imports, with `ast`): no import
circle, not even a type-only or a function-level one; the loop's core imports no adapter; the
run is assembled in one module, which every front end calls; no module over 400 lines; the
loop's and the per-step engine's main paths each read on one screen."""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[1] / "akira_cli"
ADAPTERS = (
    "akira_cli.git",
    "akira_cli.review",
    "akira_cli.reports",
    "akira_cli.handoff",
    "akira_cli.sandbox",
    "akira_cli.agents.presets",
    "akira_cli.llm",
    "akira_cli.api",
    "akira_cli.cli",
    "akira_cli.fleet",
    "akira_cli.mcp_server",
)
"""What plugs into the loop, and the front ends above it."""


def modules() -> dict[str, Path]:
    found = {}
    for path in PACKAGE.rglob("*.py"):
        parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        found[".".join(parts)] = path
    return found


def imports(name: str, path: Path, known: dict[str, Path]) -> set[str]:
    """Every akira module `name` imports, wherever the import stands (top, TYPE_CHECKING, a
    function): `from pkg import mod` names the module, `from mod import thing` the module."""
    found = set()
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        targets: list[str] = []
        if isinstance(node, ast.Import):
            targets = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parts = package.split(".")
                base = ".".join(parts[: len(parts) - node.level + 1] + ([base] if base else []))
            targets = [
                f"{base}.{alias.name}" if f"{base}.{alias.name}" in known else base for alias in node.names
            ]
        for target in targets:
            while target not in known and "." in target:
                target = target.rpartition(".")[0]
            if target in known and target != name:
                found.add(target)
    return found


def graph() -> dict[str, set[str]]:
    known = modules()
    return {name: imports(name, path, known) for name, path in known.items()}


def circles(edges: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components with more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for other in sorted(edges[node]):
            if other not in index:
                visit(other)
                low[node] = min(low[node], low[other])
            elif other in on_stack:
                low[node] = min(low[node], index[other])
        if low[node] == index[node]:
            component = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.append(member)
                if member == node:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for node in sorted(edges):
        if node not in index:
            visit(node)
    return found


def test_the_checker_finds_a_circle() -> None:
    assert circles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    assert circles({"a": {"b"}, "b": set()}) == []


def test_there_is_no_import_circle() -> None:
    assert circles(graph()) == []


def test_the_loop_core_imports_no_adapter() -> None:
    """Every module of `loop/`, found on disk: it imports no adapter, only the Protocols the
    loop declares (`loop/partners.py`), which the adapters implement; and the review, an
    adapter, imports of the loop only those Protocols."""
    edges = graph()
    core = [name for name in edges if name.startswith("akira_cli.loop.")]
    assert {"akira_cli.loop.core", "akira_cli.loop.engine", "akira_cli.loop.waves"} <= set(core)
    for name in core:
        adapters = sorted(m for m in edges[name] if m.startswith(ADAPTERS))
        assert adapters == [], f"{name} imports {adapters}"
    for name in (name for name in edges if name.startswith("akira_cli.review")):
        loop = sorted(m for m in edges[name] if m.startswith("akira_cli.loop"))
        assert set(loop) <= {"akira_cli.loop.partners"}, f"{name} imports {loop}"
    assert "akira_cli.loop.lanes" not in edges["akira_cli.review.gate"]


def test_the_run_is_assembled_in_one_module_that_every_front_end_calls() -> None:
    edges = graph()
    builders = {name for name, found in edges.items() if "akira_cli.loop.core" in found}
    assert builders - {"akira_cli.loop.waves", "akira_cli.loop.session"} == {"akira_cli.api.run"}
    callers = {name for name, found in edges.items() if "akira_cli.api.run" in found}
    assert callers <= {"akira_cli.api.loops", "akira_cli.api.agent_preflight"}, callers
    for front in ("akira_cli.cli.loop_cmd", "akira_cli.fleet.child", "akira_cli.mcp_server.tools"):
        assert "akira_cli.api" in edges[front], front
    for front in ("akira_cli.fleet.child", "akira_cli.fleet.loop_run", "akira_cli.mcp_server.tools"):
        assert not any(m.startswith("akira_cli.cli") for m in edges[front]), front


def test_no_module_is_over_400_lines() -> None:
    long = {name: n for name, path in modules().items() if (n := len(path.read_text().splitlines())) > 400}
    assert long == {}


MAIN_PATHS = {
    ("loop/core.py", "AutonomousLoop"): ("run", "work", "boundary", "iterate"),
    ("loop/engine.py", "StepEngine"): ("attempt", "start", "run", "finish"),
}
ONE_SCREEN = 64


def method_lines(path: Path, cls: str) -> dict[str, int]:
    """Each method of `cls` in `path` and its lines, from its `def` to its last line."""
    for node in ast.parse(path.read_text()).body:
        if isinstance(node, ast.ClassDef) and node.name == cls:
            return {
                item.name: (item.end_lineno or item.lineno) - item.lineno + 1
                for item in node.body
                if isinstance(item, ast.FunctionDef)
            }
    raise AssertionError(f"{cls} is not in {path}")


def test_the_loop_and_the_engine_each_read_on_one_screen() -> None:
    """The loop's main path (a run, its work, the boundary before each step, one attempt) and
    the engine's (an attempt: its start, its run, its finish) stay short: what they call holds
    the detail."""
    for (module, cls), names in MAIN_PATHS.items():
        lines = method_lines(PACKAGE / module, cls)
        assert set(names) <= set(lines), (module, names)
        total = sum(lines[name] for name in names)
        assert total <= ONE_SCREEN, (
            f"{cls}'s main path is {total} lines: {dict((n, lines[n]) for n in names)}"
        )
