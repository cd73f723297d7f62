"""How an outgoing client send is rewritten or held, planned as a value without I/O.

Every send ADK makes on a connection goes through the watch's
:meth:`~adk_live_resume.shell.connection_watch.ConnectionWatch.before_send`. :func:`send_way` says
how it is kept: a send method the tap does not know is only numbered (the server numbers it;
the outbox cannot replay it), a fresh session's history is numbered and sent (the session's
state from its setup on, never replayed), anything else is recorded for replay.

A send that carries tool results is then rewritten (:func:`plan_results`), from what the
run's :class:`~.tool_calls.ToolCallBook` answers of the calls the results are
for (:class:`~.tool_calls.ResultsView`, read at once): each result is noted;
a result for a call the current session issued again (a repeat waiting for it) goes to that
repeat, under its id and name; a result for a call the session never saw is taken out, and
told instead as content once where the book says so (:attr:`ResultsPlan.as_turn`). Where
that content goes is :meth:`ResultsPlan.place`'s: at once when the send carries nothing
else and the user is quiet, else held until the user is (it would split their utterance).
:class:`~adk_live_resume.shell.tool_traffic.ToolTraffic` carries the plan out.

Guarantees: the order of what a send carries is kept; a send left with nothing is not made
(``None``); each call's result is noted once per response, and a repeat is answered at most
once per send; no result the session cannot take under its id is sent under that id.

Pure: no I/O, no clock; ``kwargs`` are never changed in place (a new dict is made).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from .client_sends import readdressed, responses_of, without_responses
from .context_updates import KNOWN_SENDS
from .tool_calls import ResultsView

__all__ = ["Placement", "ResultsPlan", "Send", "SendWay", "plan_results", "send_way"]

#: One send call: the session method and its keyword arguments.
Send = tuple[str, dict[str, Any]]
#: How a send is kept: only numbered, numbered and sent as a fresh history, or recorded.
SendWay = Literal["unknown", "history", "recorded"]


def send_way(method: str, *, history_going: bool) -> SendWay:
    """How the send ``method`` is kept while a fresh session's history is sent or not."""
    if method not in KNOWN_SENDS:
        return "unknown"
    return "history" if history_going else "recorded"


@dataclass(frozen=True)
class Placement:
    """Where a send's rewritten results go: ``send`` now (``None``: nothing), and the
    content that tells results the session cannot take by id, ``held`` until the user is
    quiet (``None``: none held)."""

    send: Send | None
    held: Send | None = None


@dataclass(frozen=True)
class ResultsPlan:
    """How one send's tool results are rewritten (see the module)."""

    #: ``(call id, result)`` to note in the book, in order: a readdressed result under both
    #: its call's id and the repeat's.
    results: tuple[tuple[str, dict[str, Any]], ...] = ()
    #: Result's call id -> the repeat it answers, ``(id, name)``: the book hands it over.
    readdress: Mapping[str, tuple[str, str | None]] = field(default_factory=dict)
    #: Ids of the results taken out (the session never saw the call), in the order sent.
    unknown: tuple[str, ...] = ()
    #: Of those, the ones told as content, in order (the book's "goes as turn").
    as_turn: tuple[str, ...] = ()
    #: What is left to send, readdressed and without the unknown results (``None``: nothing).
    send: Send | None = None

    def place(self, turn: Send | None, *, user_busy: bool) -> Placement:
        """Where ``turn`` (the content telling :attr:`as_turn`'s results; ``None`` when the
        model family takes none) and :attr:`send` go, the user busy or not."""
        if turn is None:
            return Placement(self.send)
        if self.send is None and not user_busy:
            return Placement(turn)
        return Placement(self.send, held=turn)


def plan_results(method: str, kwargs: dict[str, Any], view: ResultsView) -> ResultsPlan:
    """The rewrite of ``method(**kwargs)``'s tool results (none: the send as it is)."""
    if method == "send_realtime_input":
        # (every microphone chunk: realtime input carries no function responses)
        return ResultsPlan(send=(method, kwargs))
    results: list[tuple[str, dict[str, Any]]] = []
    unknown: dict[str, None] = {}  # (in the order sent)
    readdress: dict[str, tuple[str, str | None]] = {}
    for response in responses_of(method, kwargs):
        if not response.id:
            continue
        call_id, result = str(response.id), dict(response.response or {})
        results.append((call_id, result))
        repeat = view.repeats.get(call_id) if call_id not in readdress else None
        if repeat is not None:
            # A running call's result: the repeat the current session issued gets it.
            readdress[call_id] = repeat
            call_id = repeat[0]
            results.append((call_id, result))
        if call_id in view.unknown:
            unknown[call_id] = None
    if readdress:
        kwargs = readdressed(method, kwargs, readdress)
    send: Send | None = (method, kwargs)
    if unknown:
        kept = without_responses(method, kwargs, set(unknown))
        send = None if kept is None else (method, kept)
    return ResultsPlan(
        results=tuple(results),
        readdress=readdress,
        unknown=tuple(unknown),
        as_turn=tuple(i for i in unknown if i in view.as_turn),
        send=send,
    )
