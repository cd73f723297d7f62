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
import tempfile
import textwrap
import time
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import _scale_server
from common import check, finite, machine, markdown_table, output_dirs, parser, write_result

from adk_live_resume.handle_store import STATE_KEY
from adk_live_resume.stored_handle import HANDLE_KEY_ENV
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
    from google.adk.agents import LlmAgent

    root_agent = LlmAgent(name="fleet", model="gemini-live-fake", instruction="Be brief.")
    """
)


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
    record["closed_at"] = time.monotonic()
    alive = workers[1:]
    moved = await RunLiveClient.connect(
        alive[number % len(alive)], app=APP, user=USER, session_id=session_id
    )
    record["open_at"] = time.monotonic()
    recalled = await moved.say("recall", want=lambda t: t.startswith("you said"), timeout=60)
    record["recalled_at"] = time.monotonic()
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
) -> dict[str, Any]:
    from cryptography.fernet import Fernet

    (tmp / "agents" / APP).mkdir(parents=True)
    (tmp / "agents" / APP / "__init__.py").write_text("from . import agent\n")
    (tmp / "agents" / APP / "agent.py").write_text(AGENT)
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
        killed_at = time.monotonic()
        fleet[0].kill()
        killed.set()
        records = await asyncio.wait_for(asyncio.gather(*flows), timeout=120)
        ended_at = time.monotonic()
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
        "writes_per_session_minute": sum(writes) / minutes,
        "writes_per_session": sum(writes) / sessions,
        "events_per_session": sum(len(p["events"]) for p in payloads) / sessions,
        "bytes_per_session": sum(len(json.dumps(p)) for p in payloads) / sessions,
    }


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


def session_database(stack: contextlib.ExitStack, tmp: Path, *, quick: bool) -> str:
    """A new database on a throwaway PostgreSQL (stopped with ``stack``); with ``--quick``,
    a SQLite file where no PostgreSQL can run here (said so), so the smoke test runs
    anywhere."""
    try:
        postgres = stack.enter_context(ThrowawayPostgres())
    except PostgresUnavailable as error:
        if not quick:
            raise
        print(f"[bench] no PostgreSQL here ({error}); this smoke run uses SQLite", flush=True)
        return f"sqlite+aiosqlite:///{tmp / 'sessions.db'}"
    return postgres.create_database("fleet")


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
    args = options.parse_args()
    workers = args.workers or (2 if args.quick else 4)
    sessions = args.sessions or (8 if args.quick else 200)
    intervals = [float(v) for v in (args.intervals or ("30" if args.quick else "0,30")).split(",")]
    results_dir, plots_dir = output_dirs(args.quick)
    rounds = []
    for interval in intervals:
        began = time.monotonic()
        with (
            tempfile.TemporaryDirectory(prefix="adk-live-resume-fleet-") as tmp,
            contextlib.ExitStack() as stack,
            _scale_server.running() as hello,
        ):
            database = session_database(stack, Path(tmp), quick=args.quick)
            result = asyncio.run(
                run_round(
                    workers=workers,
                    sessions=sessions,
                    interval=interval,
                    turns=args.turns or (3 if args.quick else 12),
                    gap=args.turn_gap if args.turn_gap is not None else (0.5 if args.quick else 5),
                    hold=args.hold,
                    tmp=Path(tmp),
                    address=SimpleNamespace(**hello),
                    database=database,
                )
            )
        rounds.append(result)
        print(
            f"[bench] interval {interval:g} s: {result['moved']} moved, {result['turns_lost']}"
            f" turns lost, all recalled within {result['all_recalled_s']:.2f} s"
            f" ({time.monotonic() - began:.0f} s)",
            flush=True,
        )
    print()
    print(markdown_table(HEADER, [row(r) for r in rounds]))
    about = machine()
    print(f"\nmachine: {about['cpus']} CPUs, {about['platform']}, google-adk {about['google-adk']}")
    for r in rounds:
        check(r["moved"] > 0, "no session moved")
        check(r["turns_lost"] == 0, f"{r['turns_lost']} turns lost at interval {r['interval']}")
        check(
            finite(r["all_recalled_s"], r["writes_per_session_minute"], r["bytes_per_session"]),
            "a figure is not a number",
        )
    write_result(results_dir, "fleet", {"rounds": rounds})
    plot(rounds, plots_dir / "fleet.png")


if __name__ == "__main__":
    main()
