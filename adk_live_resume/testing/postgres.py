"""A throwaway PostgreSQL cluster on 127.0.0.1, for tests and benchmarks of several workers.

:class:`ThrowawayPostgres` runs ``initdb`` and then the server (``postgres``, in the
foreground, as a child of this process) from a local PostgreSQL install
(``ADK_LIVE_RESUME_PG_BIN``, else ``/usr/lib/postgresql/*/bin``, else ``PATH``) in a temporary
directory, on a free port, listening on 127.0.0.1 only with trust authentication, and removes
it all on :meth:`ThrowawayPostgres.stop`. The server refuses to run as root: under root the
binaries run as the ``postgres`` user, which owns the directory.

Guarantees: :meth:`ThrowawayPostgres.start` either returns with a server that accepts
connections or raises :class:`PostgresUnavailable` saying why (no binaries, no ``postgres``
user under root, ``initdb`` or the start failed, with the tail of the server log); nothing
listens on another address; :meth:`ThrowawayPostgres.stop` never raises and leaves no
process behind (SIGQUIT, PostgreSQL's immediate shutdown). The server is started with
:func:`~adk_live_resume.testing.children.spawn`: in a process group of its own, reaped at
interpreter exit, and on Linux sent SIGQUIT when this process dies, even by SIGKILL. A
process killed outright leaves only the temporary directory (``adk-live-resume-pg-<pid>-*``);
the next :meth:`ThrowawayPostgres.start` in the same temporary directory removes every such
directory whose owner process and server have both gone.
"""

from __future__ import annotations

import contextlib
import glob
import os
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from pathlib import Path
from typing import Any

from .children import reap, spawn

__all__ = ["PostgresUnavailable", "ThrowawayPostgres", "find_binaries"]

BIN_ENV = "ADK_LIVE_RESUME_PG_BIN"
#: The start of a cluster directory's name; the owner's pid and a random part follow.
DIRECTORY_PREFIX = "adk-live-resume-pg-"
#: The programs :func:`find_binaries` looks for.
PROGRAMS = ("initdb", "postgres", "pg_isready", "psql")


class PostgresUnavailable(RuntimeError):
    """No PostgreSQL server can be started here; the message says why."""


def find_binaries() -> Path:
    """The directory holding ``initdb``, ``postgres``, ``pg_isready`` and ``psql``; raises
    :class:`PostgresUnavailable` if there is none."""
    candidates = [os.environ.get(BIN_ENV, "")]
    candidates += sorted(glob.glob("/usr/lib/postgresql/*/bin"), reverse=True)
    which = shutil.which("initdb")
    if which:
        candidates.append(str(Path(which).parent))
    for candidate in candidates:
        if candidate and all((Path(candidate) / n).exists() for n in PROGRAMS):
            return Path(candidate)
    raise PostgresUnavailable(
        f"PostgreSQL not found: install it (e.g. apt-get install postgresql) or set {BIN_ENV}"
        f" (looked for {', '.join(PROGRAMS)} in /usr/lib/postgresql/*/bin and on PATH)"
    )


def _running(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _remove_abandoned(parent: Path) -> None:
    """Remove the cluster directories in ``parent`` left by a process killed outright: those
    whose owner process (named in the directory) and server (``postmaster.pid``) have gone."""
    for directory in parent.glob(f"{DIRECTORY_PREFIX}*-*"):
        owner = directory.name.removeprefix(DIRECTORY_PREFIX).split("-", 1)[0]
        if not owner.isdigit() or _running(int(owner)):
            continue
        with contextlib.suppress(OSError, ValueError, IndexError):
            server = (directory / "data" / "postmaster.pid").read_text().split()[0]
            if _running(int(server)):
                continue
        shutil.rmtree(directory, ignore_errors=True)


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
        #: Popen's keyword arguments that run a program as the ``postgres`` user (under root).
        self._as: dict[str, Any] = {}
        self._server: subprocess.Popen[bytes] | None = None
        self._databases = 0

    @property
    def pid(self) -> int | None:
        """The server's (the postmaster's) process id while it runs, else None."""
        return self._server.pid if self._server is not None else None

    def start(self, timeout: float = 60.0) -> ThrowawayPostgres:
        """Create the cluster and start its server; returns once it accepts connections."""
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
            environment = {**os.environ, "HOME": user.pw_dir, "USER": "postgres"}
            self._as = dict(
                user=user.pw_uid,
                group=user.pw_gid,
                extra_groups=[],
                env={**environment, "LOGNAME": "postgres"},
            )
        _remove_abandoned(Path(tempfile.gettempdir()))
        self._dir = Path(tempfile.mkdtemp(prefix=f"{DIRECTORY_PREFIX}{os.getpid()}-"))
        if self._as:
            os.chown(self._dir, self._as["user"], self._as["group"])
        data, log = self._dir / "data", self._dir / "server.log"
        self.port = _free_port()
        deadline = time.monotonic() + timeout
        try:
            self._run(
                ["initdb", "-D", str(data), "-A", "trust", "-U", "postgres", "-E", "UTF8", "-N"],
                timeout,
            )
            self._serve(data, log, deadline)
        except PostgresUnavailable as error:
            tail = log.read_text(errors="replace")[-2000:] if log.exists() else ""
            self.stop()
            raise PostgresUnavailable(f"{error}\nserver log:\n{tail}") from None
        except BaseException:
            self.stop()
            raise
        return self

    def _serve(self, data: Path, log: Path, deadline: float) -> None:
        """Start the server in the foreground and wait until it accepts connections."""
        assert self._bin is not None and self._dir is not None
        command = [str(self._bin / "postgres"), "-D", str(data), "-p", str(self.port)]
        command += ["-k", str(self._dir), "-c", "listen_addresses=127.0.0.1", "-c", "fsync=off"]
        command += ["-c", "synchronous_commit=off", "-c", "full_page_writes=off"]
        command += ["-c", "max_connections=200"]
        with log.open("wb") as out:
            self._server = spawn(
                command,
                death_signal=signal.SIGQUIT,  # PostgreSQL's immediate shutdown
                cwd=self._dir,
                stdin=subprocess.DEVNULL,
                stdout=out,
                stderr=subprocess.STDOUT,
                **self._as,
            )
        ready = [str(self._bin / "pg_isready"), "-q", "-h", "127.0.0.1", "-p", str(self.port)]
        while True:
            if self._server.poll() is not None:
                raise PostgresUnavailable(f"postgres exited with {self._server.returncode}")
            with contextlib.suppress(subprocess.TimeoutExpired):
                if subprocess.run(ready, timeout=10, check=False).returncode == 0:
                    return
            if time.monotonic() > deadline:
                raise PostgresUnavailable("postgres did not accept connections in time")
            time.sleep(0.1)

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
        """Run one of the binaries to its end (as a reaped child), raising
        :class:`PostgresUnavailable` with its output if it fails."""
        assert self._bin is not None and self._dir is not None
        full = [str(self._bin / command[0]), *command[1:]]
        try:
            proc = spawn(
                full, cwd=self._dir, stdout=subprocess.PIPE, stderr=subprocess.PIPE, **self._as
            )
        except OSError as error:
            raise PostgresUnavailable(f"{command[0]} failed: {error}") from None
        try:
            _, output = proc.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            raise PostgresUnavailable(f"{command[0]} took more than {timeout} s") from None
        finally:
            reap(proc)
        if proc.returncode != 0:
            raise PostgresUnavailable(
                f"{command[0]} exited with {proc.returncode}:"
                f" {output.decode(errors='replace')[-1500:]}"
            )

    def stop(self) -> None:
        """Stop the server at once and remove its directory; never raises."""
        if self._server is not None:
            reap(self._server)
            self._server = None
        if self._dir is None:
            return
        shutil.rmtree(self._dir, ignore_errors=True)
        self._dir = None

    def __enter__(self) -> ThrowawayPostgres:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()
