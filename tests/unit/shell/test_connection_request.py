"""The request each connection opens with (connection_request): pure, no sockets."""

from __future__ import annotations

from types import SimpleNamespace

from google.adk.models.llm_request import LlmRequest
from google.adk.utils.variant_utils import GoogleLLMVariant
from google.genai import types

from adk_live_resume.compat import genai_compat
from adk_live_resume.rules.policy import ResumePolicy
from adk_live_resume.shell.connection_request import connect_request, handle_unusable

GEMINI_API = SimpleNamespace(_api_backend=GoogleLLMVariant.GEMINI_API)
VERTEX = SimpleNamespace(_api_backend=GoogleLLMVariant.VERTEX_AI)


def _request() -> LlmRequest:
    request = LlmRequest(
        model="gemini-live-2.5-flash-preview",
        contents=[types.Content(role="user", parts=[types.Part(text="earlier")])],
    )
    request.live_connect_config = types.LiveConnectConfig(
        session_resumption=types.SessionResumptionConfig(handle="the caller's")
    )
    return request


def test_each_connection_gets_a_copy_and_the_runs_request_stays_untouched() -> None:
    base = _request()
    before = base.model_dump()
    request, transparent = connect_request(base, "h-1", llm=GEMINI_API, policy=ResumePolicy())
    assert base.model_dump() == before
    assert request.live_connect_config.session_resumption.handle == "h-1"
    assert request.live_connect_config is not base.live_connect_config
    assert not transparent


def test_transparent_is_asked_of_vertex_ai_only() -> None:
    policy = ResumePolicy(transparent=True)
    request, transparent = connect_request(_request(), "h", llm=GEMINI_API, policy=policy)
    assert not transparent and request.live_connect_config.session_resumption.transparent is None
    request, transparent = connect_request(_request(), "h", llm=VERTEX, policy=policy)
    assert transparent and request.live_connect_config.session_resumption.transparent


def test_history_is_asked_for_by_a_fresh_session_only() -> None:
    resumed, _ = connect_request(_request(), "h", llm=GEMINI_API, policy=ResumePolicy())
    history = getattr(resumed.live_connect_config, "history_config", None)
    assert history is None or history.initial_history_in_client_content is None
    fresh, _ = connect_request(_request(), None, llm=GEMINI_API, policy=ResumePolicy())
    assert fresh.live_connect_config.session_resumption.handle is None
    if genai_compat.sdk_accepts_history_config(False):
        assert fresh.live_connect_config.history_config.initial_history_in_client_content


def test_a_handle_too_old_or_lacking_what_the_model_cannot_take_is_not_resumed() -> None:
    model = "gemini-live-2.5-flash-preview"
    fine = handle_unusable("h", 10.0, ttl=60.0, context_waiting=True, model=model)
    assert fine is None
    old = handle_unusable("h", 61.0, ttl=60.0, context_waiting=False, model=model)
    assert old is not None and "61 s old" in old
    assert handle_unusable(None, None, ttl=60.0, context_waiting=True, model=model) is None
