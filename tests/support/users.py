"""An ordinary user for a suite that runs as root, as CI does: uid 65534 through `setpriv`, and a
Python it can start that imports this akira.

CI checks the repository out into a folder that may be root's alone (`mktemp -d` makes it 0700),
and its venv's `python` may point into root's private home. So `nobody_python` first lets others
through the folders above the checkout and the venv (search permission, `o+x`) and read the
checkout's and the packages' own folders (`o+rx`: Python lists a folder on its path to import
from it), where they lack it, for the rest of the session; their modes are given back when the
suite's process exits. Their files are readable to others already, as git and pip write them. Then it takes the first Python that uid 65534 can start and that
imports this checkout: this one, or the system's of the same version with this checkout's
packages on PYTHONPATH.
"""

from __future__ import annotations

import atexit
import contextlib
import functools
import os
import stat
import subprocess
import sys
import sysconfig
from pathlib import Path

NOBODY = 65534
SETPRIV = ["setpriv", f"--reuid={NOBODY}", f"--regid={NOBODY}", "--clear-groups", "--"]
CHECKOUT = Path(__file__).resolve().parents[2]

_opened: dict[Path, int] = {}


def let_others_read(*paths: Path) -> None:
    """Others may list each of `paths` (`o+rx`) and pass through the folders above them (`o+x`),
    where they may not, until the suite's process exits."""
    if not _opened:
        atexit.register(_give_back)
    for path in paths:
        for folder in (*reversed(path.parents), path):
            wanted = stat.S_IXOTH | (stat.S_IROTH if folder == path else 0)
            try:
                mode = folder.stat().st_mode
            except OSError:
                continue
            if stat.S_ISDIR(mode) and mode & wanted != wanted:
                _opened.setdefault(folder, stat.S_IMODE(mode))
                folder.chmod(stat.S_IMODE(mode) | wanted)


def _give_back() -> None:
    for folder, mode in reversed(list(_opened.items())):
        with contextlib.suppress(OSError):
            folder.chmod(mode)
    _opened.clear()


@functools.cache
def nobody_python() -> tuple[str, str] | None:
    """A Python uid 65534 can start that imports this akira and starts itself again (akira's
    children), and the PYTHONPATH it needs ("" for none); None where there is none. Root only."""
    if os.geteuid() != 0:
        return None
    packages = sysconfig.get_paths()["purelib"]
    let_others_read(CHECKOUT, Path(sys.prefix), Path(packages))
    paths = os.pathsep.join([str(CHECKOUT), packages])
    version = f"python{sys.version_info.major}.{sys.version_info.minor}"
    again = "import akira_cli.cli, subprocess, sys; subprocess.run([sys.executable, '-c', ''], check=True)"
    for python, path in (
        (sys.executable, ""),
        (f"/usr/bin/{version}", paths),
        (f"/usr/local/bin/{version}", paths),
    ):
        env = {**os.environ, "PYTHONPATH": path} if path else None
        try:
            tried = subprocess.run(
                [*SETPRIV, python, "-c", again], env=env, capture_output=True, cwd="/", timeout=120
            )
        except OSError:
            continue
        if tried.returncode == 0:
            return python, path
    return None
