"""The fake server's ``issue_handle`` fault: a real handle right after ``setupComplete``.

Over a raw TLS websocket to the fake (no SDK: what goes on the wire is the fault's business).
"""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest

from adk_live_resume.testing import Fault

from .test_fake_server import raw, raw_recv

SETUP = {"model": "models/x", "sessionResumption": {}}


def test_an_issue_handle_fault_fires_after_the_setup_and_ends_nothing() -> None:
    fault = Fault.issue_handle()
    assert fault.issues_handle and fault.after_setup
    assert not fault.is_drop and not fault.sends_message


async def test_a_handle_is_issued_right_after_the_setup_and_resumes(
    fake_live_server_factory: Any,
) -> None:
    server = await fake_live_server_factory()
    server.script(Fault.issue_handle(), connection=1)
    async with asyncio.timeout(10):
        async with raw(server, SETUP) as ws:
            assert "setupComplete" in await raw_recv(ws)
            update = (await raw_recv(ws))["sessionResumptionUpdate"]
            handle = update["newHandle"]
            assert update["resumable"] is True
        first = (await server.wait_for_connections(1, finished=True))[0]
        assert first.server_keys()[:2] == ["setupComplete", "sessionResumptionUpdate"]
        assert first.handles_issued == [handle], "a handle the server knows"
        async with raw(
            server, {"model": "models/x", "sessionResumption": {"handle": handle}}
        ) as ws:
            assert "setupComplete" in await raw_recv(ws)
        second = (await server.wait_for_connections(2, finished=True))[1]
        assert second.resumed and second.resume_handle == handle
        assert second.handles_issued == [], "each fault fires on its own connection, once"


async def test_no_handle_goes_to_a_setup_that_asked_for_none(fake_live_server_factory: Any) -> None:
    server = await fake_live_server_factory()
    server.script(Fault.issue_handle(), connection=1)
    async with asyncio.timeout(10):
        async with raw(server, {"model": "models/x"}) as ws:
            assert "setupComplete" in await raw_recv(ws)
            await ws.send(json.dumps({"realtime_input": {"text": "hello"}}))
            while "turnComplete" not in (await raw_recv(ws)).get("serverContent", {}):
                pass
        [record] = await server.wait_for_connections(1, finished=True)
    assert "sessionResumptionUpdate" not in record.server_keys()
    assert record.handles_issued == []


async def test_an_issue_handle_fault_armed_after_the_setup_says_what_to_use(
    fake_live_server_factory: Any,
) -> None:
    server = await fake_live_server_factory()
    async with asyncio.timeout(10), raw(server, SETUP) as ws:
        assert "setupComplete" in await raw_recv(ws)
        with pytest.raises(ValueError, match="issue_handles_now"):
            server.script(Fault.issue_handle(), connection=1)
