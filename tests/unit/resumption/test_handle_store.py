"""The pure rules of stored handles: sealing, binding to a session, validity, the writer.

No sockets here; the end-to-end behaviour is in ``tests/e2e/test_workers.py``.
"""

from __future__ import annotations

import asyncio
import logging
import time
from typing import Any

import pytest
from cryptography.fernet import Fernet

from adk_live_resume import ResumeHandle, ResumePolicy, run_config_resuming
from adk_live_resume.resumption.handle_store import LatestWriter
from adk_live_resume.resumption.stored_handle import (
    HANDLE_KEY_ENV,
    HandleKeyError,
    HandleSealer,
    SessionKey,
    StoredHandleError,
)

HANDLE = "h-0123456789abcdef-secret-handle"
OWNER = SessionKey("app", "user", "session-1")


def test_a_sealed_handle_opens_for_its_session_and_hides_the_handle() -> None:
    sealer = HandleSealer([Fernet.generate_key()])
    token = sealer.seal(ResumeHandle(HANDLE, 1000.5), OWNER, "voice")
    assert HANDLE not in token and "session-1" not in token
    opened = sealer.open(token, OWNER)
    assert opened.handle == ResumeHandle(HANDLE, 1000.5) and opened.agent_name == "voice"


def test_a_token_copied_to_another_session_is_refused() -> None:
    sealer = HandleSealer([Fernet.generate_key()])
    token = sealer.seal(ResumeHandle(HANDLE, 1.0), OWNER, "voice")
    for other in (
        SessionKey("app", "user", "session-2"),
        SessionKey("app", "mallory", "session-1"),
        SessionKey("other-app", "user", "session-1"),
    ):
        with pytest.raises(StoredHandleError, match="another session"):
            sealer.open(token, other)


@pytest.mark.parametrize(
    ("token", "message"),
    [
        (None, "not a sealed handle"),
        (42, "not a sealed handle"),
        ("", "not a sealed handle"),
        ("gAAAAA-not-a-token", "sealed with a key not in"),
        ("é", "sealed with a key not in"),
    ],
)
def test_garbage_in_the_state_is_refused_clearly(token: object, message: str) -> None:
    with pytest.raises(StoredHandleError, match=message):
        HandleSealer([Fernet.generate_key()]).open(token, OWNER)


def test_altered_or_foreign_tokens_are_refused() -> None:
    key = Fernet.generate_key()
    sealer = HandleSealer([key])
    token = sealer.seal(ResumeHandle(HANDLE, 1.0), OWNER, "voice")
    altered = token[:-8] + ("A" if token[-8] != "A" else "B") + token[-7:]
    with pytest.raises(StoredHandleError, match="altered"):
        sealer.open(altered, OWNER)
    with pytest.raises(StoredHandleError, match="sealed with a key not in"):
        HandleSealer([Fernet.generate_key()]).open(token, OWNER)
    # right key, wrong layout (sealed by something else holding the key)
    with pytest.raises(StoredHandleError, match="unknown layout"):
        sealer.open(Fernet(key).encrypt(b'{"v": 99}').decode(), OWNER)
    with pytest.raises(StoredHandleError, match="not JSON"):
        sealer.open(Fernet(key).encrypt(b"\xff{").decode(), OWNER)
    incomplete = b'{"v": 1, "owner": ["app", "user", "session-1"], "handle": "x"}'
    with pytest.raises(StoredHandleError, match="incomplete"):
        sealer.open(Fernet(key).encrypt(incomplete).decode(), OWNER)


def test_keys_rotate_the_first_seals_all_open() -> None:
    old, new = Fernet.generate_key(), Fernet.generate_key()
    token_old = HandleSealer([old]).seal(ResumeHandle(HANDLE, 1.0), OWNER, "voice")
    rotated = HandleSealer.from_environment({HANDLE_KEY_ENV: f" {new.decode()} , {old.decode()}"})
    assert rotated.open(token_old, OWNER).handle.handle == HANDLE
    token_new = rotated.seal(ResumeHandle(HANDLE, 2.0), OWNER, "voice")
    assert HandleSealer([new]).open(token_new, OWNER).handle.issued_at == 2.0


def test_a_missing_or_bad_key_is_a_clear_error() -> None:
    with pytest.raises(HandleKeyError, match=f"set {HANDLE_KEY_ENV}.*generate_key"):
        HandleSealer.from_environment({})
    with pytest.raises(HandleKeyError, match=f"set {HANDLE_KEY_ENV}"):
        HandleSealer.from_environment({HANDLE_KEY_ENV: " , "})
    with pytest.raises(HandleKeyError, match="key 2 is not a Fernet key"):
        HandleSealer.from_environment({HANDLE_KEY_ENV: f"{Fernet.generate_key().decode()},short"})


def test_resume_handle_age_validity_and_a_repr_that_hides_it() -> None:
    handle = ResumeHandle(HANDLE, 1000.0)
    assert handle.age(now=1060.0) == 60.0
    assert handle.is_valid(ttl=60.0, now=1060.0) and not handle.is_valid(ttl=59.9, now=1060.0)
    assert HANDLE not in repr(handle) and "h-0123" in repr(handle)
    with pytest.raises(ValueError, match="non-empty"):
        ResumeHandle("", 1.0)


def test_run_config_resuming_sets_a_valid_handle_on_a_copy() -> None:
    from google.adk.agents.run_config import RunConfig
    from google.genai import types

    base = RunConfig(response_modalities=[types.Modality.TEXT])
    fresh = ResumeHandle(HANDLE, __import__("time").time() - 10)
    config = run_config_resuming(fresh, base)
    assert config.session_resumption is not None and config.session_resumption.handle == HANDLE
    assert config.response_modalities == [types.Modality.TEXT]
    assert base.session_resumption is None  # untouched
    old = ResumeHandle(HANDLE, fresh.issued_at - 100)
    expired = run_config_resuming(old, base, policy=ResumePolicy(handle_ttl=50))
    assert expired.session_resumption is not None and expired.session_resumption.handle is None
    assert run_config_resuming(None).session_resumption is not None


async def test_latest_writer_coalesces_never_reorders_and_retries_a_failure() -> None:
    async with asyncio.timeout(5):
        written: list[str | None] = []
        gate = asyncio.Event()
        fail_next = [False]

        async def write(value: str | None) -> None:
            await gate.wait()
            if fail_next[0]:
                fail_next[0] = False
                raise RuntimeError("database is locked")
            written.append(value)

        writer = LatestWriter(write, lambda v: "<v>")
        writer.offer("a")  # in flight
        await asyncio.sleep(0)
        writer.offer("b")
        writer.offer("c")  # supersedes b
        gate.set()
        assert await writer.flush(timeout=2)
        assert written == ["a", "c"] and writer.written == 2

        fail_next[0] = True
        writer.offer("d")
        await asyncio.sleep(0.01)
        assert writer.failures == 1 and written == ["a", "c"]
        assert await writer.flush(timeout=2)  # the failed newest value is written again
        assert written == ["a", "c", "d"]

        gate.clear()
        writer.offer("e")
        assert not await writer.flush(timeout=0.05)  # a write that hangs is given up
        assert written == ["a", "c", "d"]


async def test_latest_writer_writes_at_most_once_per_interval_unless_hurried() -> None:
    async with asyncio.timeout(10):
        written: list[str] = []

        async def write(value: str) -> None:
            written.append(value)

        writer = LatestWriter(write, lambda v: "<v>", interval=0.5)
        writer.offer("h1")
        await asyncio.sleep(0.05)
        assert written == ["h1"]  # the first goes at once
        for value in ("h2", "h3", "h4"):
            writer.offer(value)
            await asyncio.sleep(0.02)
        assert written == ["h1"]  # the others wait for the interval, coalesced
        await asyncio.sleep(0.6)
        assert written == ["h1", "h4"]
        writer.offer("h5")
        writer.hurry()  # a goAway, a drop: at once
        await asyncio.sleep(0.05)
        assert written == ["h1", "h4", "h5"]
        writer.offer("h6")
        assert await writer.flush(timeout=2)  # the end of the run: at once
        assert written == ["h1", "h4", "h5", "h6"] and writer.written == 4


def test_a_sealed_handle_says_what_it_covers_and_older_tokens_still_open() -> None:
    import json

    key = Fernet.generate_key()
    sealer = HandleSealer([key])
    token = sealer.seal(ResumeHandle(HANDLE, 5.0), OWNER, "voice", "event-7")
    assert sealer.open(token, OWNER).covers == "event-7"
    assert sealer.open(sealer.seal(ResumeHandle(HANDLE, 5.0), OWNER, "voice"), OWNER).covers == ""
    layout_1 = {"v": 1, "handle": HANDLE, "issued_at": 5.0, "owner": OWNER.as_list(), "agent": "v"}
    old = Fernet(key).encrypt(json.dumps(layout_1).encode()).decode()
    assert sealer.open(old, OWNER).covers is None  # said nothing: a fresh start, not a guess


def _session_with_tokens(tokens: list[str], current: str) -> Any:
    from google.adk.events.event import Event
    from google.adk.events.event_actions import EventActions
    from google.adk.sessions.session import Session

    from adk_live_resume.resumption.handle_store import STATE_KEY

    events = [
        Event(author="voice", actions=EventActions(state_delta={STATE_KEY: token}))
        for token in tokens
    ]
    return Session(
        id=OWNER.session_id,
        app_name=OWNER.app_name,
        user_id=OWNER.user_id,
        state={STATE_KEY: current},
        events=events,
    )


def test_a_token_older_than_the_newest_this_session_stored_is_refused_and_logged(
    caplog: pytest.LogCaptureFixture,
) -> None:
    from types import SimpleNamespace

    from adk_live_resume.resumption.handle_store import SessionHandleStore

    sealer = HandleSealer([Fernet.generate_key()])
    old = sealer.seal(ResumeHandle("h-old-handle-000", time.time() - 60), OWNER, "voice")
    new = sealer.seal(ResumeHandle("h-new-handle-111", time.time() - 1), OWNER, "voice")
    # a client writes the old token back (ADK 2.x /run_live state_delta): a rollback
    ctx = SimpleNamespace(session=_session_with_tokens([old, new, old], current=old))
    store = SessionHandleStore(ctx, sealer, OWNER, "voice")
    with caplog.at_level(logging.WARNING, logger="adk_live_resume.handle_store"):
        assert store.load(ttl=3600) is None
    assert "older than one this session stored" in caplog.text
    assert "h-old-handle" not in caplog.text and "h-new-handle" not in caplog.text
    # the newest token itself is used, with what came after it
    ctx = SimpleNamespace(session=_session_with_tokens([old, new], current=new))
    loaded = SessionHandleStore(ctx, sealer, OWNER, "voice").load(ttl=3600)
    assert loaded is not None and loaded[0].handle == "h-new-handle-111"


def test_only_a_run_whose_consumer_went_away_ends_without_waiting_for_the_store() -> None:
    from adk_live_resume.resumption.handle_store import run_end_waits

    assert run_end_waits(None)  # the queue was closed: the run returned
    assert run_end_waits(RuntimeError("the connection could not be resumed"))
    assert not run_end_waits(asyncio.CancelledError())
    assert not run_end_waits(GeneratorExit())


async def test_latest_writer_lets_go_of_the_newest_value_without_waiting() -> None:
    async with asyncio.timeout(5):
        written: list[str] = []
        delay = [0.2]

        async def write(value: str) -> None:
            await asyncio.sleep(delay[0])
            written.append(value)

        writer = LatestWriter(write, lambda v: "<v>", interval=600)
        writer.offer("a")
        await asyncio.sleep(0.3)
        writer.offer("b")  # waits for the interval
        loop = asyncio.get_running_loop()
        started = loop.time()
        writer.let_go(timeout=1.0)
        assert loop.time() - started < 0.05 and written == ["a"]
        await asyncio.sleep(0.3)
        assert written == ["a", "b"], "written in the background, at once"

        delay[0] = 60.0  # a write that hangs is given up after the timeout
        writer.offer("c")
        await asyncio.sleep(0.01)
        writer.let_go(timeout=0.1)
        await asyncio.sleep(0.3)
        assert written == ["a", "b"] and writer.written == 2
        assert all(not t.get_name().startswith("adk_live_resume") for t in asyncio.all_tasks())


def _store_writes() -> list[asyncio.Task[Any]]:
    return [t for t in asyncio.all_tasks() if t.get_name() == "adk_live_resume handle store"]


async def test_the_next_run_of_a_session_gives_up_the_write_its_last_run_let_go(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from types import SimpleNamespace

    from google.adk.sessions.session import Session

    from adk_live_resume.resumption.handle_store import SessionHandleStore

    monkeypatch.setenv(HANDLE_KEY_ENV, Fernet.generate_key().decode())
    async with asyncio.timeout(5):
        written: list[Any] = []
        entered = asyncio.Event()

        async def append_event(session: Any, event: Any) -> None:
            entered.set()
            await asyncio.sleep(60)  # a session database far away
            written.append(event)

        def context(session_id: str) -> Any:
            session = Session(id=session_id, app_name="app", user_id="user")
            service = SimpleNamespace(append_event=append_event)
            return SimpleNamespace(
                session=session, session_service=service, invocation_id="i", branch=None
            )

        ended = SessionHandleStore.for_context(context("session-1"), agent_name="voice")
        ended.save(ResumeHandle(HANDLE, time.time()))
        await entered.wait()
        ended.let_go(timeout=30)  # the run ended; its write goes on
        SessionHandleStore.for_context(context("session-2"), agent_name="voice")
        await asyncio.sleep(0.05)
        assert _store_writes(), "another session's run leaves it alone"
        SessionHandleStore.for_context(context("session-1"), agent_name="voice")
        await asyncio.sleep(0.05)
        assert not _store_writes() and written == [], "given up: it never lands"
