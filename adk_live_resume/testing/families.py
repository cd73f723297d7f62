"""What each Live model family does differently on the wire, chosen by the setup's model name.

Pure: no I/O. The fake server asks :func:`family_for` once per setup (with the model name as
ADK sends it, ``models/`` or a resource path stripped) and follows the returned
:class:`Family` record; nothing else in the fake tests a model name.

The families, from recordings of real sessions and field reports
(``gemini-live-protocol.md``, "Turn 3"):

* **Gemini 2.x Live** (any other name, e.g. ``gemini-live-fake``, ``gemini-2.0-flash-live-001``):
  a ``toolCall`` is followed by ``turnComplete``; the answer after the tool response is a new
  turn. ``clientContent`` is taken all session long; NON_BLOCKING declarations are honoured.
* **Gemini 2.5 native audio** (the name contains ``native-audio``): no ``turnComplete``
  between a ``toolCall`` and its response; the same turn goes on after the response
  (``generationComplete``, then ``turnComplete`` with ``usageMetadata``). A thinking model
  opens each answer with a text part marked ``thought: true`` (the server's
  ``thought_summaries`` option: whether a model thinks is not in its name).
* **Gemini 3.1 Live** (ADK's Gemini 3.x Live rule, minor version below 8, e.g.
  ``gemini-3.1-flash-live-preview``): ``clientContent`` all session long (its model page,
  LiveKit PR 7289 and a 3.1 recording; the older refusal with 1007 is the server's
  ``WireShapes.refuse_3_1_mid_session_content`` switch, see
  :mod:`~adk_live_resume.testing.wire_shapes`); every function call is synchronous (a
  NON_BLOCKING declaration is ignored); no ``turnComplete`` until the answer; the user's
  ``inputTranscription`` arrives only after the utterance ends, whole (a field report,
  ``gemini-live-protocol.md``, "Field facts of 2026-11-29"; google-adk 2.13's own reader
  says "Gemini 3.x Live only sends a single final input transcription"), not in pieces; no
  ``usageMetadata`` at all once the session hears microphone audio (measured absent in
  microphone conversation mode: pydantic-ai PR 7269's probe against the service and
  kazunori279/interpretab's README, ``gemini-live-protocol.md``, "Field facts of
  2026-11-29").
* **Gemini 3.8 Live** (ADK's rule, minor version 8 or more, e.g. ``gemini-3.8-live``):
  ``clientContent`` with roles all session long (``turnComplete: true`` interrupts); function
  calls are NON_BLOCKING unless declared ``BLOCKING``; a session is closed at
  :data:`GEMINI_3_8_SESSION_CAP` (58 min) with 1011 "Deadline expired" whatever its context
  window compression, and resuming it afterwards is refused with 1007. Every ``turnComplete``
  carries ``interactionStatus`` (``IDLE`` when the task is done): google-genai 2.x documents
  the field as "always sent alongside ``turn_complete``" (``LiveServerContent.
  interaction_status``), and the Live API thinking guide names it for the 3.8 family
  (``gemini-live-protocol.md``, "Field facts that contradict or extend the above"). A
  blocking call whose result is empty is issued again, identically, under a new id, up to
  :data:`IDENTICAL_CALLS_MAX` calls in the turn (the model "may issue 2-5 identical calls in
  one turn when tools return empty results": Vertex AI migration guide 2.5 -> 3.8, same
  section): separate calls, each answered; a blocking call in progress is cancelled
  (``toolCallCancellation``) when new input arrives, as on every family here. A setup with
  ``thinkingConfig`` is closed with 1007 (:mod:`~adk_live_resume.testing.setup_rules`, its
  sources there).
* **Gemini 3.8 Live with extended thinking** (a 3.8-or-later name containing
  ``extended-thinking``, e.g. ``gemini-3.8-live-extended-thinking``, GA 2026-09-15): as 3.8,
  and (the Live API thinking guide, same section) the model may speak several times per
  request: a short utterance first, each utterance ending with ``turnComplete`` while
  ``interactionStatus`` stays ``IN_PROGRESS`` during the background work, then the answer,
  whose ``turnComplete`` carries ``IDLE``; function calling is async only (every call is
  non-blocking, whatever its declaration). How long the work takes is the server's
  ``work_delay`` (:class:`~adk_live_resume.testing.settings.ServerSettings`). What handles
  hold meanwhile is the fake's choice (no source says): work in progress is kept out of them,
  as an unfinished utterance is and as a generation in flight is never continued after a
  resume (``gemini-live-protocol.md``, "Limits the service documents"): the handle issued
  with an ``IN_PROGRESS`` ``turnComplete`` restores the session as it was before the request
  (see :mod:`~adk_live_resume.testing.generation`). While a call the model issued is open
  (started, or its result not told yet), the task is not done: every ``turnComplete`` says
  ``IN_PROGRESS`` (the guide: ``IN_PROGRESS`` during background work, ``IDLE`` when the task
  is done; calls are async only, so a call's work is background work), and ``IDLE`` comes
  with the telling of the last result. ``REQUIRES_ACTION`` is documented as a deprecated
  ``IDLE`` ("The server has completed all processing and background reasoning": the API
  reference, google-genai 3.6.1; notes, "Field facts of 2026-11-29"): the server's
  ``done_status`` sends it where ``IDLE`` would go, and the ``requires_action`` switch keeps
  the older reading, no source's, that sends it instead of ``IN_PROGRESS`` while a call is
  open. Its setup rules (a ``thinkingLevel`` of low, medium or high; OpenAPI ``parameters``
  for functions) are :mod:`~adk_live_resume.testing.setup_rules`'.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from .dialect import is_gemini_3_live

__all__ = [
    "GEMINI_2_LIVE",
    "GEMINI_3_1_LIVE",
    "GEMINI_3_8_EXTENDED_THINKING",
    "GEMINI_3_8_LIVE",
    "GEMINI_3_8_SESSION_CAP",
    "IDENTICAL_CALLS_MAX",
    "NATIVE_AUDIO_2_5",
    "Family",
    "family_for",
]

#: The most identical calls a Gemini 3.8 Live model issues in one turn while its tool returns
#: empty results ("2-5", Vertex AI migration guide 2.5 -> 3.8).
IDENTICAL_CALLS_MAX = 5

#: Service seconds after which Gemini 3.8 Live ends a session (58 minutes), compression or not.
GEMINI_3_8_SESSION_CAP = 58 * 60.0

_GEMINI_3_MINOR = re.compile(r"^gemini-3\.(\d+)")


@dataclass(frozen=True)
class Family:
    """The wire rules of one model family (see the module docstring)."""

    name: str
    #: ``turnComplete`` right after a ``toolCall`` (the answer to its response is a new turn).
    turn_complete_after_tool_call: bool = True
    #: ``clientContent`` is taken after the initial history (False: closed with 1007).
    client_content_mid_session: bool = True
    #: A ``NON_BLOCKING`` declaration makes the function's calls non-blocking.
    honours_non_blocking: bool = True
    #: A function declared without ``behavior`` (or ``UNSPECIFIED``) is non-blocking.
    non_blocking_by_default: bool = False
    #: The model may open its answers with a ``thought: true`` text part.
    may_think: bool = False
    #: Service seconds after which the session ends whatever its compression (None: never).
    session_cap: float | None = None
    #: Every ``turnComplete`` carries ``interactionStatus``.
    interaction_status: bool = False
    #: The model speaks first, works in the background (``IN_PROGRESS``), then answers.
    speaks_while_working: bool = False
    #: Every call is non-blocking, whatever its declaration (function calling async only).
    calls_async_only: bool = False
    #: While a call the model issued is open, the task is not done (no ``IDLE``).
    works_while_calls_open: bool = False
    #: A blocking call whose result is empty is issued again, identically, under a new id
    #: (up to :data:`IDENTICAL_CALLS_MAX` such calls in one turn).
    repeats_empty_calls: bool = False
    #: ``inputTranscription`` comes once, after the utterance ends (not in pieces as the
    #: speech is decoded).
    transcribes_after_utterance: bool = False
    #: A setup with ``generationConfig.thinkingConfig`` is closed with 1007.
    refuses_thinking_config: bool = False
    #: The ``thinkingConfig.thinkingLevel`` values a setup may ask for (None: any); another
    #: level, or a ``thinkingBudget``, is closed with 1007.
    thinking_levels: frozenset[str] | None = None
    #: A function declared with ``parametersJsonSchema`` (not OpenAPI ``parameters``) is
    #: closed with 1007.
    needs_openapi_parameters: bool = False
    #: ``usageMetadata`` still comes once the session hears microphone audio.
    usage_with_microphone: bool = True

    def non_blocking(self, behavior: object) -> bool:
        """Whether calls of a function declared with ``behavior`` (the setup's value, any
        case, or None) are non-blocking in this family."""
        declared = str(behavior or "").upper()
        if self.calls_async_only:
            return True
        if not self.honours_non_blocking:
            return False
        if declared == "NON_BLOCKING":
            return True
        if declared == "BLOCKING":
            return False
        return self.non_blocking_by_default


GEMINI_2_LIVE = Family("gemini-2-live")
NATIVE_AUDIO_2_5 = Family("native-audio-2.5", turn_complete_after_tool_call=False, may_think=True)
GEMINI_3_1_LIVE = Family(
    "gemini-3.1-live",
    turn_complete_after_tool_call=False,
    honours_non_blocking=False,
    transcribes_after_utterance=True,
    usage_with_microphone=False,
)
GEMINI_3_8_LIVE = Family(
    "gemini-3.8-live",
    turn_complete_after_tool_call=False,
    non_blocking_by_default=True,
    session_cap=GEMINI_3_8_SESSION_CAP,
    interaction_status=True,
    repeats_empty_calls=True,
    refuses_thinking_config=True,
)
GEMINI_3_8_EXTENDED_THINKING = Family(
    "gemini-3.8-live-extended-thinking",
    turn_complete_after_tool_call=False,
    non_blocking_by_default=True,
    session_cap=GEMINI_3_8_SESSION_CAP,
    interaction_status=True,
    speaks_while_working=True,
    calls_async_only=True,
    works_while_calls_open=True,
    thinking_levels=frozenset({"low", "medium", "high"}),
    needs_openapi_parameters=True,
)


def family_for(model: str) -> Family:
    """The family of ``model`` (a name without ``models/`` or a resource path)."""
    if is_gemini_3_live(model):
        match = _GEMINI_3_MINOR.match(model)
        minor = int(match.group(1)) if match else 0
        if minor < 8:
            return GEMINI_3_1_LIVE
        return GEMINI_3_8_EXTENDED_THINKING if "extended-thinking" in model else GEMINI_3_8_LIVE
    if "native-audio" in model:
        return NATIVE_AUDIO_2_5
    return GEMINI_2_LIVE
