"""The fleet's database (the fleet): DBOS's system database (its queue and workflows) and two
small tables of akira's own beside them, the workers' heartbeats and the runs' progress.

A SQLite file on one machine (`.state/fleet.sqlite` by default), Postgres for many. `dbos` is
an optional extra: nothing here imports it until a fleet command runs.
"""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

from akira_cli.errors import AkiraError
from akira_cli.redaction import register, url_password, url_without_password

if TYPE_CHECKING:
    import sqlalchemy as sa
    from dbos import DBOSClient

QUEUE = "akira-fleet"
WORKFLOW = "akira_fleet_run"
APP_NAME = "akira-fleet"
APP_VERSION = "akira-fleet-1"
"""Every worker and every `fleet add` uses it, so any worker takes any run."""
ENV_URL = "AKIRA_FLEET_DATABASE_URL"
TABLES = (
    "CREATE TABLE IF NOT EXISTS akira_fleet_workers ("
    "name VARCHAR(200) PRIMARY KEY, beat_at DOUBLE PRECISION NOT NULL, host VARCHAR(200), pid INTEGER)",
    "CREATE TABLE IF NOT EXISTS akira_fleet_progress ("
    "run_id VARCHAR(64) PRIMARY KEY, status VARCHAR(32), worker VARCHAR(200), step VARCHAR(200), "
    "steps_done INTEGER, steps_total INTEGER, cost_usd DOUBLE PRECISION, message TEXT, "
    "loop_seconds DOUBLE PRECISION, updated_at DOUBLE PRECISION, branch VARCHAR(250))",
)
PROGRESS = (
    "status", "worker", "step", "steps_done", "steps_total", "cost_usd", "message", "loop_seconds", "branch",
)  # fmt: skip
ADDED_COLUMNS = {"branch": "VARCHAR(250)"}
"""Columns later versions added to akira_fleet_progress: added to a database made before them."""


def require_dbos() -> None:
    try:
        import dbos  # noqa: F401
    except ImportError:
        raise AkiraError(
            'akira fleet needs the fleet extra: pip install -e ".[fleet]" (or pip install "akira-cli[fleet]")'
        ) from None


def database_url(flag: str | None, root: Path, configured: str | None) -> str:
    """`--database-url`, else AKIRA_FLEET_DATABASE_URL, else `fleet.database_url`, else the
    workspace's SQLite file. Its password is a secret from here on (masked in all akira writes)."""
    url = flag or os.environ.get(ENV_URL) or configured or f"sqlite:///{root / '.state' / 'fleet.sqlite'}"
    if url.startswith("postgres://"):
        url = "postgresql://" + url.removeprefix("postgres://")
    password = url_password(url)
    if password:
        register([password])
    if url.startswith("sqlite:///"):
        Path(url.removeprefix("sqlite:///")).parent.mkdir(parents=True, exist_ok=True)
    elif not url.startswith("postgresql://"):
        raise AkiraError(
            f"{url_without_password(url)} is not a database akira's fleet can use; give "
            "sqlite:///PATH or postgresql://USER:PASSWORD@HOST:PORT/DATABASE"
        )
    return url


def dbos_url(url: str) -> str:
    """The URL as DBOS is given it: a Postgres connection that gives up after 5 s."""
    if url.startswith("postgresql://") and "connect_timeout=" not in url:
        return url + ("&" if "?" in url else "?") + "connect_timeout=5"
    return url


def unreachable(url: str, exc: BaseException) -> AkiraError:
    said = " ".join(str(exc).split("(Background on this error")[0].split())[:200]
    return AkiraError(
        f"the fleet database {url_without_password(url)} cannot be used: {said}; check --database-url, "
        f"{ENV_URL} or fleet.database_url"
    )


def open_client(url: str) -> DBOSClient:
    """A DBOS client on the fleet's database, its schema made if it is new."""
    require_dbos()
    from dbos import DBOSClient

    quiet_dbos()
    try:
        ensure_database(url)
        client = DBOSClient(
            system_database_url=dbos_url(url), application_name=APP_NAME, retry_connection_errors=False
        )
        client._sys_db.run_migrations()  # a client never makes the schema; `fleet add` may come first
    except Exception as exc:
        raise unreachable(url, exc) from None
    return client


def quiet_dbos() -> None:
    """DBOS's own log lines stay out of akira's one-line answers."""
    import logging

    logging.getLogger("dbos").setLevel(logging.CRITICAL + 1)


def engine_url(url: str) -> str:
    return dbos_url(url).replace("postgresql://", "postgresql+psycopg://", 1)


def ensure_database(url: str) -> None:
    """A Postgres database that does not exist yet is made (as DBOS itself would at launch)."""
    if not url.startswith("postgresql://"):
        return
    import sqlalchemy as sa

    target = sa.engine.make_url(engine_url(url))
    engine = sa.create_engine(target.set(database="postgres"), isolation_level="AUTOCOMMIT")
    try:
        with engine.connect() as conn:
            found = conn.execute(
                sa.text("SELECT 1 FROM pg_database WHERE datname = :name"), {"name": target.database}
            )
            if not found.scalar():
                quoted = str(target.database).replace('"', '""')
                conn.execute(sa.text(f'CREATE DATABASE "{quoted}"'))
    finally:
        engine.dispose()


class Tables:
    """The heartbeats and the progress, through SQLAlchemy (which DBOS brings)."""

    def __init__(self, url: str) -> None:
        import sqlalchemy as sa

        self.sa = sa
        try:
            ensure_database(url)
            self.engine: sa.Engine = sa.create_engine(engine_url(url))
            with self.engine.begin() as conn:
                for statement in TABLES:
                    conn.execute(sa.text(statement))
            have = {column["name"] for column in sa.inspect(self.engine).get_columns("akira_fleet_progress")}
            with self.engine.begin() as conn:
                for column, kind in ADDED_COLUMNS.items():
                    if column not in have:
                        conn.execute(sa.text(f"ALTER TABLE akira_fleet_progress ADD COLUMN {column} {kind}"))
        except Exception as exc:
            raise unreachable(url, exc) from None

    def beat(self, name: str, at: float | None = None) -> None:
        self._upsert(
            "akira_fleet_workers",
            "name",
            {
                "name": name,
                "beat_at": time.time() if at is None else at,
                "host": os.uname().nodename,
                "pid": os.getpid(),
            },
        )

    def stale(self, me: str, timeout: float) -> list[str]:
        """Workers other than `me` silent for `timeout` seconds."""
        with self.engine.begin() as conn:
            rows = conn.execute(
                self.sa.text("SELECT name FROM akira_fleet_workers WHERE beat_at < :limit AND name != :me"),
                {"limit": time.time() - timeout, "me": me},
            )
            return [row[0] for row in rows]

    def forget(self, name: str) -> None:
        with self.engine.begin() as conn:
            conn.execute(self.sa.text("DELETE FROM akira_fleet_workers WHERE name = :name"), {"name": name})

    def report(self, run_id: str, **values: Any) -> None:
        """The run's progress: the keys given change, the others stay as they were."""
        given = {key: value for key, value in values.items() if key in PROGRESS}
        self._upsert("akira_fleet_progress", "run_id", {"run_id": run_id, **given, "updated_at": time.time()})

    def branch(self, run_id: str) -> str | None:
        """The task branch recorded for the run, if a worker chose one."""
        with self.engine.begin() as conn:
            found = conn.execute(
                self.sa.text("SELECT branch FROM akira_fleet_progress WHERE run_id = :run_id"),
                {"run_id": run_id},
            ).scalar()
        return str(found) if found else None

    def live_branches(self, but: str) -> list[str]:
        """The branches recorded by the other runs still running (not pushed yet, maybe)."""
        with self.engine.begin() as conn:
            rows = conn.execute(
                self.sa.text(
                    "SELECT branch FROM akira_fleet_progress "
                    "WHERE branch IS NOT NULL AND status = 'running' AND run_id != :run_id"
                ),
                {"run_id": but},
            )
            return [row[0] for row in rows]

    def progress(self) -> dict[str, dict[str, Any]]:
        with self.engine.begin() as conn:
            rows = conn.execute(self.sa.text("SELECT * FROM akira_fleet_progress")).mappings()
            return {row["run_id"]: dict(row) for row in rows}

    def _upsert(self, table: str, key: str, row: dict[str, Any]) -> None:
        names = ", ".join(row)
        values = ", ".join(f":{name}" for name in row)
        updates = ", ".join(f"{name} = excluded.{name}" for name in row if name != key)
        statement = (
            f"INSERT INTO {table} ({names}) VALUES ({values}) ON CONFLICT ({key}) DO UPDATE SET {updates}"
        )
        with self.engine.begin() as conn:
            conn.execute(self.sa.text(statement), row)

    def close(self) -> None:
        self.engine.dispose()
