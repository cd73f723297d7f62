"""One round of ``benchmarks/scale.py``: N live sessions in this process, all dropped at once.

Run by ``scale.py`` (a helper, not a benchmark)::

    python benchmarks/_scale_sessions.py --sessions 500 --pacing on --server '<hello JSON>'

Every session is a real ``Runner.run_live`` (one runner, one agent, one session each, the
patch installed) on the real google-genai SDK, talking TLS to the fake server of
``_scale_server.py`` in another process. Each session says ``before <i>`` and checks the
answer, waits for its resumption handle; then every session says ``again <i>`` at once (the
CPU of that turn is measured) and waits for the handle after it; then the server drops every
socket at once; each session at once asks ``recall`` and checks that the answer is ``you
said: before <i> | again <i>`` (its turns from before the drop, kept by the resumed session
or rebuilt in a fresh one: the turn sent during the outage was not lost). Prints one JSON
line: every connection attempt's time (``Gemini.connect`` calls, client side), every
resume's and every recall's time, relative to the drop, and the memory and CPU the sessions
took.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import gc
import json
import os
import resource
import sys
import time
from collections.abc import AsyncIterator, Iterator
from typing import Any

from _scale_server import raise_fd_limit

#: Sessions started (connected and through their first turn) at the same time.
STARTING_AT_ONCE = 25
#: ``gc.set_threshold`` with ``--gc-tuning on``.
GC_THRESHOLDS = (50_000, 20, 100)
#: Seconds any single wait of the round may take before the session counts as failed.
TIMEOUT = 180.0


class Address:
    """Where the fake server is (what ``fake_gemini`` needs)."""

    def __init__(self, base_url: str, cert_path: str) -> None:
        self.base_url = base_url
        self.cert_path = cert_path


def rss_bytes() -> int:
    """This process's resident set size (Linux ``/proc/self/statm``)."""
    with open("/proc/self/statm") as statm:
        return int(statm.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


def cpu_seconds() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


class LoopLag:
    """How late the event loop runs a 10 ms ticker (the process is busy), and the time the
    garbage collector's full collections took."""

    def __init__(self) -> None:
        self.worst = 0.0
        self.gc_seconds = 0.0
        self.gc_full = 0
        self._gc_started = 0.0
        gc.callbacks.append(self._on_gc)

    def _on_gc(self, phase: str, info: dict[str, int]) -> None:
        if info.get("generation") != 2:
            return
        if phase == "start":
            self._gc_started = time.perf_counter()
        else:
            self.gc_seconds += time.perf_counter() - self._gc_started
            self.gc_full += 1

    async def tick(self) -> None:
        loop = asyncio.get_running_loop()
        while True:
            before = loop.time()
            await asyncio.sleep(0.01)
            self.worst = max(self.worst, loop.time() - before - 0.01)


def counting_model(address: Address, attempts: list[float]) -> Any:
    """An ADK model bound to the fake server that notes the time of every connect call."""
    from adk_live_resume.fault_proxy.client_config import fake_gemini

    base: Any = type(fake_gemini(address))

    class CountingGemini(base):  # type: ignore[misc]
        def connect(self, llm_request: Any) -> Any:
            attempts.append(time.monotonic())
            return super().connect(llm_request)

    return CountingGemini(
        model="gemini-live-fake", fake_base_url=address.base_url, fake_cert_path=address.cert_path
    )


async def wait_for_handle(driver: Any, older: Any = None) -> None:
    """Wait until the session has a resumption handle (it follows the turn's end), one
    other than ``older`` if given."""
    import adk_live_resume

    async with asyncio.timeout(TIMEOUT):
        # the handle arrives with no event to wait on: poll
        while adk_live_resume.current_handle(driver.queue) in (None, older):  # noqa: ASYNC110
            await asyncio.sleep(0.01)


async def _control(port: int, command: str) -> dict[str, Any]:
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    writer.write(f"{command}\n".encode())
    await writer.drain()
    reply: dict[str, Any] = json.loads(await reader.readline())
    writer.close()
    await writer.wait_closed()
    return reply


def _brief(error: BaseException) -> str:
    cause = error.__cause__ or error.__context__
    text = f"{type(error).__name__}: {error}"[:200]
    return text + (f" <- {type(cause).__name__}: {cause}"[:200] if cause else "")


def tune_gc() -> None:
    """The garbage collector settings for a process that holds many long-lived sessions (a
    user-side choice, see docs/benchmarks.md): what exists once they are up (modules, agents, the
    sessions' state) leaves the collector's view (``gc.freeze()``), and the youngest
    generation is collected every 50,000 allocations instead of 700, so a mass resume (tens of
    thousands of short-lived pydantic models and frames) does not trigger full collections."""
    gc.freeze()
    gc.set_threshold(*GC_THRESHOLDS)


class RoundMeter:
    """What every kind of round measures alike: the memory the sessions take and the time
    they take to start, the CPU and the event loop's lag over the recovery, the errors."""

    def __init__(self, sessions: int, gc_tuning: bool) -> None:
        self.sessions = sessions
        self.gc_tuning = gc_tuning
        self.errors: list[str] = []
        self.rss_before = self.rss_after = 0
        self.start_seconds = self.cpu_recovery = 0.0
        self.lag: LoopLag | None = None
        #: When each session's ``recall`` was answered right (``time.monotonic()``).
        self.recalled_at: list[float] = []
        #: What each session said before the drop (``<word> <i>``), which ``recall`` repeats.
        self.said: tuple[str, ...] = ("before",)
        #: The CPU of one turn of every session at once, no drop (:meth:`steady_turn`).
        self.cpu_turn = float("nan")

    @contextlib.contextmanager
    def starting(self) -> Iterator[None]:
        """Around the start of every session: the memory before and after (collected
        first), the time it took; then the garbage collector is tuned (``--gc-tuning on``)."""
        gc.collect()
        self.rss_before = rss_bytes()
        started_at = time.monotonic()
        yield
        self.start_seconds = time.monotonic() - started_at
        gc.collect()
        self.rss_after = rss_bytes()
        if self.gc_tuning:
            tune_gc()

    @contextlib.asynccontextmanager
    async def steady_turn(self) -> AsyncIterator[None]:
        """Around one more turn of every session at once (``again <i>``), before the drop:
        its CPU is what a turn costs without a reconnect, which the recovery's ``recall``
        also costs (CPU per reconnect less this, per session: the reconnect's own)."""
        cpu_before = cpu_seconds()
        yield
        self.cpu_turn = cpu_seconds() - cpu_before
        self.said = ("before", "again")

    def check_again(self, i: int, answer: str | None) -> bool:
        """Session ``i``'s steady turn was answered with its echo (an error if not)."""
        if answer != f"echo: again {i}":
            self.errors.append(f"again {i}: answered {answer!r}")
            return False
        return True

    @contextlib.asynccontextmanager
    async def recovering(self) -> AsyncIterator[None]:
        """Around the recovery: the CPU it took and how late the loop ran."""
        cpu_before = cpu_seconds()
        self.lag = lag = LoopLag()
        ticker = asyncio.create_task(lag.tick())
        yield
        self.cpu_recovery = cpu_seconds() - cpu_before
        ticker.cancel()

    def check_before(self, i: int, answer: str | None) -> None:
        """Session ``i``'s first answer is its echo, or the session failed."""
        if answer != f"echo: before {i}":
            raise AssertionError(f"session {i} answered {answer!r}")

    def recalled(self, i: int, answer: str | None) -> bool:
        """Whether session ``i`` recalled its turn from before the drop (an error if not)."""
        if answer != "you said: " + " | ".join(f"{word} {i}" for word in self.said):
            self.errors.append(f"after {i}: answered {answer!r}")
            return False
        self.recalled_at.append(time.monotonic())
        return True

    def figures(self, client: str, started: int, drop: dict[str, Any]) -> dict[str, Any]:
        """The figures every kind of round reports, ``drop`` the server's reply to it."""
        at = float(drop["at"])
        assert self.lag is not None, "figures of a round that did not recover"
        return {
            "sessions": self.sessions,
            "client": client,
            "gc_tuning": self.gc_tuning,
            "started": started,
            "start_seconds": self.start_seconds,
            "rss_before": self.rss_before,
            "rss_after": self.rss_after,
            "memory_per_session": (self.rss_after - self.rss_before) / max(1, started),
            "dropped": drop["dropped"],
            # when each session was back for its user: its turn after the drop answered
            "recalled": [t - at for t in self.recalled_at],
            "drop_seconds": float(drop["done"]) - at,
            "cpu_recovery": self.cpu_recovery,
            "cpu_turn": self.cpu_turn,
            "loop_lag_worst": self.lag.worst,
            "gc_full_seconds": self.lag.gc_seconds,
            "gc_full_collections": self.lag.gc_full,
            "fd_limit": resource.getrlimit(resource.RLIMIT_NOFILE)[0],
            "errors": self.errors[:20],
            "error_count": len(self.errors),
        }


async def run_round(
    sessions: int, pacing: bool, hello: dict[str, Any], gc_tuning: bool, share: float | None = None
) -> dict[str, Any]:
    from google.adk.agents import LlmAgent
    from google.adk.runners import InMemoryRunner

    import adk_live_resume
    from adk_live_resume import ResumePolicy
    from adk_live_resume.testing import LiveDriver

    policy = ResumePolicy() if pacing else ResumePolicy(process_reconnect_rate=0)
    if share is not None:
        policy = policy.replace(process_reconnect_share=share)
    adk_live_resume.install(policy)
    attempts: list[float] = []
    resumes: list[tuple[float, str, bool, int]] = []

    def on_reconnect(info: adk_live_resume.ReconnectInfo) -> None:
        resumes.append((time.monotonic(), info.session_id, info.state_restored, info.attempt))

    adk_live_resume.on_reconnect(on_reconnect)
    model = counting_model(Address(hello["base_url"], hello["cert_path"]), attempts)
    agent = LlmAgent(name="scale", model=model, instruction="Answer briefly.")
    runner = InMemoryRunner(agent=agent, app_name="scale")
    meter = RoundMeter(sessions, gc_tuning)
    errors = meter.errors
    gate = asyncio.Semaphore(STARTING_AT_ONCE)

    async def start(i: int) -> LiveDriver | None:
        async with gate:
            driver = await LiveDriver.start(agent, runner=runner, user_id=f"user-{i}")
            try:
                meter.check_before(i, await driver.say(f"before {i}", timeout=TIMEOUT))
                await wait_for_handle(driver)
            except Exception as error:
                errors.append(f"start {i}: {_brief(error)}")
                await driver.cancel()
                return None
            return driver

    with meter.starting():
        started = await asyncio.gather(*(start(i) for i in range(sessions)))
    drivers = {i: d for i, d in enumerate(started) if d is not None}

    async def again(i: int, driver: LiveDriver) -> None:
        try:
            meter.check_again(i, await driver.say(f"again {i}", timeout=TIMEOUT))
        except Exception as error:
            errors.append(f"again {i}: {_brief(error)}")

    older = {i: adk_live_resume.current_handle(d.queue) for i, d in drivers.items()}
    async with meter.steady_turn():
        await asyncio.gather(*(again(i, d) for i, d in drivers.items()))
    # the drop comes after each turn's handle (polled: not in the turn's CPU)
    await asyncio.gather(*(wait_for_handle(d, older[i]) for i, d in drivers.items()))

    resumes.clear()
    connects_before = len(attempts)
    profile = os.environ.get("SCALE_PROFILE")  # a path: profile the recovery into it
    profiler = None
    if profile:
        import cProfile

        profiler = cProfile.Profile()
        profiler.enable()

    async def after(i: int, driver: LiveDriver) -> bool:
        try:
            answer = await driver.answer_after(marks[i], timeout=TIMEOUT)
        except Exception as error:
            errors.append(f"after {i}: {_brief(error)}")
            return False
        return meter.recalled(i, answer)

    async with meter.recovering():
        drop = await _control(hello["control_port"], "drop")
        marks = {i: driver.send_text("recall") for i, driver in drivers.items()}
        answered = await asyncio.gather(*(after(i, d) for i, d in drivers.items()))
    if profiler is not None:
        profiler.disable()
        profiler.dump_stats(str(profile))
    at = float(drop["at"])
    recovery = {
        "attempts": [t - at for t in attempts[connects_before:]],
        "resumed": [t - at for t, _, _, _ in resumes],
        "sessions_reconnected": len({s for _, s, _, _ in resumes}),
        "state_restored": len({s for _, s, restored, _ in resumes if restored}),
        "turns_ok": sum(answered),
    }

    async def close(driver: LiveDriver) -> None:
        with contextlib.suppress(Exception):
            error = await driver.close(timeout=TIMEOUT)
            if error is not None:
                errors.append(f"close: {_brief(error)}")

    await asyncio.gather(*(close(d) for d in drivers.values()))
    adk_live_resume.uninstall()
    return {
        **meter.figures("patched", len(drivers), drop),
        "pacing": pacing,
        "pacer": _pacer_counts(),
        **recovery,
    }


async def run_bare_round(sessions: int, hello: dict[str, Any], gc_tuning: bool) -> dict[str, Any]:
    """The floor: N bare google-genai sessions (no ADK, no patch) in this process, through the
    same drop, each resuming at once with its newest handle as its receive ends (the
    detecting floor of ``resume_gap``, N at a time), then asking ``recall``. What a process
    pays for the same reconnects with nothing of ADK's or ours: its CPU per reconnect and its
    time until every session resumed are the floor the patched rounds are read against."""
    from google import genai
    from google.genai import types
    from resume_gap import _bare_config, _bare_read, _bare_send, _BareState

    os.environ["SSL_CERT_FILE"] = hello["cert_path"]
    client = genai.Client(
        api_key="bench", http_options=types.HttpOptions(base_url=hello["base_url"])
    )
    attempts: list[float] = []
    resumes: list[float] = []
    meter = RoundMeter(sessions, gc_tuning)
    errors = meter.errors
    model = "gemini-live-fake"

    async def say(session: Any, state: _BareState, text: str) -> str | None:
        await _bare_send(session, state, text)
        async with asyncio.timeout(TIMEOUT):
            await _bare_read(session, state, lambda: state.settled)
        return state.answers[-1] if state.answers else None

    gate = asyncio.Semaphore(STARTING_AT_ONCE)
    stacks: list[contextlib.AsyncExitStack] = []
    dropped = asyncio.Event()

    async def one(i: int) -> tuple[Any, _BareState] | None:
        state = _BareState()
        stack = contextlib.AsyncExitStack()
        stacks.append(stack)
        try:
            async with gate:
                config = _bare_config(None)
                session = await stack.enter_async_context(
                    client.aio.live.connect(model=model, config=config)
                )
                meter.check_before(i, await say(session, state, f"before {i}"))
        except Exception as error:
            errors.append(f"start {i}: {_brief(error)}")
            return None
        return session, state

    with meter.starting():
        opened = await asyncio.gather(*(one(i) for i in range(sessions)))
    live = {i: pair for i, pair in enumerate(opened) if pair is not None}

    async def again(i: int, session: Any, state: _BareState) -> None:
        try:
            meter.check_again(i, await say(session, state, f"again {i}"))  # (and its handle)
        except Exception as error:
            errors.append(f"again {i}: {_brief(error)}")

    async with meter.steady_turn():
        await asyncio.gather(*(again(i, s, st) for i, (s, st) in live.items()))

    async def through_drop(i: int, session: Any, state: _BareState) -> bool:
        try:
            await _bare_read(session, state, lambda: False)  # until the connection ends
            await dropped.wait()
            attempts.append(time.monotonic())
            stack = contextlib.AsyncExitStack()
            stacks.append(stack)
            config = _bare_config(state.handle)
            session = await stack.enter_async_context(
                client.aio.live.connect(model=model, config=config)
            )
            resumes.append(time.monotonic())
            answer = await say(session, state, "recall")
        except Exception as error:
            errors.append(f"after {i}: {_brief(error)}")
            return False
        return meter.recalled(i, answer)

    async with meter.recovering():
        watching = [asyncio.create_task(through_drop(i, s, st)) for i, (s, st) in live.items()]
        await asyncio.sleep(0)  # every reader is in its receive
        drop = await _control(hello["control_port"], "drop")
        dropped.set()
        answered = await asyncio.gather(*watching)
    at = float(drop["at"])
    for stack in stacks:
        with contextlib.suppress(Exception):
            await stack.aclose()
    return {
        **meter.figures("bare", len(live), drop),
        "pacing": False,
        "attempts": [t - at for t in attempts],
        "resumed": [t - at for t in resumes],
        "sessions_reconnected": len(resumes),
        "state_restored": sum(answered),
        "turns_ok": sum(answered),
    }


def _pacer_counts() -> dict[str, Any]:
    """The pacer's own counts for the round (how many waited, were held at the window, its lead)."""
    from adk_live_resume.shell.pacing import pacer_for

    schedule = pacer_for(asyncio.get_running_loop()).schedule
    return {
        "paced": schedule.paced,
        "held": getattr(schedule, "held", 0),
        "ahead": getattr(schedule, "ahead", 0.0),
    }


def main() -> None:
    parsed = argparse.ArgumentParser(description=__doc__)
    parsed.add_argument("--sessions", type=int, required=True)
    parsed.add_argument("--pacing", choices=("on", "off"), required=True)
    parsed.add_argument("--server", required=True, help="the server's hello line (JSON)")
    parsed.add_argument(
        "--client",
        choices=("patched", "bare"),
        default="patched",
        help="patched Runner.run_live sessions, or bare google-genai ones (the floor)",
    )
    parsed.add_argument(
        "--gc-tuning",
        choices=("on", "off"),
        default="on",
        help="tune_gc() once the sessions are up (default on)",
    )
    parsed.add_argument(
        "--share",
        type=float,
        help="process_reconnect_share of the patched sessions' policy (default: the default)",
    )
    args = parsed.parse_args()
    raise_fd_limit()
    hello = json.loads(args.server)
    if args.client == "bare":
        result = asyncio.run(run_bare_round(args.sessions, hello, args.gc_tuning == "on"))
    else:
        result = asyncio.run(
            run_round(args.sessions, args.pacing == "on", hello, args.gc_tuning == "on", args.share)
        )
    sys.stdout.write(json.dumps(result) + "\n")


if __name__ == "__main__":
    main()
