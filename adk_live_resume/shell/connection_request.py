"""The request each connection of a live run opens with, and what its model takes on it.

No I/O. The run's first connection resumes the caller's handle or a stored one
(:func:`first_handles`); the run's ``LlmRequest`` (ADK's preprocessing) is copied for each
connection with that connection's handle; the model decides what may be sent mid-session.

Guarantees:

* The caller's ``RunConfig`` and the run's request are never mutated; every connection gets
  its own copy.
* History is asked for only when a session starts fresh, never on resume: a resumed setup
  never asks for ``initial_history_in_client_content``.
* ``transparent`` is only ever requested from Vertex AI.
"""

from __future__ import annotations

import logging
from typing import Any

from google.genai import types

from ..compat import adk_compat, genai_compat
from ..resumption.handle_store import HandleKeeper
from ..resumption.handles import ResumptionState, redact
from ..rules.model_families import ends_turn_after_tool_call, takes_mid_session_content
from ..rules.policy import ResumePolicy

logger = logging.getLogger("adk_live_resume.loop")


def asked_resumption(request: Any) -> types.SessionResumptionConfig | None:
    """The session resumption the caller's ``RunConfig`` asked for (``None``: not asked)."""
    return (
        request.live_connect_config.session_resumption
        if request.live_connect_config is not None
        else None
    )


def first_handles(request: Any, ctx: Any, keeper: HandleKeeper, now: float) -> ResumptionState:
    """The handle the run's first connection resumes: the caller's (its ``RunConfig``, else
    the invocation context's), else the one ``keeper`` loaded from its store, whose catch-up
    the model then gets once (not a session sent no mid-session content, Gemini 3.1 Live: it
    starts fresh instead, see :mod:`..rules.model_families`)."""
    asked = asked_resumption(request)
    handles = ResumptionState.starting_with(
        (asked.handle if asked is not None else None) or ctx.live_session_resumption_handle
    )
    stored = keeper.loaded
    resumes_stored = False
    if not handles.handle and stored is not None:
        if keeper.catch_up and not takes_mid_session(request.model):
            # Gemini 3.1 Live is sent no client content mid-session (as in handle_unusable)
            logger.info("the session holds turns after the stored handle; starting fresh")
        else:
            handles = ResumptionState.starting_with(stored.handle, received_at=now - stored.age())
            resumes_stored = True
    if not resumes_stored:
        keeper.take_catch_up()  # given only with the stored handle, once
    return handles


def connect_request(
    base: Any, handle: str | None, *, llm: Any, policy: ResumePolicy
) -> tuple[Any, bool]:
    """A copy of ``base``, the run's request, for one connection resuming ``handle``
    (``None``: a fresh session), and whether it asks for transparent resumption: the
    caller's objects stay untouched."""
    request = base.model_copy()
    source = base.live_connect_config or types.LiveConnectConfig()
    config = source.model_copy()
    asked = source.session_resumption
    transparent: bool | None = None
    if adk_compat.is_vertex(llm):
        asked_transparent = asked.transparent if asked is not None else None
        transparent = policy.transparent if asked_transparent is None else asked_transparent
    config.session_resumption = types.SessionResumptionConfig(
        handle=handle, transparent=transparent
    )
    if config.context_window_compression is None and policy.sliding_window:
        config.context_window_compression = types.ContextWindowCompressionConfig(
            sliding_window=types.SlidingWindow()
        )
    history = getattr(source, "history_config", None)  # google-genai < 1.6x: none
    if handle:
        if history is not None and history.initial_history_in_client_content is not None:
            trimmed = history.model_copy(update={"initial_history_in_client_content": None})
            config.history_config = trimmed if trimmed.model_dump(exclude_none=True) else None
    elif request.contents and genai_compat.sdk_accepts_history_config(adk_compat.is_vertex(llm)):
        # (An older google-genai refuses history_config for Vertex AI: the history then
        # goes as plain clientContent, as google-adk 1.x sends it.)
        if history is None:
            config.history_config = types.HistoryConfig(initial_history_in_client_content=True)
        elif history.initial_history_in_client_content is None:
            config.history_config = history.model_copy(
                update={"initial_history_in_client_content": True}
            )
    request.live_connect_config = config
    return request, bool(transparent)


def takes_mid_session(model: str | None) -> bool:
    """``model`` takes ``clientContent`` mid-session (see :mod:`..rules.model_families`)."""
    dialect = adk_compat.speaks_gemini_3_live(model)
    return takes_mid_session_content(model, gemini_3_dialect=dialect)


def tool_turns_need_an_end(model: str | None) -> bool:
    """ADK holds tool calls until a ``turnComplete`` this model does not send after them
    (native audio, see :mod:`..rules.model_families`): the tap must end the turn for ADK."""
    dialect = adk_compat.speaks_gemini_3_live(model)
    return adk_compat.holds_tool_calls_until_turn_complete() and not (
        ends_turn_after_tool_call(model, gemini_3_dialect=dialect)
        or dialect  # ADK passes 3.x Live calls on at once
    )


def handle_unusable(
    handle: str | None, age: float | None, *, ttl: float, context_waiting: bool, model: str | None
) -> str | None:
    """Why the next connection cannot resume ``handle``, ``age`` seconds old (``None``: it
    can); ``context_waiting``: the outbox holds conversation the handle lacks."""
    if not handle:
        return None
    if age is not None and age > ttl:
        return f"resumption handle is {age:.0f} s old; starting a fresh session"
    if context_waiting and not takes_mid_session(model):
        # Gemini 3.1 Live takes no client content mid-session: what the handle lacks
        # goes to a fresh session as history instead of being lost.
        return (
            f"the conversation since handle {redact(handle)} cannot be"
            f" replayed to a {model} session (it takes no clientContent"
            " mid-session); starting a fresh session with the conversation so far"
        )
    return None


def session_limited(
    request: Any, policy: ResumePolicy, run_config: Any, *, audio_used: bool
) -> bool:
    """An audio session without context window compression: the service ends it at 15 min.

    ``audio_used``: the user spoke or sent audio in this run."""
    config = request.live_connect_config if request is not None else None
    if config is not None and config.context_window_compression is not None:
        return False
    if policy.sliding_window:
        return False
    modalities = getattr(run_config, "response_modalities", None) or []
    audio_out = any(str(getattr(m, "value", m)).upper() == "AUDIO" for m in modalities)
    return audio_out or audio_used


def warn_session_limit(agent_name: str) -> None:
    """Say that ``agent_name``'s audio session without compression ends at 15 minutes."""
    logger.warning(
        "live session of agent %s streams audio without context window compression: the"
        " Live API ends such a session after 15 minutes whatever the connection does."
        " Set RunConfig(context_window_compression=types.ContextWindowCompressionConfig("
        "sliding_window=types.SlidingWindow())) or ResumePolicy(sliding_window=True).",
        agent_name,
    )
