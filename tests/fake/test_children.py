"""Nothing left behind: children of a test run go when the run goes, however it goes.

:mod:`adk_live_resume.testing.children` alone first (process groups, the parent-death signal,
the exit hook, spawning from a short-lived thread), then whole runs: a child ``pytest`` on a
generated test that starts a throwaway PostgreSQL (the ``postgres`` fixture of
tests/conftest.py), a fake server (``python -m adk_live_resume.testing serve``) and an
``adk api_server`` worker, then sleeps; it is sent SIGINT, SIGTERM or SIGKILL (once under
pytest-xdist, the controller alone), and within seconds no process it started is left.

Processes are told apart by pid and start time (a pid can be reused); a zombie counts as
gone (it holds no resource but its pid, and only its new parent can reap it).
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import textwrap
import threading
import time
from collections.abc import Iterable, Iterator
from pathlib import Path

import pytest

from adk_live_resume.testing import children

pytestmark = [
    pytest.mark.timeout(120),
    pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="reads /proc (Linux)"),
]

ROOT = Path(__file__).resolve().parents[2]
LINUX = sys.platform.startswith("linux")

#: (pid, start time in clock ticks since boot): one process, never a later one with its pid.
Process = tuple[int, int]


def _stat(pid: int) -> tuple[str, int, int] | None:
    """State, parent pid and start time of ``pid`` from /proc, or None if it has gone."""
    try:
        raw = Path(f"/proc/{pid}/stat").read_text()
    except (FileNotFoundError, ProcessLookupError):
        return None
    fields = raw[raw.rindex(")") + 2 :].split()
    return fields[0], int(fields[1]), int(fields[19])


def _process(pid: int) -> Process:
    stat = _stat(pid)
    assert stat is not None, f"{pid} is not running"
    return pid, stat[2]


def _alive(process: Process) -> bool:
    stat = _stat(process[0])
    return stat is not None and stat[2] == process[1] and stat[0] not in ("Z", "X")


def _descendants(root: int) -> dict[Process, str]:
    """Every live process below ``root`` (not ``root`` itself), with its command line."""
    parents: dict[int, int] = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit() and (stat := _stat(int(entry.name))) is not None:
            parents[int(entry.name)] = stat[1]
    found: dict[Process, str] = {}
    for pid in parents:
        ancestor = parents.get(pid)
        while ancestor is not None and ancestor != root:
            ancestor = parents.get(ancestor)
        if ancestor == root and (stat := _stat(pid)) is not None and stat[0] != "Z":
            try:
                command = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ")
            except (FileNotFoundError, ProcessLookupError):
                continue
            found[(pid, stat[2])] = command.decode(errors="replace")
    return found


def _wait_gone(processes: Iterable[Process], timeout: float) -> list[Process]:
    """Wait up to ``timeout`` s for ``processes`` to go; those still alive then."""
    deadline = time.monotonic() + timeout
    while True:
        left = [p for p in processes if _alive(p)]
        if not left or time.monotonic() > deadline:
            return left
        time.sleep(0.05)


def _python(code: str, *args: str) -> list[str]:
    return [sys.executable, "-c", textwrap.dedent(code), *args]


def _env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTEST_", "ADK_LIVE"))}
    env["PYTHONPATH"] = str(ROOT)
    return env


@pytest.fixture
def reaped() -> Iterator[list[subprocess.Popen[str]]]:
    """Processes a test started, reaped (with their groups) at teardown whatever happened."""
    started: list[subprocess.Popen[str]] = []
    yield started
    for proc in started:
        children.reap(proc, signal.SIGKILL)


def _first_line(proc: subprocess.Popen[str], timeout: float = 30.0) -> str:
    """The first line ``proc`` prints, read in a thread so a silent child cannot hang us."""
    lines: list[str] = []
    stdout = proc.stdout
    assert stdout is not None
    reader = threading.Thread(target=lambda: lines.append(stdout.readline()), daemon=True)
    reader.start()
    reader.join(timeout)
    assert lines and lines[0], f"no line from {proc.args}"
    return lines[0].strip()


def test_a_spawned_child_leads_its_own_session_and_reap_ends_its_whole_group(
    reaped: list[subprocess.Popen[str]],
) -> None:
    proc = children.spawn(
        ["sh", "-c", "sleep 600 & echo $!; wait"], stdout=subprocess.PIPE, text=True
    )
    reaped.append(proc)
    grandchild = _process(int(_first_line(proc)))
    assert os.getpgid(proc.pid) == proc.pid and os.getsid(proc.pid) == proc.pid
    assert os.getpgid(grandchild[0]) == proc.pid
    assert proc in children.live()
    started = time.monotonic()
    children.reap(proc)
    assert time.monotonic() - started < 5
    assert proc.returncode is not None and proc not in children.live()
    assert _wait_gone([grandchild], 5) == []
    children.reap(proc)  # again: nothing happens, nothing raises


def test_reap_also_ends_a_process_that_spawn_did_not_start() -> None:
    proc = subprocess.Popen(["sleep", "600"])
    try:
        started = time.monotonic()
        children.reap(proc)
        assert proc.returncode == -signal.SIGTERM
        assert time.monotonic() - started < 2
    finally:
        proc.kill()
        proc.wait()


def test_a_second_sigterm_ends_the_process_at_once_while_the_first_one_unwinds(
    reaped: list[subprocess.Popen[str]],
) -> None:
    proc = children.spawn(
        _python(
            """
            import time
            from adk_live_resume.testing import children

            children.exit_on_sigterm()
            try:
                print("ready", flush=True)
                time.sleep(60)
            except KeyboardInterrupt as interrupt:
                print("interrupted by", interrupt, flush=True)
                time.sleep(60)  # a finaliser that hangs
            """
        ),
        stdout=subprocess.PIPE,
        text=True,
        env=_env(),
    )
    reaped.append(proc)
    assert _first_line(proc) == "ready"
    proc.send_signal(signal.SIGTERM)
    assert _first_line(proc) == "interrupted by SIGTERM"
    proc.send_signal(signal.SIGTERM)
    assert proc.wait(timeout=10) == -signal.SIGTERM


def test_busy_processes_spin_for_the_block_and_are_killed_after_it_even_on_an_error() -> None:
    with pytest.raises(RuntimeError, match="in the block"), children.busy_processes(2) as busy:
        spinners = [_process(proc.pid) for proc in busy]
        assert len(spinners) == 2 and all(proc in children.live() for proc in busy)
        burnt = _cpu_ticks(busy[0].pid)
        time.sleep(0.3)
        assert _cpu_ticks(busy[0].pid) > burnt, "it spins on the CPU"
        raise RuntimeError("in the block")
    assert _wait_gone(spinners, 5) == []
    assert all(proc.returncode == -signal.SIGKILL for proc in busy)
    assert not any(proc in children.live() for proc in busy)


def _cpu_ticks(pid: int) -> int:
    """User and system CPU time ``pid`` used so far, in clock ticks (/proc/<pid>/stat)."""
    raw = Path(f"/proc/{pid}/stat").read_text()
    fields = raw[raw.rindex(")") + 2 :].split()
    return int(fields[11]) + int(fields[12])


def test_spawn_refuses_to_share_the_callers_session() -> None:
    with pytest.raises(TypeError, match="new session"):
        children.spawn(["true"], start_new_session=False)


@pytest.mark.skipif(not LINUX, reason="the parent-death signal is Linux's")
@pytest.mark.parametrize("death", ["SIGKILL", "exception"])
def test_a_child_goes_when_its_parent_dies_even_by_sigkill(
    death: str, reaped: list[subprocess.Popen[str]]
) -> None:
    parent = children.spawn(
        _python(
            """
            import atexit, sys, time
            from adk_live_resume.testing import children

            atexit.unregister(children.reap_all)  # not the exit hook: the signal alone
            print(children.spawn(["sleep", "600"]).pid, flush=True)
            if sys.argv[1] == "exception":
                sys.stdin.readline()
                raise RuntimeError("the parent fails")
            time.sleep(600)
            """,
            death,
        ),
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
        env=_env(),
    )
    reaped.append(parent)
    child = _process(int(_first_line(parent)))
    if death == "SIGKILL":
        parent.kill()
    else:
        assert parent.stdin is not None
        parent.stdin.write("go\n")
        parent.stdin.flush()
    parent.wait(timeout=30)
    assert _wait_gone([child], 5) == []


def test_the_exit_hook_reaps_what_is_left_when_the_parent_exits(
    reaped: list[subprocess.Popen[str]],
) -> None:
    parent = children.spawn(
        _python(
            """
            from adk_live_resume.testing import children

            import sys

            children._libc_prctl = lambda: None  # no parent-death signal: the exit hook alone
            print(children.spawn(["sleep", "600"]).pid, flush=True)
            sys.stdin.readline()  # exits once the test has seen the child
            """
        ),
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
        env=_env(),
    )
    reaped.append(parent)
    child = _process(int(_first_line(parent)))
    assert parent.stdin is not None
    parent.stdin.close()
    assert parent.wait(timeout=30) == 0
    assert _wait_gone([child], 1) == []


@pytest.mark.skipif(not LINUX, reason="the parent-death signal is Linux's")
def test_a_child_spawned_from_a_short_lived_thread_outlives_the_thread(
    reaped: list[subprocess.Popen[str]],
) -> None:
    spawned: list[subprocess.Popen[str]] = []
    thread = threading.Thread(target=lambda: spawned.append(children.spawn(["sleep", "600"])))
    thread.start()
    thread.join(30)
    reaped.extend(spawned)
    (proc,) = spawned
    time.sleep(0.5)
    assert proc.poll() is None, "the child died with the thread that asked for it"
    children.reap(proc)
    assert proc.returncode == -signal.SIGTERM


def test_the_next_cluster_removes_the_directories_that_killed_runs_left(tmp_path: Path) -> None:
    from adk_live_resume.testing.postgres import DIRECTORY_PREFIX, _remove_abandoned

    gone = subprocess.Popen(["true"])
    gone.wait()
    dead, live = gone.pid, os.getpid()

    def cluster(owner: int, server: int | None, name: str) -> Path:
        directory = tmp_path / f"{DIRECTORY_PREFIX}{owner}-{name}"
        (directory / "data").mkdir(parents=True)
        if server is not None:
            (directory / "data" / "postmaster.pid").write_text(f"{server}\n/x\n")
        return directory

    abandoned = [cluster(dead, dead, "a"), cluster(dead, None, "b")]
    kept = [cluster(live, None, "c"), cluster(dead, live, "d"), tmp_path / "other-1-e"]
    kept[-1].mkdir()
    _remove_abandoned(tmp_path)
    assert [d.exists() for d in abandoned] == [False, False]
    assert [d.exists() for d in kept] == [True, True, True]


#: The run that is killed: a PostgreSQL server, a fake server and an api_server worker, each
#: from a fixture with a finaliser, then a long sleep. It writes what it started to a file.
HOLDING_RUN = """
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from adk_live_resume.testing import children
from adk_live_resume.testing.workers import start_api_worker

OUT = Path(os.environ["REAP_OUT"])


class _Nowhere:
    base_url = "https://127.0.0.1:9"
    cert_path = ""


@pytest.fixture
def fake_server_process(tmp_path):
    proc = children.spawn(
        [sys.executable, "-m", "adk_live_resume.testing", "serve"],
        cwd=tmp_path, stdout=subprocess.PIPE, text=True,
    )
    for line in proc.stdout:
        if line.startswith("# serving"):
            break
    yield proc
    children.reap(proc)


@pytest.fixture
def api_worker(tmp_path):
    (tmp_path / "agents").mkdir()
    worker = start_api_worker(
        "held", cwd=tmp_path, agents_dir=tmp_path / "agents", server=_Nowhere(),
        session_uri=f"sqlite+aiosqlite:///{tmp_path / 'sessions.db'}",
    )
    yield worker
    worker.kill()


def test_hold(postgres, fake_server_process, api_worker):
    worker_id = os.environ.get("PYTEST_XDIST_WORKER", "main")
    started = {
        "postgres": postgres.pid,
        "fake server": fake_server_process.pid,
        "api_server": api_worker.proc.pid,
        "pytest": os.getpid(),
    }
    (OUT / f"{worker_id}.tmp").write_text(json.dumps(started))
    (OUT / f"{worker_id}.tmp").rename(OUT / f"{worker_id}.json")  # whole or not at all
    time.sleep(600)
"""


def _holding_run(tmp_path: Path, xdist: bool) -> tuple[subprocess.Popen[str], dict[str, int]]:
    """Start the holding run; return it and the pids each of its runs reported, once every
    run (one, or one per xdist worker) has started all its children."""
    (tmp_path / "test_holding.py").write_text(HOLDING_RUN)
    (tmp_path / "pytest.ini").write_text(
        "[pytest]\nasyncio_default_fixture_loop_scope = function\n"
    )
    out = tmp_path / "out"
    out.mkdir()
    command = [sys.executable, "-m", "pytest", "-p", "tests.conftest", "-p", "no:cacheprovider"]
    command += ["-q", "-s", "--rootdir", str(tmp_path), "--basetemp", str(tmp_path / "base")]
    command += ["-n", "2", "--dist", "each"] if xdist else ["-p", "no:xdist"]
    command.append("test_holding.py")
    if xdist:
        # SIGINT ignored, as a background job of a script (a CI step) starts it: a worker
        # whose controller died is then not ended by execnet's SIGINT to itself (after 5 s;
        # it calls os._exit 10 s later), only by the plugin's parent-death SIGTERM.
        command = ["sh", "-c", 'trap "" INT; exec "$@"', "sh", *command]
    else:
        # SIGINT as a terminal gives its foreground job, whatever this run inherited (a
        # script's background job, such as a CI step started with &, has it ignored, and a
        # Python started so never turns it into KeyboardInterrupt).
        default_int = "import os, signal, sys; signal.signal(signal.SIGINT, signal.SIG_DFL);"
        default_int += " os.execv(sys.argv[1], sys.argv[1:])"
        command = [sys.executable, "-c", default_int, *command]
    log = (tmp_path / "run.log").open("w")
    proc = children.spawn(
        command,
        cwd=tmp_path,
        env={**_env(), "REAP_OUT": str(out)},
        stdout=log,
        stderr=subprocess.STDOUT,
        text=True,
    )
    log.close()
    runs = 2 if xdist else 1
    deadline = time.monotonic() + 60
    while len(reports := sorted(out.glob("*.json"))) < runs:
        if proc.poll() is not None or time.monotonic() > deadline:
            children.reap(proc, signal.SIGKILL)
            pytest.fail(f"the holding run never held:\n{(tmp_path / 'run.log').read_text()}")
        time.sleep(0.1)
    started: dict[str, int] = {}
    for report in reports:
        for name, pid in json.loads(report.read_text()).items():
            started[f"{report.stem} {name}"] = pid
    return proc, started


@pytest.mark.parametrize(
    ("xdist", "signum"),
    [
        (False, signal.SIGINT),
        (False, signal.SIGTERM),
        (False, signal.SIGKILL),
        (True, signal.SIGTERM),
        (True, signal.SIGKILL),
    ],
    ids=["ctrl-c", "sigterm", "sigkill", "xdist-controller-sigterm", "xdist-controller-sigkill"],
)
def test_a_run_that_is_stopped_or_killed_leaves_no_process_behind(
    xdist: bool, signum: signal.Signals, tmp_path: Path, reaped: list[subprocess.Popen[str]]
) -> None:
    if not LINUX and signum == signal.SIGKILL:
        pytest.skip("only the parent-death signal (Linux) outlives a SIGKILL")
    from adk_live_resume.testing.postgres import PostgresUnavailable, find_binaries

    try:
        find_binaries()
    except PostgresUnavailable as error:
        pytest.skip(f"no PostgreSQL: {error}")
    pytest.importorskip("asyncpg")
    run, started = _holding_run(tmp_path, xdist)
    reaped.append(run)
    below = _descendants(run.pid)
    try:
        commands = "\n".join(below.values())
        for name, pid in started.items():
            if not name.endswith(" pytest"):
                assert pid in {p for p, _ in below}, f"{name} ({pid}) not found below the run"
        assert commands.count("postgres:") >= (2 if xdist else 1), commands  # its backends
        os.kill(run.pid, signum)
        returncode = run.wait(timeout=45)  # xdist waits 10 s for its workers
        left = _wait_gone(below, 10)
        assert left == [], "left behind:\n" + "\n".join(f"{p} {below[p]}" for p in left)
        if signum != signal.SIGKILL:  # an orderly exit, as interrupted, after its finalisers
            log = (tmp_path / "run.log").read_text()
            assert returncode == pytest.ExitCode.INTERRUPTED, log
            assert "KeyboardInterrupt" in log, log
    finally:
        _clear_away(below)


def _clear_away(processes: dict[Process, str]) -> None:
    """Whatever a failed check left running is killed, and the data directory of every
    PostgreSQL cluster among ``processes`` is removed (a killed run cannot remove it)."""
    for process in processes:
        if _alive(process):
            os.kill(process[0], signal.SIGKILL)
    _wait_gone(processes, 5)
    for command in processes.values():
        words = command.split()
        if "-D" in words[:-1] and words[0].endswith("/postgres"):
            cluster = Path(words[words.index("-D") + 1]).parent
            if cluster.name.startswith("adk-live-resume-pg-"):
                shutil.rmtree(cluster, ignore_errors=True)
