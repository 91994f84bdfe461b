"""The Python environments in a step's tree (`.venv/`, `venv/`, any folder with a `pyvenv.cfg`):
what a check's interpreter loads at start (`*.pth`, `sitecustomize.py`) and imports (pytest and its
plugins) lives there, out of git's sight, writable by the step. One fingerprint per environment,
taken before the step's first attempt and again when a pass is judged: any file written,
replaced, added, removed or chmodded changes it (a change time cannot be set back). Bytecode
caches are left out: a check's own imports write them."""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

MARK = "pyvenv.cfg"


def environments(workdir: Path) -> dict[str, str]:
    """Each environment directly in `workdir`, as `NAME/` → its fingerprint."""
    found = {}
    try:
        entries = list(os.scandir(workdir))
    except OSError:
        return {}
    for entry in entries:
        if entry.is_dir(follow_symlinks=False) and os.path.isfile(os.path.join(entry.path, MARK)):
            found[f"{entry.name}/"] = fingerprint(entry.path)
    return found


def fingerprint(top: str) -> str:
    digest = hashlib.blake2b(digest_size=16)
    folders = [top]
    while folders:
        folder = folders.pop()
        try:
            with os.scandir(folder) as listing:
                entries = sorted(listing, key=lambda entry: entry.name)
        except OSError:
            continue
        for entry in entries:
            if entry.name == "__pycache__":
                continue
            try:
                info = entry.stat(follow_symlinks=False)
            except OSError:
                continue
            line = f"{entry.path}\0{info.st_ino}:{info.st_ctime_ns}:{info.st_size}:{info.st_mode:o}\n"
            digest.update(line.encode("utf-8", "surrogateescape"))
            if entry.is_dir(follow_symlinks=False):
                folders.append(entry.path)
    return digest.hexdigest()
