"""What the tool calls a connection receives, and the tool results it is sent, become.

A ``toolResponse`` (or content carrying function responses) answers calls by id, and an id
belongs to the connection that issued it (``gemini-live-protocol.md``, "Field facts that
contradict or extend the above"). :class:`ToolTraffic` is the part of a connection's watch
(:mod:`.connection_watch`) that handles both ways. A call the model issues again after a
resume (a repeat) is answered with the earlier result, or held while the earlier call
still runs (:meth:`ToolTraffic.calls`); ADK runs only the others. A client send carrying
results is rewritten before it goes (:meth:`ToolTraffic.rewrite`): each result is noted
in the run's :class:`~adk_live_resume.conversation.tool_calls.ToolCallBook`; a result for a call the
current session issued again (a repeat) is readdressed to it; a result the session cannot
take under its id (a call it never saw) is taken out, and told instead as conversation
content naming the call, its arguments and its result
(:func:`~adk_live_resume.conversation.late_results.as_content`) when the model family takes content
in mid-session, held while the user speaks (:class:`~adk_live_resume.conversation.deferred_results.
DeferredResults`); where it takes none, a resumed session moves to a fresh one whose rebuilt history
holds the results.

Guarantees: a send left with no function response and no other content is not sent (the
caller records nothing); the order of what remains is kept; a result is told as content at
most once (the book hands each late result out once).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from typing import Any

from google.genai import types

from ..conversation.client_sends import responses_of
from ..conversation.late_results import LateResultsWay, as_content
from ..conversation.send_plan import Send, plan_results
from .run_rules import RunRules

logger = logging.getLogger("adk_live_resume.loop")


class ToolTraffic:
    """One connection's tool calls and results (see the module)."""

    def __init__(
        self,
        rules: RunRules,
        *,
        way: Callable[[int], LateResultsWay],
        to_fresh_session: Callable[[str], None],
    ) -> None:
        """``way``: how ``count`` late results reach the model (the run's answer);
        ``to_fresh_session``: move the session to a fresh one, saying why."""
        self._rules = rules
        self._way = way
        self._to_fresh_session = to_fresh_session

    async def calls(
        self,
        calls: list[types.FunctionCall],
        replay: Callable[[str, dict[str, Any]], Awaitable[None]] | None,
    ) -> list[types.FunctionCall]:
        """Tool calls arrived; return those ADK should run. A repeat whose result is known is
        answered with it (sent with ``replay``, when there is one); a repeat of a call that
        still runs is held until that call answers."""
        rules = self._rules
        with_ids = [call for call in calls if call.id]
        decision = rules.tool_calls.on_calls(
            ((str(c.id), c.name, c.args) for c in with_ids), running=rules.background.tool_running
        )
        cancelled = set(decision.cancelled)  # (before ADK read them: never run)
        rules.outbox.tool_call(str(c.id) for c in with_ids if str(c.id) not in cancelled)
        held = {call_id for call_id, _ in decision.answer} | cancelled
        for repeat, running in decision.hold:
            logger.debug(
                "holding a repeated tool call until the earlier call, still running, answers"
            )
            held.add(repeat)
            rules.background.watch_running_call(running)
        if decision.answer and replay is not None:
            names = {str(call.id): call.name for call in with_ids}
            logger.debug(
                "answering %d repeated tool call(s) with the result from before the reconnect",
                len(decision.answer),
            )
            responses = [
                types.FunctionResponse(id=call_id, name=names[call_id], response=result)
                for call_id, result in decision.answer
            ]
            await replay("send_tool_response", {"function_responses": responses})
        return [call for call in calls if not call.id or str(call.id) not in held]

    def rewrite(self, method: str, kwargs: dict[str, Any]) -> Send | None:
        """The send to make for ``method(**kwargs)`` (the same when it carries no result
        to rewrite), or ``None`` when nothing of it is left to send: carries out
        :func:`~adk_live_resume.conversation.send_plan.plan_results` and its placement."""
        if method == "send_realtime_input":
            # (every microphone chunk: realtime input carries no function responses)
            return method, kwargs
        book = self._rules.tool_calls
        ids = (str(response.id) for response in responses_of(method, kwargs) if response.id)
        plan = plan_results(method, kwargs, book.results_view(ids))
        for call_id, result in plan.results:
            book.on_result(call_id, result)
        for call_id in plan.readdress:
            book.take_repeat(call_id)
        if plan.readdress:
            waiting = len(plan.readdress)
            logger.debug("sending %d result(s) to the repeated call(s) waiting", waiting)
        for call_id in plan.as_turn:
            book.goes_as_turn(call_id)
        # The session never saw the unknown calls (or takes no earlier connection's id): a
        # response would confuse it. Those going as content go so; the others wait for
        # the model to ask again (the replayed user turn) or to finish answering.
        turn = self._as_turn(list(plan.as_turn)) if plan.as_turn else None
        placed = plan.place(turn, user_busy=turn is not None and self._rules.user_busy())
        if placed.held is not None:
            # Sent now it would split the utterance: it goes once the user is quiet.
            logger.debug("holding %d late result(s) until the user is quiet", len(plan.as_turn))
            self._rules.deferred_results.hold(placed.held, asyncio.get_running_loop().time())
        return placed.send

    def hold_late(self) -> None:
        """Results that outlived their connection and are due now
        (:meth:`ToolCallBook.take_late`) go to the session as content once the user is
        quiet (:class:`DeferredResults`), once."""
        rules = self._rules
        late = rules.tool_calls.take_late()
        if late and self._as_content(len(late)):
            logger.debug("holding %d late tool result(s) until the user is quiet", len(late))
            rules.deferred_results.hold(as_content(late), asyncio.get_running_loop().time())

    def _as_turn(self, ids: list[str]) -> Send | None:
        """The results of the calls ``ids`` as conversation content naming each call, its
        arguments and its result, for a session that cannot take them as a
        ``toolResponse`` (a fresh session whose history lacks their calls, a resumed one that
        knows no earlier connection's id); ``None`` where the model family takes no content
        in mid-session (Gemini 3.1 Live)."""
        book = self._rules.tool_calls
        late = [r for i in ids if (r := book.late_result(i)) is not None]
        if not late or not self._as_content(len(late)):
            return None
        logger.debug("giving %d late tool result(s) to the session as content", len(late))
        return as_content(late)

    def _as_content(self, count: int) -> bool:
        """Whether ``count`` late results go to this session as content; where the model
        takes no content in mid-session, a resumed session moves to a fresh one instead."""
        way = self._way(count)
        if way == "fresh_session":
            self._to_fresh_session(
                "tool results that outlived their connection need a fresh session"
            )
        return way == "content"
