"""The sandbox's home for one run: a private folder bound at `$HOME` in every command, where the
agent CLI's state is laid out (`clistate`), and what a preset's commands need from the real home
(its tools, its gateway's key variable), each worked out once per run, not once per command."""

from __future__ import annotations

import os
import shutil
import tempfile
import threading
import weakref
from collections.abc import Iterable, Mapping
from pathlib import Path

from akira_cli.sandbox import policy
from akira_cli.sandbox.clistate import Layout, lay_out
from akira_cli.sandbox.tools import secret_paths, tool_paths


class PrivateHome:
    """Made at the run's start, removed at its end (`close`, or when no sandbox holds it)."""

    def __init__(
        self, home: Path, deny: Iterable[str] = (), environ: Mapping[str, str] | None = None
    ) -> None:
        self.home = home
        self.environ = dict(os.environ if environ is None else environ)
        self._root = Path(tempfile.mkdtemp(prefix="akira-home-"))
        self.folder = self._root / "home"
        self.folder.mkdir()
        self.empty = self._root / "empty"
        """What a hidden secret file reads as: an empty file the sandbox cannot write."""
        self.empty.touch(0o444)
        self.secrets = tuple(secret_paths(home, deny))
        """The secrets that exist at the run's start, globs expanded."""
        self._layouts: dict[str, Layout] = {}
        self._tools: dict[str, tuple[Path, ...]] = {}
        self._tmps: dict[str, Path] = {}
        """The running attempt's `/tmp`, by work tree (`Sandbox.lane`)."""
        self._made = 0
        self._lock = threading.Lock()
        self._finalizer = weakref.finalize(self, shutil.rmtree, self._root, True)

    def layout(self, preset: str | None) -> Layout:
        """The preset's state laid out, the first time it is asked for (a reviewer's CLI too)."""
        with self._lock:
            if (preset or "") not in self._layouts:
                self._layouts[preset or ""] = lay_out(preset, self.home, self.folder, self.environ)
            return self._layouts[preset or ""]

    def tools(self, preset: str | None) -> tuple[Path, ...]:
        with self._lock:
            if (preset or "") not in self._tools:
                wanted = policy.PRESET_EXECUTABLES.get(preset or "", ())
                found = tool_paths(self.environ.get("PATH", ""), self.home, wanted)
                self._tools[preset or ""] = tuple(found)
            return self._tools[preset or ""]

    def fresh_tmp(self, lane: str) -> Path:
        """A new `/tmp` for the attempt that starts in work tree `lane`, shared by every command
        it runs (its `Run:` and its `Verify:` see the same files); the last attempt's is removed."""
        with self._lock:
            self._made += 1
            folder = self._root / "tmp" / f"{lane}-{self._made}"
            folder.mkdir(parents=True)
            old = self._tmps.get(lane)
            self._tmps[lane] = folder
        if old is not None:
            shutil.rmtree(old, ignore_errors=True)
        return folder

    def tmp_of(self, lane: str) -> Path | None:
        """The running attempt's `/tmp` in work tree `lane`; None before any attempt there."""
        return self._tmps.get(lane)

    def close(self) -> None:
        self._finalizer()
