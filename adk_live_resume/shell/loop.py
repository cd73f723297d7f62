"""The replacement ``run_live``: one live conversation over as many connections as it takes.

The loop owns the lifecycle only, and only wires: the handle and request of each connection
(:mod:`.connection_request`), opening the next connection (:mod:`.connector`), serving one
(:mod:`.serve_connection`) and how it ended (:mod:`..observe.connection_end`), what follows an end
(:func:`~adk_live_resume.rules.next_step.next_step`, the one decision, over the run's
:mod:`.reconnects`), a transfer's or a rerun's next run (:mod:`.next_run`). The work on one
connection is ADK's own code, called through :mod:`adk_live_resume.compat.adk_compat`.

Guarantees:

* A lost connection (``APIError`` with a close code from receive, ``ConnectionClosed`` from
  send, ``OSError``/timeouts/handshake errors from connect, a setup that never completes) is
  resumed with the last good handle, per :class:`~adk_live_resume.rules.policy.ResumePolicy`.
  The first attempt after a retryable drop (when it would go at once) starts while ADK's
  receive step unwinds, and taking the dead connection down waits until it is open.
* After ``goAway`` the session moves to a new connection at a safe point: once the current
  turn is done and a fresh resumable handle arrived, or ``timeLeft - go_away_margin`` seconds
  after the goAway, whichever comes first (an independent timer, so a silent server cannot
  make us miss the deadline). Make-before-break: the new connection is opened while the old
  one is still open and the queue is held; once it is ready the old connection is retired
  (nothing it still sends reaches ADK, its handles are ignored). If the server refuses that
  resume beside the open socket, the old socket is closed first and the run retries as after
  a drop, and keeps closing first on later goAways; if the opening fails for now (HTTP 429 or
  5xx, a timeout) before the deadline, the old connection serves on and the move is tried
  again after the wait. While such a goAway waits for its safe point, the next socket is
  opened ahead (:mod:`.early_dial`).
* ``LiveRequestQueue.close()`` ends the run without reconnecting; cancelling the consumer
  ends the run promptly, and no task started here outlives it but the newest handle's write
  to the session (``store_handle_in_session``), which ends within the store's flush timeout
  (:mod:`..resumption.handle_store`).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import sys
from collections.abc import AsyncGenerator, Callable
from typing import Any

from ..compat import adk_compat, genai_compat, hooks
from ..compat.chunk_encoding import ChunkEncoder
from ..compat.message_decoding import MessageDecoder
from ..conversation import withheld
from ..conversation.deferred_results import DeferredResults
from ..conversation.late_results import LateResultsWay
from ..conversation.outbox import Outbox
from ..conversation.tool_calls import ToolCallBook
from ..observe import callbacks as observe
from ..observe import log_redaction, startup_log
from ..observe.connection_end import ConnectionReport, End, Outcome, after_end
from ..observe.run_timeline import RunTimeline
from ..resumption import handle_store
from ..resumption.handle_store import HandleKeeper
from ..resumption.handles import ResumptionState, redact
from ..rules import retry_hooks, setup_refusals
from ..rules.errors import Drop, SessionNotResumableError, classify
from ..rules.lifecycle_events import (
    Action,
    Asked,
    DialAfterClose,
    DialAhead,
    NoteGoAway,
    NoteMove,
    OpenAfterDrop,
    OpenAhead,
    ProveHealthy,
    Retire,
    ServeOn,
    StopOpeningAhead,
)
from ..rules.next_step import FreshStart, GiveUp, Resume, RunView, Step, next_step
from ..rules.outage import AttemptEnd, EndKind
from ..rules.policy import ResumePolicy, is_testing
from ..rules.retry_decision import seen_after_go_away
from ..rules.wire_classifier import MAX_NAMED_KINDS, Frame, SkippedMessages
from . import connection_request, early_dial, next_run, steering
from .background_calls import BackgroundCalls
from .connection_watch import ConnectionWatch, FrameWatching
from .connector import Connector
from .next_connection import BackgroundCloser
from .queue_guard import QueueGuard
from .reconnects import Reconnects
from .run_rules import RunRules
from .run_tally import RunTally
from .serve_connection import AdkBinding, interrupted_event, serve
from .stall_watch import non_blocking_names

logger = logging.getLogger("adk_live_resume.loop")

Fallback = Callable[[Any], AsyncGenerator[Any, None]]

#: How :func:`next_step` reads a connection's end (every other end is a drop).
_END_KINDS: dict[End, EndKind] = {End.STALLED: "stall", End.MOVED: "moved"}


class LiveRun:
    """One call of ``run_live``: the request, the handle, the counters."""

    def __init__(
        self,
        flow: Any,
        ctx: Any,
        llm: Any,
        policy: ResumePolicy,
        available: hooks.Hooks,
        timeline: RunTimeline | None = None,
    ) -> None:
        self.flow = flow
        self.ctx = ctx
        self.llm = llm
        self.policy = policy
        self.surface = adk_compat.surface()
        self.request: Any = None
        #: The session events ADK rebuilt :attr:`request`'s history from.
        self.history_events: list[Any] = []
        self.event_id = ""
        #: The rule objects that outlive a connection (handles, outbox, tool calls, ...).
        self.rules = RunRules(policy, ctx)
        #: The outage in progress, the rate cap, why the next connection is made.
        self.reconnects = Reconnects(policy)
        #: What follows a connection's end, decided at the end's first sign (its number, the
        #: end, the step): the loop carries out that decision, never a second one.
        self._early: tuple[int, AttemptEnd, Step] | None = None
        #: The run's tallies and the report of each connection it set up.
        self.tally = RunTally()
        #: The connection being served (``None`` between connections), and a move asked for
        #: that the next connection carries out.
        self.watch: ConnectionWatch | None = None
        self._asked: Asked | None = None
        self.transparent = False
        self.rules.tool_calls.earlier_sessions(next_run.earlier_calls(ctx))
        #: Encodes microphone chunks as the SDK would (``None``: the SDK encodes them).
        self.chunk_encoder = ChunkEncoder() if available.on(hooks.CHUNK_ENCODING) else None
        #: Reads server messages as the SDK would (``None``: the SDK reads them).
        self.message_decoder = MessageDecoder() if available.on(hooks.MESSAGE_DECODING) else None
        #: Act on a server's close frame as it arrives (see :mod:`.early_dial`).
        self.close_frame_dial = available.on(hooks.CLOSE_FRAME_DIAL)
        #: Start a goAway's deadline when its frame arrives, not when ADK reads it.
        self.go_away_frame = available.on(hooks.GO_AWAY_FRAME)
        #: The next connection starts a fresh session with the conversation rebuilt.
        self.fresh_start_needed = False
        #: Whether ADK may see (and yield as events) handle updates: only if the caller's
        #: RunConfig asked for session resumption, as stock ADK does.
        self.pass_handles = False
        #: The input transcription ADK had shown as pieces and not finished when the last
        #: connection ended; the next one continues it, so that its finished transcription
        #: holds the utterance whole (the pieces a replay repeats are not shown again).
        self.unfinished_input = ""
        self.session_limit_warned = False
        #: Server messages of kinds google-genai does not know, skipped as they arrived.
        self.skipped = SkippedMessages()
        self.audio_sent = False
        #: Whether the next connection may be opened ahead, before the old one is closed (off
        #: for the rest of the run once a server refused a resume while the old socket was open).
        self.may_open_ahead = True
        #: The next connection opened ahead, the socket dialed early, the closer.
        self.connector = Connector(policy, llm, available, guard=lambda: self.queue_guard)
        #: How long the start of the run took, phase by phase (told once, at DEBUG).
        self.timeline = timeline or RunTimeline(self.session_id)

    @property
    def model(self) -> str:
        return str(getattr(self.request, "model", "") or "")

    @property
    def agent_name(self) -> str:
        return str(getattr(self.ctx.agent, "name", "?"))

    @property
    def session_id(self) -> str:
        return str(getattr(getattr(self.ctx, "session", None), "id", "") or "")

    # -- the rules, read (each is the run's rules' own: see run_rules.RunRules) ------------

    @property
    def handles(self) -> ResumptionState:
        return self.rules.handles

    @property
    def outbox(self) -> Outbox:
        return self.rules.outbox

    @property
    def tool_calls(self) -> ToolCallBook:
        return self.rules.tool_calls

    @property
    def deferred_results(self) -> DeferredResults:
        return self.rules.deferred_results

    @property
    def background(self) -> BackgroundCalls:
        return self.rules.background

    @property
    def keeper(self) -> HandleKeeper:
        return self.rules.keeper

    @property
    def queue_guard(self) -> QueueGuard | None:
        return self.rules.queue_guard

    @property
    def dialer(self) -> early_dial.EarlyDialer | None:
        return self.connector.dialer

    @property
    def closer(self) -> BackgroundCloser:
        return self.connector.closer

    def binding(self) -> AdkBinding:
        """ADK's objects of this run as the next connection is served with them."""
        return AdkBinding(
            surface=self.surface,
            flow=self.flow,
            ctx=self.ctx,
            request=self.request,
            history_events=self.history_events,
            event_id=self.event_id,
            agent_name=self.agent_name,
            session_id=self.session_id,
            tool_turns_need_an_end=self.tool_turns_need_an_end(),
            pass_handles=self.pass_handles,
            chunk_encoder=self.chunk_encoder,
            message_decoder=self.message_decoder,
            unfinished_input=self.unfinished_input,
        )

    def frame_watching(self) -> FrameWatching:
        """Which raw frames a connection's watch acts on as they arrive."""
        return FrameWatching(
            close_frame=self.connector.dialer is not None and self.close_frame_dial,
            go_away=self.go_away_frame,
        )

    def lifecycle_action(
        self, watch: ConnectionWatch, action: Action, error: BaseException | None
    ) -> None:
        """Carry out the run's part of a connection's lifecycle ``action``, if it has one
        (``error``: what reading raised); an :class:`OpenAhead` is answered with
        :meth:`ConnectionWatch.ahead_started` (whether opening ahead started)."""
        match action:
            case ProveHealthy():
                pass  # (progress, which ends an outage, is an answer: read at the end)
            case NoteGoAway(time_left=time_left):
                self.go_away_arrived()
                self._notice(watch, "go_away", time_left, "goAway")
            case NoteMove(asked=asked):
                if asked.fresh:
                    self._need_fresh_start()
                why: observe.MoveReason = "requested" if asked.origin == "requested" else "restart"
                self._notice(watch, why, None, asked.why, fresh=asked.fresh)
            case DialAhead(latest=latest):
                self.dial_early(latest=latest)
            case OpenAhead():
                watch.ahead_started(self.open_ahead(watch))
            case Retire():
                session = watch.session
                self.connector.closer.close_one(
                    session, lambda: genai_compat.abort_transport(session)
                )
            case OpenAfterDrop():
                assert error is not None
                self.open_after_drop(watch, error)
            case DialAfterClose(code=code, reason=reason):
                self.dial_after_close(watch, code, reason)
            case StopOpeningAhead():
                self.stop_opening_ahead()
            case ServeOn():
                # (the old connection serves on: what the user sends goes to it again)
                self.connector.forget_failed_opening()
                if self.queue_guard is not None:
                    self.queue_guard.resume()

    def resumption_update(
        self,
        new_handle: str | None,
        resumable: bool | None,
        last_consumed_index: int | None,
        now: float,
        *,
        work_in_progress: bool = False,
    ) -> bool:
        """A handle update arrived on a connection: the newest handle, the outbox it covers,
        the tool calls it holds, ADK's handle and the keeper follow it; return whether the
        newest handle changed. ``work_in_progress`` (the model said its work goes on): on the
        Gemini API the handle covers nothing, since it may not hold the request and the work
        is not continued after a resume (:mod:`..conversation.model_work`). Ignored once a fresh
        start is due."""
        if self.fresh_start_needed:
            return False
        handles = self.rules.handles
        changed = handles.observe(
            new_handle=new_handle,
            resumable=resumable,
            last_consumed_index=last_consumed_index,
            now=now,
        )
        if changed:
            covers = self.transparent or not work_in_progress
            if covers:
                # (on the Gemini API a handle issued while the model works holds neither the
                # request nor the calls made for it: the request is asked again, and the
                # model's calls for it are repeats, never told apart as well)
                self.rules.tool_calls.on_handle()
                self.rules.outbox.covered(last_consumed_index if self.transparent else None)
            self.ctx.live_session_resumption_handle = handles.handle
            logger.debug("new resumption handle %s", redact(handles.handle))
            if handles.handle and covers:
                # (nor is such a handle stored or given to the app: the one they hold, issued
                # at a finished turn, goes with the request as what came after it)
                self.rules.keeper.observe(handles.handle)  # never blocks
        return changed

    def late_results_way(self, count: int) -> LateResultsWay:
        """How the model gets ``count`` tool results that outlived their connection: as
        content in mid-session ("content"); else, on a resumed session, from a fresh session
        whose rebuilt history holds them ("fresh_session": the next connection starts one, the
        caller moves the session); else not now ("later": the session is new and its history
        lacks them, a WARNING says so)."""
        if self.takes_mid_session_content():
            return "content"
        if self.handles.handle:
            logger.info(
                "the result of %d tool call(s) came after their connection ended; a %s"
                " session takes no content in mid-session, so a fresh session with the"
                " conversation rebuilt (which holds them) takes over",
                count,
                self.request.model,
            )
            self._need_fresh_start()
            return "fresh_session"
        logger.warning(
            "the result of %d tool call(s) came after their connection ended; a %s session"
            " takes no content in mid-session, so the model does not get it now (the ADK"
            " session has it, for a later fresh session)",
            count,
            self.request.model,
        )
        return "later"

    def _notice(
        self,
        watch: ConnectionWatch,
        reason: observe.MoveReason,
        seconds_left: float | None,
        detail: str,
        *,
        fresh: bool = False,
    ) -> None:
        """Tell the ``on_before_move`` hooks that ``watch``'s connection is about to be left."""
        notice = observe.MoveNotice(
            reason, seconds_left, watch.number, self.agent_name, self.session_id, detail, fresh
        )
        observe.before_move(notice)

    def ask(self, asked: Asked) -> None:
        """A move was asked for (:mod:`.steering`): the connection serving carries it out at
        its next safe point; between connections (or when it takes none now), the next one."""
        watch = self.watch
        if watch is not None and watch.ask_move(asked):
            return
        if self._asked is None or (asked.fresh and not self._asked.fresh):
            self._asked = asked

    def go_away_arrived(self) -> None:
        """A connection got a goAway: count it; this worker may be going away, so the
        newest handle is stored now."""
        self.tally.went_away()
        self.keeper.store_now()

    def audio_started(self) -> None:
        """The user's audio was sent: an audio session may meet the service's limit."""
        if not self.audio_sent:
            self.audio_sent = True
            self.warn_session_limit()

    def stop_opening_ahead(self) -> None:
        """The server refused to resume beside the old connection: from now on in this run,
        the old one is closed first."""
        self.may_open_ahead = False

    def _count(self, outcome: Outcome, report: ConnectionReport) -> None:
        """Add what serving a connection did, and learnt, to the run's counters."""
        if self.tally.served(outcome, report):
            observe.connection_ended(report, model=self.model)
        if report.asked is not None and self._asked is None:
            self._asked = report.asked  # (asked and not begun: the next connection's)
        if outcome.unfinished_input is not None:
            self.unfinished_input = outcome.unfinished_input

    def connect_request(self, handle: str | None) -> Any:
        """A copy of the request for one connection: the caller's objects stay untouched."""
        request, self.transparent = connection_request.connect_request(
            self.request, handle, llm=self.llm, policy=self.policy
        )
        # (a fresh session holds nothing of the old one: its setup carries the context)
        return request if handle else self.rules.outbox.context.applied_to(request)

    # -- what the connection's watch asks for (connection_watch.WatchedRun) ---------------

    def open_ahead(self, watch: ConnectionWatch) -> bool:
        """Start opening the connection that takes over from ``watch`` (goAway), with the
        current handle; return whether it started (else the caller closes the old socket).

        Not done once a server refused such a resume in this run."""
        if not self.may_open_ahead or not self._open_next(watch, latest=watch.move_by):
            return False
        if self.queue_guard is not None:
            self.queue_guard.pause()  # what the user sends next goes to the new connection
        assert self.connector.opening is not None
        self.connector.opening.task.add_done_callback(watch.on_next_opened)
        return True

    def open_after_drop(self, watch: ConnectionWatch, error: BaseException) -> None:
        """Start the first attempt after a retryable drop at once, while the dead connection
        is still being taken down (ADK's receive step unwinding, its sender stopped), when
        what follows the end is a resume at once (:meth:`_resumes_at_once`)."""
        drop = classify(error)
        if drop is not None and drop.kind == "closed" and self._resumes_at_once(watch, drop):
            self._open_next(watch, latest=None)

    def dial_after_close(self, watch: ConnectionWatch, code: int, reason: str) -> None:
        """The server's close frame arrived: if what follows is a resume at once, open the
        next socket now. It saves a round trip: the SDK reports the close only after the
        close handshake."""
        if self._resumes_at_once(watch, Drop("closed", code, reason)):
            self.dial_early(latest=None)

    def _resumes_at_once(self, watch: ConnectionWatch, drop: Drop) -> bool:
        """Decide what follows ``watch``'s end at its first sign (``drop``), once per end, and
        say whether it is a resume without a wait. The loop carries out this decision when
        the connection is over (:meth:`_step_after`): both act on one answer by construction.

        Not decided here for a close we started (a move, a stall, the client's close), once
        the client closed the queue, nor while messages that arrived are not read yet (ADK's
        reading is behind, a tool runs inside it: an answer or a handle among them would
        change the decision); it is made when the reading reports the close, or by the loop,
        with the whole end."""
        guard = self.queue_guard
        if (
            watch.lifecycle.closed_by_us
            or watch.lifecycle.unread_frames
            or (guard is not None and guard.close_requested)
        ):
            return False
        if self._early is None or self._early[0] != watch.number:
            now = asyncio.get_running_loop().time()
            drop = seen_after_go_away(drop, watch.move_by is not None)
            end = watch.attempt_end("drop", drop=drop, resumed=watch.resumed, now=now)
            self._early = (watch.number, end, self._decide(end, now))
        step = self._early[2]
        return isinstance(step, Resume) and step.at_once

    def dial_early(self, *, latest: float | None) -> None:
        self.connector.dial_early(latest=latest)

    def _open_next(self, watch: ConnectionWatch, *, latest: float | None) -> bool:
        """Start opening the connection after ``watch``'s, resuming the current handle (it
        takes its turn at the process's pacer first); return whether it started.

        Not done without a handle the next connection would resume: a fresh session is
        rebuilt only after the old one ended."""
        handle = self.handles.handle
        if (
            self.connector.opening is not None
            or self.fresh_start_needed
            or not handle
            or self._handle_unusable(asyncio.get_running_loop().time()) is not None
        ):
            return False
        request = self.connect_request(handle)
        self.connector.open_next(watch.number + 1, handle, request, latest=latest)
        return True

    def takes_mid_session_content(self) -> bool:
        """The model takes ``clientContent`` mid-session (see :mod:`..rules.model_families`)."""
        return connection_request.takes_mid_session(self.request.model)

    def tool_turns_need_an_end(self) -> bool:
        return connection_request.tool_turns_need_an_end(self.request.model)

    def session_limited(self) -> bool:
        """An audio session without context window compression: the service ends it at 15 min."""
        audio_used = self.outbox.activity.utterances > 0 or self.audio_sent
        return connection_request.session_limited(
            self.request, self.policy, self.ctx.run_config, audio_used=audio_used
        )

    def warn_session_limit(self) -> None:
        """Say once per run that an audio session without compression ends at 15 minutes."""
        if self.session_limit_warned or not self.session_limited():
            return
        self.session_limit_warned = True
        connection_request.warn_session_limit(self.agent_name)

    def skip_message(self, frame: Frame) -> None:
        """A server message of a kind google-genai does not know arrived and is skipped (the
        SDK never reads it): counted, and each unknown kind named in one WARNING per run."""
        unnamed = self.skipped.unnamed
        new = self.skipped.note(frame)
        if new:
            logger.warning(
                "live session of agent %s: skipped a server message of a kind google-genai %s"
                " does not know (%s); the conversation goes on",
                self.agent_name,
                genai_compat.genai_version(),
                ", ".join(repr(key) for key in new),
            )
        if self.skipped.unnamed and not unnamed:
            logger.warning(
                "live session of agent %s: more than %d kinds of server message google-genai"
                " does not know; further kinds are skipped and counted, not named",
                self.agent_name,
                MAX_NAMED_KINDS,
            )

    # -- the run --------------------------------------------------------------------------

    async def events(self) -> AsyncGenerator[Any, None]:
        from google.adk.events.event import Event

        surface = self.surface
        self.event_id = Event.new_id()
        async with contextlib.aclosing(self._prepare_request()) as pre:
            async for event in pre:
                yield event
        self.timeline.mark("request")
        if self.ctx.end_invocation:
            return
        if self.ctx.live_request_queue is None:
            raise ValueError(
                "run_live needs a LiveRequestQueue: pass live_request_queue= to Runner.run_live."
            )
        # -- handle store hook: handles go to events only if asked; a stored one resumes.
        self.pass_handles = connection_request.asked_resumption(self.request) is not None
        keeper = HandleKeeper.start(self.ctx, self.policy, agent_name=self.agent_name)
        now = asyncio.get_running_loop().time()
        handles = connection_request.first_handles(self.request, self.ctx, keeper, now)
        self.timeline.mark("handle")
        guard = QueueGuard(self.ctx.live_request_queue)
        guard.on_content(self._content_queued)
        guard.on_withheld(self._withheld)
        self.rules.started(handles=handles, keeper=keeper, guard=guard)
        not_serving = steering.serving(self.ctx.live_request_queue, self)
        try:
            async with contextlib.aclosing(self._connections()) as stream:
                async for event in stream:
                    yield event
        finally:
            ending = sys.exc_info()[1]
            not_serving()
            await self.connector.discard_ahead()
            await self.connector.closer.wait()
            guard.release()
            self.background.leave()  # ADK stops the background tools: nothing to answer now
            await surface.stop_background(self.flow, self.ctx)
            if handle_store.run_end_waits(ending):
                await self.keeper.close()
            else:
                self.keeper.let_go()  # the consumer is gone: the write ends in the background
            self.timeline.tell()  # (the phases it reached, if it never answered)
            counters = self.tally.counters(
                ids=(self.agent_name, str(getattr(self.ctx, "invocation_id", "")), self.session_id),
                rules=self.rules,
                reconnects=self.reconnects,
                skipped=self.skipped,
                chunks_encoded=self.chunk_encoder.encoded if self.chunk_encoder else 0,
                messages_decoded=self.message_decoder.decoded if self.message_decoder else 0,
                dialer=self.dialer,
            )
            observe.run_ended(counters, ending)

    def _withheld(self, content: Any) -> None:
        session = getattr(self.ctx, "session", None)
        event = withheld.source_event(getattr(session, "events", None) or [], content)
        if event is None:
            return  # never written to the session (a partial turn): no history holds it
        logger.debug("ADK's send step withheld a user turn (screened): kept out of history")
        withheld.note(self.session_id, str(event.id))

    def _content_queued(self, content: Any) -> None:
        for part in getattr(content, "parts", None) or []:
            response = getattr(part, "function_response", None)
            if response is not None and response.id:
                self.tool_calls.on_response_queued(str(response.id))

    async def _prepare_request(self) -> AsyncGenerator[Any, None]:
        """ADK's request preprocessing: history from the ADK session, tools, config."""
        from google.adk.models.llm_request import LlmRequest

        self.request = LlmRequest()
        self.history_events = list(getattr(self.ctx.session, "events", None) or [])
        async with contextlib.aclosing(
            self.surface.preprocess(self.flow, self.ctx, self.request)
        ) as pre:
            async for event in pre:
                yield event
        model_name = adk_compat.live_model_name(self.ctx.agent)
        if model_name:
            self.request.model = model_name

    def _handle_unusable(self, now: float) -> str | None:
        """Why the next connection cannot resume the current handle (``None``: it can)."""
        return connection_request.handle_unusable(
            self.handles.handle,
            self.handles.age(now),
            ttl=self.policy.handle_ttl,
            context_waiting=self.outbox.has_context(),
            model=self.request.model,
        )

    async def _connections(self) -> AsyncGenerator[Any, None]:
        """One connection after the other: serve it, then carry out what follows its end."""
        while True:
            async with contextlib.aclosing(self._before_connecting()) as pre:
                async for event in pre:
                    yield event
            number = self.tally.connections + 1
            watch = self.watch = ConnectionWatch(
                self,
                number,
                non_blocking=non_blocking_names(self.request),
                context_before=self.tally.context_size(),
                asked=self._asked,
            )
            self._asked = None
            outcome = Outcome(End.DROPPED)
            try:
                async with contextlib.aclosing(serve(self, watch, outcome)) as stream:
                    async for event in stream:
                        yield event
            finally:
                self.watch = None
                report = outcome.report or ConnectionReport(number)
                self._count(outcome, report)
            after = after_end(outcome.end, turn_open=report.turn_open)
            if not after.keeps_opening:
                await self.connector.discard_opening()  # the run ends, or moves on another way
            if after.interrupted:  # tell the client to stop playing the turn cut off
                yield interrupted_event(self.ctx, self.agent_name)
            if after.then == "over":
                return
            if after.then == "next_run":
                async with contextlib.aclosing(self._next_run(outcome)) as events:
                    async for event in events:
                        yield event
                return
            if not await self._carry_out(report, outcome):
                logger.debug("the request queue was closed during the outage; ending the run")
                return

    async def _before_connecting(self) -> AsyncGenerator[Any, None]:
        """Ready the next connection: a handle it cannot resume now is left for a fresh
        start, a connection opened ahead with another handle is discarded, and a fresh start
        rebuilds the request from the ADK session (yielding ADK's preprocessing events)."""
        connector = self.connector
        unusable = self._handle_unusable(asyncio.get_running_loop().time())
        if unusable is not None:
            logger.info("%s", unusable)
            self._need_fresh_start()
        if connector.opening is not None and (
            self.fresh_start_needed or connector.opening.handle != self.handles.handle
        ):
            await connector.discard_opening()
        if self.fresh_start_needed:
            self.fresh_start_needed = False
            self.tally.started_fresh()
            async with contextlib.aclosing(self._prepare_request()) as pre:
                async for event in pre:
                    yield event

    async def _next_run(self, outcome: Outcome) -> AsyncGenerator[Any, None]:
        """A transfer or a rerun: the next live run starts its own session, and nothing
        opened ahead serves it."""
        if outcome.end is End.RERUN and not outcome.at_connect and not self.handles.handle:
            self._need_fresh_start()  # (the server never gave a handle for this session)
        await self.connector.discard_ahead()
        if self.queue_guard is not None:
            # The next live run takes the queue over with a guard of its own; this one steps
            # aside (a guard left around it would see each request the next run sends as
            # taken and never sent: as withheld by screening).
            self.queue_guard.release()
        if outcome.end is End.TRANSFER:
            assert outcome.transfer_to is not None
            child = next_run.transfer(
                self.flow, self.ctx, self.keeper, self.tool_calls, outcome.transfer_to
            )
        else:
            child = next_run.rerun(self.flow, self.ctx, self.keeper, self.tool_calls)
        async with contextlib.aclosing(child) as events:
            async for event in events:
                yield event

    async def _carry_out(self, report: ConnectionReport, outcome: Outcome) -> bool:
        """Carry out what follows a drop, a stall or a move (:meth:`_step_after`): give up,
        or wait, take a turn at the pacer and let the loop connect; ``False``: the client
        closed the queue meanwhile, and the run ends."""
        self.keeper.store_now()  # a drop, a goAway move: the next worker may need it
        now = asyncio.get_running_loop().time()
        self.reconnects.lost(report.lost_at if report.lost_at is not None else now)
        guard = self.queue_guard
        if guard is not None and guard.close_requested:
            return False
        end, step = self._step_after(report, outcome, now)
        self.reconnects.decided(end, step, now, report)
        observe.step_taken(
            end,
            step,
            session_id=self.session_id,
            agent_name=self.agent_name,
            max_attempts=self.policy.max_attempts,
            handle=redact(self.handles.handle),
        )
        if isinstance(step, GiveUp):
            lost = outcome.error if outcome.end is End.DROPPED else None
            error = step.error
            if isinstance(error, SessionNotResumableError):  # (a 1007 at setup: name why)
                error = setup_refusals.explained(error, self.request, at_connect=end.at_connect)
            raise error from (step.hook_error or lost)
        if isinstance(step, FreshStart) and (step.abandons or not end.at_connect):
            self._need_fresh_start()  # (a fresh setup that failed is only tried again)
        if step.wait:
            logger.debug("waiting %.3f s before reconnecting", step.wait)
        if guard is not None and await guard.wait_closed(step.wait):
            return False
        connector = self.connector
        if connector.opening is not None and not step.wait:
            return True  # opened ahead (goAway, or at once after the drop): paced already
        await connector.discard_opening()
        # The process-wide pacer spreads a herd of reconnects; a lone one goes at once.
        return await connector.take_turn(latest=report.move_by if end.kind == "moved" else None)

    def _step_after(
        self, report: ConnectionReport, outcome: Outcome, now: float
    ) -> tuple[AttemptEnd, Step]:
        """The end of ``report``'s connection and what follows it: the decision made at the
        end's first sign (:meth:`_resumes_at_once`) if there was one, else one made now."""
        early, self._early = self._early, None
        if early is not None and early[0] == report.number and outcome.end is End.DROPPED:
            return early[1], early[2]
        kind: EndKind = _END_KINDS.get(outcome.end, "drop")
        drop = outcome.drop if kind == "drop" else None
        end = report.attempt_end(
            kind, drop=drop, at_connect=outcome.at_connect, resumed=outcome.resumed, now=now
        )
        return end, self._decide(end, now)

    def _decide(self, end: AttemptEnd, now: float) -> Step:
        """What follows ``end``: :func:`next_step` with the run as it is ``now``."""
        handle = bool(self.handles.handle)
        view = RunView(
            self.policy,
            model=self.model,
            handle=handle,
            unusable=self._handle_unusable(now) if handle else None,
            session_limited=self.session_limited(),
            rate_has_room=self.reconnects.has_room(now),
            hooks=retry_hooks.registered(),
            testing=is_testing(),
        )
        return next_step(end, self.reconnects.outage, view, now=now)

    def _need_fresh_start(self) -> None:
        """The handle is dead: the next connection starts a fresh session."""
        self.handles.forget()
        self.ctx.live_session_resumption_handle = None
        self.keeper.forget()
        self.fresh_start_needed = True


async def run_live(
    flow: Any, ctx: Any, *, policy: ResumePolicy, fallback: Fallback
) -> AsyncGenerator[Any, None]:
    """Run ``flow`` live for ``ctx``, resuming across lost connections.

    ``fallback`` is the original ``run_live`` of the flow, used unchanged for models that
    have no google-genai live session underneath (anything but ADK's ``Gemini``).
    """
    timeline = RunTimeline(str(getattr(getattr(ctx, "session", None), "id", "?")))
    surface = adk_compat.surface()
    llm = await surface.get_llm(flow, ctx)
    if not adk_compat.is_gemini(llm):
        observe.not_gemini(llm)
        async with contextlib.aclosing(fallback(ctx)) as original:
            async for event in original:
                yield event
        return
    available = hooks.check()  # (once per process: install() did it, if it ran)
    startup_log.flush()  # an announcement held until logging was set up
    log_redaction.protect_adk_loggers(adk_compat.HANDLE_LOGGING_LOGGERS)
    run = LiveRun(flow, ctx, llm, policy, available, timeline)
    async with contextlib.aclosing(run.events()) as events:
        async for event in events:
            yield event
