"""Serving one connection of a live run, from its connect to its socket's close.

:func:`serve` takes the connection opened ahead or opens one, puts the tap under ADK's
connection, restores the session on it (a resumed one gets the outbox's replay; a fresh one
its history rebuilt, then the audio the history lacks), runs ADK's own send and receive steps
on it, and takes it down. What happened is the :class:`~..observe.connection_end.Outcome` it fills:
how the connection ended (:func:`~adk_live_resume.observe.connection_end.classify_end` reads it from
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
from dataclasses import dataclass
from typing import Any, Protocol

from ..compat import adk_compat, genai_compat
from ..compat.chunk_encoding import ChunkEncoder
from ..compat.message_decoding import MessageDecoder
from ..compat.tap import SessionTap
from ..conversation import context_check, withheld
from ..conversation.context_updates import ContextUpdates
from ..conversation.model_work import unfinished_work
from ..conversation.outbox import Outbox
from ..observe import callbacks as observe
from ..observe.connection_end import End, Outcome, classify_end
from ..observe.run_timeline import RunTimeline
from ..resumption.restoration import Restoration, plan_fresh_start, plan_restoration
from ..rules.policy import ResumePolicy
from .connection_watch import ConnectionWatch
from .connector import Connector
from .queue_guard import QueueGuard
from .reconnects import Reconnects
from .run_rules import RunRules

logger = logging.getLogger("adk_live_resume.loop")


@dataclass(frozen=True)
class AdkBinding:
    """ADK's objects of one run as a connection is served with them, and how the tap goes
    under ADK's connection; fixed while the connection is served (a fresh start rebuilds the
    request between connections).

    ``request`` is the ``LlmRequest`` of the run (its history, tools and config);
    ``history_events`` the ADK session's events it was rebuilt from; ``event_id`` the id of
    the events ADK yields; ``tool_turns_need_an_end`` whether the model family needs a tool
    turn ended (:mod:`..rules.model_families`); ``pass_handles`` whether ADK sees handle updates;
    ``chunk_encoder`` encodes microphone chunks (``None``: the SDK does);
    ``message_decoder`` reads server messages (``None``: the SDK does);
    ``unfinished_input`` the input transcription the last connection left unfinished.
    """

    surface: adk_compat.AdkSurface
    flow: Any
    ctx: Any
    request: Any
    history_events: list[Any]
    event_id: str
    agent_name: str
    session_id: str
    tool_turns_need_an_end: bool
    pass_handles: bool
    chunk_encoder: ChunkEncoder | None
    message_decoder: MessageDecoder | None
    unfinished_input: str


class ServedRun(Protocol):
    """What serving a connection needs of its live run (:class:`~.loop.LiveRun`)."""

    policy: ResumePolicy
    rules: RunRules
    connector: Connector
    reconnects: Reconnects
    timeline: RunTimeline

    def binding(self) -> AdkBinding:
        """ADK's objects of the run, as the connection about to be served is served with them."""
        ...

    def connect_request(self, handle: str | None) -> Any: ...


async def serve(
    run: ServedRun, watch: ConnectionWatch, outcome: Outcome
) -> AsyncGenerator[Any, None]:
    """Run one connection; record how it ended, and what it did, in ``outcome``."""
    adk = run.binding()
    rules = run.rules
    opening = run.connector.take_opening()
    handle = opening.handle if opening is not None else rules.handles.handle
    outcome.resuming(handle)
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
            run.timeline.mark("connect")
            tap = tap_connection(adk, watch, connection, resumed=bool(handle))
            plan = restore_plan(rules, adk, watch, resumed=bool(handle))
            if plan.history:
                outcome.sending_history()
            await send_restoration(watch, rules.outbox, plan, connection, model=adk.request.model)
            await tap.send_due()
            run.timeline.mark("restore")
            warn_unaccounted(rules.outbox.context, fresh=not handle)
            log_left_out(plan, run.policy)
            outcome.replayed(plan.replayed)
            report_reconnect(run.reconnects, adk, watch, plan)
            watch.restored()
            if rules.queue_guard is not None:
                rules.queue_guard.resume()
            send_task = start_sender(adk, watch, connection)
            async with contextlib.aclosing(relay(run, adk, watch, outcome, connection)) as events:
                async for event in events:
                    yield event
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
                    await let_next_open(run.connector, watch, outcome, rules.queue_guard)
            finally:
                moving_on = ended and outcome.end not in (
                    End.CLIENT_CLOSED,
                    End.TASK_COMPLETED,
                )
                await stop_sender(
                    watch,
                    send_task,
                    rules.queue_guard,
                    close_timeout=run.policy.close_timeout,
                    moving_on=moving_on,
                )
                await watch.finish(graceful=clean_exit)
                outcome.learnt(watch.report())
    finally:
        if connection is not None:
            outcome.left_unfinished(adk_compat.unfinished_input_transcription(connection))
        if watch.retired:  # the next connection is up: do not wait for this one's close
            session = watch.session
            run.connector.closer.close(stack, lambda: genai_compat.abort_transport(session))
        else:
            await stack.aclose()
    if outcome.end is End.DROPPED and outcome.error is not None and outcome.drop is None:
        raise outcome.error


def tap_connection(
    adk: AdkBinding, watch: ConnectionWatch, connection: Any, *, resumed: bool
) -> SessionTap:
    """Put the tap under ADK's ``connection`` and let ``watch`` watch it and its socket."""
    session = adk_compat.genai_session(connection)
    if adk.message_decoder is not None:
        adk.message_decoder.install(session)
    tap = SessionTap(
        session,
        watch,
        pass_handles=adk.pass_handles,
        encoder=adk.chunk_encoder,
        end_tool_turns=adk.tool_turns_need_an_end,
    )
    watch.attach(session, tap, resumed=resumed)
    adk_compat.set_genai_session(connection, tap)
    adk_compat.continue_input_transcription(connection, adk.unfinished_input)
    watch.watch_socket()
    return tap


def start_sender(adk: AdkBinding, watch: ConnectionWatch, connection: Any) -> asyncio.Task[None]:
    """ADK's send step on ``connection``, as a task whose failure ``watch`` hears of."""
    send_task = asyncio.create_task(
        adk.surface.send_step(adk.flow, connection, adk.ctx, adk.request),
        name=f"adk_live_resume send #{watch.number}",
    )
    send_task.add_done_callback(watch.on_send_done)
    return send_task


async def relay(
    run: ServedRun, adk: AdkBinding, watch: ConnectionWatch, outcome: Outcome, connection: Any
) -> AsyncGenerator[Any, None]:
    """ADK's receive step on ``connection``, its events passed on until the connection's end
    (its close, ADK's rerun sentinel, a transfer, a completed task) decides ``outcome``."""
    surface = adk.surface
    rules = run.rules
    queue = adk.ctx.live_request_queue
    async with contextlib.aclosing(
        surface.receive_step(adk.flow, connection, adk.ctx, adk.request, adk.event_id)
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
            watch.labels.label(event)  # (before the runner writes it to the session)
            yield event
            if getattr(event, "turn_complete", False):
                run.timeline.mark("answer")
            responses = event.get_function_responses()  # (read once: every event)
            if responses:
                queue.send_content(event.content)
            transfer = event.actions.transfer_to_agent if event.actions else None
            if transfer:
                rules.background.leave()  # (as at the run's end)
                await surface.stop_background(adk.flow, adk.ctx)
                await asyncio.sleep(surface.transfer_delay)
                outcome.decided(End.TRANSFER, transfer_to=transfer)
                break
            if any(response.name == "task_completed" for response in responses):
                await asyncio.sleep(surface.task_completion_delay)
                outcome.decided(End.TASK_COMPLETED)
                break
        else:
            outcome.ended_without_error()


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


def restore_plan(
    rules: RunRules, adk: AdkBinding, watch: ConnectionWatch, *, resumed: bool
) -> Restoration:
    """Take what the new connection restores from the run's records (the outbox's replay or
    audio, a stored handle's catch-up), tell the tool-call bookkeeping, and plan the
    restoration (:mod:`..resumption.restoration`)."""
    outbox = rules.outbox
    outbox.begin_connection()
    tool_calls = rules.tool_calls
    if resumed:
        tool_calls.on_resumed()
        replay = outbox.take_replay(tool_calls.unknown_ids())
        plan = plan_restoration(replay, resumed=True, catch_up=rules.keeper.take_catch_up())
        tool_calls.in_context(plan.context_calls)
        tool_calls.dropped_from_replay(plan.dropped_responses)
        watch.hold_late_results()  # (they go after the replay)
        return plan
    contents = adk.request.contents or []
    start = plan_fresh_start(
        contents,
        withheld.of_session(adk.session_id).history(contents, adk.history_events),
        outbox.history_facts(),
        working=unfinished_work(adk.history_events),
    )
    tool_calls.on_fresh_session(answered_in_history=start.answered_in_history)
    rules.deferred_results.on_fresh_session(start.answered_in_history)
    audio = outbox.take_audio(
        utterance_in_history=start.utterance_in_history,
        waiting_in_history=start.waiting_in_history,
    )
    return plan_restoration(audio, resumed=False, history=start.history)


async def send_restoration(
    watch: ConnectionWatch, outbox: Outbox, plan: Restoration, connection: Any, *, model: str | None
) -> None:
    """Send ``plan`` on a new ``connection``: a fresh session's history (``model`` its
    model), then the replay; what is not sent stays in the ``outbox``.

    Each message is recorded again as it is sent (the new connection may drop too), and
    if sending fails midway (the history included) the rest is recorded unsent, so a
    later connection gets it.
    """
    logger.debug(
        "replaying %d context turn(s) and %d message(s): %s",
        plan.context_turns,
        plan.replayed,
        list(plan.described),
    )
    tap = watch.tap
    assert tap is not None  # (set up before anything is sent)
    handed = 0  # messages handed to the tap (each is recorded as it goes)
    try:
        if plan.history:
            contents = list(plan.history)
            with watch.sending_history():  # the session's state from its start on
                await connection.send_history(contents)
                trigger = adk_compat.history_answer_trigger(connection, contents, model)
                if trigger is not None:  # (ADK's release leaves the model waiting)
                    await tap.send_realtime_input(**trigger)
        for method, kwargs in plan.sends:
            handed += 1
            await tap.replay(method, kwargs)
    except BaseException:
        for later_method, later_kwargs in plan.sends[handed:]:
            outbox.record(later_method, later_kwargs)
        raise


def log_left_out(plan: Restoration, policy: ResumePolicy) -> None:
    """Say what the restoration left out: voiced audio (a WARNING), silence, frames."""
    if plan.dropped_audio_ms:
        logger.warning(
            "%.0f ms of voiced user audio sent before the drop left the replay"
            " window (%.1f s, plus the unanswered utterance up to %.0f s) and was"
            " not replayed",
            plan.dropped_audio_ms,
            policy.replay_audio_seconds,
            policy.max_utterance_seconds,
        )
    if plan.dropped_silence_ms:
        logger.debug(
            "%.0f ms of unvoiced user audio (silence) left the replay window",
            plan.dropped_silence_ms,
        )
    if plan.dropped_frames:
        logger.info(
            "%d video or image frames were not sent again (older than the newest"
            " %d, or seen in an exchange the model finished, or before a fresh start)",
            plan.dropped_frames,
            policy.replay_frames,
        )


def warn_unaccounted(context: ContextUpdates, *, fresh: bool) -> None:
    """One WARNING when the new session may lack what a send the tap does not know did, or
    tools a context update set that a fresh setup cannot carry."""
    unknown = context.unaccounted(fresh=fresh)
    if unknown:
        logger.warning(
            "the %s session may lack what %s sent (send methods this release does not"
            " know; passed through, not recorded, not sent again)",
            "fresh" if fresh else "resumed",
            ", ".join(unknown),
        )
    if fresh and context.untranslatable_tools():
        logger.warning(
            "the fresh session's setup lacks the tools a context update gave as Python"
            " functions (only types.Tool values can go in a setup)"
        )


def report_reconnect(
    reconnects: Reconnects,
    adk: AdkBinding,
    watch: ConnectionWatch,
    plan: Restoration,
) -> None:
    """Report the reconnect that made ``watch``'s connection, just restored, if it was one:
    once it is known whether the session kept its context (:mod:`..conversation.context_check`)."""
    record = reconnects.record
    state_restored = plan.resumed
    if record is None:
        return
    loop = asyncio.get_running_loop()
    gap = 0.0 if reconnects.lost_at is None else (loop.time() - reconnects.lost_at) * 1000
    session = getattr(adk.ctx, "session", None)
    left = record.left
    pending = observe.PendingReconnect(
        observe.ReconnectInfo(
            reason=record.reason(state_restored=state_restored),
            attempt=reconnects.attempt,
            gap_ms=gap,
            state_restored=state_restored,
            cause=record.cause,
            agent_name=adk.agent_name,
            invocation_id=str(getattr(adk.ctx, "invocation_id", "")),
            session_id=str(getattr(session, "id", "")),
            connection_number=watch.number,
            replayed_messages=plan.replayed_messages,
            dropped_audio_ms=plan.dropped_audio_ms,
            dropped_silence_ms=plan.dropped_silence_ms,
            dropped_frames=plan.dropped_frames,
            stall=record.detail,
            failure_class=record.failure,
            usage=left.figures.usage if left is not None else None,
        )
    )
    reconnects.reported()
    watch.context.waits(pending.tell, resumed=state_restored)
    # (told by then at the latest, as not known yet: an app hears of the reconnect promptly)
    loop.call_later(context_check.REPORT_WAIT, watch.context.waited)


def interrupted_event(ctx: Any, author: str) -> Any:
    """The event that tells the client to stop playing a model turn a lost connection cut."""
    from google.adk.events.event import Event

    return Event(
        invocation_id=ctx.invocation_id,
        author=author,
        branch=getattr(ctx, "branch", None),
        interrupted=True,
    )
