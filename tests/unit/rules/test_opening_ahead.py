"""A failed opening ahead (pure reading of its error) and the sends held for it, in order."""

from __future__ import annotations

import asyncio
from typing import Any

from websockets.datastructures import Headers
from websockets.exceptions import ConnectionClosedError, InvalidStatus
from websockets.frames import Close
from websockets.http11 import Response

from adk_live_resume import ResumePolicy
from adk_live_resume.rules.opening_ahead import HeldSends, failure_of
from adk_live_resume.rules.policy import testing_backoff


def _refused(status: int, **headers: str) -> InvalidStatus:
    return InvalidStatus(Response(status, "refused", Headers(headers), b""))


def test_a_busy_server_or_a_timeout_is_a_failure_for_now_with_its_wait() -> None:
    policy = ResumePolicy()
    with testing_backoff():
        busy = failure_of(_refused(429, **{"Retry-After": "3"}), 1, policy)
        assert not busy.refused and busy.retry_in == 3.0
        assert "serves on" in busy.next_step() and "429" in busy.described
        assert failure_of(TimeoutError(), 2, policy).retry_in == 0.0
        assert failure_of(OSError("unreachable"), 1, policy).retry_in == 0.0
    assert failure_of(_refused(503), 3, policy).retry_in is not None


def test_only_a_close_of_the_resume_beside_the_open_socket_stops_opening_ahead() -> None:
    policy = ResumePolicy()
    closed = ConnectionClosedError(Close(1011, "Internal error encountered."), None)
    refused = failure_of(closed, 1, policy)
    assert refused.refused and refused.retry_in is None
    assert "first from now on" in refused.next_step()
    for other in (_refused(403), ValueError("a bug")):
        failure = failure_of(other, 1, policy)
        assert not failure.refused and failure.retry_in is None
        assert failure.next_step() == "closing the old one"


async def _settled(held: HeldSends) -> None:
    """Wait until the held sends stopped going (a few loop turns at most)."""
    for _ in range(100):
        if not held.sending:
            return
        await asyncio.sleep(0)
    raise AssertionError("the held sends are still going")


async def test_held_sends_go_in_order_before_a_later_one_and_stop_when_held_again() -> None:
    sent: list[str] = []
    holding = False
    gate = asyncio.Event()

    async def send(method: str, kwargs: dict[str, Any]) -> None:
        await gate.wait()
        sent.append(kwargs["n"])

    async with asyncio.timeout(5):
        held = HeldSends("test held sends")
        for n in ("1", "2"):
            held.hold("send_client_content", {"n": n})
        held.send_on(send, holding=lambda: holding, failed=lambda error: None)
        assert held.sending
        held.hold("send_client_content", {"n": "3"})  # (a later send waits its turn)
        gate.set()
        await _settled(held)
        assert sent == ["1", "2", "3"]
        held.hold("send_client_content", {"n": "4"})
        holding = True  # (the next try at opening ahead began)
        held.send_on(send, holding=lambda: holding, failed=lambda error: None)
        await _settled(held)
        assert sent == ["1", "2", "3"], "nothing goes once the sends are held again"
        await held.stop()


async def test_a_failed_held_send_is_reported_and_the_sending_stops() -> None:
    errors: list[BaseException] = []

    async def send(method: str, kwargs: dict[str, Any]) -> None:
        raise ConnectionError("gone")

    async with asyncio.timeout(5):
        held = HeldSends("test held sends")
        held.hold("send_client_content", {})
        held.hold("send_client_content", {})
        held.send_on(send, holding=lambda: False, failed=errors.append)
        await _settled(held)
        assert [type(e) for e in errors] == [ConnectionError]
        await held.stop()
