"""Property: a call issued anew runs; a repeat gets its earlier call's result once.

A state machine plays random runs of tool calls against :class:`ToolCallBook`: the model
issues calls (one or two per message, few distinct tools so that the same call comes again),
tools run blocking or in the background, finish, end without a result or are lost with
their connection, resumable handles arrive, turns complete, connections drop and resume
(the finished exchanges going back as context) or start fresh. The reference is written
from docs/guarantees.md ("Tool calls by id") and the module's docstring:

* after a resume from a handle, the calls issued since that handle (accumulated over
  resumes that came before the model issued them anew) may be repeated, except those whose
  exchange goes back to the model as context; a second resume from the same handle starts
  from the same state, which lacks them still (none of them is told as content for being
  covered); after a fresh session, the calls whose result
  its history lacks (and that no repeat took the place of);
* only until the resumed session finished answering (a turn with model output completes);
* the first new call with the same tool and arguments pairs with the earliest such call; it
  is answered with its result, held while it runs (and gets its response once it comes, or
  the error when it ends without one), or runs in its place (it never ran);
* every other call runs, whatever its name and arguments;
* a response never goes to a session that does not know its call id, and a resumed
  session knows no id an earlier connection issued;
* a call the server cancelled gets no response, no late telling and no repeat, and one it
  cancelled before ADK read it is not run at all;
* a result that outlived its connection and that no repeat takes is told as content once:
  at once when the replay drops its response (a call the handle's state holds), when the
  resumed session finished answering (a repeatable call not repeated), or when the tool
  ends (a call still running).
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass, field
from typing import Any

from hypothesis import strategies as st
from hypothesis.stateful import (
    RuleBasedStateMachine,
    initialize,
    invariant,
    precondition,
    rule,
)

from adk_live_resume.conversation.tool_calls import ENDED_WITHOUT_RESULT, ToolCallBook, call_key

TOOLS = ("balance", "status")


@dataclass
class _Call:
    id: str
    key: str
    #: "waiting" (ADK did not start it), "running" (a background run), "queued" (its
    #: response is queued), "done", "lost" (its connection died before ADK ran it), "held"
    #: (a repeat waiting for a running call), "void" (a held repeat whose session is gone).
    state: str = "waiting"
    result: dict[str, Any] | None = None


@dataclass
class _Reference:
    """The contract's state: what may be repeated, and who knows which id."""

    calls: dict[str, _Call] = field(default_factory=dict)
    #: Ids the current session knows.
    known: set[str] = field(default_factory=set)
    #: Ids the state behind the newest handle knows (None: no handle on this session).
    handle_knows: set[str] | None = None
    #: Earlier calls a new call may repeat, in issue order.
    repeatable: list[str] = field(default_factory=list)
    #: Calls another took the place of.
    superseded: set[str] = field(default_factory=set)
    #: Running call -> the held repeat its response goes to.
    waiting: dict[str, str] = field(default_factory=dict)
    #: Calls whose result went as content (a turn).
    told: set[str] = field(default_factory=set)
    #: Calls the server cancelled: never repeatable.
    cancelled: set[str] = field(default_factory=set)
    #: Calls whose response goes to the session as a turn when it comes.
    as_turn: set[str] = field(default_factory=set)
    #: Ids whose response went to the session since the newest handle (a repeat's id
    #: where its running call's response was re-addressed).
    sent: list[str] = field(default_factory=list)


class ToolCallMachine(RuleBasedStateMachine):
    def __init__(self) -> None:
        super().__init__()
        self.book = ToolCallBook()
        self.ref = _Reference()
        self.ids = itertools.count(1)
        #: Calls issued since the newest handle or resume (the next resume's missed calls).
        self.since_resume: list[str] = []
        #: Calls issued since the newest handle: its state lacks them, after any resume too.
        self.handle_lacks: set[str] = set()

    @initialize()
    def start(self) -> None:
        self.book.on_fresh_session()

    def _running(self, call_id: str, name: str | None) -> bool:
        return self.ref.calls[call_id].state == "running"

    # -- the model --------------------------------------------------------------------------

    @rule(tools=st.lists(st.sampled_from(TOOLS), min_size=1, max_size=2))
    def model_calls(self, tools: list[str]) -> None:
        ref = self.ref
        calls = [(f"c{next(self.ids)}", tool, {"what": tool}) for tool in tools]
        decision = self.book.on_calls(calls, self._running)
        got: dict[str, tuple[str, Any]] = {i: ("run", None) for i in decision.run}
        got.update((i, ("answer", result)) for i, result in decision.answer)
        got.update((i, ("hold", origin)) for i, origin in decision.hold)
        for call_id, name, args in calls:
            key = call_key(name, args)
            call = ref.calls[call_id] = _Call(call_id, key)
            ref.known.add(call_id)
            self.since_resume.append(call_id)
            self.handle_lacks.add(call_id)
            earlier = next((e for e in ref.repeatable if ref.calls[e].key == key), None)
            if earlier is None:
                expected: tuple[str, Any] = ("run", None)
            else:
                ref.repeatable.remove(earlier)
                ref.as_turn.discard(earlier)
                before = ref.calls[earlier]
                if before.result is not None:
                    expected = ("answer", before.result)
                    call.state, call.result = "done", before.result
                elif before.state in ("running", "queued"):
                    expected = ("hold", earlier)
                    call.state = "held"
                    ref.waiting[earlier] = call_id
                elif before.state == "held":  # a repeat still held: its call's response
                    origin = next(o for o, r in ref.waiting.items() if r == earlier)
                    expected = ("hold", origin)
                    call.state, before.state = "held", "void"
                    ref.waiting[origin] = call_id
                else:
                    expected = ("run", None)
                    ref.superseded.add(earlier)
            assert got[call_id] == expected, (
                f"{call_id} ({name}): {got[call_id]} != {expected} (repeatable before: "
                f"{ref.repeatable}, earlier: {earlier})"
            )

    @rule(tool=st.sampled_from(TOOLS))
    def model_calls_and_the_server_cancels_before_adk_reads_it(self, tool: str) -> None:
        """The call's cancellation arrives (its frame seen at once) before ADK reads the call
        (ADK's reading behind): the call, when read, is not run, answered or held, and it
        repeats no earlier call."""
        call_id = f"c{next(self.ids)}"
        assert self.book.on_cancelled([call_id]), "kept for when the call comes"
        assert not self.book.on_cancelled([call_id]), "once"
        decision = self.book.on_calls([(call_id, tool, {"what": tool})], self._running)
        assert decision.cancelled == (call_id,)
        assert not (decision.run or decision.answer or decision.hold)
        ref = self.ref
        ref.calls[call_id] = _Call(call_id, call_key(tool, {"what": tool}), state="cancelled")
        ref.cancelled.add(call_id)
        ref.superseded.add(call_id)
        self.since_resume.append(call_id)
        self.handle_lacks.add(call_id)
        assert not self.book.on_cancelled([call_id]), "already cancelled"

    def _callable(self, *states: str) -> list[str]:
        return sorted(
            (i for i, c in self.ref.calls.items() if c.state in states), key=lambda i: int(i[1:])
        )

    @precondition(lambda self: self._callable("waiting", "running", "queued", "cancelled"))
    @rule(data=st.data(), step=st.sampled_from(["run", "background", "queue", "end"]))
    def a_tool_goes_on(self, data: st.DataObject, step: str) -> None:
        """A call ADK has not answered goes one step on: ADK runs its tool to the end
        (blocking) or starts it in the background; a background run queues its response
        (sent at its next step) or ends without one."""
        call = self.ref.calls[
            data.draw(st.sampled_from(self._callable("waiting", "running", "queued", "cancelled")))
        ]
        if call.state == "cancelled":  # (ADK ignores the cancellation: its tool ends)
            self._respond(call)
        elif call.state == "waiting":
            if step == "background":
                call.state = "running"
            else:
                self._respond(call)
        elif call.state == "queued":
            self._respond(call)
        elif step in ("run", "queue"):
            self.book.on_response_queued(call.id)
            call.state = "queued"
        else:
            self._ended_without_a_response(call)

    def _ended_without_a_response(self, call: _Call) -> None:
        call.state = "lost"
        repeat = self.ref.waiting.pop(call.id, None)
        got = self.book.on_running_ended(call.id)
        if repeat is None:
            assert got is None
            return
        assert got is not None and got[0] == repeat, f"{got} != the held repeat {repeat}"
        held = self.ref.calls[repeat]
        held.state, held.result = "done", ENDED_WITHOUT_RESULT

    def _respond(self, call: _Call) -> None:
        result = {"from": call.id}
        call.state, call.result = "done", result
        self.book.on_result(call.id, result)
        repeat = self.ref.waiting.pop(call.id, None)
        got = self.book.take_repeat(call.id)
        assert (got[0] if got else None) == repeat, f"{call.id}'s response went to {got}"
        if repeat is not None:
            held = self.ref.calls[repeat]
            held.state, held.result = "done", result
            self.book.on_result(repeat, result)
            self._goes_as_turn(repeat)
            self.ref.sent.append(repeat)
        else:
            self._goes_as_turn(call.id)
            self.ref.sent.append(call.id)

    def _goes_as_turn(self, call_id: str) -> None:
        expected = call_id in self.ref.as_turn
        self.ref.as_turn.discard(call_id)
        if expected:  # told: a repeat is still answered from the result, nothing owed
            self.ref.told.add(call_id)
        assert self.book.goes_as_turn(call_id) is expected, f"{call_id} as a turn: {not expected}"

    def _late_is(self, expected: list[str]) -> None:
        got = [late.call_id for late in self.book.take_late()]
        assert sorted(got) == sorted(expected), f"told late: {got} != {expected}"
        for call_id in got:
            late = self.book.late_result(call_id)
            assert late is not None and late.result == self.ref.calls[call_id].result

    @precondition(lambda self: self._callable("waiting", "running", "queued", "held"))
    @rule(data=st.data())
    def server_cancels(self, data: st.DataObject) -> None:
        """New input came while a call of this connection ran: the server cancels it. Its
        tool may still end; its result goes nowhere."""
        ref = self.ref
        current = [i for i in self._callable("waiting", "running", "queued", "held")]
        current = [i for i in current if i in ref.known]
        if not current:
            return
        call = ref.calls[data.draw(st.sampled_from(current))]
        assert self.book.on_cancelled([call.id])
        assert not self.book.on_cancelled([call.id]), "once"
        ref.superseded.add(call.id)
        ref.cancelled.add(call.id)
        ref.known.discard(call.id)
        ref.as_turn.discard(call.id)
        if call.id in ref.repeatable:
            ref.repeatable.remove(call.id)
        if call.state == "held":
            origin = next(o for o, r in ref.waiting.items() if r == call.id)
            del ref.waiting[origin]
            call.state = "void"
        else:
            call.state = "cancelled"
            ref.waiting.pop(call.id, None)
        if call.id in ref.sent:
            ref.sent.remove(call.id)

    @rule()
    def model_turn_complete(self) -> None:
        """A turn with model output completes: the session has answered. A repeatable
        call not repeated gets its result as content: now if known, else when it comes."""
        ref = self.ref
        self.book.on_answered()
        self._late_is(
            [i for i in ref.repeatable if ref.calls[i].result is not None and i not in ref.told]
        )
        ref.as_turn.update(
            i for i in ref.repeatable if ref.calls[i].result is None and i not in ref.superseded
        )
        ref.repeatable.clear()

    # -- connections ------------------------------------------------------------------------

    @rule()
    def resumable_handle(self) -> None:
        self.book.on_handle()
        self.ref.handle_knows = set(self.ref.known)
        self.since_resume = []
        self.handle_lacks = set()
        self.ref.sent = []

    def _lose_unstarted(self) -> None:
        for call in self.ref.calls.values():
            if call.state == "waiting":
                call.state = "lost"

    @precondition(lambda self: self.ref.handle_knows is not None)
    @rule(data=st.data())
    def drop_and_resume(self, data: st.DataObject) -> None:
        """The connection drops and resumes from the newest handle; some exchanges finished
        after it go back as context, and the replay drops the other responses sent since
        the handle (the resumed session knows no earlier connection's id)."""
        ref = self.ref
        self._lose_unstarted()
        assert ref.handle_knows is not None
        missed = [
            i for i in self.since_resume if i not in ref.repeatable and i not in ref.cancelled
        ]
        ref.repeatable.extend(missed)
        ref.repeatable.sort(key=lambda i: int(i[1:]))
        ref.known = set()
        # a call the handle's state holds, its result still to come, gets it as content
        ref.as_turn.update(
            i
            for i, c in ref.calls.items()
            if i not in self.handle_lacks and c.result is None and i not in ref.superseded
        )
        finished = [i for i in self.since_resume if ref.calls[i].result is not None]
        how = data.draw(st.sampled_from(["all", "none", "some"]))
        context = {"all": finished, "none": []}.get(how) or [
            i for i in finished if data.draw(st.booleans())
        ]
        dropped = [i for i in ref.sent if i not in context and data.draw(st.booleans())]
        self.since_resume = []
        ref.sent = []
        self.book.on_resumed()
        self.book.in_context(context)
        ref.repeatable = [i for i in ref.repeatable if i not in context]
        self.book.dropped_from_replay(dropped)
        self._late_is(
            [
                i
                for i in dict.fromkeys(dropped)
                if i not in ref.repeatable
                and i not in ref.superseded
                and ref.calls[i].result is not None
            ]
        )

    @rule()
    def fresh_session(self) -> None:
        """The handle is dead (or there is none): a fresh session with ADK's history, which
        holds every call with its result and leaves out the others."""
        ref = self.ref
        self._lose_unstarted()
        for repeat in ref.waiting.values():
            ref.calls[repeat].state = "void"
            ref.superseded.add(repeat)
        ref.waiting.clear()
        for call in ref.calls.values():
            if call.state == "held":
                call.state = "void"
                ref.superseded.add(call.id)
        answered = [i for i, c in ref.calls.items() if c.result is not None]
        ref.repeatable = [
            i for i, c in ref.calls.items() if c.result is None and i not in ref.superseded
        ]
        ref.as_turn = set(ref.repeatable)
        ref.known = set()
        ref.handle_knows = None
        self.since_resume = []
        self.handle_lacks = set()
        ref.sent = []
        self.book.on_fresh_session(answered_in_history=answered)

    @invariant()
    def a_response_goes_only_to_a_session_that_knows_its_call(self) -> None:
        unknown = self.book.unknown_ids()
        for call_id in self.ref.calls:
            assert (call_id in unknown) is (call_id not in self.ref.known), (
                f"{call_id}: unknown={call_id in unknown}, known={call_id in self.ref.known}"
            )


TestACallIssuedAnewRunsAndARepeatGetsItsEarlierResultOnce = ToolCallMachine.TestCase
