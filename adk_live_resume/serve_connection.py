"""Serving one connection of a live run, from its connect to its socket's close.

:func:`serve` takes the connection opened ahead or opens one, puts the tap under ADK's
connection, restores the session on it (a resumed one gets the outbox's replay; a fresh one
its history rebuilt, then the audio the history lacks), runs ADK's own send and receive steps
on it, and takes it down. What happened is the :class:`~.connection_end.Outcome` it fills:
how the connection ended (:func:`~adk_live_resume.connection_end.classify_end` reads it from
the connection's final state) and what it did (history sent, messages replayed); the loop
adds that to the run's counters and decides what comes next. It writes none of the run's
fields.

Guarantees:

* History is sent only when a session starts fresh, never on resume.
* What is not sent on the new connection (it drops too) stays in the outbox for the next.
* ADK's sender is never cancelled halfway through a request while the session goes on (a new
  connection, a transfer, a rerun): the next connection waits for that work, then replays
  its send. Only when the run itself ends is the sender cancelled, after ``close_timeout``.
* A connection retired by the one opened ahead is closed in the background; any other is
  closed before :func:`serve` returns. No task started here outlives it.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncGenerator
from typing import Any, Protocol

from . import adk_compat, observe, withheld
from .background_calls import BackgroundCalls
from .chunk_encoding import ChunkEncoder
from .connection_end import End, Outcome, classify_end
from .connection_watch import ConnectionWatch
from .connector import Connector, abort_transport
from .deferred_results import DeferredResults
from .fresh_history import fresh_history, response_ids, user_texts
from .handle_coverage import with_catch_up
from .handle_store import HandleKeeper
from .handles import ResumptionState
from .outbox import Outbox, Replay
from .policy import ResumePolicy
from .queue_guard import QueueGuard
from .retry_plan import Reconnects
from .tap import SessionTap
from .tool_calls import ToolCallBook

logger = logging.getLogger("adk_live_resume.loop")


class ServedRun(Protocol):
    """What serving a connection needs of its live run (:class:`~.loop.LiveRun`)."""

    surface: adk_compat.AdkSurface
    flow: Any
    ctx: Any
    request: Any
    history_events: list[Any]
    event_id: str
    policy: ResumePolicy
    handles: ResumptionState
    connector: Connector
    reconnects: Reconnects
    background: BackgroundCalls
    outbox: Outbox
    tool_calls: ToolCallBook
    deferred_results: DeferredResults
    keeper: HandleKeeper
    queue_guard: QueueGuard | None
    pass_handles: bool
    chunk_encoder: ChunkEncoder | None
    unfinished_input: str

    @property
    def agent_name(self) -> str: ...

    @property
    def session_id(self) -> str: ...

    def connect_request(self, handle: str | None) -> Any: ...

    def tool_turns_need_an_end(self) -> bool: ...


async def serve(
    run: ServedRun, watch: ConnectionWatch, outcome: Outcome
) -> AsyncGenerator[Any, None]:
    """Run one connection; record how it ended, and what it did, in ``outcome``."""
    surface = run.surface
    queue = run.ctx.live_request_queue
    opening = run.connector.take_opening()
    handle = opening.handle if opening is not None else run.handles.handle
    send_task: asyncio.Task[None] | None = None
    connection: Any = None
    clean_exit = ended = False
    stack = contextlib.AsyncExitStack()
    try:
        try:
            if opening is not None:
                connection = await opening.take(stack)
            else:
                connection = await run.connector.connect(stack, run.connect_request(handle))
            if connection is None:
                outcome.decided(End.CLIENT_CLOSED)
                return
            outcome.connected()
            session = adk_compat.genai_session(connection)
            tap = SessionTap(
                session,
                watch,
                pass_handles=run.pass_handles,
                encoder=run.chunk_encoder,
                end_tool_turns=run.tool_turns_need_an_end(),
            )
            watch.attach(session, tap)
            adk_compat.set_genai_session(connection, tap)
            adk_compat.continue_input_transcription(connection, run.unfinished_input)
            watch.watch_socket()
            run.outbox.begin_connection()
            history: list[Any] = []  # a resumed session has it already
            if handle:
                run.tool_calls.on_resumed()
                replay = run.outbox.take_replay(run.tool_calls.unknown_ids())
                run.tool_calls.in_context(replay.context_calls)
                replay = with_catch_up(run.keeper.take_catch_up(), replay)  # (sent below)
            else:
                in_history_responses = response_ids(run.request.contents or [])
                run.tool_calls.on_fresh_session(answered_in_history=in_history_responses)
                run.deferred_results.on_fresh_session(in_history_responses)
                screened = withheld.of_session(run.session_id)
                history, in_history = fresh_history(
                    screened.history(run.request.contents or [], run.history_events),
                    run.outbox.utterance_transcript(),
                    speaking=run.outbox.activity.speaking,
                    fragments=run.outbox.transcript_fragments,
                    stored=run.outbox.utterance_transcript_stored(),
                    cut=run.outbox.cut_by_typed_turns(),
                    unanswered=run.outbox.typed_turns_unanswered(),
                )
                replay = run.outbox.take_audio(
                    utterance_in_history=in_history,
                    waiting_in_history=user_texts(history),
                )
            if history:
                outcome.sending_history()
            await send_restoration(watch, run.outbox, replay, history=(connection, history))
            if replay.dropped_audio_ms:
                logger.warning(
                    "%.0f ms of voiced user audio sent before the drop left the replay"
                    " window (%.1f s, plus the unanswered utterance up to %.0f s) and was"
                    " not replayed",
                    replay.dropped_audio_ms,
                    run.policy.replay_audio_seconds,
                    run.policy.max_utterance_seconds,
                )
            if replay.dropped_silence_ms:
                logger.debug(
                    "%.0f ms of unvoiced user audio (silence) left the replay window",
                    replay.dropped_silence_ms,
                )
            outcome.replayed(len(replay.messages))
            report_reconnect(run, watch.number, state_restored=bool(handle), replay=replay)
            if run.queue_guard is not None:
                run.queue_guard.resume()
            send_task = asyncio.create_task(
                surface.send_step(run.flow, connection, run.ctx, run.request),
                name=f"adk_live_resume send #{watch.number}",
            )
            send_task.add_done_callback(watch.on_send_done)
            async with contextlib.aclosing(
                surface.receive_step(run.flow, connection, run.ctx, run.request, run.event_id)
            ) as events:
                async for event in events:
                    if event is None:
                        break
                    mode = surface.sentinel_mode(event)
                    if mode == "restart":  # ADK's sentinel in its restart mode: a rerun
                        outcome.decided(End.RERUN)
                        break
                    if mode is not None:  # ADK's own goAway reconnect: plan ours instead
                        watch.move("ADK reconnect request")
                        continue
                    yield event
                    if event.get_function_responses():
                        queue.send_content(event.content)
                    transfer = event.actions.transfer_to_agent if event.actions else None
                    if transfer:
                        run.background.leave()  # (as at the run's end)
                        await surface.stop_background(run.flow, run.ctx)
                        await asyncio.sleep(surface.transfer_delay)
                        outcome.decided(End.TRANSFER, transfer_to=transfer)
                        break
                    if any(
                        response.name == "task_completed"
                        for response in event.get_function_responses()
                    ):
                        await asyncio.sleep(surface.task_completion_delay)
                        outcome.decided(End.TASK_COMPLETED)
                        break
                else:
                    outcome.ended_without_error()
            classify_end(watch, outcome, None)
            ended = True
        except Exception as error:
            classify_end(watch, outcome, error)
            ended = True
        else:
            clean_exit = True
        finally:
            try:
                if ended:  # not while cancelled or closed
                    await let_next_open(run.connector, watch, outcome, run.queue_guard)
            finally:
                moving_on = ended and outcome.end not in (
                    End.CLIENT_CLOSED,
                    End.TASK_COMPLETED,
                )
                await stop_sender(
                    watch,
                    send_task,
                    run.queue_guard,
                    close_timeout=run.policy.close_timeout,
                    moving_on=moving_on,
                )
                await watch.finish(graceful=clean_exit)
    finally:
        if connection is not None:
            outcome.left_unfinished(adk_compat.unfinished_input_transcription(connection))
        if watch.retired:  # the next connection is up: do not wait for this one's close
            session = watch.session
            run.connector.closer.close(stack, lambda: abort_transport(session))
        else:
            await stack.aclose()
    if outcome.end is End.DROPPED and outcome.error is not None and outcome.drop is None:
        raise outcome.error


async def let_next_open(
    connector: Connector, watch: ConnectionWatch, outcome: Outcome, guard: QueueGuard | None
) -> None:
    """While the next connection is being opened after a drop, taking this one down (its
    sender, timers, socket) waits: none of it needs to come first, and on a busy event
    loop it would only slow the new connection's handshake down."""
    opening = connector.opening
    if (
        opening is None
        or watch.retired
        or opening.task.done()
        or outcome.end not in (End.DROPPED, End.MOVED)
    ):
        return
    watch.stop_sends()  # what ADK's sender still sends goes to the outbox
    if guard is not None:
        guard.pause()
    await asyncio.wait({opening.task})


async def stop_sender(
    watch: ConnectionWatch,
    task: asyncio.Task[None] | None,
    guard: QueueGuard | None,
    *,
    close_timeout: float,
    moving_on: bool,
) -> None:
    """Stop ADK's send step for a connection that ended, without cutting ADK's work short.

    The connection takes no more sends first (what the sender still sends is recorded in
    the outbox for the next connection), and the queue hands it no new request. A request
    it is working on (ADK appends the user event to the session, screens the content with
    ``before_model_callback``) is never cancelled halfway when the session goes on
    (``moving_on``: a new connection, a transfer, a rerun): the next connection waits
    until ADK's work on it is done, once, and then replays its send, if the screening let
    it through. Only when the run itself ends (closed, cancelled) is the sender cancelled,
    after ``close_timeout``.
    """
    watch.stop_sends()
    if guard is not None:
        guard.pause()
    if task is None:
        return
    try:
        if not task.done() and guard is not None and guard.in_hand:
            guard.note_recovered()
            if moving_on:
                await finish_request(guard, task, close_timeout)
            else:
                await guard.wait_idle(close_timeout)
    finally:
        if not task.done():
            task.cancel()
            await asyncio.wait({task}, timeout=1.0)


async def finish_request(guard: QueueGuard, task: asyncio.Task[None], close_timeout: float) -> None:
    """Wait until ADK's sender is done with the request in its hand (or has stopped)."""
    idle = asyncio.ensure_future(guard.wait_idle(None))
    try:
        done, _ = await asyncio.wait(
            {idle, task},
            timeout=close_timeout,
            return_when=asyncio.FIRST_COMPLETED,
        )
        if not done:
            logger.debug(
                "waiting for ADK to finish a request (session write, before_model_callback)"
                " before the next connection takes over"
            )
            await asyncio.wait({idle, task}, return_when=asyncio.FIRST_COMPLETED)
    finally:
        idle.cancel()


async def send_restoration(
    watch: ConnectionWatch, outbox: Outbox, replay: Replay, *, history: tuple[Any, list[Any]]
) -> None:
    """Send a fresh session's ``history`` (``(connection, contents)``; none for a resumed
    one), then ``replay``, on a new connection; what is not sent stays in the ``outbox``.

    Each message is recorded again as it is sent (the new connection may drop too), and
    if sending fails midway (the history included) the rest is recorded unsent, so a
    later connection gets it.
    """
    logger.debug(
        "replaying %d context turn(s) and %d message(s): %s",
        len(replay.context),
        len(replay.messages),
        [m.method + (f"({m.user_text!r})" if m.user_text else "") for m in replay.messages],
    )
    pending: list[tuple[str, dict[str, Any]]] = []
    if replay.context:
        turns = replay.context_contents()
        pending.append(("send_client_content", {"turns": turns, "turn_complete": False}))
    pending.extend((m.method, dict(m.kwargs)) for m in replay.messages)
    connection, contents = history
    tap = watch.tap
    assert tap is not None  # (set up before anything is sent)
    handed = 0  # messages handed to the tap (each is recorded as it goes)
    try:
        if contents:
            with watch.sending_history():  # the session's state from its start on
                await connection.send_history(contents)
        for method, kwargs in pending:
            handed += 1
            await tap.replay(method, kwargs)
    except BaseException:
        for later_method, later_kwargs in pending[handed:]:
            outbox.record(later_method, later_kwargs)
        raise


def report_reconnect(run: ServedRun, number: int, *, state_restored: bool, replay: Replay) -> None:
    """Report the reconnect that made connection ``number``, just restored, if it was one."""
    reconnects = run.reconnects
    if reconnects.reason is None:
        return
    loop = asyncio.get_running_loop()
    gap = 0.0 if reconnects.lost_at is None else (loop.time() - reconnects.lost_at) * 1000
    session = getattr(run.ctx, "session", None)
    observe.report(
        observe.ReconnectInfo(
            reason=reconnects.reason
            if state_restored or reconnects.reason == "stall"
            else "restart",
            attempt=reconnects.attempt,
            gap_ms=gap,
            state_restored=state_restored,
            cause=reconnects.cause,
            agent_name=run.agent_name,
            invocation_id=str(getattr(run.ctx, "invocation_id", "")),
            session_id=str(getattr(session, "id", "")),
            connection_number=number,
            replayed_messages=len(replay.messages) + (1 if replay.context else 0),
            dropped_audio_ms=replay.dropped_audio_ms,
            dropped_silence_ms=replay.dropped_silence_ms,
            stall=reconnects.cause.removeprefix("stall: ") if reconnects.reason == "stall" else "",
        )
    )
    reconnects.reason = None
    reconnects.lost_at = None


def interrupted_event(ctx: Any, author: str) -> Any:
    """The event that tells the client to stop playing a model turn a lost connection cut."""
    from google.adk.events.event import Event

    return Event(
        invocation_id=ctx.invocation_id,
        author=author,
        branch=getattr(ctx, "branch", None),
        interrupted=True,
    )
