"""Which files are a step's exam: what its checks run or are decided by (docs/design.md, the
exam). Test files by the usual conventions, what decides how a check runs (runner configuration,
interpreter hooks, a file that would shadow the program or module a check runs), CI
configuration, and `checks.exam` globs minus `checks.exam_exclude`."""

from __future__ import annotations

import difflib
import re
import shlex
import sys
from collections.abc import Iterable
from dataclasses import dataclass, field
from fnmatch import fnmatchcase
from typing import Literal

Kind = Literal["test", "hook", "runner", "shadow", "ci", "program", "config"]

TEST_FOLDERS = frozenset({"tests", "test", "spec", "__tests__", "testdata"})
TEST_NAMES = ("test_*.py", "*_test.py", "*_test.go", "*.test.*", "*.spec.*")
HOOKS = ("conftest.py", "sitecustomize.py", "usercustomize.py", "*.pth")
RUNNERS = (
    "pytest.ini",
    ".pytest.ini",
    "pytest.toml",
    ".pytest.toml",
    "tox.ini",
    "setup.cfg",
    "pyproject.toml",
    "noxfile.py",
    "package.json",
    "jest.config.*",
    "vitest.config.*",
    ".mocharc*",
    "Makefile",
    "makefile",
    "GNUmakefile",
    "justfile",
    "Justfile",
    ".justfile",
    "ruff.toml",
    ".ruff.toml",
    ".flake8",
    "mypy.ini",
    ".mypy.ini",
    ".pylintrc",
    "pylintrc",
    ".eslintrc*",
    "eslint.config.*",
    ".golangci.y*ml",
    ".pre-commit-config.yaml",
    ".coveragerc",
)
"""Besides the test runners', the linters' and type checkers' settings: a check that runs one is
decided by them as much as by the code."""
CI_FOLDERS = (".github/workflows/", ".circleci/", ".buildkite/")
CI_FILES = frozenset({".gitlab-ci.yml", "Jenkinsfile", "azure-pipelines.yml"})
VENDORED = frozenset(
    {".git", ".akira", ".state", "node_modules", ".venv", "venv", ".tox", ".nox", "__pycache__"}
)
"""Folders that are no one's exam: installed packages and caches (a step that changes an
installed package is the sandbox's to stop, not the exam's)."""
SHELLS = frozenset({"bash", "sh", "zsh", "dash"})
BUILTINS = frozenset(
    {"test", "[", "true", "false", "echo", "cd", "exit", "export", "set", "printf", "read", "exec", "env"}
)
"""Shell builtins a check may start with: no file shadows them."""
PYTHONS = re.compile(r"python[0-9.]*$")
RUNNER_HOOKS = re.compile(
    r"\b(pytest_\w+|sys\.modules|builtins|__builtins__|setattr\s*\(|os\._exit|sys\.exit|atexit"
    r"|monkeypatch|unittest\.mock|mock\.patch|importlib|exec\s*\(|eval\s*\(|globals\s*\(|__code__"
    r"|__dict__|__class__|ctypes|gc\.get_referrers)|^[A-Za-z_]\w*(\.\w+)+\s*(=(?!=)|\+=)",
    re.MULTILINE,
)
"""What a new test file has no business doing at import time unless it reaches into the run:
a hook, a patched module, an early exit. Such a file is no plain new test (held out)."""


@dataclass(frozen=True)
class ExamRules:
    programs: frozenset[str] = frozenset()
    """Module and program names the step's checks run (`pytest` for `python -m pytest`): a file or
    folder of that name at the top of the work folder would shadow it."""
    scripts: frozenset[str] = frozenset()
    """Files in the work folder that a check runs as its program (`./check.sh`, `bash ci/test.sh`)."""
    include: tuple[str, ...] = ()
    exclude: tuple[str, ...] = ()
    shadowed: frozenset[str] = field(default_factory=lambda: frozenset(sys.stdlib_module_names))

    @classmethod
    def of(
        cls, commands: Iterable[str], include: Iterable[str] = (), exclude: Iterable[str] = ()
    ) -> ExamRules:
        programs: set[str] = set()
        scripts: set[str] = set()
        for command in commands:
            words = _words(command)
            for n, word in enumerate(words):
                name = word.rsplit("/", 1)[-1]
                if PYTHONS.match(name) and n + 2 < len(words) and words[n + 1] == "-m":
                    programs.add(words[n + 2].split(".", 1)[0])
                if n == 0 or words[n - 1] in ("&&", "||", ";", "|", "exec", "then", "do"):
                    programs.add(name)
                    if "/" in word:
                        scripts.add(_plain(word))
                if name in SHELLS and n + 1 < len(words) and not words[n + 1].startswith("-"):
                    scripts.add(_plain(words[n + 1]))
        return cls(
            frozenset(p for p in programs if p and p not in BUILTINS),
            frozenset(s for s in scripts if s),
            tuple(include),
            tuple(exclude),
        )

    def kind(self, path: str) -> Kind | None:
        """What `path` (relative to the work folder, with `/`) is to the exam; None: not exam."""
        parts = path.split("/")
        if any(fnmatchcase(path, glob) for glob in self.exclude):
            return None
        if path in self.scripts:
            return "program"
        if VENDORED.intersection(parts[:-1]):
            return None
        name = parts[-1]
        if path.startswith(CI_FOLDERS) or path in CI_FILES:
            return "ci"
        if any(fnmatchcase(name, glob) for glob in HOOKS):
            return "hook"
        if self.shadows(parts):
            return "shadow"
        if any(fnmatchcase(name, glob) for glob in RUNNERS):
            return "runner"
        if TEST_FOLDERS.intersection(parts[:-1]) or any(fnmatchcase(name, glob) for glob in TEST_NAMES):
            return "test"
        if any(fnmatchcase(path, glob) for glob in self.include):
            return "config"
        return None

    def shadows(self, parts: list[str]) -> bool:
        """A module at the top of the work folder named like one a check imports (any of the
        standard library's, as `python` puts the folder first on its path), or a folder or file
        named like a program a check runs."""
        if len(parts) == 1 and parts[0].endswith(".py"):
            return parts[0][:-3] in self.programs or parts[0][:-3] in self.shadowed
        return parts[0] in self.programs


def plain_test(text: bytes) -> bool:
    """Whether a new test file is only tests: no hook, patch or early exit reaching into the run."""
    return RUNNER_HOOKS.search(text.decode("utf-8", "replace")) is None


def only_asserts_added(old: bytes, new: bytes) -> bool:
    """Whether a test file changed only by lines added that are `assert` statements (or blank or
    comments), none reaching into the run: a test made stricter, which needs no held-out run."""
    before = old.decode("utf-8", "replace").splitlines()
    after = new.decode("utf-8", "replace").splitlines()
    added: list[str] = []
    for op, _, _, j1, j2 in difflib.SequenceMatcher(None, before, after, autojunk=False).get_opcodes():
        if op == "insert":
            added += after[j1:j2]
        elif op != "equal":
            return False
    words = [line.strip() for line in added]
    if not all(not word or word.startswith(("#", "assert ")) for word in words):
        return False
    return plain_test("\n".join(added).encode())


ASKS = re.compile(
    r"\b(update|change|rewrite|fix|remove|delete|adjust|modify|replace|edit)\w*\b[^.\n]{0,40}\btest",
    re.IGNORECASE,
)


def asks_for_exam(text: str, files: Iterable[str]) -> bool:
    """Whether a step's text (its title and body) asks for its tests to change: it names one of
    the exam files it changed, or says to update, change, rewrite, fix or remove the tests."""
    if ASKS.search(text):
        return True
    for path in files:
        name = path.rstrip("/").rsplit("/", 1)[-1]  # `.venv/` names `.venv`
        if path in text or (name and "/" in path and name in text):
            return True
    return False


def _words(command: str) -> list[str]:
    try:
        lexer = shlex.shlex(command, posix=True, punctuation_chars=";&|")
        lexer.whitespace_split = True
        return list(lexer)
    except ValueError:
        return command.split()


def _plain(word: str) -> str:
    return word.removeprefix("./")
