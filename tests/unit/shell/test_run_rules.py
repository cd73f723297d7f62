"""The run's rules behind one object (run_rules.RunRules): the questions asked of several."""

from __future__ import annotations

from types import SimpleNamespace

import pytest
from google.genai import types

from adk_live_resume.resumption.handle_store import HandleKeeper
from adk_live_resume.resumption.handles import ResumptionState
from adk_live_resume.rules.policy import ResumePolicy
from adk_live_resume.shell.queue_guard import QueueGuard
from adk_live_resume.shell.run_rules import RunRules

from ...helpers import typed_turn

pytestmark = pytest.mark.timeout(30)

HANDLE = "handle-abcdefghijklmnopqrstuvwxyz"


def _rules(handle: str | None = HANDLE) -> RunRules:
    rules = RunRules(ResumePolicy(), SimpleNamespace())
    keeper = HandleKeeper(None, ttl=60.0, store=None)
    handles = ResumptionState.starting_with(handle)
    rules.started(handles=handles, keeper=keeper, guard=None)  # type: ignore[arg-type]
    return rules


def test_a_resumable_handle_with_nothing_pending_is_a_safe_point() -> None:
    assert _rules().at_safe_point()
    assert not _rules(None).at_safe_point()
    rules = _rules()
    rules.handles.observe(new_handle=None, resumable=False, last_consumed_index=None, now=1.0)
    assert not rules.at_safe_point()  # the newest handle may not be resumed now


def test_an_unanswered_typed_turn_is_no_safe_point_until_its_answer_ends() -> None:
    rules = _rules()
    rules.outbox.record("send_client_content", typed_turn("hello"))
    assert not rules.at_safe_point()
    rules.outbox.model_text("hi there")
    rules.outbox.turn_complete()
    assert rules.at_safe_point()


def test_a_speaking_user_is_busy_and_no_safe_point() -> None:
    rules = _rules()
    assert not rules.user_busy()
    rules.outbox.record("send_realtime_input", {"activity_start": types.ActivityStart()})
    assert rules.user_busy() and not rules.at_safe_point()


async def test_a_request_in_adks_hand_is_no_safe_point() -> None:
    from google.adk.agents.live_request_queue import LiveRequestQueue

    queue = LiveRequestQueue()
    rules = _rules()
    guard = QueueGuard(queue)
    rules.started(handles=rules.handles, keeper=rules.keeper, guard=guard)
    queue.send_content(types.Content(role="user", parts=[types.Part(text="first")]))
    await queue.get()
    assert not rules.at_safe_point()
    guard.mark_sent()
    assert rules.at_safe_point()
    guard.release()
