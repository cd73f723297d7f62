"""What a new connection sends to restore its session, planned as a value without I/O.

A connection that resumes a handle gets the outbox's replay (:meth:`Outbox.take_replay
<adk_live_resume.conversation.outbox.Outbox.take_replay>`), preceded by what a stored handle's
session lacks (:func:`~.handle_coverage.with_catch_up`); a fresh one gets the history ADK rebuilt,
arranged by :func:`~adk_live_resume.conversation.fresh_history.fresh_history` from what the outbox
knows (:class:`~adk_live_resume.conversation.fresh_history.HistoryFacts`, read at once), then the
audio and typed turns that history lacks (:meth:`Outbox.take_audio
<adk_live_resume.conversation.outbox.Outbox.take_audio>`). :func:`plan_fresh_start` plans that
history; :func:`plan_restoration` turns what was taken into a :class:`Restoration`: the sends in
order, what the tool-call bookkeeping is told, and what was left out (for the logs and the
reconnect's report). :func:`~adk_live_resume.shell.serve_connection.serve` carries it out.

Guarantees: a resumed session gets no history, and a fresh one no context turns; the replay's
context goes first as one turn that asks for no answer, then its messages in the order they
were sent; the plan holds what the tool-call bookkeeping needs (the responses the history
holds, the calls whose exchange goes as context, the responses left out of the replay).

Pure: no I/O, no clock; the contents are never changed in place (they are ADK's session).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from ..conversation.fresh_history import HistoryFacts, fresh_history, response_ids, user_texts
from ..conversation.outbox import Replay
from .handle_coverage import CatchUp, with_catch_up

__all__ = ["FreshStart", "Restoration", "plan_fresh_start", "plan_restoration"]


@dataclass(frozen=True)
class FreshStart:
    """The history a fresh session starts with, and what follows from it."""

    history: tuple[Any, ...]
    #: The ids of the function responses ADK's contents hold (the tool-call bookkeeping's).
    answered_in_history: frozenset[str]
    #: The history holds the unanswered utterance: its audio is not replayed.
    utterance_in_history: bool
    #: The history's user texts: the typed turns it holds are not sent again.
    waiting_in_history: tuple[str, ...]


@dataclass(frozen=True)
class Restoration:
    """What a new connection sends to restore its session, in order, and what it left out."""

    resumed: bool
    #: A fresh session's history (none for a resumed one): sent first, never recorded.
    history: tuple[Any, ...]
    #: The replay as ``(method, kwargs)`` sends: the context turn first, if any.
    sends: tuple[tuple[str, dict[str, Any]], ...]
    #: The replayed messages (the context turn aside), as the debug log names them.
    described: tuple[str, ...]
    #: Finished exchanges sent as context (``(role, text)`` turns).
    context_turns: int
    #: Tool calls whose exchange went as context, and responses the replay left out.
    context_calls: tuple[str, ...] = ()
    dropped_responses: tuple[str, ...] = ()
    dropped_audio_ms: float = 0.0
    dropped_silence_ms: float = 0.0
    dropped_frames: int = 0

    @property
    def replayed(self) -> int:
        """The messages replayed, the context turn aside."""
        return len(self.described)

    @property
    def replayed_messages(self) -> int:
        """Every send of the replay, the context turn included."""
        return len(self.sends)


def plan_fresh_start(
    contents: Sequence[Any],
    screened: Sequence[Any],
    facts: HistoryFacts,
    *,
    working: Sequence[str] = (),
) -> FreshStart:
    """The history of a fresh session: ``screened`` (ADK's ``contents`` without the turns
    withheld from the model) arranged with ``facts``, without the working utterances
    ``working`` (:func:`~adk_live_resume.conversation.fresh_history.fresh_history`)."""
    history, in_history = fresh_history(
        screened,
        facts.transcript,
        speaking=facts.speaking,
        fragments=facts.fragments,
        stored=facts.stored,
        cut=facts.cut,
        unanswered=facts.unanswered,
        answered_last=facts.answered_last,
        responses_sent_last=facts.responses_sent_last,
        working=working,
    )
    return FreshStart(
        history=tuple(history),
        answered_in_history=frozenset(response_ids(contents)),
        utterance_in_history=in_history,
        waiting_in_history=tuple(user_texts(history)),
    )


def plan_restoration(
    replay: Replay,
    *,
    resumed: bool,
    history: Sequence[Any] = (),
    catch_up: CatchUp | None = None,
) -> Restoration:
    """The restoration of a resumed session (``replay`` preceded by ``catch_up``; no
    history) or of a fresh one (``history`` its history, ``replay`` what it lacks)."""
    if resumed:
        if history:
            raise ValueError("a resumed session gets no history: pass history=() on a resume")
        replay = with_catch_up(catch_up, replay)
    elif catch_up:
        raise ValueError("a fresh session's history holds the catch-up: pass none on a start")
    sends: list[tuple[str, dict[str, Any]]] = []
    if replay.context:
        turns = replay.context_contents()
        sends.append(("send_client_content", {"turns": turns, "turn_complete": False}))
    sends.extend((m.method, dict(m.kwargs)) for m in replay.messages)
    return Restoration(
        resumed=resumed,
        history=tuple(history),
        sends=tuple(sends),
        described=tuple(
            m.method + (f"({m.user_text!r})" if m.user_text else "") for m in replay.messages
        ),
        context_turns=len(replay.context),
        context_calls=tuple(replay.context_calls),
        dropped_responses=tuple(replay.dropped_responses),
        dropped_audio_ms=replay.dropped_audio_ms,
        dropped_silence_ms=replay.dropped_silence_ms,
        dropped_frames=replay.dropped_frames,
    )
