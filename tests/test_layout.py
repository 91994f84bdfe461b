"""What the wheel holds and how the tests are laid out, read from the files (`tomllib`, `ast`):
the wheel ships `akira_cli` and nothing the tests use, the package never imports the tests'
support, and no test module imports another test module or a conftest.py."""

from __future__ import annotations

import ast
import tomllib
from fnmatch import fnmatchcase
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
TESTS = REPO / "tests"


def shipped_packages() -> list[str]:
    """The packages `pyproject.toml`'s `[tool.setuptools.packages.find]` puts in the wheel, found
    the way setuptools finds them: folders with an `__init__.py` below the project's root (a
    folder that is not a package is not entered), kept when a name matches `include` and no
    name matches `exclude`."""
    config = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))
    find = config["tool"]["setuptools"]["packages"]["find"]
    include, exclude = find.get("include", ["*"]), find.get("exclude", [])
    found: list[str] = []
    folders = [p for p in REPO.iterdir() if p.is_dir()]
    while folders:
        folder = folders.pop()
        if "." in folder.name or not (folder / "__init__.py").is_file():
            continue
        name = ".".join(folder.relative_to(REPO).parts)
        if any(fnmatchcase(name, p) for p in include) and not any(fnmatchcase(name, p) for p in exclude):
            found.append(name)
        folders += [p for p in folder.iterdir() if p.is_dir()]
    return sorted(found)


def imported(path: Path) -> list[str]:
    """Every module name `path` imports, at the top or inside a function."""
    names: list[str] = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            names += [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module:
            names.append(node.module)
    return names


def test_the_wheel_ships_the_package_and_none_of_the_tests_support() -> None:
    packages = shipped_packages()
    assert "akira_cli" in packages and "akira_cli.loop" in packages, packages
    assert all(name == "akira_cli" or name.startswith("akira_cli.") for name in packages), packages
    support = [name for name in packages if {"testing", "tests", "support"} & set(name.split("."))]
    assert support == [], f"test support in the wheel: {support}"
    servers = TESTS / "support" / "servers"
    assert (servers / "fake_openai.py").is_file() and (servers / "scripted.py").is_file()


def test_the_package_never_imports_the_tests() -> None:
    found = {
        f"{path.relative_to(REPO)}: {name}"
        for path in (REPO / "akira_cli").rglob("*.py")
        for name in imported(path)
        if name.split(".")[0] in {"tests", "conftest"} or name.startswith("akira_cli.testing")
    }
    assert found == set()


def test_no_test_module_imports_another_test_module_or_a_conftest() -> None:
    found = {
        f"{path.relative_to(REPO)}: {name}"
        for path in TESTS.rglob("*.py")
        for name in imported(path)
        if any(part.startswith("test_") or part == "conftest" for part in name.split("."))
    }
    assert found == set(), "import from tests/support/ or take a conftest.py fixture instead"
