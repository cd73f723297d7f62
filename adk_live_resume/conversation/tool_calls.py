"""Tool calls by id across connections: each call runs its tool once, each answer goes once.

A resumed session knows the calls its handle's state holds, not the ones issued after it,
and it takes no ``toolResponse`` under an id an earlier connection issued: call ids belong
to the connection that issued them (Pipecat PR 5497, Strands PR 4244, voiceclaw PR 53).
Where a service still takes such a response, sending the result as content instead is just
as correct, so the book never counts on it.
So, per run, :class:`ToolCallBook` keeps every call issued, in issue order, with its *key*
(tool name and canonical JSON arguments) and its state: *answered* (its result is known),
*running* (ADK runs its tool in the background, a NON_BLOCKING tool whose response ADK
queues when the tool ends; or its response is queued and not sent yet), *held* (a repeat
waiting for a running call's result), or none of these.
And:

* the ids issued since the newest handle: a session resumed from that handle never saw
  them, so a response for one of them must not be sent to it (the model would get an answer
  to a question it never asked) but is kept;
* *repeatable* calls: after a resume, the model answers the replayed input again and may
  issue the same call anew, under a new id. A call is repeatable only while no context the
  resumed session receives holds its exchange: a call whose exchange finished (its response
  answered) goes back to the model as context, not replayed, so the model never issues it
  anew, and a later request for the same tool is the user's and runs
  (:meth:`ToolCallBook.in_context`). The first new call with the same key (earliest
  earlier call first, in issue order) is then a *repeat* of it:

  - the earlier call was answered: the repeat is answered at once with its result;
  - the earlier call is running (ADK really started its tool): the repeat is held, not passed
    to ADK, and the earlier call's response, once ADK sends it, goes once, re-addressed to the
    repeat's id and name. If the tool ends without a response (ADK only logs the tool's
    exception), the repeat is answered with :data:`ENDED_WITHOUT_RESULT`: the tool ran and
    failed, and running it again could repeat what it did before failing;
  - otherwise the tool runs for the repeat: ADK 1.28+ holds calls until ``turnComplete`` and
    may never have run it, or it was cut off. ADK runs blocking tools inside its receive
    step, so a blocking call that ran to the end always has its result before the loop can
    reconnect. The repeat takes the earlier call's place for good: the earlier call is never
    repeatable again, so a later repeat (after another drop) pairs with the one that runs;
* everything else is a new call and runs its tool, even with the same name and arguments
  as an earlier one (a balance looked up again must be looked up again).

Guarantees:

* a repeat is recognised only on a connection resumed from a handle older than the earlier
  call, whose exchange that connection did not get as context, only until the resumed
  session finished answering (its first turn with model output completes), and each
  earlier call answers at most one repeat; identical calls are paired in issue order (the
  n-th repeat gets the n-th earlier call's result);
* after a fresh session (the handle was dead) the rebuilt history holds the calls the ADK
  session has with their results; a call without its result is left out of it by ADK, so it
  is repeatable there as after a resume, and if the model does not issue it anew, its
  response, once it comes, goes to the fresh session once as a user turn that carries it;
  a repeat held when the fresh session starts is void there (its call is in the history, or
  is the call missed);
* a response is never sent for an id the current session does not know, and a running
  call's result reaches the model once, under the id of the newest call waiting for it;
* a call the server cancelled (``toolCallCancellation``, :meth:`ToolCallBook.on_cancelled`)
  gets no response, no late telling and no repeat: the model moved on; a cancellation seen
  before the call itself (its frame arrived while ADK's reading was behind) is kept, and
  the call is then not run at all (:attr:`Decision.cancelled`);
* a result that outlives the connection of its call reaches the model once: bound to the
  repeat the model issues (above), otherwise as a :class:`LateResult`, told as conversation
  content that names the call, its arguments and its result: at once for a call the
  handle's state holds (the model will not issue it anew), once the resumed session finished
  answering for a repeatable call it did not repeat, and when the tool ends for a call
  still running. A result the resumed session got (covered by the handle, or its exchange
  went back as context, or a fresh session's history held it) is never told again; a
  result sent to the old connection that the replay drops
  (:meth:`ToolCallBook.dropped_from_replay`) is told.

Pure: no I/O.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

#: The answer to a held repeat whose running call ended without a response.
ENDED_WITHOUT_RESULT: dict[str, Any] = {
    "error": "the tool ended without a result; it is not run again"
}


def call_key(name: str | None, args: Any) -> str:
    """A stable key for "the same call": tool name and canonical JSON of its arguments."""
    return f"{name}:{json.dumps(args or {}, sort_keys=True, default=str)}"


def _never(call_id: str, name: str | None) -> bool:
    return False


@dataclass(frozen=True)
class LateResult:
    """A result that outlived the connection of its call, to tell as conversation content."""

    call_id: str
    name: str | None
    args: Any
    result: dict[str, Any]


@dataclass(frozen=True)
class Decision:
    """What to do with the calls of one ``toolCall`` message."""

    #: Ids whose tool must run (ADK runs them).
    run: tuple[str, ...]
    #: ``(new id, result)`` to answer at once with a result known from before the resume.
    answer: tuple[tuple[str, dict[str, Any]], ...]
    #: ``(new id, running id)``: repeats held until the running call's response is sent.
    hold: tuple[tuple[str, str], ...] = ()
    #: Ids the server cancelled before the call was issued here: nobody runs them.
    cancelled: tuple[str, ...] = ()


@dataclass(frozen=True)
class ResultsView:
    """What the book answers of the calls a send's results are for, read at once
    (:meth:`ToolCallBook.results_view`; :func:`~.send_plan.plan_results`
    plans with it)."""

    #: Call id -> the held repeat its result answers, ``(id, name)`` (:meth:`take_repeat`).
    repeats: Mapping[str, tuple[str, str | None]] = field(default_factory=dict)
    #: The ids the current session never saw (:meth:`ToolCallBook.is_unknown`).
    unknown: frozenset[str] = frozenset()
    #: The ids whose result goes as a turn carrying it (:meth:`ToolCallBook.goes_as_turn`).
    as_turn: frozenset[str] = frozenset()


@dataclass
class ToolCallBook:
    """The run's tool calls; see the module docstring for the rules."""

    max_results: int = 256
    #: Every call issued, in issue order: id -> key.
    _keys: dict[str, str] = field(default_factory=dict)
    _names: dict[str, str | None] = field(default_factory=dict)
    _args: dict[str, Any] = field(default_factory=dict)
    #: Results to tell as content now (:meth:`take_late`), in the order they became due.
    _late: dict[str, LateResult] = field(default_factory=dict)
    #: Ids issued since the newest handle, in issue order: the calls its state lacks, also
    #: after resumes from it (each resumed session starts from that same state).
    _since_handle: dict[str, None] = field(default_factory=dict)
    #: Ids issued since the newest handle or resume, in issue order: the next resume makes
    #: them repeatable (those of earlier connections stay so in ``_repeatable`` until a
    #: repeat takes them or the session answers).
    _since_resume: dict[str, None] = field(default_factory=dict)
    _unknown: set[str] = field(default_factory=set)
    #: Earlier calls a repeat may answer, in issue order: id -> key.
    _repeatable: dict[str, str] = field(default_factory=dict)
    _results: dict[str, dict[str, Any]] = field(default_factory=dict)
    #: Running id -> the held repeat its response goes to.
    _waiting: dict[str, str] = field(default_factory=dict)
    #: Held repeat -> the running id whose response it waits for.
    _held: dict[str, str] = field(default_factory=dict)
    #: Ids whose response ADK has queued and that did not reach the send path yet.
    _queued: set[str] = field(default_factory=set)
    #: Calls of an earlier connection whose result is to come and that no repeat takes (a
    #: fresh session's history lacks them; a resumed session knows no old id): their
    #: response goes to the session as a turn (:meth:`goes_as_turn`).
    _as_turn: set[str] = field(default_factory=set)
    #: Calls another took the place of, never repeatable again: an earlier call whose repeat
    #: ran its tool (it never ran, or was cut off), and a held repeat whose session is gone.
    _superseded: set[str] = field(default_factory=set)

    #: Calls whose result went to the session as content (:meth:`goes_as_turn`).
    _told: set[str] = field(default_factory=set)
    #: Calls the latest fresh session's history holds with their response
    #: (:meth:`on_fresh_session`): that session has the result, and so does every session
    #: resumed from one of its handles; it is never told again (until the next fresh start).
    _in_history: set[str] = field(default_factory=set)
    #: Calls the server cancelled (``toolCallCancellation``).
    _cancelled: set[str] = field(default_factory=set)
    #: Ids cancelled before their call was issued here, oldest first (at most
    #: ``max_results``): the call, when it comes, is not run.
    _cancelled_early: dict[str, None] = field(default_factory=dict)

    #: Calls answered with an earlier result instead of running the tool again.
    reused: int = 0

    # -- facts ----------------------------------------------------------------------------

    def on_handle(self) -> None:
        """A resumable handle arrived: its state holds every call issued so far."""
        self._since_handle.clear()
        self._since_resume.clear()

    def on_calls(
        self,
        calls: Iterable[tuple[str, str | None, Any]],
        running: Callable[[str, str | None], bool] = _never,
    ) -> Decision:
        """The model issued ``(id, name, args)`` calls in one message; decide for each.

        ``running(id, name)`` tells whether ADK runs the tool of an earlier call in the
        background now (its response is still to come)."""
        run: list[str] = []
        answer: list[tuple[str, dict[str, Any]]] = []
        hold: list[tuple[str, str]] = []
        cancelled: list[str] = []
        for call_id, name, args in calls:
            key = call_key(name, args)
            self._keys[call_id] = key
            self._names[call_id] = name
            self._args[call_id] = args
            self._since_handle[call_id] = None
            self._since_resume[call_id] = None
            if call_id in self._cancelled_early:  # (its cancellation came first)
                del self._cancelled_early[call_id]
                self.on_cancelled([call_id])
                cancelled.append(call_id)
                continue
            earlier = next((e for e, k in self._repeatable.items() if k == key), None)
            if earlier is None:
                run.append(call_id)
                continue
            del self._repeatable[earlier]
            self._as_turn.discard(earlier)  # the repeat gets its result
            if earlier in self._results:
                self.reused += 1
                result = self._results[earlier]
                self._results[call_id] = result
                answer.append((call_id, result))
                continue
            origin = self._held.pop(earlier, None)
            if origin is None and (
                earlier in self._queued or running(earlier, self._names.get(earlier))
            ):
                origin = earlier
            if origin is None:
                # The earlier call never ran (ADK 1.28+ lost it with its connection) or was
                # cut off: this call runs in its place, and a later repeat pairs with it.
                self._superseded.add(earlier)
                run.append(call_id)
                continue
            # The newest repeat is the one the current session knows: it takes the result.
            self._waiting[origin] = call_id
            self._held[call_id] = origin
            hold.append((call_id, origin))
        return Decision(tuple(run), tuple(answer), tuple(hold), tuple(cancelled))

    def on_result(self, call_id: str, result: dict[str, Any]) -> None:
        """The tool of ``call_id`` finished with ``result`` (its response is being sent)."""
        self._results[call_id] = result
        self._queued.discard(call_id)
        while len(self._results) > self.max_results:
            del self._results[next(iter(self._results))]

    def results_view(self, call_ids: Iterable[str]) -> ResultsView:
        """What the book answers now of ``call_ids`` and the repeats waiting for them."""
        ids = set(call_ids)
        waiting = {i: self._waiting[i] for i in ids if i in self._waiting}
        repeats = {i: (repeat, self._names.get(repeat)) for i, repeat in waiting.items()}
        ids.update(waiting.values())
        return ResultsView(repeats, frozenset(ids & self._unknown), frozenset(ids & self._as_turn))

    def take_repeat(self, call_id: str) -> tuple[str, str | None] | None:
        """The response of ``call_id`` is being sent: the held repeat it now answers
        (``(id, name)``; the response goes under that id, once), or ``None``."""
        repeat = self._waiting.pop(call_id, None)
        if repeat is None:
            return None
        del self._held[repeat]
        self.reused += 1
        return repeat, self._names.get(repeat)

    def on_response_queued(self, call_id: str) -> None:
        """ADK queued the response of ``call_id``: it will be sent (a repeat waits for it)."""
        if call_id in self._keys and call_id not in self._results:
            self._queued.add(call_id)

    def on_running_ended(self, call_id: str) -> tuple[str, str | None] | None:
        """ADK's background run of ``call_id`` ended. Without a response (none queued), the
        repeat held for it, if any, as ``(id, name)``: it is to be answered with
        :data:`ENDED_WITHOUT_RESULT`."""
        if call_id in self._queued or call_id not in self._waiting:
            return None
        repeat = self._waiting.pop(call_id)
        del self._held[repeat]
        self._results[repeat] = ENDED_WITHOUT_RESULT
        return repeat, self._names.get(repeat)

    def on_cancelled(self, call_ids: Iterable[str]) -> bool:
        """The server cancelled ``call_ids`` (``toolCallCancellation``: new input came while
        they ran): the model moved on, so a response to one of them is never sent, told as
        content or given to a repeat, and none is repeatable. An id not issued here yet (its
        cancellation's frame came before ADK read the call) is kept: its call is not run.
        True if any was new here."""
        new = False
        for call_id in call_ids:
            if call_id not in self._keys:
                if call_id not in self._cancelled_early:
                    new = True
                    self._cancelled_early[call_id] = None
                    while len(self._cancelled_early) > self.max_results:
                        del self._cancelled_early[next(iter(self._cancelled_early))]
                continue
            if call_id in self._cancelled:
                continue
            new = True
            self._cancelled.add(call_id)
            self._superseded.add(call_id)
            self._unknown.add(call_id)
            self._repeatable.pop(call_id, None)
            self._as_turn.discard(call_id)
            self._late.pop(call_id, None)
            origin = self._held.pop(call_id, None)
            if origin is not None:
                self._waiting.pop(origin, None)
        return new

    def on_answered(self) -> None:
        """The session finished a turn with model output: later calls are new calls. A
        repeatable call the model did not issue anew gets its result as content: now if it
        is known (:meth:`take_late`), else when it comes (:meth:`goes_as_turn`)."""
        for call_id in list(self._repeatable):
            if call_id in self._told:
                continue
            if call_id in self._results:
                self._owe(call_id)
            elif call_id not in self._superseded:
                self._as_turn.add(call_id)
        self._repeatable.clear()

    # -- connection changes ---------------------------------------------------------------

    def on_resumed(self) -> None:
        """A new connection resumed from the newest handle. It knows no id an earlier
        connection issued: the calls issued since the handle are repeatable; a call the
        handle's state holds whose result is still to come gets it as content."""
        missed = [i for i in self._since_resume if i in self._keys and i not in self._cancelled]
        for call_id in self._keys:
            # (a call issued since the handle is never covered, however many resumes from
            # that handle came since: each resumed session starts from the same state)
            covered = call_id not in self._since_handle and call_id not in self._superseded
            if covered and call_id not in self._results and call_id not in self._in_history:
                self._as_turn.add(call_id)
        self._unknown.update(self._keys)
        # Accumulated (a connection that drops again before the model repeated the call
        # must not make the call forgettable), and in issue order.
        self._repeatable.update((i, self._keys[i]) for i in missed)
        self._since_resume.clear()

    def dropped_from_replay(self, call_ids: Iterable[str]) -> None:
        """The replay to the resumed session left out the responses of ``call_ids`` (sent
        to an earlier connection, not covered by the handle): each result the model may not
        get through a repeat is told as content (:meth:`take_late`)."""
        for call_id in call_ids:
            if call_id in self._repeatable or call_id in self._superseded:
                continue  # a repeat takes it, or it is told once the session answered
            if call_id in self._in_history:
                continue  # the session has it in its history
            if call_id in self._results:
                self._owe(call_id)

    def take_late(self) -> list[LateResult]:
        """The results to tell the current session as content now, once each."""
        late = list(self._late.values())
        self._late.clear()
        return late

    def late_result(self, call_id: str) -> LateResult | None:
        """``call_id``'s known result as a :class:`LateResult` (``None`` if none is known)."""
        result = self._results.get(call_id)
        if result is None:
            return None
        return LateResult(call_id, self._names.get(call_id), self._args.get(call_id), result)

    def _owe(self, call_id: str) -> None:
        late = self.late_result(call_id)
        if late is not None:
            self._late[call_id] = late
            self._as_turn.discard(call_id)
            self._repeatable.pop(call_id, None)

    def in_context(self, call_ids: Iterable[str]) -> None:
        """The resumed session receives the exchanges of ``call_ids`` as context (they
        finished after the handle): the model knows they were made and answered and will not
        issue them anew, so none of them is repeatable; a new call with the same key is a new
        request and runs its tool."""
        for call_id in call_ids:
            self._repeatable.pop(call_id, None)

    def on_fresh_session(self, answered_in_history: Iterable[str] = ()) -> None:
        """A new session started without a handle: it knows no call id at all. Its history,
        rebuilt from the ADK session, holds the calls with the responses
        ``answered_in_history``; ADK leaves a call without its response out (a NON_BLOCKING
        tool still running, a call cut off), so the model may issue it anew: such calls are
        repeatable, as after a resume."""
        in_history = set(answered_in_history)
        # A held repeat belongs to a session that is gone: the call it repeats is what the
        # history holds (with its response) or lacks (then that call is the one missed).
        self._superseded.update(self._held)
        self._held.clear()
        self._waiting.clear()
        missed = [
            i
            for i in self._keys
            if i not in self._results and i not in in_history and i not in self._superseded
        ]
        self._unknown.update(self._keys)
        # The history holds these results (ADK's session had them before its sender sent
        # their responses): the session has them, and a response that reaches the send
        # path later is not told again, here or on a session resumed from this one.
        self._in_history = {i for i in in_history if i in self._keys}
        self._repeatable = {i: self._keys[i] for i in missed}
        self._as_turn = set(missed)
        self._since_handle.clear()
        self._since_resume.clear()

    # -- questions ------------------------------------------------------------------------

    def unknown_ids(self) -> set[str]:
        """Ids the current session never saw: responses to them must not be sent."""
        return set(self._unknown)

    def is_unknown(self, call_id: str) -> bool:
        return call_id in self._unknown

    def issued(self) -> frozenset[str]:
        """Every call id issued in this run."""
        return frozenset(self._keys)

    def earlier_sessions(self, call_ids: Iterable[str]) -> None:
        """``call_ids`` were issued by the session of an earlier live run of this invocation
        (the agent that transferred to this one, the run a rerun replaced): a response to
        one of them, still queued, must not go to this run's session."""
        self._unknown.update(call_ids)

    def goes_as_turn(self, call_id: str) -> bool:
        """The response of ``call_id`` goes to the current session as a turn carrying it: a
        fresh session whose history lacks the call (ADK leaves a call without its response
        out), or a resumed one that knows no earlier connection's id, and whose model did
        not issue it anew. True once per call."""
        if call_id not in self._as_turn:
            return False
        self._as_turn.discard(call_id)
        # Told; a repeat the model issues meanwhile (it had not read the content yet) is
        # still answered from the result, never run again, and no late telling follows.
        self._told.add(call_id)
        return True

    def name_of(self, call_id: str) -> str | None:
        return self._names.get(call_id)
