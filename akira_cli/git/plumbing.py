"""What a step's commit needs from the repository, at the cost of a few git processes a step.

Each git process costs 2-4 ms on a small machine, and a loop makes a commit a step, so what git
keeps in plain files is read from them: HEAD and the branch (`.git/HEAD` and the ref it names),
and the task file's ticked blob is written as a loose object (`blob <size>\\0<bytes>`, zlib,
under its SHA-1; a repository with another object format asks `git hash-object`). Anything
unexpected falls back to asking git.

The temporary index a commit is built in starts as a copy of the person's index (git then checks
files by their stat data instead of reading them), with the paths they staged put back to HEAD;
which paths those are is remembered while their index file does not change. After the commit,
when they had staged nothing and their index did not change meanwhile, the temporary index is
put in its place under `index.lock` (as git does), so its stat data is fresh; otherwise only
the committed paths are set in it.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import zlib
from pathlib import Path

from akira_cli.git.pinned import Git

ZEROS = "0" * 40
STEP_REFS = "refs/heads/akira-step"
"""akira's own branches of parallel steps (`worktrees.py`), which move during a run."""
AKIRA_SUFFIX = "akira-"
"""The index akira is putting in place is first `index.akira-<pid>`, then linked as `index.lock`."""


class Plumbing:
    def __init__(self, git: Git) -> None:
        self.git = git
        self.root = git.root
        self._sha1: bool | None = None
        self._staged: tuple[tuple[int, int, int], list[str]] | None = None
        self._packed: tuple[tuple[int, int, int], dict[str, str]] | None = None

    # -- files git keeps ------------------------------------------------------------------------

    def dirs(self) -> tuple[Path, Path]:
        """The git folder (HEAD, the index) and the common one (refs, objects): not the same in
        a worktree. The ones found at the start, never a `.git` found again."""
        return self.git.repo.git_dir, self.git.repo.common_dir

    def head(self) -> tuple[str, str]:
        """HEAD's commit and what HEAD names (`refs/heads/<branch>`, or "" when detached)."""
        own, common = self.dirs()
        try:
            text = (own / "HEAD").read_text(encoding="utf-8").strip()
            if not text.startswith("ref: "):
                return self.checked(text, "")
            ref = text.removeprefix("ref: ")
            loose = common / ref
            if loose.is_file():
                return self.checked(loose.read_text(encoding="utf-8").strip(), ref)
            for line in (common / "packed-refs").read_text(encoding="utf-8").splitlines():
                sha, _, name = line.partition(" ")
                if name == ref:
                    return self.checked(sha, ref)
        except (OSError, ValueError):
            pass
        return self.asked()

    def checked(self, sha: str, ref: str) -> tuple[str, str]:
        if len(sha) in (40, 64) and all(ch in "0123456789abcdef" for ch in sha):
            return sha, ref
        return self.asked()

    def asked(self) -> tuple[str, str]:
        lines = self.git.out("rev-parse", "HEAD", "--symbolic-full-name", "HEAD", check=False).splitlines()
        sha = lines[0] if lines else ""
        ref = lines[1] if len(lines) > 1 and lines[1].startswith("refs/") else ""
        return sha, ref

    def branches(self) -> dict[str, str]:
        """Every branch (`refs/heads/...`) and its commit, but akira's own step branches, from
        the files git keeps them in (`packed-refs` parsed again only when it changed); a
        repository that keeps its refs otherwise (reftable) is asked."""
        common = self.dirs()[1]
        if (common / "reftable").exists():
            listed = self.git.out("for-each-ref", "--format=%(refname) %(objectname)", "refs/heads/")
            return {
                ref: sha
                for ref, _, sha in (line.partition(" ") for line in listed.splitlines())
                if not ref.startswith(f"{STEP_REFS}/")
            }
        found = dict(self.packed(common / "packed-refs"))
        folders = [common / "refs" / "heads"]
        while folders:
            try:
                entries = list(os.scandir(folders.pop()))
            except OSError:
                continue
            for entry in entries:
                ref = entry.path[len(str(common)) + 1 :]
                if entry.is_dir(follow_symlinks=False):
                    if ref != STEP_REFS:
                        folders.append(Path(entry.path))
                    continue
                try:
                    found[ref] = Path(entry.path).read_text(encoding="utf-8", errors="replace").strip()
                except OSError:
                    continue
        return found

    def packed(self, path: Path) -> dict[str, str]:
        try:
            info = os.stat(path)
        except OSError:
            return {}
        key = (info.st_ino, info.st_size, info.st_mtime_ns)
        if self._packed is None or self._packed[0] != key:
            refs = {}
            for line in path.read_text(encoding="utf-8", errors="replace").splitlines():
                sha, _, ref = line.partition(" ")
                if ref.startswith("refs/heads/") and not ref.startswith(f"{STEP_REFS}/"):
                    refs[ref] = sha
            self._packed = (key, refs)
        return self._packed[1]

    def index_path(self) -> Path:
        return self.dirs()[0] / "index"

    # -- objects ----------------------------------------------------------------------------------

    def blob(self, data: bytes) -> str:
        """`data` as a blob in the object store; its id."""
        if self._sha1 is None:
            self._sha1 = self.git.out("rev-parse", "--show-object-format", check=False) in ("sha1", "")
        if not self._sha1:
            return self.git.out("hash-object", "-w", "--stdin", stdin=data)
        body = b"blob %d\0" % len(data) + data
        sha = hashlib.sha1(body, usedforsecurity=False).hexdigest()
        path = self.dirs()[1] / "objects" / sha[:2] / sha[2:]
        if not path.exists():
            path.parent.mkdir(parents=True, exist_ok=True)
            spare = path.with_name(f"tmp_obj_akira_{os.getpid()}")
            spare.write_bytes(zlib.compress(body))
            os.replace(spare, path)
        return sha

    # -- the temporary index ------------------------------------------------------------------------

    def copy_index(self, temp: Path) -> tuple[int, int, int] | None:
        """The person's index copied to `temp`, with what they staged put back to HEAD; their
        index file's identity as it was copied (None when there is none: HEAD's tree then)."""
        real = self.index_path()
        try:
            before = os.stat(real)
            shutil.copy2(real, temp)  # with its time: git re-reads a file changed in that second
        except OSError:
            self.git.run("read-tree", "HEAD", env={"GIT_INDEX_FILE": str(temp)})
            return None
        key = (before.st_ino, before.st_size, before.st_mtime_ns)
        staged = self.staged(key)
        if staged:
            env = {"GIT_INDEX_FILE": str(temp)}
            self.git.run("update-index", "-z", "--index-info", env=env, stdin=self.head_entries(staged))
        return key

    def staged(self, key: tuple[int, int, int]) -> list[str]:
        """The paths the person staged (their index differs from HEAD there), asked again only
        when their index file changed."""
        if self._staged is not None and self._staged[0] == key:
            return self._staged[1]
        done = self.git.run("diff-index", "--cached", "-z", "--name-only", "HEAD", check=False)
        names = [name for name in done.stdout.decode("utf-8", "replace").split("\0") if name]
        self._staged = (key, names)
        return names

    def head_entries(self, names: list[str]) -> bytes:
        """`--index-info` lines that set `names` to what HEAD has (removed where HEAD has none)."""
        listed = self.git.run("ls-tree", "-z", "HEAD", "--", *names).stdout
        return index_info(parse_listing(listed, stage=False), names)

    def put_back(self, temp: Path, copied: tuple[int, int, int] | None, changed: list[str]) -> None:
        """The person's index agrees with the new commit at `changed`, and nowhere else."""
        real = self.index_path()
        if copied is not None and not self.staged(copied) and self.replace_index(temp, real, copied):
            now = os.stat(real)
            self._staged = ((now.st_ino, now.st_size, now.st_mtime_ns), [])  # nothing staged: it is ours
            return
        listed = self.git.run(
            "ls-files", "-s", "-z", "--", *changed, env={"GIT_INDEX_FILE": str(temp)}
        ).stdout
        info = index_info(parse_listing(listed, stage=True), changed)
        self.git.run("update-index", "-z", "--index-info", stdin=info, check=False)
        self._staged = None

    @staticmethod
    def replace_index(temp: Path, real: Path, copied: tuple[int, int, int]) -> bool:
        """`temp` in place of `real` under git's own lock, if `real` is as it was copied. The
        lock is a hard link to a file named for akira, so that a kill -9 while it is held
        leaves a lock that `heal` knows for akira's and removes."""
        lock = real.with_name(real.name + ".lock")
        mine = real.with_name(f"{real.name}.{AKIRA_SUFFIX}{os.getpid()}")
        try:
            shutil.copy2(temp, mine)  # with its time, as git wrote it (racy entries stay racy)
            os.link(mine, lock)  # fails while git holds the lock: then the paths are set instead
        except OSError:
            mine.unlink(missing_ok=True)
            return False
        try:
            now = os.stat(real)
            if (now.st_ino, now.st_size, now.st_mtime_ns) != copied:
                lock.unlink(missing_ok=True)
                return False
            os.replace(lock, real)
            return True
        except OSError:
            lock.unlink(missing_ok=True)
            return False
        finally:
            mine.unlink(missing_ok=True)

    def heal(self) -> None:
        """After a kill -9: an index lock that is one of akira's own files (see
        `replace_index`) is removed, with that file; git's own locks are left alone."""
        real = self.index_path()
        lock = real.with_name(real.name + ".lock")
        for mine in real.parent.glob(f"{real.name}.{AKIRA_SUFFIX}*"):
            try:
                if lock.exists() and os.path.samefile(mine, lock):
                    lock.unlink()
            except OSError:
                pass
            mine.unlink(missing_ok=True)


def parse_listing(listing: bytes, *, stage: bool) -> dict[str, tuple[str, str]]:
    """path -> (mode, object id), from `ls-files -s -z` ("mode id stage\tpath", `stage`) or
    `ls-tree -z` ("mode type id\tpath")."""
    found = {}
    for entry in listing.decode("utf-8", "replace").split("\0"):
        head, _, name = entry.partition("\t")
        fields = head.split(" ")
        if name and len(fields) == 3:
            found[name] = (fields[0], fields[1] if stage else fields[2])
    return found


def index_info(entries: dict[str, tuple[str, str]], names: list[str]) -> bytes:
    """`--index-info` lines that set each of `names` to its entry, or remove it where it has none."""
    lines = [
        f"{entries[name][0]} {entries[name][1]}\t{name}" if name in entries else f"0 {ZEROS}\t{name}"
        for name in names
    ]
    return b"".join(line.encode() + b"\0" for line in lines)
