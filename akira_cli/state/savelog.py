"""The save log `.state/autonomous_loop_<id>.wal`: one fdatasync makes a save durable.

Every save puts the state file in place whole (`fileio.swap_in`: a file of its own, swapped
with the old one), so every reader sees one save whole, and a `kill -9` loses nothing: the page
cache outlives the process. A power cut can take what the disk has not seen yet: the state file
may then be an older save, or empty, or cut short. So between status changes the state file is
not fsynced; the same bytes go to this log instead, which survives it:

- two slots of a fixed size, written in turn in place (`pwrite`, then `fdatasync`): no size or
  name changes, so there is no metadata to commit, and the fsync of a temp file and of its
  folder (two journal commits on ext4) become one data write;
- each slot has a header (magic, save number, length, CRC32): a torn write can only damage the
  slot being written, never the other one, which holds the save before it;
- a load takes the valid slot with the highest save number when it is newer than the state
  file, or when the state file is empty or the first part of a record here: a power cut came
  before the state file reached the disk. A state file with anything else in it is not a save
  of akira's, and is quarantined as before.

The save that starts an attempt defers its fdatasync to the moment the attempt's first command
has started (`StateStore.sync_pending`, the runner's `on_start`): the disk works while the
command starts, not before. An agent that starts no command gets it before it runs, and every
attempt has it before its result is looked at, so a power cut in that window loses at most
the start of the attempt that was in flight.

A state file that is saved when its status changes (start, pause, stop, completion) is also
written durably on its own, as docs/guarantees.md describes, and its record fills both slots; the log
covers the saves in between. The log is control plane like the state file: an agent that
writes it during an attempt is reported, and whatever it wrote there is overwritten by the
next two saves, or by the first one that changes the status.
"""

from __future__ import annotations

import contextlib
import os
import struct
import zlib
from pathlib import Path

from akira_cli.fileio import atomic_write, fsync_dir, name_path

HEADER = struct.Struct("<4sQII")  # magic, save number, payload length, CRC32
MAGIC = b"AKS1"
SLOT = 64 * 1024
MAX_SLOT = 64 * 1024 * 1024


def _crc(seq: int, data: bytes) -> int:
    return zlib.crc32(data, zlib.crc32(struct.pack("<QI", seq, len(data))))


def latest(path: Path) -> tuple[int, bytes] | None:
    """The save number and bytes of the newest whole record in the log at `path`, or None."""
    found = records(path)
    return max(found) if found else None


def records(path: Path) -> list[tuple[int, bytes]]:
    """The save numbers and bytes of the whole records in the log at `path` (at most two)."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except OSError:
        return []
    try:
        size = os.fstat(fd).st_size
        slot = size // 2
        if slot < HEADER.size or slot > MAX_SLOT:
            return []
        found = []
        for index in (0, 1):
            raw = os.pread(fd, slot, index * slot)
            if len(raw) < HEADER.size:
                continue
            magic, seq, length, crc = HEADER.unpack_from(raw)
            data = raw[HEADER.size : HEADER.size + length]
            if magic == MAGIC and len(data) == length and _crc(seq, data) == crc:
                found.append((seq, data))
        return found
    except OSError:
        return []
    finally:
        os.close(fd)


class SaveLog:
    def __init__(self, path: Path) -> None:
        self.path = path
        self._fd: int | None = None
        self._slot = 0
        self._pending = False
        """A record is written and not yet fdatasynced (see `write`'s `defer`)."""

    def write(self, seq: int, data: bytes, *, defer: bool = False, both: bool = False) -> None:
        """Save number `seq` made durable: its record in slot `seq % 2`, then fdatasync (with
        `defer`, left to `sync`). Saves are numbered one by one, so the other slot keeps the
        save before it. With `both` (a save whose state file is durable itself), the record
        goes into both slots: nothing else written there outlives it."""
        record = HEADER.pack(MAGIC, seq, len(data), _crc(seq, data)) + data
        try:
            fd = self._open()
            if len(record) > self._slot:
                self._grow(seq, record)
                return
            for index in (0, 1) if both else (seq % 2,):
                os.pwrite(fd, record, index * self._slot)
        except OSError as exc:
            name_path(exc, self.path)
            raise
        self._pending = True
        if not defer:
            self.sync(raise_errors=True)

    def sync(self, *, raise_errors: bool = False) -> None:
        """Makes a deferred record durable. From a command's start an error is left to the next
        save, whose own fdatasync fails the same way and says what failed."""
        if self._pending and self._fd is not None:
            try:
                os.fdatasync(self._fd)
            except OSError as exc:
                if raise_errors:
                    name_path(exc, self.path)
                    raise
                return
            self._pending = False

    def _open(self) -> int:
        if self._fd is None:
            fd = os.open(self.path, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW, 0o600)
            size = os.fstat(fd).st_size
            if size < 2 * SLOT or size % 2:  # new (or not one of ours): empty slots
                os.ftruncate(fd, 2 * SLOT)
                os.fsync(fd)
                fsync_dir(self.path.parent)
                size = 2 * SLOT
            self._fd, self._slot = fd, size // 2
        return self._fd

    def _grow(self, seq: int, record: bytes) -> None:
        """A record over the slot size: the log is replaced, durably, by one with larger slots
        that holds only this record (the state is bounded, so this is rare)."""
        slot = self._slot
        while slot < len(record):
            slot *= 2
        if slot > MAX_SLOT:
            raise OSError(27, "state too large for its save log", str(self.path))  # EFBIG
        image = bytearray(2 * slot)
        image[(seq % 2) * slot : (seq % 2) * slot + len(record)] = record
        self.close()
        atomic_write(self.path, bytes(image), masked=True)
        self._open()
        self._pending = False

    def close(self) -> None:
        if self._fd is not None:
            with contextlib.suppress(OSError):
                os.close(self._fd)
            self._fd = None

    def __del__(self) -> None:
        self.close()

    def remove(self) -> None:
        self.close()
        with contextlib.suppress(FileNotFoundError):
            os.unlink(self.path)
