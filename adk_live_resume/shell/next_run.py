"""Handing an invocation to its next live run: an agent transfer or a rerun.

A rerun is ADK's own request for a new live session of the same flow.
The next live run starts a session of its own (no handle), from a copy of the invocation
context; it learns the call ids this run's session issued (:func:`earlier_calls`), so that a
response to one of them still in the queue (the transfer call's, say) does not go to its
session.

Guarantees: the caller's context and ``RunConfig`` are never mutated; the ids handed over
are removed once the next run has ended, whatever way it ends; this run's last handle is
stored before the next run's first.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import AsyncGenerator, Iterator
from typing import Any

from ..compat import adk_compat
from ..conversation.tool_calls import ToolCallBook
from ..resumption.handle_store import HandleKeeper

logger = logging.getLogger("adk_live_resume.loop")

#: Call ids of a run's session, by invocation id, for the next live run of that invocation
#: (a transfer's child, a rerun), which takes them when it starts.
_earlier_calls: dict[str, frozenset[str]] = {}


def earlier_calls(ctx: Any) -> frozenset[str]:
    """The call ids an earlier live run of ``ctx``'s invocation handed over (taken once)."""
    return _earlier_calls.pop(str(getattr(ctx, "invocation_id", "")), frozenset())


def fresh_context(ctx: Any) -> Any:
    """A copy of the invocation context for a new live session (no handle)."""
    run_config = ctx.run_config
    update: dict[str, Any] = {"live_session_resumption_handle": None}
    if run_config is not None and run_config.session_resumption is not None:
        update["run_config"] = run_config.model_copy(
            update={
                "session_resumption": run_config.session_resumption.model_copy(
                    update={"handle": None}
                )
            }
        )
    return ctx.model_copy(update=update)


async def transfer(
    flow: Any, ctx: Any, keeper: HandleKeeper, tool_calls: ToolCallBook, agent_name: str
) -> AsyncGenerator[Any, None]:
    """Run agent ``agent_name`` live in a fresh session; yield its events."""
    agent = adk_compat.agent_to_run(flow, ctx, agent_name)
    logger.debug("transferring the live session to agent %s (fresh session)", agent_name)
    await keeper.close()  # our last handle lands before the new agent's first
    with calls_to_the_next_run(ctx, tool_calls):
        async with contextlib.aclosing(agent.run_live(fresh_context(ctx))) as child:
            async for event in child:
                yield event


@contextlib.contextmanager
def calls_to_the_next_run(ctx: Any, tool_calls: ToolCallBook) -> Iterator[None]:
    """The next live run of this invocation (its session is new) learns this session's
    call ids: a response to one of them still in the queue (the transfer call's, say)
    must not go to its session."""
    key = str(getattr(ctx, "invocation_id", ""))
    _earlier_calls[key] = tool_calls.issued()
    try:
        yield
    finally:
        _earlier_calls.pop(key, None)


async def rerun(
    flow: Any, ctx: Any, keeper: HandleKeeper, tool_calls: ToolCallBook
) -> AsyncGenerator[Any, None]:
    """Run ``flow`` live again in a fresh session (ADK asked for one); yield its events."""
    logger.debug("ADK asked for a fresh live session")
    keeper.forget()  # the fresh session must not resume from the stored handle
    await keeper.close()
    with calls_to_the_next_run(ctx, tool_calls):
        async with contextlib.aclosing(flow.run_live(fresh_context(ctx))) as fresh:
            async for event in fresh:
                yield event
