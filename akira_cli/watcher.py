"""Watchdog observer on the folders a person acts in: hooks, Specs/, Done/, Needs_Action/.

Events only wake the loop and remember moves; every decision is taken by rescanning the
files at a boundary, so a missed event costs latency, never correctness.
"""

from __future__ import annotations

import logging
import threading
from pathlib import Path
from typing import Any

from watchdog.events import (
    DirCreatedEvent,
    DirDeletedEvent,
    DirMovedEvent,
    FileClosedEvent,
    FileCreatedEvent,
    FileDeletedEvent,
    FileMovedEvent,
    FileSystemEvent,
    FileSystemEventHandler,
)
from watchdog.observers import Observer

from akira_cli.workspace import Workspace

# watchdog logs a harmless error when an observer is stopped mid-read; it is not the user's concern.
logging.getLogger("watchdog").setLevel(logging.CRITICAL)


WANTED = [
    FileCreatedEvent,
    DirCreatedEvent,
    FileDeletedEvent,
    DirDeletedEvent,
    FileMovedEvent,
    DirMovedEvent,
    FileClosedEvent,
]
"""What a person does: create, delete, move, save. Not opens and reads: with those the loop's own
listing of .hooks/ and Specs/ woke the observer's threads several times an iteration, and
their work on the GIL made every step of the loop slower (3x for a file walk, +0.4 ms a spawn)."""


class _Handler(FileSystemEventHandler):
    def __init__(self, watcher: WorkspaceWatcher) -> None:
        self.watcher = watcher

    def on_any_event(self, event: FileSystemEvent) -> None:
        if event.event_type == "moved":
            self.watcher.record_move(str(event.src_path), str(event.dest_path))
        self.watcher.changed.set()


class WorkspaceWatcher:
    def __init__(self, workspace: Workspace) -> None:
        self.workspace = workspace
        self.changed = threading.Event()
        self._moves: dict[str, str] = {}
        self._lock = threading.Lock()
        self._observer: Any = None

    def start(self) -> None:
        # Only akira's own folders are created: a repository whose spec is worked in place
        # (.kiro/specs, specs/, openspec/) gets .state/ and .hooks/, nothing else.
        for folder in (self.workspace.state_dir, self.workspace.hooks):
            folder.mkdir(parents=True, exist_ok=True)
        observer = Observer()
        handler = _Handler(self)
        # Specs/ is watched without recursion: the loop's own checkbox writes inside a feature
        # folder would otherwise wake this thread on every step. A task or folder leaving
        # Specs/ still shows (it appears in Done/ or Needs_Action/), and boundaries rescan.
        for folder in (self.workspace.done, self.workspace.needs_action):
            if folder.is_dir():
                observer.schedule(handler, str(folder), recursive=True, event_filter=WANTED)
        for folder in (self.workspace.specs, self.workspace.hooks):
            if folder.is_dir():
                observer.schedule(handler, str(folder), recursive=False, event_filter=WANTED)
        observer.daemon = True
        observer.start()
        self._observer = observer

    def stop(self) -> None:
        if self._observer is not None:
            # watchdog's stop() joins each emitter, which sits out its read timeout (~0.5 s);
            # nothing here needs to wait for that, and the threads are daemons.
            threading.Thread(target=self._observer.stop, daemon=True).start()
            self._observer = None

    def record_move(self, src: str, dest: str) -> None:
        with self._lock:
            self._moves[src] = dest

    def follow(self, path: Path) -> Path | None:
        """Where a moved file (or a file in a moved folder) went, following chains of moves."""
        current, seen = str(path), set()
        with self._lock:
            moves = dict(self._moves)
        while current not in seen:
            seen.add(current)
            for src, dest in moves.items():
                if current == src or current.startswith(src + "/"):
                    current = dest + current[len(src) :]
                    break
            else:
                break
        return Path(current) if current != str(path) else None

    def wait(self, timeout: float) -> bool:
        """Blocks until something changed or the timeout passes; a safety net, not a sleep."""
        woke = self.changed.wait(timeout)
        self.changed.clear()
        return woke
