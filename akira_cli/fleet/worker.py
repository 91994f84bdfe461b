"""A fleet worker (the fleet): a DBOS executor that takes runs from the queue, up to
`--concurrency` at once, and runs each one (`loop_run.LoopRun`).

- Its executor id is its name. It heartbeats into `akira_fleet_workers`; a worker whose heartbeat
  is older than `--worker-timeout` is dead, and a live worker recovers its pending runs through
  DBOS's workflow recovery (a restarted worker of the same name recovers its own at launch).
- SIGTERM (or SIGINT) ends it gracefully: its loops pause at their next step boundary, their runs
  show as queued, its heartbeat is marked stale so that a live worker takes them at once (a
  worker that held none is forgotten instead: nothing to recover), and it exits 0 without
  ending their workflows.
"""

from __future__ import annotations

import logging
import os
import signal
import socket
import sys
import threading
from pathlib import Path
from typing import Any

from akira_cli.fleet.database import (
    APP_NAME,
    APP_VERSION,
    QUEUE,
    WORKFLOW,
    Tables,
    dbos_url,
    open_client,
    quiet_dbos,
)
from akira_cli.fleet.loop_run import PAUSE_WAIT, LoopRun, say
from akira_cli.fleet.runs import RunSpec


class CancelledEcho(logging.Filter):
    """DBOS logs a traceback when a cancelled workflow's body returns (it cannot record the
    output of a cancelled workflow): that is how a cancel ends, not an error, and the worker
    says so in its own line."""

    def filter(self, record: logging.LogRecord) -> bool:
        from dbos._error import DBOSAwaitedWorkflowCancelledError, DBOSWorkflowCancelledError

        kind = record.exc_info[0] if record.exc_info else None
        cancelled = (DBOSAwaitedWorkflowCancelledError, DBOSWorkflowCancelledError)
        return not (kind is not None and issubclass(kind, cancelled))


class Worker:
    def __init__(self, url: str, name: str | None, concurrency: int, work_dir: Path, timeout: float) -> None:
        self.url, self.concurrency, self.work_dir, self.timeout = url, concurrency, work_dir, timeout
        self.name = name or f"{socket.gethostname()}-{os.getpid()}"
        self.stopping = threading.Event()
        self.running: dict[str, threading.Event] = {}
        """Runs in progress here, each with the event set when its loop has ended."""
        self.lock = threading.Lock()
        self.tables = Tables(url)
        self.client = open_client(url)
        """Reads the runs' status outside any workflow: DBOS calls inside one are its steps, and
        a cancelled workflow's next step raises instead of answering."""

    def serve(self) -> int:
        from dbos import DBOS

        quiet_dbos()
        self.tables.beat(self.name)  # before any run can be taken: a worker that dies is seen
        DBOS(
            config={
                "name": APP_NAME,
                "system_database_url": dbos_url(self.url),
                "executor_id": self.name,
                "application_version": APP_VERSION,
                "log_level": "ERROR",
            }
        )
        logging.getLogger("dbos").addFilter(CancelledEcho())
        worker = self

        @DBOS.workflow(name=WORKFLOW)
        def akira_fleet_run(spec: dict[str, Any]) -> dict[str, str]:
            return worker.run(RunSpec(**spec), DBOS.workflow_id or spec["run_id"])

        for signum in (signal.SIGTERM, signal.SIGINT):
            signal.signal(signum, lambda *_: self.stopping.set())
        DBOS.launch()
        DBOS.register_queue(QUEUE, worker_concurrency=self.concurrency, polling_interval_sec=0.25)
        print(f"akira: fleet worker {self.name} is waiting for runs", file=sys.stderr, flush=True)
        beat = max(0.5, min(5.0, self.timeout / 4))
        while not self.stopping.wait(beat):
            self.tables.beat(self.name)
            for dead in self.tables.stale(self.name, self.timeout):
                say(
                    f"fleet worker {self.name} recovers the runs of worker {dead}, "
                    f"silent for {self.timeout:g}s"
                )
                DBOS._recover_pending_workflows([dead])  # its runs start here, or on another live worker
                self.tables.forget(dead)
        return self.hand_back()

    def hand_back(self) -> int:
        """After SIGTERM: the loops pause at a step boundary, then their runs go to the others."""
        with self.lock:
            ended = list(self.running.values())
        for event in ended:
            event.wait(PAUSE_WAIT + 5)
        if ended:
            self.tables.beat(self.name, at=0.0)  # stale at once: a live worker recovers the runs now
        else:
            self.tables.forget(self.name)  # it held none: nothing for another worker to recover
        self.tables.close()
        back = (
            f"; its {len(ended)} run{'s go' if len(ended) > 1 else ' goes'} back to the queue"
            if ended
            else ""
        )
        say(f"fleet worker {self.name} stopped{back}")
        sys.stderr.flush()
        os._exit(0)  # DBOS would wait for the workflows, which must stay pending for the others

    def run(self, spec: RunSpec, workflow_id: str) -> dict[str, str]:
        """A workflow's body: the run, on this worker."""
        ended = threading.Event()
        with self.lock:
            self.running[workflow_id] = ended
        try:
            if self.stopping.is_set():
                result = {"status": "handed_back"}
            else:
                loop = LoopRun(spec, self.name, self.work_dir, self.tables, self.stopping, self.cancelled)
                result = loop.work()
        except BaseException:
            with self.lock:
                self.running.pop(workflow_id, None)  # ended (DBOS records the error): not handed back
            raise
        finally:
            ended.set()
        if result.get("status") == "handed_back":
            threading.Event().wait()  # never returns: the workflow stays pending for another worker
        with self.lock:
            self.running.pop(workflow_id, None)
        return result

    def cancelled(self, run_id: str) -> bool:
        try:
            found = self.client.list_workflows(workflow_ids=[run_id], load_input=False, load_output=False)
        except Exception:
            return False  # the database is busy: asked again at the next look
        return bool(found) and found[0].status == "CANCELLED"
