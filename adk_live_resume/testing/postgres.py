"""A throwaway PostgreSQL cluster on 127.0.0.1, for tests and benchmarks of several workers.

:class:`ThrowawayPostgres` runs ``initdb`` and ``pg_ctl`` from a local PostgreSQL install
(``ADK_LIVE_RESUME_PG_BIN``, else ``/usr/lib/postgresql/*/bin``, else ``PATH``) in a temporary
directory, on a free port, listening on 127.0.0.1 only with trust authentication, and removes
it all on :meth:`ThrowawayPostgres.stop`. The server refuses to run as root: under root the
binaries run as the ``postgres`` user (through ``runuser``), which owns the directory.

Guarantees: :meth:`ThrowawayPostgres.start` either returns with a server that accepts
connections or raises :class:`PostgresUnavailable` saying why (no binaries, no ``postgres``
user under root, ``initdb`` or the start failed, with the tail of the server log); nothing
listens on another address; :meth:`ThrowawayPostgres.stop` never raises and leaves no
process behind (``pg_ctl stop -m immediate``).
"""

from __future__ import annotations

import contextlib
import glob
import os
import shutil
import socket
import subprocess
import tempfile
from pathlib import Path

__all__ = ["PostgresUnavailable", "ThrowawayPostgres", "find_binaries"]

BIN_ENV = "ADK_LIVE_RESUME_PG_BIN"


class PostgresUnavailable(RuntimeError):
    """No PostgreSQL server can be started here; the message says why."""


def find_binaries() -> Path:
    """The directory holding ``initdb``, ``pg_ctl`` and ``psql``; raises if there is none."""
    candidates = [os.environ.get(BIN_ENV, "")]
    candidates += sorted(glob.glob("/usr/lib/postgresql/*/bin"), reverse=True)
    which = shutil.which("initdb")
    if which:
        candidates.append(str(Path(which).parent))
    for candidate in candidates:
        if candidate and all((Path(candidate) / n).exists() for n in ("initdb", "pg_ctl", "psql")):
            return Path(candidate)
    raise PostgresUnavailable(
        "PostgreSQL binaries (initdb, pg_ctl, psql) not found in /usr/lib/postgresql/*/bin or"
        f" on PATH; install PostgreSQL (e.g. apt-get install postgresql) or set {BIN_ENV}"
    )


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


class ThrowawayPostgres:
    """One PostgreSQL cluster in a temporary directory; ``url(db)`` names a database in it."""

    def __init__(self) -> None:
        self.port = 0
        self._bin: Path | None = None
        self._dir: Path | None = None
        self._as: list[str] = []
        self._databases = 0

    def start(self, timeout: float = 60.0) -> ThrowawayPostgres:
        self._bin = find_binaries()
        if os.geteuid() == 0:
            try:
                import pwd

                user = pwd.getpwnam("postgres")
            except KeyError:
                raise PostgresUnavailable(
                    "PostgreSQL refuses to run as root and there is no 'postgres' user to run"
                    " it as; run the tests as another user or create one"
                ) from None
            self._as = ["runuser", "-u", "postgres", "--"]
        self._dir = Path(tempfile.mkdtemp(prefix="adk-live-resume-pg-"))
        if self._as:
            os.chown(self._dir, user.pw_uid, user.pw_gid)
        data, log = self._dir / "data", self._dir / "server.log"
        self.port = _free_port()
        self._run(
            ["initdb", "-D", str(data), "-A", "trust", "-U", "postgres", "-E", "UTF8", "-N"],
            timeout,
        )
        options = (
            f"-p {self.port} -k {self._dir} -c listen_addresses=127.0.0.1 -c fsync=off"
            " -c synchronous_commit=off -c full_page_writes=off -c max_connections=200"
        )
        try:
            self._run(
                ["pg_ctl", "-D", str(data), "-l", str(log), "-o", options, "-w", "start"],
                timeout,
            )
        except PostgresUnavailable as error:
            tail = log.read_text(errors="replace")[-2000:] if log.exists() else ""
            self.stop()
            raise PostgresUnavailable(f"{error}\nserver log:\n{tail}") from None
        return self

    def url(self, database: str = "postgres") -> str:
        """A ``postgresql+asyncpg://`` URL of ``database`` (for ADK's DatabaseSessionService)."""
        return f"postgresql+asyncpg://postgres@127.0.0.1:{self.port}/{database}"

    def create_database(self, prefix: str = "db") -> str:
        """Create a new empty database; returns its ``postgresql+asyncpg://`` URL."""
        self._databases += 1
        name = f"{prefix}_{os.getpid()}_{self._databases}"
        self._psql(f'CREATE DATABASE "{name}"')
        return self.url(name)

    def _psql(self, sql: str) -> None:
        assert self._bin is not None
        command = [str(self._bin / "psql"), "-h", "127.0.0.1", "-p", str(self.port)]
        command += ["-U", "postgres", "-d", "postgres", "-v", "ON_ERROR_STOP=1", "-qc", sql]
        subprocess.run(command, check=True, capture_output=True, timeout=60)

    def _run(self, command: list[str], timeout: float) -> None:
        assert self._bin is not None and self._dir is not None
        full = [*self._as, str(self._bin / command[0]), *command[1:]]
        try:
            subprocess.run(full, check=True, capture_output=True, timeout=timeout, cwd=self._dir)
        except (subprocess.CalledProcessError, subprocess.TimeoutExpired, OSError) as error:
            output = getattr(error, "stderr", b"") or b""
            raise PostgresUnavailable(
                f"{command[0]} failed: {error}; {output.decode(errors='replace')[-1500:]}"
            ) from None

    def stop(self) -> None:
        """Stop the server at once and remove its directory; never raises."""
        if self._dir is None:
            return
        data = self._dir / "data"
        if (data / "postmaster.pid").exists():
            with contextlib.suppress(PostgresUnavailable):
                self._run(["pg_ctl", "-D", str(data), "-m", "immediate", "-w", "stop"], 60)
        shutil.rmtree(self._dir, ignore_errors=True)
        self._dir = None

    def __enter__(self) -> ThrowawayPostgres:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()
