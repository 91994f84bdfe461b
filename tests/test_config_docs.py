"""docs/configuration.md is generated from the configuration's models and kept current."""

from __future__ import annotations

import subprocess
import sys
import typing
from pathlib import Path

from pydantic import BaseModel

from akira_cli import config_docs
from akira_cli.check_settings import ProjectCheck
from akira_cli.config import Config
from akira_cli.sections import ModelPrice

REPO = Path(__file__).resolve().parent.parent


def sections() -> dict[str, type[BaseModel]]:
    found: dict[str, type[BaseModel]] = {"check": ProjectCheck, "llm.prices.<model>": ModelPrice}
    for name, field in Config.model_fields.items():
        args = [arg for arg in typing.get_args(field.annotation) if arg is not type(None)]
        model = args[0] if args else field.annotation
        if isinstance(model, type) and issubclass(model, BaseModel):
            found[name] = model
    return found


def test_the_committed_reference_is_what_the_models_generate() -> None:
    committed = (REPO / "docs" / "configuration.md").read_text(encoding="utf-8")
    assert committed == config_docs.render(), (
        "docs/configuration.md is out of date with akira_cli/sections.py; regenerate it with: "
        f"{config_docs.COMMAND}"
    )


def test_every_section_and_key_is_in_the_reference_with_its_description() -> None:
    text = config_docs.render()
    assert len(sections()) == 18  # 16 sections, a project check, and llm.prices
    for name, model in sections().items():
        docs = config_docs.docstrings(model)
        assert docs[""], f"give {model.__name__} a docstring in akira_cli/sections.py"
        for key in model.model_fields:
            assert docs.get(key), f"give {name}.{key} a docstring in akira_cli/sections.py"
            row = f"| `{'' if name == 'check' else name + '.'}{key}` |"
            assert row in text and docs[key].replace("|", "\\|") in text, row


def test_a_default_type_and_bound_are_read_from_the_model() -> None:
    text = config_docs.render()
    assert (
        "| `autonomous_loop.parallel` | integer (≥ 1, ≤ 64) | `1` | How many `[P]` steps of a wave run"
        in text
    )
    assert '| `git.worktree_link` | list of text | `["node_modules", ".venv", "venv"]` |' in text
    assert '| `sandbox.mode` | `auto` \\| `on` \\| `off` | `"auto"` |' in text
    assert "| `run` | text | required |" in text


def test_the_command_writes_the_reference(tmp_path: Path) -> None:
    target = tmp_path / "out" / "configuration.md"
    done = subprocess.run(
        [sys.executable, "-m", "akira_cli.config_docs", str(target)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    assert target.read_text(encoding="utf-8") == config_docs.render()


def test_the_cli_does_not_import_the_generator() -> None:
    probe = "import sys; import akira_cli.cli; print('akira_cli.config_docs' in sys.modules)"
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=120)
    assert done.stdout.strip() == "False", done.stderr
