"""Fleet: W ``adk api_server`` workers on one PostgreSQL, S live sessions over them, one killed.

Each round starts the fake Live server in a process of its own (``_scale_server.py``), a
throwaway PostgreSQL 15 cluster (:mod:`adk_live_resume.testing.postgres`), and W workers as
deployed: ``adk-live-resume adk api_server --session_service_uri postgresql+asyncpg://...``
with ``ADK_LIVE_RESUME_STORE_HANDLE_IN_SESSION=true`` and the round's
``ADK_LIVE_RESUME_HANDLE_STORE_INTERVAL``. S clients (this process, websockets on
``/run_live``) are spread over the workers round-robin and each says ``--turns`` turns. Then
worker 0 is SIGKILLed right after its sessions' last answers (their newest handles are
mostly not written yet: the interval holds them back, or the kill beats the write). Each of
its clients, as behind a load balancer, reconnects to another live worker with the same
session id and asks ``recall``: the fake model lists every user turn it holds, so a turn the
move lost, or gave twice, shows.

Reported per round: sessions moved, turns lost and turns doubled (goal 0), time from the kill
until every moved session was open on its new worker and until every one had its recall
answered (goal <= 3 s), handle-store writes per session-minute, and session rows (events) and
bytes (the ``GET`` session payload) per session. The baseline in the same run is
``handle_store_interval=0`` (every handle written, as before the interval existed).

    python3 scripts/dev.py bench fleet                       # 4 workers, 200 sessions
    python3 scripts/dev.py bench fleet --quick               # 2 workers, 8 sessions
    python3 scripts/dev.py bench fleet --workers 3 --sessions 100 --intervals 30
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import re
import shutil
import signal
import statistics
import tempfile
import textwrap
import time
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import _scale_server
from common import (
    check,
    finite,
    machine,
    markdown_table,
    output_dirs,
    parser,
    percentile,
    write_result,
)

from adk_live_resume.resumption.handle_store import STATE_KEY
from adk_live_resume.resumption.stored_handle import HANDLE_KEY_ENV
from adk_live_resume.testing.postgres import PostgresUnavailable, ThrowawayPostgres
from adk_live_resume.testing.workers import (
    ApiWorker,
    RunLiveClient,
    http_json,
    start_api_worker,
    wait_ready,
)

HERE = Path(__file__).resolve().parent
APP, USER = "fleet", "caller"
AGENT = textwrap.dedent(
    """
    import logging
    import time

    from google.adk.agents import LlmAgent
    from google.adk.sessions.database_session_service import DatabaseSessionService

    root_agent = LlmAgent(name="fleet", model="gemini-live-fake", instruction="Be brief.")

    # The profile of a moved session: each run's start, phase by phase (one DEBUG line a
    # run), and a probe around ADK's session load and its writes (the benchmark's, not the
    # library's).
    logging.getLogger("adk_live_resume.timeline").setLevel(logging.DEBUG)
    _load = DatabaseSessionService.get_session
    _write = DatabaseSessionService.append_event


    async def _timed_load(self, *args, **kwargs):
        began = time.time()
        session = await _load(self, *args, **kwargs)
        print(
            f"fleet probe: session {kwargs.get('session_id')} loaded {began:.6f}"
            f" {time.time():.6f} {len(session.events) if session else 0} events",
            flush=True,
        )
        return session


    async def _timed_write(self, session, event):
        began = time.time()
        written = await _write(self, session, event)
        delta = (event.actions.state_delta if event.actions else None) or {}
        kind = "handle" if "adk_live_resume.handle" in delta else event.author
        print(
            f"fleet probe: session {session.id} wrote {began:.6f} {time.time():.6f} {kind}",
            flush=True,
        )
        return written


    DatabaseSessionService.get_session = _timed_load
    DatabaseSessionService.append_event = _timed_write
    """
)

#: With ``--profile-cpu``: the worker's event loop thread under cProfile (CPU time) from
#: SIGUSR1 until SIGUSR2, which writes ``cpu-<pid>.prof`` beside the worker's log.
CPU_PROFILE = textwrap.dedent(
    """
    import cProfile
    import os
    import signal

    _profile = cProfile.Profile(time.process_time)


    def _start_profile(signum, frame):
        _profile.enable()


    def _stop_profile(signum, frame):
        _profile.disable()
        _profile.dump_stats(f"cpu-{os.getpid()}.prof")


    signal.signal(signal.SIGUSR1, _start_profile)
    signal.signal(signal.SIGUSR2, _stop_profile)
    """
)

#: The chain of a moved session's phases, each from the end of the one before (wall clock):
#: the client sees its socket closed (detect); its websocket to another worker is accepted
#: and ADK's handler starts the session load (reopen); ADK loads the session from the
#: database (load); ADK's runner sets the invocation up (setup); then the run's own
#: timeline (adk_live_resume.observe.run_timeline); the answer reaches the client (deliver).
PHASES = (
    "detect",
    "reopen",
    "load",
    "setup",
    "request",
    "handle",
    "connect",
    "restore",
    "answer",
    "deliver",
)
#: Time inside the chain, not a link of it: the session's database writes between its run's
#: start and its recall reaching the client, ADK's own (the user's turn, the model's
#: answer) and the handle store's.
INSIDE = ("adk writes", "store writes")
_PROBE = re.compile(r"fleet probe: session (\S+) loaded ([\d.]+) ([\d.]+) (\d+) events")
_WROTE = re.compile(r"fleet probe: session (\S+) wrote ([\d.]+) ([\d.]+) (\S+)")
_TIMELINE = re.compile(r"session (\S+): run started at ([\d.]+); (.*)$")


async def _session(
    number: int,
    workers: list[ApiWorker],
    turns: int,
    gap: float,
    gate: asyncio.Semaphore,
    killed: asyncio.Event,
    done: list[int],
) -> dict[str, Any]:
    """One conversation; moves to another worker if its own is worker 0 (killed)."""
    home = number % len(workers)
    await asyncio.sleep(gap * number / max(1, len(workers) * 50))  # spread the starts
    async with gate:  # (session creation and websocket opening only)
        url = f"{workers[home].http}/apps/{APP}/users/{USER}/sessions"
        session_id = (await http_json("POST", url, {}))["id"]
        client = await RunLiveClient.connect(
            workers[home], app=APP, user=USER, session_id=session_id
        )
    started = time.monotonic()
    said = []
    for turn in range(turns):
        text = f"s{number} turn {turn}"
        answer = await client.say(text, timeout=60)
        if answer != f"echo: {text}":
            raise RuntimeError(f"session {number}: {answer!r} to {text!r}")
        said.append(text)
        if turn < turns - 1:
            await asyncio.sleep(gap)
    done.append(number)
    record: dict[str, Any] = {"number": number, "id": session_id, "started": started}
    await killed.wait()
    if home != 0:
        record["client"] = client
        return record
    await client.closed(timeout=30)
    record["closed_at"] = time.time()
    alive = workers[1:]
    record["worker"] = alive[number % len(alive)].name
    moved = await RunLiveClient.connect(
        alive[number % len(alive)], app=APP, user=USER, session_id=session_id
    )
    record["open_at"] = time.time()
    recalled = await moved.say("recall", want=lambda t: t.startswith("you said"), timeout=60)
    record["recalled_at"] = time.time()
    prefix = "you said: "
    heard = recalled.removeprefix(prefix).split(" | ") if recalled.startswith(prefix) else []
    record["lost"] = sum(1 for text in said if text not in heard)
    record["doubled"] = sum(max(0, heard.count(text) - 1) for text in said)
    record["client"] = moved
    return record


async def run_round(
    *,
    workers: int,
    sessions: int,
    interval: float,
    turns: int,
    gap: float,
    hold: float,
    tmp: Path,
    address: Any,
    database: str,
    groups: dict[str, list[int | None]],
    profile_cpu: bool = False,
) -> dict[str, Any]:
    from cryptography.fernet import Fernet

    (tmp / "agents" / APP).mkdir(parents=True)
    (tmp / "agents" / APP / "__init__.py").write_text("from . import agent\n")
    (tmp / "agents" / APP / "agent.py").write_text(AGENT + (CPU_PROFILE if profile_cpu else ""))
    fleet: list[ApiWorker] = []
    try:
        env = {
            "ADK_LIVE_RESUME_STORE_HANDLE_IN_SESSION": "true",
            "ADK_LIVE_RESUME_HANDLE_STORE_INTERVAL": str(interval),
            HANDLE_KEY_ENV: Fernet.generate_key().decode(),
        }
        for number in range(workers):
            fleet.append(
                start_api_worker(
                    str(number),
                    cwd=tmp,
                    agents_dir=tmp / "agents",
                    server=address,
                    session_uri=database,
                    extra_env=env,
                )
            )
        await asyncio.gather(*(wait_ready(w, timeout=180) for w in fleet))
        for worker in fleet:
            # One at a time: ADK's DatabaseSessionService creates its tables on a worker's
            # first request, and workers doing that at once on a new PostgreSQL database race
            # (UniqueViolation on pg_type_typname_nsp_index: HTTP 500).
            await http_json("POST", f"{worker.http}/apps/{APP}/users/{USER}/sessions", {})
        gate, killed = asyncio.Semaphore(25), asyncio.Event()
        done: list[int] = []
        flows = [
            asyncio.create_task(_session(n, fleet, turns, gap, gate, killed, done))
            for n in range(sessions)
        ]
        deadline = time.monotonic() + 120 + sessions * 0.5 + turns * (gap + 5)
        while len(done) < sessions:
            if time.monotonic() > deadline:
                raise RuntimeError(f"only {len(done)} of {sessions} sessions said every turn")
            failed = [f for f in flows if f.done() and f.exception() is not None]
            if failed:
                raise failed[0].exception()  # type: ignore[misc]
            await asyncio.sleep(0.05)
        await asyncio.sleep(hold)
        load_before = os.getloadavg()
        cpu = CpuMeter({"live workers": [w.proc.pid for w in fleet[1:]], **groups})
        if profile_cpu:
            for worker in fleet[1:]:
                worker.proc.send_signal(signal.SIGUSR1)
        cpu.start()
        killed_at = time.time()
        fleet[0].kill()
        killed.set()
        records = await asyncio.wait_for(asyncio.gather(*flows), timeout=120)
        cpu.stop()
        if profile_cpu:
            for worker in fleet[1:]:
                worker.proc.send_signal(signal.SIGUSR2)
        ended_at = time.monotonic()
        load_after = os.getloadavg()
        for record in records:  # the end of every run: its last handle is flushed
            await record.pop("client").websocket.close()
        await asyncio.sleep(3.0)
        payloads = await asyncio.gather(
            *(
                http_json("GET", f"{fleet[1].http}/apps/{APP}/users/{USER}/sessions/{r['id']}")
                for r in records
            )
        )
    finally:
        for worker in fleet:
            worker.kill()
    moved = [r for r in records if "recalled_at" in r]
    profiled_cpu = cpu_by_library(tmp) if profile_cpu else {}
    logs = {w.name: w.log.read_text(errors="replace") for w in fleet[1:]}
    phases = [moved_phases(r, logs[r["worker"]], killed_at) for r in moved]
    last_recall = max((r["recalled_at"] for r in moved), default=killed_at)
    writes = [
        sum(
            1
            for e in p["events"]
            if STATE_KEY in ((e.get("actions") or {}).get("stateDelta") or {})
        )
        for p in payloads
    ]
    minutes = sum(ended_at - r["started"] for r in records) / 60
    return {
        "workers": workers,
        "sessions": sessions,
        "interval": interval,
        "turns": turns,
        "turn_gap_s": gap,
        "hold_s": hold,
        "moved": len(moved),
        "turns_lost": sum(r["lost"] for r in moved),
        "turns_doubled": sum(r["doubled"] for r in moved),
        "all_reopened_s": max((r["open_at"] - killed_at for r in moved), default=0.0),
        "all_recalled_s": max((r["recalled_at"] - killed_at for r in moved), default=0.0),
        "recalled_s": sorted(r["recalled_at"] - killed_at for r in moved),
        "phases_ms": breakdown([p for p in phases if p is not None]),
        "profiled": sum(1 for p in phases if p is not None),
        "writes_during_moves": writes_between(logs.values(), killed_at, last_recall),
        "cpu_s_during_moves": cpu.used,
        "worker_cpu_by_library_s": profiled_cpu,
        "worker_heaviest_functions": heaviest_functions(tmp) if profile_cpu else [],
        "worker_heaviest_of_ours": (
            heaviest_functions(tmp, 12, "adk_live_resume") if profile_cpu else []
        ),
        "load_average_at_kill": load_before,
        "load_average_after": load_after,
        "writes_per_session_minute": sum(writes) / minutes,
        "writes_per_session": sum(writes) / sessions,
        "events_per_session": sum(len(p["events"]) for p in payloads) / sessions,
        "bytes_per_session": sum(len(json.dumps(p)) for p in payloads) / sessions,
    }


def writes_between(logs: Any, start: float, end: float) -> dict[str, dict[str, float]]:
    """The live workers' session writes that began and ended between ``start`` and ``end``
    (wall clock), every session's, by kind (the handle store's, ADK's for the user's turns
    and the model's): how many, and their summed duration in seconds."""
    kinds: dict[str, dict[str, float]] = {}
    for log in logs:
        for wrote in _WROTE.finditer(log):
            began, ended = float(wrote[2]), float(wrote[3])
            if began >= start and ended <= end:
                kind = "handle store" if wrote[4] == "handle" else "ADK"
                entry = kinds.setdefault(kind, {"count": 0, "seconds": 0.0})
                entry["count"] += 1
                entry["seconds"] += ended - began
    return kinds


def moved_phases(record: dict[str, Any], log: str, killed_at: float) -> dict[str, float] | None:
    """One moved session's chain of phases (:data:`PHASES`) in ms, from the client's clock
    and its new worker's log (``None``: the log lacks a line of its run)."""
    session_id = record["id"]
    load = timeline = None
    writes: list[tuple[float, float, str]] = []
    for line in log.splitlines():
        wrote = _WROTE.search(line)
        if wrote and wrote[1] == session_id:
            writes.append((float(wrote[2]), float(wrote[3]), wrote[4]))
        probe = _PROBE.search(line)
        if probe and probe[1] == session_id and load is None and float(probe[2]) >= killed_at:
            load = (float(probe[2]), float(probe[3]))
        told = _TIMELINE.search(line)
        if told and told[1] == session_id and float(told[2]) >= killed_at:
            timeline = (float(told[2]), told[3])
    if load is None or timeline is None:
        return None
    started, tail = timeline
    ms = {name: float(value) for name, value in re.findall(r"(\w+) ([\d.]+) ms", tail)}
    chain = {
        "detect": (record["closed_at"] - killed_at) * 1000,
        "reopen": (load[0] - record["closed_at"]) * 1000,
        "load": (load[1] - load[0]) * 1000,
        "setup": (started - load[1]) * 1000,
        **{phase: ms.get(phase, float("nan")) for phase in PHASES[4:-1]},
    }
    answered = started + sum(ms.values()) / 1000
    chain["deliver"] = (record["recalled_at"] - answered) * 1000
    during = [(b, e, k) for b, e, k in writes if b >= started and e <= record["recalled_at"]]
    chain["adk writes"] = sum(e - b for b, e, k in during if k != "handle") * 1000
    chain["store writes"] = sum(e - b for b, e, k in during if k == "handle") * 1000
    return chain


#: Where a function's code lives -> whose it is, first match wins (paths as in site-packages).
LIBRARIES = (
    ("adk_live_resume", "adk-live-resume"),
    ("google/adk", "google-adk"),
    ("google/genai", "google-genai"),
    ("sqlalchemy", "SQLAlchemy"),
    ("asyncpg", "asyncpg"),
    ("pydantic", "pydantic"),
    ("websockets", "websockets"),
    ("uvicorn", "uvicorn/starlette/fastapi"),
    ("starlette", "uvicorn/starlette/fastapi"),
    ("fastapi", "uvicorn/starlette/fastapi"),
    ("opentelemetry", "opentelemetry"),
    ("asyncio", "asyncio"),
    ("ssl", "ssl"),
    ("json", "json"),
    ("cryptography", "cryptography"),
)


def heaviest_functions(
    directory: Path, count: int = 25, within: str = ""
) -> list[tuple[str, float, float]]:
    """The workers' ``count`` functions with the most CPU seconds of their own (callees
    left out: a coroutine's cumulative time is not to be trusted, it runs across awaits):
    (``path:line(name)``, own s, calls), from their cProfile dumps in ``directory``; only
    those whose file's path holds ``within``, if given."""
    import pstats

    profiles = sorted(directory.glob("cpu-*.prof"))
    if not profiles:
        return []
    stats = pstats.Stats(*map(str, profiles))
    rows = [
        ("/".join(Path(f).parts[-3:]) + f":{line}({name})", own, calls)
        for (f, line, name), (_, calls, own, _, _) in stats.stats.items()  # type: ignore[attr-defined]
        if within in f
    ]
    return sorted(rows, key=lambda row: -row[1])[:count]


def cpu_by_library(directory: Path) -> dict[str, float]:
    """The workers' CPU seconds (their own time, not their callees') by library, from their
    cProfile dumps in ``directory``; a built-in (``~``) counts for the library of its
    heaviest caller."""
    import pstats

    profiles = sorted(directory.glob("cpu-*.prof"))
    if not profiles:
        return {}
    stats = pstats.Stats(*map(str, profiles))
    totals: dict[str, float] = {}
    for (filename, _, name), (_, _, own, _, callers) in stats.stats.items():  # type: ignore[attr-defined]
        where = filename
        if filename == "~" and callers:
            where = max(callers.items(), key=lambda item: item[1][2])[0][0]
        owner = next((lib for part, lib in LIBRARIES if part in where), "other")
        if filename == "~" and name.startswith("<method") and "ssl" in name.lower():
            owner = "ssl"
        totals[owner] = totals.get(owner, 0.0) + own
    return dict(sorted(totals.items(), key=lambda item: -item[1]))


def breakdown(chains: list[dict[str, float]]) -> dict[str, dict[str, float]]:
    """Median and p95 of each phase over the moved sessions, in ms."""
    summary = {}
    for phase in (*PHASES, *INSIDE):
        values = sorted(c[phase] for c in chains if c[phase] == c[phase])
        if values:
            summary[phase] = {
                "median": statistics.median(values),
                "p95": percentile(values, 95),
                "max": values[-1],
            }
    return summary


HEADER = [
    "interval s",
    "workers",
    "sessions",
    "moved",
    "turns lost",
    "doubled",
    "all reopened s",
    "all recalled s",
    "writes / session-min",
    "writes / session",
    "events / session",
    "bytes / session",
]


def row(r: dict[str, Any]) -> list[object]:
    return [
        r["interval"],
        r["workers"],
        r["sessions"],
        r["moved"],
        r["turns_lost"],
        r["turns_doubled"],
        r["all_reopened_s"],
        r["all_recalled_s"],
        r["writes_per_session_minute"],
        r["writes_per_session"],
        r["events_per_session"],
        round(r["bytes_per_session"]),
    ]


def plot(rounds: list[dict[str, Any]], target: Path) -> None:
    from common import pyplot, save_figure

    plt = pyplot()
    figure, (moves, sizes) = plt.subplots(1, 2, figsize=(11, 4))
    for r in rounds:
        times = r["recalled_s"]
        moves.step(
            [0.0, *times],
            list(range(len(times) + 1)),
            where="post",
            label=f"interval {r['interval']:g} s",
        )
    moves.axvline(3.0, color="grey", linestyle=":", label="goal: 3 s")
    moves.set_xlabel("seconds after SIGKILL of worker 0")
    moves.set_ylabel("moved sessions with recall answered")
    moves.set_title(f"{rounds[0]['sessions']} sessions on {rounds[0]['workers']} workers")
    moves.legend(loc="lower right")
    labels = [f"{r['interval']:g} s" for r in rounds]
    sizes.bar(labels, [r["bytes_per_session"] / 1024 for r in rounds])
    sizes.set_xlabel("handle_store_interval")
    sizes.set_ylabel("GET session payload, KiB per session")
    sizes.set_title(f"after {rounds[0]['turns']} turns and the move")
    save_figure(figure, target)


def session_database(
    stack: contextlib.ExitStack, tmp: Path, *, quick: bool
) -> tuple[str, int | None]:
    """A new database on a throwaway PostgreSQL (stopped with ``stack``) and its server's
    process group; with ``--quick``, a SQLite file where no PostgreSQL can run here (said so;
    no group), so the smoke test runs anywhere."""
    try:
        postgres = stack.enter_context(ThrowawayPostgres())
    except PostgresUnavailable as error:
        if not quick:
            raise
        print(f"[bench] no PostgreSQL here ({error}); this smoke run uses SQLite", flush=True)
        return f"sqlite+aiosqlite:///{tmp / 'sessions.db'}", None
    return postgres.create_database("fleet"), postgres.pid


def group_cpu_seconds(group: int | None) -> float:
    """CPU seconds (user and system) the live processes of process group ``group`` used so
    far (every child this benchmark starts leads a group of its own; PostgreSQL's backends
    are in their server's). 0 where ``/proc`` cannot tell."""
    if group is None:
        return 0.0
    ticks = 0
    for stat in Path("/proc").glob("[0-9]*/stat"):
        with contextlib.suppress(OSError, ValueError, IndexError):
            fields = stat.read_text().rsplit(")", 1)[1].split()
            if int(fields[2]) == group:  # (state, ppid, pgrp, ...)
                ticks += int(fields[11]) + int(fields[12])  # utime, stime
    return ticks / os.sysconf("SC_CLK_TCK")


def machine_busy_seconds() -> float:
    """CPU seconds every process on the machine used so far (``/proc/stat``: all but idle
    and iowait); 0 where it cannot be read."""
    with contextlib.suppress(OSError, ValueError):
        times = [int(v) for v in Path("/proc/stat").read_text().split("\n")[0].split()[1:]]
        return (sum(times) - times[3] - times[4]) / os.sysconf("SC_CLK_TCK")
    return 0.0


class CpuMeter:
    """CPU seconds used between :meth:`start` and :meth:`stop`, by role."""

    def __init__(self, roles: dict[str, list[int | None]]) -> None:
        self._roles = roles
        self._before: dict[str, float] = {}
        self.used: dict[str, float] = {}

    def _now(self) -> dict[str, float]:
        now = {role: sum(map(group_cpu_seconds, groups)) for role, groups in self._roles.items()}
        times = os.times()
        now["clients (this process)"] = times.user + times.system
        now["whole machine"] = machine_busy_seconds()
        return now

    def start(self) -> None:
        self._before = self._now()

    def stop(self) -> None:
        after = self._now()
        self.used = {role: after[role] - self._before[role] for role in after}


def main() -> None:
    options = parser(__doc__ or "")
    options.add_argument("--workers", type=int, help="api_server workers (default 4, --quick 2)")
    options.add_argument("--sessions", type=int, help="live sessions (default 200, --quick 8)")
    options.add_argument(
        "--turns", type=int, help="turns per session before the kill (default 12, --quick 3)"
    )
    options.add_argument(
        "--turn-gap",
        type=float,
        help="seconds between a session's turns (default 5, --quick 0.5)",
    )
    options.add_argument(
        "--intervals",
        help="handle_store_interval values, comma-separated (default 0,30; --quick 30)",
    )
    options.add_argument(
        "--hold", type=float, default=0.0, help="idle seconds between the turns and the kill"
    )
    options.add_argument(
        "--profile-cpu",
        action="store_true",
        help="cProfile the live workers from the kill until every recall is answered",
    )
    args = options.parse_args()
    workers = args.workers or (2 if args.quick else 4)
    sessions = args.sessions or (8 if args.quick else 200)
    intervals = [float(v) for v in (args.intervals or ("30" if args.quick else "0,30")).split(",")]
    results_dir, plots_dir = output_dirs(args.quick)
    quick = args.quick
    rounds = []
    for interval in intervals:
        began = time.monotonic()
        with (
            tempfile.TemporaryDirectory(prefix="adk-live-resume-fleet-") as tmp,
            contextlib.ExitStack() as stack,
            _scale_server.running() as hello,
        ):
            database, postgres_group = session_database(stack, Path(tmp), quick=args.quick)
            try:
                result = asyncio.run(
                    run_round(
                        workers=workers,
                        sessions=sessions,
                        interval=interval,
                        turns=args.turns or (3 if args.quick else 12),
                        gap=args.turn_gap if args.turn_gap is not None else (0.5 if quick else 5),
                        hold=args.hold,
                        tmp=Path(tmp),
                        address=SimpleNamespace(**hello),
                        database=database,
                        groups={"PostgreSQL": [postgres_group], "fake server": [hello["pid"]]},
                        profile_cpu=args.profile_cpu,
                    )
                )
            except BaseException:
                kept = Path(tempfile.mkdtemp(prefix="adk-live-resume-fleet-logs-"))
                for log in Path(tmp).glob("*.log"):
                    shutil.copy(log, kept)
                print(f"[bench] the round failed; the workers' logs are kept in {kept}")
                raise
        rounds.append(result)
        print(
            f"[bench] interval {interval:g} s: {result['moved']} moved, {result['turns_lost']}"
            f" turns lost, all recalled within {result['all_recalled_s']:.2f} s"
            f" ({time.monotonic() - began:.0f} s)",
            flush=True,
        )
    print()
    print(markdown_table(HEADER, [row(r) for r in rounds]))
    for r in rounds:
        print(
            f"\nA moved session's phases, interval {r['interval']:g} s ({r['profiled']} of"
            f" {r['moved']} profiled; load average {r['load_average_at_kill'][0]:.1f} at the"
            f" kill, {r['load_average_after'][0]:.1f} after):"
        )
        print(
            markdown_table(
                ["phase", "median ms", "p95 ms", "max ms"],
                [[p, v["median"], v["p95"], v["max"]] for p, v in r["phases_ms"].items()],
            )
        )
        print(
            "CPU seconds from the kill until every recall was answered: "
            + ", ".join(f"{role} {s:.2f}" for role, s in r["cpu_s_during_moves"].items())
        )
        print(
            "Session writes on the live workers during the moves (every session's): "
            + ", ".join(
                f"{kind} {w['count']:.0f} ({w['seconds']:.1f} s in all)"
                for kind, w in r["writes_during_moves"].items()
            )
        )
        if r["worker_cpu_by_library_s"]:
            print(
                "The live workers' CPU seconds by library (cProfile, own time): "
                + ", ".join(f"{lib} {s:.2f}" for lib, s in r["worker_cpu_by_library_s"].items())
            )
    about = machine()
    print(f"\nmachine: {about['cpus']} CPUs, {about['platform']}, google-adk {about['google-adk']}")
    for r in rounds:
        check(r["moved"] > 0, "no session moved")
        check(r["turns_lost"] == 0, f"{r['turns_lost']} turns lost at interval {r['interval']}")
        check(r["profiled"] == r["moved"], f"{r['moved'] - r['profiled']} moves not profiled")
        check(
            finite(r["all_recalled_s"], r["writes_per_session_minute"], r["bytes_per_session"]),
            "a figure is not a number",
        )
    write_result(results_dir, "fleet", {"rounds": rounds})
    plot(rounds, plots_dir / "fleet.png")


if __name__ == "__main__":
    main()
