"""What a stored handle covers of the ADK session, and what the session holds after it.

A handle stored in the session (``ResumePolicy.store_handle_in_session``) is written at most
once per ``handle_store_interval``, and a worker can die between a new handle and its write.
The worker that resumes from the stored handle must then give the model what the ADK session
holds after the point the handle covers, or the model forgets it. So every stored handle
carries the id of the last session event it surely covers (:func:`covered_event_id`), and a
run that resumes from it asks :func:`catch_up` what came after.

Rules (Gemini API, where no index says what the server took in; the same rule as
:mod:`adk_live_resume.conversation.outbox`):

* A handle issued now covers every session event up to the model's last answer, and the user
  input before it. User input after the model's last answer (a typed or transcribed turn,
  function responses, which ADK writes as the agent's events) is *not* counted as covered:
  if the handle did hold one, the model hears it twice, which is better than never.
* What the session holds after the covered event splits at the model's last answer there:
  before and including it, *finished exchanges*, given back as context that asks for no
  answer; after it, *unanswered user turns*, sent as a turn the model answers once. A
  working utterance (:func:`~adk_live_resume.conversation.model_work.is_working`: the model said it
  while its work on the request went on) is no answer: the request it was said for is unanswered,
  and working utterances after the last answer are left out (the work is not continued after a
  resume: what the model said of it is said again). (On the Gemini API a handle issued while the
  model works is never stored: see :meth:`LiveRun.resumption_update
  <adk_live_resume.shell.loop.LiveRun.resumption_update>`.)
* Only plain text turns of the user and of this agent can be given back this way. Anything
  else after the covered event (a function call or response, audio or files, another agent's
  turn, a transcription ADK keeps outside ``content``), or a covered event the session does
  not hold (any more), gives ``None``: the caller starts a fresh session with the whole
  conversation rebuilt by ADK, which loses nothing.
* Events the caller's :class:`~adk_live_resume.conversation.withheld.Withheld` filter holds (user
  turns ``before_model_callback`` blocked) are not part of what comes after: the model never heard
  them.

Pure: no I/O; events are read through their attributes (ADK's ``Event``).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from google.genai import types

from ..conversation.client_message import ClientMessage
from ..conversation.model_work import is_working
from ..conversation.outbox import Replay
from ..conversation.withheld import Withheld

#: The covered-event id of a handle that covers nothing of the session yet.
START = ""

_NOT_TEXT = (
    "function_call",
    "function_response",
    "inline_data",
    "file_data",
    "executable_code",
    "code_execution_result",
)


@dataclass(frozen=True)
class CatchUp:
    """What the session holds after a stored handle's covered event."""

    #: Finished exchanges, in order, as ``(role, text)`` with role ``user`` or ``model``.
    context: list[tuple[str, str]] = field(default_factory=list)
    #: User turns after the model's last turn, in order: the model has not answered them.
    unanswered: list[str] = field(default_factory=list)

    def __bool__(self) -> bool:
        return bool(self.context or self.unanswered)


def covered_event_id(events: Sequence[Any]) -> str:
    """The id of the last event of ``events`` that a handle issued now surely covers.

    :data:`START` when it covers none (no events, or only unanswered input)."""
    first_unanswered: int | None = None
    for position in range(len(events) - 1, -1, -1):
        event = events[position]
        if not _has_content(event):
            continue
        if _is_input(event):
            first_unanswered = position
        else:
            break
    last = len(events) if first_unanswered is None else first_unanswered
    return str(events[last - 1].id) if last > 0 else START


def catch_up(
    events: Sequence[Any], covered: str, agent_name: str, screened: Withheld | None = None
) -> CatchUp | None:
    """What ``events`` hold after the event ``covered`` (see the module's rules), without
    the events ``screened`` withheld from the model.

    ``None`` when it cannot be given back as text turns, or ``covered`` is not among the
    events: the caller starts a fresh session with the whole conversation instead."""
    if covered == START:
        tail = list(events)
    else:
        at = next((i for i, event in enumerate(events) if event.id == covered), None)
        if at is None:
            return None
        tail = list(events[at + 1 :])
    if screened is not None:
        tail = screened.events(tail)
    turns: list[tuple[str, str]] = []
    working: set[int] = set()  # positions in turns of working utterances
    try:
        for event in tail:
            if getattr(event, "partial", None):
                continue  # a piece of a turn whose whole follows
            turn = _text_turn(event, agent_name)
            if turn is not None:
                if is_working(event):
                    working.add(len(turns))
                turns.append(turn)
    except _NotText:
        return None
    last_answer = max(
        (i for i, (role, _) in enumerate(turns) if role == "model" and i not in working),
        default=-1,
    )
    return CatchUp(
        context=turns[: last_answer + 1],
        unanswered=[
            text
            for i, (role, text) in enumerate(turns[last_answer + 1 :], start=last_answer + 1)
            if role == "user" and i not in working
        ],
    )


def with_catch_up(after: CatchUp | None, replay: Replay) -> Replay:
    """``replay`` preceded by ``after``: its finished exchanges as context first, its
    unanswered user turns as one turn the model answers, before ``replay``'s messages."""
    if not after:
        return replay
    messages = list(replay.messages)
    if after.unanswered:
        turns = [types.Content(role="user", parts=[types.Part(text=t)]) for t in after.unanswered]
        kwargs = {"turns": turns, "turn_complete": True}
        text = " | ".join(after.unanswered)
        messages.insert(0, ClientMessage(0, "send_client_content", kwargs, user_text=text))
    return dataclasses.replace(replay, context=[*after.context, *replay.context], messages=messages)


class _NotText(Exception):
    """An event after the covered one that cannot be given back as a text turn."""


def _text_turn(event: Any, agent_name: str) -> tuple[str, str] | None:
    """``(role, text)``, or ``None`` for an event that is no turn; raises :class:`_NotText`."""
    if not _has_content(event):
        for name in ("input_transcription", "output_transcription"):
            if getattr(event, name, None) is not None:
                raise _NotText  # speech ADK keeps outside content: ADK rebuilds it
        return None
    if not _is_user(event) and event.author != agent_name:
        raise _NotText  # another agent's turn: ADK presents it as context itself
    texts: list[str] = []
    for part in event.content.parts:
        if any(getattr(part, name, None) is not None for name in _NOT_TEXT):
            raise _NotText
        if getattr(part, "thought", None):
            continue
        if part.text:
            texts.append(part.text)
    if not texts:
        return None
    return ("user" if _is_user(event) else "model", "".join(texts))


def _has_content(event: Any) -> bool:
    content = getattr(event, "content", None)
    return bool(content is not None and content.parts)


def _is_user(event: Any) -> bool:
    return bool(event.author == "user")


def _is_input(event: Any) -> bool:
    """User input the model answers: the user's turn, or function responses (ADK writes a
    function response as an event of the agent)."""
    return _is_user(event) or any(
        getattr(part, "function_response", None) is not None for part in event.content.parts
    )
