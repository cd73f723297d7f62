"""The fake's ways of saying no, against the bare google-genai SDK over real TLS websockets:
the quota close, the idle close, a poisoned session and a refused model (each as the field
reports it: sources in their docstrings)."""

from __future__ import annotations

import asyncio
import contextlib
from typing import Any

import pytest
from google.genai import errors

from adk_live_resume.testing import Fault
from adk_live_resume.testing.faults import INTERNAL_ERROR_REASON, QUOTA_CLOSE_AFTER, QUOTA_REASON
from adk_live_resume.testing.settings import IDLE_CLOSE_AFTER, ServerSettings

from .test_fake_server import MODEL, chat, config, next_handle, say, session, turn

pytestmark = pytest.mark.timeout(30)


async def _closed(live: Any) -> errors.APIError:
    """Read until the server closes; return what google-genai raised."""
    with pytest.raises(errors.APIError) as caught:
        async with asyncio.timeout(10):
            while True:
                async for _ in live.receive():
                    pass
    return caught.value


def test_the_quota_reason_is_the_measured_one_cut_to_a_close_frame() -> None:
    assert len(QUOTA_REASON.encode()) == 123
    assert QUOTA_REASON.startswith("You exceeded your current quota, please check your plan")
    fault = Fault.quota_close()
    assert (fault.kind, fault.code, fault.reason) == ("close", 1011, QUOTA_REASON)
    assert fault.after_seconds == QUOTA_CLOSE_AFTER == 0.8
    assert Fault.quota_close(mid_turn=True).after_seconds is None


async def test_a_session_opened_with_the_quota_spent_is_set_up_then_closed(
    fake_live_server_factory: Any,
) -> None:
    server = await fake_live_server_factory(chunk_delay=0.001)
    server.script(Fault.quota_close(), connection=1)
    loop = asyncio.get_running_loop()
    async with session(server) as live:
        set_up = loop.time()  # (connect returned: setupComplete came)
        error = await _closed(live)
        assert loop.time() - set_up >= QUOTA_CLOSE_AFTER - 0.1
    assert error.code == 1011 and QUOTA_REASON in str(error)
    (record,) = await server.wait_for_connections(1, finished=True)
    assert (record.ended_by, record.close_reason) == ("fault", QUOTA_REASON)
    assert "setupComplete" in record.server_keys()


async def test_an_idle_connection_is_closed_1008_without_a_go_away_and_resumes(
    fake_live_server_factory: Any,
) -> None:
    server = await fake_live_server_factory(chunk_delay=0.001, idle_close_after=0.6)
    async with session(server) as live:
        await chat(live, "kept")
        handle = await next_handle(live)
        error = await _closed(live)
    assert error.code == 1008
    record = (await server.wait_for_connections(1, finished=True))[0]
    assert (record.ended_by, record.close_code, record.go_away_sent) == ("idle", 1008, False)
    async with session(server, config(handle=handle)) as live:
        assert await chat(live, "recall") == "you said: kept"  # the session is still there


async def test_client_messages_keep_a_connection_from_the_idle_close(
    fake_live_server_factory: Any,
) -> None:
    # (each gap between client messages is a 0.3 s pause and a turn, well under the idle
    # close's 1.5 s even when a loaded machine slows the turn; the whole exceeds it twice)
    server = await fake_live_server_factory(chunk_delay=0.001, idle_close_after=1.5)
    async with session(server) as live:
        for n in range(10):
            await asyncio.sleep(0.3)
            await say(live, f"still here {n}")
            await turn(live)
        assert server.open_connections() == 1
    (record,) = await server.wait_for_connections(1, finished=True)
    assert record.ended_by == "client"


def test_the_idle_close_follows_the_field_by_default_and_can_be_turned_off() -> None:
    assert ServerSettings().idle_close_after == IDLE_CLOSE_AFTER == 151.0
    assert ServerSettings(idle_close_after=None).idle_close_after is None
    with pytest.raises(ValueError, match="idle_close_after"):
        ServerSettings(idle_close_after=0)


@pytest.mark.parametrize("at_first_input", [False, True])
async def test_every_resume_of_a_poisoned_session_dies_the_same_way_and_fresh_ones_work(
    fake_live_server_factory: Any, at_first_input: bool
) -> None:
    server = await fake_live_server_factory(chunk_delay=0.001)
    async with session(server) as live:
        await chat(live, "kept")
        handle = await next_handle(live)
        server.script(Fault.poison_session(at_first_input=at_first_input), connection=1)
        error = await _closed(live)
    assert error.code == 1011 and INTERNAL_ERROR_REASON in str(error)
    for _ in range(2):
        async with session(server, config(handle=handle)) as live:  # setupComplete came
            if at_first_input:
                await say(live, "recall")
            error = await _closed(live)
        assert error.code == 1011 and INTERNAL_ERROR_REASON in str(error)
    async with session(server) as live:
        assert await chat(live, "fresh") == "echo: fresh"
    ended = [(c.ended_by, c.resumed) for c in await server.wait_for_connections(4, finished=True)]
    assert ended == [("fault", False), ("poisoned", True), ("poisoned", True), ("client", False)]
    assert (
        Fault.poison_session(at_first_input=at_first_input)
        .describe()
        .endswith("first input" if at_first_input else "setup")
    )


async def test_a_refused_model_is_closed_at_every_setup_with_a_handle_or_without(
    fake_live_server_factory: Any,
) -> None:
    server = await fake_live_server_factory(chunk_delay=0.001, refused_models={"gemini-retired"})
    async with session(server) as live:
        await chat(live, "x")
        handle = await next_handle(live)
    client = server.genai_client()
    for cfg in (config(), config(handle=handle)):
        with pytest.raises(Exception) as caught:  # (the SDK's kind of error varies)
            async with client.aio.live.connect(model="gemini-retired", config=cfg) as live:
                with contextlib.suppress(errors.APIError):
                    await turn(live)
                raise AssertionError("a refused model's setup was answered")
        assert "1011" in str(caught.value) or "Internal error" in str(caught.value)
    refused = server.connections[1:]
    assert [(c.ended_by, c.close_code, c.close_reason) for c in refused] == [
        ("refused", 1011, INTERNAL_ERROR_REASON)
    ] * 2
    assert refused[1].resume_handle == handle
    assert all("setupComplete" not in c.server_keys() for c in refused)
    async with session(server) as live:  # other models are served
        assert await chat(live, "y") == "echo: y"
    assert MODEL not in server.settings.refused_models
