"""Real task files from public repositories (tests/data/corpus, sources in SOURCES.tsv): Kiro's
.kiro/specs/*/tasks.md, spec-kit's specs/NNN-*/tasks.md and OpenSpec's changes/*/tasks.md.

On every file: every checkbox line is a step and nothing else is; ids are unique; the hierarchy
is plausible; a checkbox write changes one byte (LF, CRLF and with a BOM); and no directive is
read from prose. The checks below scan the files independently of the parser."""

from __future__ import annotations

import csv
import re
from pathlib import Path

import pytest

from akira_cli.tasks.model import TaskFile
from akira_cli.tasks.parser import parse_task_text
from akira_cli.tasks.writeback import set_box

CORPUS = Path(__file__).parent / "data" / "corpus"
SOURCES = list(csv.DictReader((CORPUS / "SOURCES.tsv").open(encoding="utf-8"), delimiter="\t"))
FILES = sorted(CORPUS.glob("*/*.md"))
CHECKBOX = re.compile(r"[ \t]*(?:[-*+]|\d+[.)])[ \t]+\[[ xX~-]\](?!\()")
STRICT = re.compile(
    r"[ \t]*[-*+][ \t]+[_*]{0,2}(?:run|fallback|verify|exists)[_*]{0,2}[ \t]*:[_*]{0,2}[ \t]*"
    r"(`+)[^`].*?\1[ \t]*[_*]{0,2}[ \t]*$",
    re.I,
)


def checkbox_lines(text: str) -> set[int]:
    """Line numbers of checkbox items outside code fences and HTML comments."""
    found, fence, comment = set(), "", False
    for number, line in enumerate(text.split("\n"), start=1):
        stripped = line.strip()
        if comment:
            comment = "-->" not in line
            continue
        if fence:
            fence = "" if stripped.startswith(fence) and set(stripped) == {fence[0]} else fence
            continue
        if stripped.startswith(("```", "~~~")) and not (stripped.startswith("```") and "`" in stripped[3:]):
            fence = stripped[:3]
            continue
        if "<!--" in line and "-->" not in line.split("<!--", 1)[1]:
            comment = True
            line = line.split("<!--", 1)[0]
        line = re.sub(r"<!--.*?-->", "", line)
        if CHECKBOX.match(line):
            found.add(number)
    return found


def parse(path: Path, data: bytes | None = None) -> TaskFile:
    return parse_task_text(path.read_bytes() if data is None else data, path)


def test_the_corpus_is_real_and_large_enough() -> None:
    listed = {row["file"] for row in SOURCES}
    assert listed == {f"{p.parent.name}/{p.name}" for p in FILES}
    tools = [row["file"].split("/")[0] for row in SOURCES]
    assert tools.count("kiro") >= 40 and tools.count("spec-kit") + tools.count("openspec") >= 20
    assert all(re.fullmatch(r"[0-9a-f]{40}", row["commit"]) for row in SOURCES)
    assert len({row["repository"] for row in SOURCES}) >= 10


@pytest.mark.parametrize("path", FILES, ids=[f"{p.parent.name}/{p.stem[:50]}" for p in FILES])
def test_a_real_task_file(path: Path) -> None:
    data = path.read_bytes()
    text = data.decode("utf-8").lstrip("\ufeff")
    task = parse(path)
    steps = task.steps
    assert {s.line for s in steps} == checkbox_lines(text)
    assert len({s.id for s in steps}) == len(steps)
    by_id = {s.id: s for s in steps}
    for step in steps:
        if step.parent_id is not None:
            parent = by_id[step.parent_id]
            assert parent.line < step.line and step.id in parent.children
            assert step.depth == parent.depth + 1
        assert all(by_id[child].parent_id == step.id for child in step.children)
    lines = text.split("\n")
    first = min(s.line for s in steps)
    strict = sum(1 for line in lines[first:] if STRICT.match(line))
    read = sum(len(s.run) + len(s.fallback) + len(s.verify) + len(s.exists) for s in steps)
    assert read <= strict  # nothing but the strict shape is ever a directive (and never prose)


@pytest.mark.parametrize("variant", ["lf", "crlf", "bom"])
@pytest.mark.parametrize("path", FILES[::4], ids=[f"{p.parent.name}/{p.stem[:50]}" for p in FILES[::4]])
def test_a_checkbox_write_changes_one_byte(tmp_path: Path, path: Path, variant: str) -> None:
    data = path.read_bytes()
    if variant != "lf":
        data = data.replace(b"\r\n", b"\n").replace(b"\n", b"\r\n")
    if variant == "bom":
        data = b"\xef\xbb\xbf" + data.removeprefix(b"\xef\xbb\xbf")
    copy = tmp_path / "tasks.md"
    copy.write_bytes(data)
    steps = parse(copy).steps
    for step in (steps[0], steps[len(steps) // 2], steps[-1]):
        before = copy.read_bytes()
        set_box(copy, step.id, step.box)
        assert copy.read_bytes() == before
        new = " " if step.ticked else "x"
        set_box(copy, step.id, new)
        after = copy.read_bytes()
        changed = [i for i, (a, b) in enumerate(zip(before, after, strict=True)) if a != b]
        assert changed == [step.box_offset] and after[step.box_offset : step.box_offset + 1] == new.encode()
        set_box(copy, step.id, step.box)
    assert copy.read_bytes() == data
