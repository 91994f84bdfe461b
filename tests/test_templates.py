"""Templates are filled strictly: a misspelt placeholder, on either side, is an error at once, and
every shipped template gets a value for each placeholder from every call in the code."""

from __future__ import annotations

import ast
import importlib
import shutil
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from string import Template

import pytest

import akira_cli
from akira_cli.templates import render

PACKAGE = Path(akira_cli.__file__).parent
TEMPLATES = PACKAGE / "templates"
SHIPPED = sorted(path.name for path in TEMPLATES.glob("*.md"))
REASONING = {"render", "messages"}
"""`akira_cli/reasoning/prompts.py`'s functions: `render("plan")` fills `reasoning_plan.md`."""
INDIRECT = {
    # agents/llm.py: `_prompt(self.template, ...)`, self.template being one of these two
    ("agents/llm.py", "self.template"): ('"llm_agent_step.md"', '"llm_agent_direct.md"'),
    # reasoning/validation.py: `_judge(report, f"validate_{artifact}", ...)`, artifact a Literal
    ("reasoning/validation.py", "f'validate_{artifact}'"): ('"plan"', '"execution"'),
}
"""Calls whose template is not a string in the call; each name must appear in that module."""
JUDGE_ADDS = {"tools", "host_issues"}
"""What `Validator._judge` passes besides its caller's values."""


@dataclass
class Call:
    where: str
    template: str
    keywords: set[str]


def names(module: str, node: ast.expr) -> list[str]:
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return [node.value]
    shown = ast.unparse(node)
    choices = INDIRECT[(module, shown)]
    source = (PACKAGE / module).read_text()
    assert all(choice in source for choice in choices), (module, shown, choices)
    bare = [choice.strip('"') for choice in choices]
    return [f"validate_{choice}" for choice in bare] if shown.startswith("f'validate_") else bare


def calls() -> Iterator[Call]:
    """Every call in akira_cli that fills a template, with the keywords it passes."""
    for path in sorted(PACKAGE.rglob("*.py")):
        module = path.relative_to(PACKAGE).as_posix()
        tree = ast.parse(path.read_text())
        imports_render = any(
            isinstance(node, ast.ImportFrom) and node.module == "akira_cli.templates"
            for node in ast.walk(tree)
        )
        for node in ast.walk(tree):
            if not isinstance(node, ast.Call) or not node.args:
                continue
            func = node.func
            judge = (
                isinstance(func, ast.Attribute)
                and func.attr == "_judge"
                and module == "reasoning/validation.py"
            )
            first = node.args[1] if judge else node.args[0]
            if isinstance(first, ast.Name):
                continue  # a helper passing its own `name` on: its callers are checked
            keywords = {word.arg for word in node.keywords if word.arg is not None}
            keywords |= {"**"} if any(word.arg is None for word in node.keywords) else set()
            where = f"{module}:{node.lineno}"
            plain = isinstance(func, ast.Name) and (
                (func.id == "render" and imports_render)
                or (func.id == "_prompt" and module == "agents/llm.py")
            )
            if plain:
                yield from (Call(where, name, keywords) for name in names(module, first))
            elif module.startswith("reasoning/") and (
                (
                    isinstance(func, ast.Attribute)
                    and func.attr in REASONING
                    and ast.unparse(func.value) == "prompts"
                )
                or (isinstance(func, ast.Name) and func.id in REASONING and module == "reasoning/prompts.py")
            ):
                for name in names(module, first):
                    yield Call(where, f"reasoning_{name}.md", keywords)
                called = func.attr if isinstance(func, ast.Attribute) else func.id
                if called == "messages":
                    yield Call(where, "reasoning_system.md", set())
            elif judge:
                for name in names(module, first):
                    yield Call(where, f"reasoning_{name}.md", keywords | JUDGE_ADDS)


def placeholders(name: str) -> set[str]:
    return set(Template((TEMPLATES / name).read_text()).get_identifiers())


@cache
def found() -> list[Call]:
    return list(calls())


def test_every_shipped_template_renders_with_what_the_code_passes() -> None:
    every = found()
    assert {call.template for call in every} == set(SHIPPED), "a template no code fills, or a call to none"
    for call in every:
        wanted = placeholders(call.template)
        assert "**" not in call.keywords, f"{call.where}: **values cannot be checked; name them"
        assert wanted <= call.keywords, (call, wanted)
        text = render(call.template, **{word: f"<{word}>" for word in call.keywords})
        assert all(f"<{word}>" in text for word in wanted), call


@pytest.fixture
def copied(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The templates package copied under another name, to be edited as a person might."""
    shutil.copytree(TEMPLATES, tmp_path / "copied_templates", ignore=shutil.ignore_patterns("__pycache__"))
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.delitem(sys.modules, "copied_templates", raising=False)
    return tmp_path / "copied_templates"


def step_values() -> dict[str, str]:
    (call,) = [call for call in found() if call.template == "step.md"]
    return {word: f"<{word}>" for word in call.keywords}


def test_a_misspelt_placeholder_in_a_template_fails_loudly(copied: Path) -> None:
    step = copied / "step.md"
    assert "$step_title" in step.read_text()
    step.write_text(step.read_text().replace("$step_title", "$step_titel"))
    with pytest.raises(ValueError, match=r"template step\.md: no value for step_titel$"):
        importlib.import_module("copied_templates").render("step.md", **step_values())


def test_a_misspelt_value_in_the_code_fails_loudly() -> None:
    values = step_values()
    values["step_titel"] = values.pop("step_title")
    with pytest.raises(ValueError, match=r"template step\.md: no value for step_title$"):
        render("step.md", **values)


def test_a_lone_dollar_in_a_template_fails_loudly(copied: Path) -> None:
    (copied / "commits.md").write_text((copied / "commits.md").read_text() + "\nCosts $5.\n")
    with pytest.raises(ValueError, match=r"template commits\.md: no value for a lone \$"):
        importlib.import_module("copied_templates").render("commits.md")
