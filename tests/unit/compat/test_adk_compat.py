"""The version adapter: what it detects on the installed google-adk is coherent and callable.

Run on every release of the matrix (``scripts/matrix.py``): each test checks one detected
feature against the release itself, never against a version string.
"""

from __future__ import annotations

import inspect
import re
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
from google.adk.agents.live_request_queue import LiveRequestQueue
from google.adk.events.event import Event
from google.adk.flows.llm_flows.base_llm_flow import BaseLlmFlow
from google.adk.flows.llm_flows.single_flow import SingleFlow
from google.adk.models.llm_response import LlmResponse

from adk_live_resume.compat import adk_compat

#: Part of the core resumption tests every release of the matrix runs.
pytestmark = pytest.mark.core

ROOT = Path(__file__).resolve().parents[3]
surface = adk_compat.surface()


def _dummy_ctx() -> Any:
    """Just enough of an InvocationContext for a background-tool shutdown with nothing running."""
    return SimpleNamespace(
        agent=SimpleNamespace(name="a", _llm_flow=SingleFlow()),
        active_streaming_tools={},
        active_non_blocking_tool_tasks={},
        _active_background_tools={},
    )


def test_the_surface_is_detected_once_for_the_installed_release() -> None:
    assert surface is adk_compat.surface()
    assert surface.version == adk_compat.adk_version()
    # the suite runs on tested releases only: install() accepts it without a warning
    assert adk_compat.check_supported_version(surface.version) == "tested"


def test_pyproject_has_the_lower_bound_and_no_upper_cap() -> None:
    text = (ROOT / "pyproject.toml").read_text(encoding="utf-8")
    declared = re.search(r'"google-adk([^"]+)"', text)
    assert declared is not None
    assert declared.group(1) == ">=" + ".".join(map(str, adk_compat.SUPPORTED_ADK_MIN))
    low, high = adk_compat.TESTED_ADK_TEXT.split(",")
    assert adk_compat.parse_version(low.removeprefix(">=")) == adk_compat.SUPPORTED_ADK_MIN
    assert adk_compat.parse_version(high.removeprefix("<")) == adk_compat.TESTED_ADK_BELOW


def test_the_shape_follows_the_presence_of_module_functions() -> None:
    module = adk_compat._live_flow_module()
    if module is not None:
        assert surface.shape == "module functions"
        assert surface.live_module == module.__name__
        assert inspect.iscoroutinefunction(module.send_to_model)
        assert inspect.isasyncgenfunction(module.receive_from_model)
    else:
        assert surface.shape == "flow methods"
        assert surface.live_module == BaseLlmFlow.__module__
        assert inspect.iscoroutinefunction(BaseLlmFlow._send_to_model)  # type: ignore[attr-defined]
        assert inspect.isasyncgenfunction(BaseLlmFlow._receive_from_model)  # type: ignore[attr-defined]


def test_the_send_and_receive_steps_bind_with_the_right_arguments() -> None:
    # A wrong arity raises TypeError at call time, before anything runs.
    flow, conn, ctx, request = SingleFlow(), object(), object(), object()
    send = surface.send_step(flow, conn, ctx, request)
    assert inspect.iscoroutine(send)
    send.close()
    receive = surface.receive_step(flow, conn, ctx, request, "event-id")
    assert inspect.isasyncgen(receive)
    preprocess = surface.preprocess(flow, ctx, request)
    assert inspect.isasyncgen(preprocess)


def test_preprocess_takes_live_only_where_adk_accepts_it() -> None:
    parameters = inspect.signature(BaseLlmFlow._preprocess_async).parameters
    assert surface.preprocess_takes_live == ("live" in parameters)


def test_model_resolution_matches_the_release() -> None:
    if surface.get_llm_is_async:
        assert inspect.iscoroutinefunction(BaseLlmFlow._get_llm)  # type: ignore[attr-defined]
    else:
        private = BaseLlmFlow._BaseLlmFlow__get_llm  # type: ignore[attr-defined]
        assert callable(private) and not inspect.iscoroutinefunction(private)


async def test_background_tool_shutdown_is_callable_the_way_the_release_wants() -> None:
    await surface.stop_background(SingleFlow(), _dummy_ctx())


def test_the_reconnect_sentinel_is_the_class_the_receive_step_yields() -> None:
    sentinel = surface.reconnect_sentinel
    assert surface.sentinel_mode(Event(author="x")) is None
    if sentinel is None:
        assert not surface.sentinel_has_mode
        return
    assert issubclass(sentinel, Event)
    assert surface.has_go_away_field, "ADK yields its sentinel on goAway"
    module = __import__(surface.live_module, fromlist=["_ReconnectSentinel"])
    assert module._ReconnectSentinel is sentinel
    assert surface.sentinel_mode(sentinel(author="system")) == "resume"
    if surface.sentinel_has_mode:
        restart = type(sentinel.model_fields["mode"].default)("restart")
        assert surface.sentinel_mode(sentinel(author="system", mode=restart)) == "restart"


def test_go_away_field_detection() -> None:
    assert surface.has_go_away_field == ("go_away" in LlmResponse.model_fields)


async def test_queue_closed_detection() -> None:
    queue = LiveRequestQueue()
    if not surface.queue_has_closed:
        assert not hasattr(queue, "closed")
        return
    assert queue.closed is False
    queue.close()
    assert queue.closed is True


@pytest.mark.parametrize("delay", ["transfer_delay", "task_completion_delay"])
def test_delays_are_adks(delay: str) -> None:
    value = getattr(surface, delay)
    assert isinstance(value, float) and 0 < value <= 5


def test_without_adk_source_the_tool_call_hold_is_told_by_release(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A frozen install has no source to read: ADK 1.28+ holds tool calls all the same, and
    the tap must end native-audio tool turns for it (else the call never reaches the tool)."""
    import inspect

    from adk_live_resume.compat import adk_compat

    read = adk_compat.holds_tool_calls_until_turn_complete()

    def no_source(obj: object) -> str:
        raise OSError("could not get source code")

    monkeypatch.setattr(inspect, "getsource", no_source)
    expected = adk_compat.parse_version(adk_compat.adk_version()) >= (1, 28, 0)
    assert adk_compat.holds_tool_calls_until_turn_complete() is expected
    assert read is expected, "the source says what the release says"


@pytest.mark.parametrize(
    ("gemini_3_live", "last_role", "adk_sends_it", "expected"),
    [
        (True, "user", False, {"text": adk_compat.HISTORY_ANSWER_TRIGGER}),
        (True, "user", True, None),  # ADK asks for the answer itself: never twice
        (True, "model", False, None),  # the model waits for the user: nothing to answer
        (False, "user", False, None),  # other models answer the history's turnComplete
    ],
)
def test_a_fresh_history_is_followed_by_the_answer_trigger_only_where_adk_leaves_it_out(
    monkeypatch: pytest.MonkeyPatch,
    gemini_3_live: bool,
    last_role: str,
    adk_sends_it: bool,
    expected: dict[str, str] | None,
) -> None:
    monkeypatch.setattr(adk_compat, "sends_history_answer_trigger", lambda: adk_sends_it)
    connection = SimpleNamespace(_is_gemini_3_x_live=gemini_3_live)
    contents = [SimpleNamespace(role="user"), SimpleNamespace(role=last_role)]
    assert adk_compat.history_answer_trigger(connection, contents) == expected
    assert adk_compat.history_answer_trigger(connection, []) is None


@pytest.mark.parametrize(
    ("model", "expected"),
    [
        ("gemini-3.8-live-extended-thinking", {"text": adk_compat.HISTORY_ANSWER_TRIGGER}),
        ("models/gemini-3.1-flash-live-preview", {"text": adk_compat.HISTORY_ANSWER_TRIGGER}),
        ("gemini-3.5-live-translate-preview", None),
        ("gemini-live-2.5-flash", None),
        (None, None),
    ],
)
def test_a_release_without_the_gemini_3_dialect_asks_a_3x_model_to_answer_its_history(
    model: str | None, expected: dict[str, str] | None
) -> None:
    """google-adk 1.27 does not know the 3.x Live family (its connection has no
    ``_is_gemini_3_x_live``) and sends no placeholder: the model's name says it is owed."""
    connection = SimpleNamespace()
    contents = [SimpleNamespace(role="user")]
    assert adk_compat.history_answer_trigger(connection, contents, model) == expected
    ends_with_model = [SimpleNamespace(role="model")]
    assert adk_compat.history_answer_trigger(connection, ends_with_model, model) is None
