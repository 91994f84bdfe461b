"""The documentation stays true to the repository: the README is a newcomer's page, every link
and anchor in the docs resolves, every module and test they name exists, and no page cites a
document outside the repository."""

from __future__ import annotations

import re
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
PAGES = [REPO / "README.md", REPO / "CONTRIBUTING.md", *sorted((REPO / "docs").glob("*.md"))]
SETUP = (
    "python3 -m venv .venv && .venv/bin/pip install -q -e . && d=$(mktemp -d) && "
    '.venv/bin/akira init "$d" && .venv/bin/akira loop start --root "$d" --task Specs/example/tasks.md'
)
TESTS = 'python3 -m venv .venv && .venv/bin/pip install -q -e ".[test]" && .venv/bin/python -m pytest -q'


def prose(page: Path) -> str:
    """The page without its fenced blocks (headings and links inside them are examples)."""
    return re.sub(r"^```.*?^```", "", page.read_text(encoding="utf-8"), flags=re.M | re.S)


def anchor(heading: str) -> str:
    text = re.sub(r"[^\w\- ]", "", heading.strip().lower())
    return text.replace(" ", "-")


def anchors(page: Path) -> set[str]:
    return {anchor(line.lstrip("#")) for line in prose(page).splitlines() if line.startswith("#")}


def test_the_readme_is_a_newcomers_page_with_the_set_up_commands_first() -> None:
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    lines = readme.splitlines()
    assert len(lines) <= 250, f"the README has {len(lines)} lines; move detail to docs/"
    assert lines[0] == "# akira" and "task list" in " ".join(lines[1:4])
    blocks = re.findall(r"^```bash\n(.*?)\n```", readme, flags=re.M | re.S)
    assert blocks[:2] == [SETUP, TESTS]
    assert readme.index(SETUP) < readme.index("\n## ")  # before any section
    for page in sorted((REPO / "docs").glob("*.md")):
        assert f"(docs/{page.name}" in readme, f"the README links no docs/{page.name}"


def test_every_link_and_anchor_in_the_docs_resolves() -> None:
    broken, checked = [], 0
    for page in PAGES:
        for target in re.findall(r"\]\(([^)\s]+)\)", prose(page)):
            if re.match(r"[a-z]+:", target):
                continue
            checked += 1
            path, _, fragment = target.partition("#")
            found = (page.parent / path).resolve() if path else page
            if not found.exists() or (fragment and fragment not in anchors(found)):
                broken.append(f"{page.relative_to(REPO)}: {target}")
    assert not broken, broken
    assert checked >= 30  # the README's table of pages and the pages' links to each other were read


def test_every_docs_page_and_heading_the_code_points_to_exists() -> None:
    """A comment may point to `docs/design.md#the-loop`: the page and its heading must exist."""
    broken = []
    for folder in ("akira_cli", "tests", "benchmarks"):
        for source in (REPO / folder).rglob("*.py"):
            for name, fragment in re.findall(r"docs/([\w-]+\.md)(?:#([\w-]+))?", source.read_text()):
                page = REPO / "docs" / name
                if not page.exists() or (fragment and fragment not in anchors(page)):
                    broken.append(f"{source.relative_to(REPO)}: docs/{name}#{fragment}")
    assert not broken, broken


def test_every_test_a_page_names_exists() -> None:
    named = 0
    for page in PAGES:
        for path, name in re.findall(r"`(tests/[\w/]+\.py)::(\w+)`", page.read_text(encoding="utf-8")):
            named += 1
            source = REPO / path
            assert source.exists(), f"{page.name} names {path}, which is gone"
            assert re.search(rf"^(async )?def {name}\(", source.read_text(), flags=re.M), (
                f"{page.name} names {path}::{name}, which is gone"
            )
    assert named >= 80  # every promise in docs/guarantees.md names its tests


def test_every_module_a_page_names_exists() -> None:
    """A path from the repository, the package, tests/ or benchmarks/; a bare name (`core.py`
    beside the folder it is in) anywhere in them. `src/store.py` is the sample task file's; a file
    a step's exam holds (`conftest.py`, `pytest.py` beside `python -m pytest`) is a project's."""
    from akira_cli.exam.files import ExamRules

    exam = ExamRules.of(["python -m pytest"])
    roots = [REPO, REPO / "akira_cli", REPO / "tests", REPO / "benchmarks"]
    names = {path.name for root in roots[1:] for path in root.rglob("*.py")}
    missing, checked = [], 0
    for page in PAGES:
        for path in set(re.findall(r"`((?:[\w-]+/)*[\w-]+\.py)`", page.read_text(encoding="utf-8"))):
            checked += 1
            if path == "src/store.py" or ("/" not in path and path in names) or exam.kind(path):
                continue
            if not any((root / path).exists() for root in roots):
                missing.append(f"{page.name}: {path}")
    assert not missing, missing
    assert checked >= 100  # docs/design.md and the guides name the modules they describe


def test_no_page_cites_a_document_outside_the_repository() -> None:
    for page in PAGES:
        text = page.read_text(encoding="utf-8")
        found = re.findall(r"\bSPEC(?: section)? \d+|\bseed \d+|\bissue \d+|\bSPEC\.md\b", text)
        assert not found, f"{page.name}: {found}"


def test_every_command_and_option_the_command_lists_name_exists() -> None:
    """The command lists of the README and docs/commands.md name commands and options that
    `akira` has (a line is a command and what it takes; `a | b` names sibling commands)."""
    from typing import Any

    import typer

    from akira_cli.cli import app

    def flags(command: Any) -> set[str]:
        return {flag for param in command.params for flag in (*param.opts, *param.secondary_opts)}

    top = typer.main.get_command(app)
    checked = 0
    for page in (REPO / "README.md", REPO / "docs" / "commands.md"):
        listing = re.search(r"^```\n(akira .*?)^```", page.read_text(encoding="utf-8"), flags=re.M | re.S)
        assert listing, f"{page.name} has no command list"
        named: list[Any] = []
        for line in listing.group(1).splitlines():
            words = line.split("#", 1)[0].split()
            if words[:1] == ["akira"]:  # else the line goes on with the last command's options
                parent, command, words = top, top, words[1:]
                while words and words[0] in getattr(command, "commands", {}):
                    parent, command = command, command.commands[words.pop(0)]
                named = [command]
                while words[:1] == ["|"]:
                    assert words[1] in parent.commands, f"{page.name}: '{line}': no command {words[1]}"
                    named.append(parent.commands[words[1]])
                    words = words[2:]
            for flag in re.findall(r"(?<![\w-])--[a-z][\w-]*", " ".join(words)):
                for each in named:
                    assert flag in flags(each), f"{page.name}: '{line.strip()}': {each.name} has no {flag}"
                    checked += 1
    assert checked >= 40
