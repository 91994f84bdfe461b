"""The step's tools under the hidden home and the private /tmp, bound back read-only, and the
secrets that stay hidden even there (a tool folder comes without the credentials that
live beside it). Both are worked out once per run."""

from __future__ import annotations

import glob
import os
import shutil
import sys
from collections.abc import Iterable
from pathlib import Path

from akira_cli.sandbox.policy import SECRET_PATHS, TMP, expand, hidden

PREFIXED = ("bin", "shims")
"""A PATH folder so named brings its prefix (`~/.pyenv/versions/3.12`, `~/.nvm/versions/node/v22`,
`~/go`, `~/.deno`, `~/.pyenv` for its shims): the libraries its programs load lie there."""
COMPANIONS = {".cargo/bin": ("RUSTUP_HOME", ".rustup")}
"""A tool folder whose programs run another folder's: cargo's are rustup's proxies."""
LINKS_LOOKED_AT = 1000
"""At most this many entries of a PATH folder are looked at for links into the hidden home."""


def tool_paths(environ_path: str, home: Path, executables: Iterable[str]) -> list[Path]:
    """What must stay readable under the hidden home and the private /tmp for a step's tools to
    run: PATH folders there and their prefixes, where their links lead (pipx's and uv's tools in
    `~/.local/bin`), this Python's own prefix (a venv in /tmp, as `mktemp -d` makes it), akira's
    forwarder, where the agent CLI's executable really lies, and git's settings."""
    found: list[Path] = []
    for entry in environ_path.split(os.pathsep):
        folder = Path(entry)
        if not entry or not folder.is_absolute() or not hidden(folder, home) or not folder.is_dir():
            continue
        found += [folder, *_prefix(folder, home), *_companions(folder, home), *_linked(folder, home)]
    for name in executables:
        where = shutil.which(name, path=environ_path)
        if where is not None:
            found.append(Path(os.path.realpath(where)).parent)
    found += [home / ".gitconfig", home / ".config" / "git"]  # who commits (credentials stay hidden)
    found += [Path(sys.base_prefix), Path(sys.prefix), Path(os.path.realpath(sys.executable)).parent]
    found.append(Path(__file__).resolve().parent)  # forward.py, from an editable install in the home too
    kept = sorted(
        {path for path in found if hidden(path, home) and path not in (home, TMP) and path.exists()},
        key=lambda p: len(p.parts),
    )
    outer: list[Path] = []
    for path in kept:  # a folder inside one already bound needs no mount of its own
        if not any(path.is_relative_to(done) for done in outer):
            outer.append(path)
    return outer


def _prefix(folder: Path, home: Path) -> list[Path]:
    prefix = folder.parent
    if prefix == home / ".local":  # not the whole of ~/.local: ~/.local/share holds keyrings
        return [prefix / "lib"]
    return [prefix] if folder.name in PREFIXED and prefix != home else []


def _companions(folder: Path, home: Path) -> list[Path]:
    if not folder.is_relative_to(home):
        return []
    variable, default = COMPANIONS.get(folder.relative_to(home).as_posix(), ("", ""))
    if not default:
        return []
    return [Path(os.environ.get(variable) or home / default)]


def _linked(folder: Path, home: Path) -> list[Path]:
    """Where the links of a PATH folder lead, when that is hidden too: the prefix of a target in
    a `bin` (a pipx or uv tool's venv), else the target's folder."""
    found: list[Path] = []
    try:
        with os.scandir(folder) as entries:
            for count, entry in enumerate(entries):
                if count >= LINKS_LOOKED_AT:
                    break
                if not entry.is_symlink():
                    continue
                target = Path(os.path.realpath(entry.path))
                if hidden(target, home) and not target.is_relative_to(folder):
                    found += [target.parent, *_prefix(target.parent, home)]
    except OSError:
        pass
    return found


def secret_paths(home: Path, deny: Iterable[str]) -> list[Path]:
    """The secret paths and `sandbox.deny` that exist now, globs expanded (`~/.*_history`)."""
    found: list[Path] = []
    for entry in (*SECRET_PATHS, *deny):
        path = expand(entry, home)
        if any(char in path.name for char in "*?["):
            found += [Path(p) for p in sorted(glob.glob(glob.escape(str(path.parent)) + "/" + path.name))]
        elif os.path.lexists(path):
            found.append(path)
    return found
