"""A fleet driven as a person drives it: `akira fleet` commands and workers as subprocesses
against one database, task files committed to the person's repository, and the ledger the
steps keep of when each of them ran."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

from tests.support.git import git


def steps(ledger: Path, count: int, seconds: float = 0.0, prefix: str = "") -> str:
    return "".join(
        f"- [ ] {n}. Step {n}\n"
        f"  - Run: `exec 9>> {ledger}.{prefix}{n}.lock; flock -n 9 || echo overlap {prefix}{n} - >> {ledger}; "
        f"echo start {prefix}{n} $$ >> {ledger}; sleep {seconds}; echo {n} > {prefix}s{n}.txt; "
        f"echo end {prefix}{n} $$ >> {ledger}`\n"
        f"  - Exists: `{prefix}s{n}.txt`\n"
        for n in range(1, count + 1)
    )


def commit_task(origin: Path, feature: str, text: str) -> Path:
    path = origin / "Specs" / feature / "tasks.md"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    git(origin, "add", "-A")
    git(origin, "commit", "-q", "-m", f"the {feature} tasks")
    return path


class Fleet:
    def __init__(self, url: str, tmp_path: Path) -> None:
        self.url, self.tmp = url, tmp_path
        self.workers: list[subprocess.Popen[str]] = []

    def cli(self, *args: str, timeout: float = 60) -> subprocess.CompletedProcess[str]:
        command = [sys.executable, "-m", "akira_cli", "fleet", *args, "--database-url", self.url]
        return subprocess.run(command, capture_output=True, text=True, timeout=timeout, cwd=self.tmp)

    def add(self, task: Path) -> str:
        done = self.cli("add", "--task", str(task))
        assert done.returncode == 0, done.stderr
        return done.stdout.strip()

    def worker(self, name: str, timeout: float = 3, concurrency: int = 1) -> subprocess.Popen[str]:
        command = [
            sys.executable,
            "-m",
            "akira_cli",
            "fleet",
            "worker",
            "--name",
            name,
            "--database-url",
            self.url,
        ]
        command += ["--work-dir", str(self.tmp / "work"), "--worker-timeout", str(timeout)]
        command += ["--concurrency", str(concurrency)]
        process = subprocess.Popen(
            command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=self.tmp
        )
        self.workers.append(process)
        return process

    def status(self) -> list[dict[str, object]]:
        done = self.cli("status", "--json")
        assert done.returncode == 0, done.stderr
        return json.loads(done.stdout)  # type: ignore[no-any-return]

    def wait(self, predicate, timeout: float = 120, what: str = "") -> list[dict[str, object]]:  # type: ignore[no-untyped-def]
        deadline = time.monotonic() + timeout
        rows: list[dict[str, object]] = []
        while time.monotonic() < deadline:
            rows = self.status()
            if predicate(rows):
                return rows
            time.sleep(0.3)
        raise AssertionError(f"timed out waiting for {what}: {rows}")

    def stop(self) -> None:
        for process in self.workers:
            if process.poll() is None:
                process.kill()
            process.communicate(timeout=30)


def branch_steps(origin: Path, branch: str) -> Counter[str]:
    log = git(origin, "log", "--format=%(trailers:key=Akira-Step,valueonly,separator=)", branch)
    return Counter(line.strip() for line in log.splitlines() if line.strip())


def ledger_lines(ledger: Path) -> list[list[str]]:
    return [line.split() for line in ledger.read_text().splitlines()] if ledger.exists() else []
