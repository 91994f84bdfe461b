"""The scripted GitHub server's Actions: the jobs of a head commit's workflow run, and what
`gh run view --log-failed` reads of them (the job, the run, the workflow, then the run's logs as
a zip of `<job>/<step number>_<step>.txt`)."""

from __future__ import annotations

import io
import zipfile
from dataclasses import dataclass, field
from typing import Any

STAMP = "2030-01-01T00:00:00Z"
JSON = "application/json"


@dataclass
class Job:
    name: str
    status: str = "completed"
    """queued, in_progress or completed."""
    conclusion: str | None = "success"
    """success or failure, once completed."""
    log: str = ""
    job_id: int = 0
    run_id: int = 0


@dataclass
class Actions:
    owner: str
    name: str
    host: str = ""
    jobs: dict[int, Job] = field(default_factory=dict)

    def seen(self, sha: str, jobs: list[Job]) -> list[Job]:
        """A head's jobs, numbered by the head (a new push is a new run) and kept for the REST."""
        for job in jobs:
            job.run_id = job.run_id or 7000 + sum(map(ord, sha)) % 1000
            job.job_id = job.job_id or 90000 + sum(map(ord, sha + job.name)) % 9000
            self.jobs[job.job_id] = job
        return jobs

    def link(self, job: Job) -> str:
        return f"https://{self.host}/{self.owner}/{self.name}/actions/runs/{job.run_id}/job/{job.job_id}"

    def answer(self, method: str, path: str) -> tuple[int, Any, str] | None:
        prefix = f"/repos/{self.owner}/{self.name}/actions/"
        if method != "GET" or not path.startswith(prefix):
            return None
        parts = path.removeprefix(prefix).split("/")
        if parts == ["workflows", "1"]:
            return 200, {"id": 1, "name": "CI", "path": ".github/workflows/ci.yml", "state": "active"}, JSON
        if parts[0] == "jobs" and len(parts) >= 2 and parts[1].isdigit() and int(parts[1]) in self.jobs:
            job = self.jobs[int(parts[1])]
            if parts[2:] == ["logs"]:
                return 200, job.log.encode(), "text/plain"
            return (200, self.job_json(job), JSON) if len(parts) == 2 else None
        if parts[0] != "runs" or len(parts) < 2 or not parts[1].isdigit():
            return None
        jobs = [job for job in self.jobs.values() if job.run_id == int(parts[1])]
        if not jobs:
            return None
        if len(parts) == 2:
            return 200, self.run_json(jobs), JSON
        if parts[2:] == ["jobs"]:
            return 200, {"total_count": len(jobs), "jobs": [self.job_json(job) for job in jobs]}, JSON
        if parts[2:] == ["logs"]:
            return 200, log_zip(jobs), "application/zip"
        return None

    def job_json(self, job: Job) -> dict[str, Any]:
        step = {"name": "Run tests", "status": job.status, "conclusion": job.conclusion, "number": 1}
        return {
            "id": job.job_id,
            "run_id": job.run_id,
            "status": job.status,
            "conclusion": job.conclusion,
            "name": job.name,
            "started_at": STAMP,
            "completed_at": STAMP,
            "html_url": self.link(job),
            "url": f"{self.api}/actions/jobs/{job.job_id}",
            "steps": [{**step, "started_at": STAMP, "completed_at": STAMP}],
        }

    def run_json(self, jobs: list[Job]) -> dict[str, Any]:
        run = jobs[0].run_id
        failed = any(job.conclusion == "failure" for job in jobs)
        done = all(job.status == "completed" for job in jobs)
        return {
            "id": run,
            "name": "CI",
            "display_title": "CI",
            "head_branch": "",
            "head_sha": "",
            "status": "completed" if done else "in_progress",
            "conclusion": ("failure" if failed else "success") if done else None,
            "event": "pull_request",
            "workflow_id": 1,
            "run_attempt": 1,
            "created_at": STAMP,
            "updated_at": STAMP,
            "url": f"{self.api}/actions/runs/{run}",
            "html_url": f"https://{self.host}/{self.owner}/{self.name}/actions/runs/{run}",
            "jobs_url": f"{self.api}/actions/runs/{run}/jobs",
            "logs_url": f"{self.api}/actions/runs/{run}/logs",
            "path": ".github/workflows/ci.yml",
        }

    @property
    def api(self) -> str:
        return f"https://{self.host}/api/v3/repos/{self.owner}/{self.name}"


def log_zip(jobs: list[Job]) -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        for job in jobs:
            archive.writestr(f"{job.name}/1_Run tests.txt", job.log)
    return buffer.getvalue()
