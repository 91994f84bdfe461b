"""The dependencies: each capped below its next major version, and CI's lock inside those ranges."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

from packaging.requirements import Requirement
from packaging.utils import canonicalize_name
from packaging.version import Version

ROOT = Path(__file__).resolve().parent.parent
LOCK = ROOT / "requirements" / "ci.lock"


def requirements() -> list[Requirement]:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    listed = project["dependencies"] + [
        item for extra in project["optional-dependencies"].values() for item in extra
    ]
    return [Requirement(item) for item in listed if canonicalize_name(Requirement(item).name) != "akira-cli"]


def pins() -> dict[str, Version]:
    found: dict[str, Version] = {}
    for line in LOCK.read_text().splitlines():
        if line.strip() and not line.startswith("#"):
            match = re.fullmatch(r"([A-Za-z0-9._-]+)==([^\s;]+)", line.strip())
            assert match, f"requirements/ci.lock: {line!r} is not NAME==VERSION"
            found[canonicalize_name(match[1])] = Version(match[2])
    return found


def test_every_dependency_is_capped_below_its_next_major_version() -> None:
    for requirement in requirements():
        caps = [spec for spec in requirement.specifier if spec.operator in ("<", "==", "~=")]
        assert caps, f"{requirement}: no upper bound; add ',<NEXT_MAJOR'"


def test_the_ci_lock_pins_every_dependency_inside_its_range() -> None:
    locked = pins()
    for requirement in requirements():
        version = locked.get(canonicalize_name(requirement.name))
        assert version is not None, f"{requirement.name} is not in requirements/ci.lock"
        assert requirement.specifier.contains(version, prereleases=True), f"{requirement}: locked {version}"


def test_ci_installs_with_the_lock() -> None:
    assert 'pip install -q -c requirements/ci.lock -e ".[test]"' in (ROOT / ".ci" / "run").read_text()
