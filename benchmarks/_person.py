"""The person of `edit_race.py`: edits tasks.md every few milliseconds while the loop runs.

Each edit reads the file, changes one thing and writes it back, in place as `cat >` does
(truncate, then 512-byte chunks) or by an atomic replace. Before each edit the file is
compared with what the person last wrote, boxes aside (akira writes only the box characters):
any other difference is a lost edit or a corrupt file.
"""

from __future__ import annotations

import os
import random
import re
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

BOX = re.compile(rb"(?m)^([ \t]*- \[)(.)(\])")
STEP = re.compile(r"- \[(.)\] (\d+)\. ")
CHUNK = 512
WORDS = ("the", "plan", "reads", "well", "after", "a", "second", "look", "and", "notes", "say", "why")


def step_block(step_id: int, sleep: str, note: str) -> str:
    return (
        f"- [ ] {step_id}. Step {step_id}\n"
        f"  - Run: `echo {step_id} $(date +%s.%N) >> ledger.txt; sleep {sleep}`\n"
        f"  - Verify: `grep -q '^{step_id} ' ledger.txt`\n"
        f"  - Note: {note}\n"
    )


def prose(rng: random.Random) -> str:
    return " ".join(rng.choice(WORDS) for _ in range(rng.randint(3, 9)))


def task_text(rng: random.Random, steps: int) -> str:
    head = f"# Implementation Plan\n\n{prose(rng)}\n\n"
    return head + "".join(step_block(n, sleep(rng), prose(rng)) for n in range(1, steps + 1))


def sleep(rng: random.Random) -> str:
    return f"{rng.uniform(0.1, 0.3):.2f}"


def boxes_aside(data: bytes) -> bytes:
    return BOX.sub(rb"\1?\3", data)


def split(text: str) -> tuple[str, list[str]]:
    """The head (title and prose), then one block per step: its checkbox line and its bullets."""
    head, blocks = [], []
    for line in text.splitlines(keepends=True):
        if line.startswith("- ["):
            blocks.append(line)
        elif blocks:
            blocks[-1] += line
        else:
            head.append(line)
    return "".join(head), blocks


def block_id(block: str) -> tuple[str, int]:
    found = STEP.match(block)
    assert found is not None, f"not a step block: {block[:40]!r}"
    return found[1], int(found[2])


@dataclass(eq=False)
class Person:
    path: Path
    rng: random.Random
    until: float
    next_id: int
    log: list[tuple[float, str, str]]
    written: bytes = b""
    lost: list[str] = field(default_factory=list)
    deleted: dict[str, float] = field(default_factory=dict)
    ticked: dict[str, float] = field(default_factory=dict)
    counts: dict[str, int] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.written = self.path.read_bytes()
        self.thread = threading.Thread(target=self.run, name="person", daemon=True)

    def run(self) -> None:
        while time.time() < self.until:
            time.sleep(self.rng.uniform(0.005, 0.030))
            try:
                data = self.path.read_bytes()
            except FileNotFoundError:
                return  # moved to Done/: the loop completed
            if boxes_aside(data) != boxes_aside(self.written):
                self.lost.append(f"{time.time():.6f}: {first_difference(self.written, data)}")
            self.edit(data)

    def edit(self, data: bytes) -> None:
        head, blocks = split(data.decode("utf-8", "replace"))
        pending = [i for i, block in enumerate(blocks) if block_id(block)[0] == " "]
        op = self.rng.choices(["append", "delete", "swap", "tick", "prose"], [4, 4, 20, 4, 68])[0]
        detail = ""
        if op == "append":
            step_id, self.next_id = self.next_id, self.next_id + 1
            blocks.append(step_block(step_id, sleep(self.rng), prose(self.rng)))
            detail = str(step_id)
        elif op == "delete" and len(pending) > 4:
            index = self.rng.choice(pending)
            detail = str(block_id(blocks.pop(index))[1])
        elif op == "swap" and len(pending) >= 2:
            a, b = self.rng.sample(pending, 2)
            blocks[a], blocks[b] = blocks[b], blocks[a]
            detail = f"{block_id(blocks[a])[1]}<->{block_id(blocks[b])[1]}"
        elif op == "tick" and pending:
            index = self.rng.choice(pending)
            blocks[index] = blocks[index].replace("- [ ]", "- [x]", 1)
            detail = str(block_id(blocks[index])[1])
        else:
            op = "prose"
            if blocks and self.rng.random() < 0.8:
                index = self.rng.randrange(len(blocks))
                lines = blocks[index].splitlines(keepends=True)
                lines[-1] = f"  - Note: {prose(self.rng)}\n"
                blocks[index] = "".join(lines)
                detail = str(block_id(blocks[index])[1])
            else:
                head = f"# Implementation Plan\n\n{prose(self.rng)}\n\n"
        new = (head + "".join(blocks)).encode()
        how = "in place" if self.rng.random() < 0.6 else "replaced"
        started = time.time()
        self.write(new, in_place=how == "in place")
        done = time.time()
        self.written = new
        if op == "delete":
            self.deleted[detail] = done
        if op == "tick":
            self.ticked[detail] = done
        self.counts[op] = self.counts.get(op, 0) + 1
        self.counts[how] = self.counts.get(how, 0) + 1
        self.log.append((started, "person", f"{op} {detail} ({how}, written by {done:.6f})"))

    def write(self, data: bytes, *, in_place: bool) -> None:
        if in_place:
            fd = os.open(self.path, os.O_WRONLY | os.O_TRUNC)
            try:
                for at in range(0, len(data), CHUNK):
                    os.write(fd, data[at : at + CHUNK])
            finally:
                os.close(fd)
            return
        spare = self.path.with_name(".tasks.md.person")
        spare.write_bytes(data)
        os.replace(spare, self.path)


def first_difference(expected: bytes, found: bytes) -> str:
    at = next((i for i, (a, b) in enumerate(zip(expected, found, strict=False)) if a != b), None)
    if at is None:
        at = min(len(expected), len(found))
    return (
        f"at byte {at}: expected {expected[max(0, at - 30) : at + 30]!r}, "
        f"found {found[max(0, at - 30) : at + 30]!r} (sizes {len(expected)}, {len(found)})"
    )
