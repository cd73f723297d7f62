"""The replacement ``run_live``: one live conversation over as many connections as it takes.

The loop owns the lifecycle only: which handle to connect with, when to reconnect, when to
give up. Everything that happens on one connection (sending queue items, receiving and
postprocessing, tool execution, callbacks, transcription) is ADK's own code, called through
:mod:`adk_live_resume.adk_compat`.

Guarantees:

* A lost connection (``APIError`` with a close code from receive, ``ConnectionClosed`` from
  send, ``OSError``/timeouts/handshake errors from connect, a setup that never completes) is
  resumed with the last good handle, per :class:`~adk_live_resume.policy.ResumePolicy`.
  The first attempt after a retryable drop (when it would go at once) starts while ADK's
  receive step unwinds, and taking the dead connection down waits until it is open.
  Codes outside ``retryable_close_codes`` (1007, 1008...) end the run with
  :class:`~adk_live_resume.errors.SessionNotResumableError`; an outage that outlasts the
  policy ends it with :class:`~adk_live_resume.errors.ReconnectFailedError`.
* History is sent only when a session starts fresh, never on resume, and a resumed setup
  never asks for ``initial_history_in_client_content``.
* ``transparent`` is only ever requested from Vertex AI.
* After ``goAway`` the session moves to a new connection at a safe point: once the current
  turn is done and a fresh resumable handle arrived, or ``timeLeft - go_away_margin`` seconds
  after the goAway, whichever comes first (an independent timer, so a silent server cannot
  make us miss the deadline). Make-before-break: the new connection is opened (connect and
  setup with the last good handle) while the old one is still open and the queue is held;
  once it is ready the old connection is retired (nothing it still sends reaches ADK, its
  handles are ignored) and closed in the background, bounded by ``close_timeout``. If that
  opening fails, the old socket is closed first and the run retries as after a drop, and
  keeps closing first on later goAways (a server that refuses a resume while the old socket
  is open). While such a goAway waits for its safe point, the next socket is opened ahead
  (:mod:`adk_live_resume.early_dial`); the setup, with the newest handle, goes at the safe
  point.
* The caller's ``RunConfig`` is never mutated; every connection gets its own request copy.
* ``LiveRequestQueue.close()`` ends the run without reconnecting; cancelling the consumer
  ends the run promptly, and no task started here outlives it.
"""

from __future__ import annotations

import asyncio
import contextlib
import enum
import logging
import sys
from collections.abc import AsyncGenerator, Callable, Iterator
from dataclasses import dataclass
from typing import Any

from google.genai import types

from . import (
    adk_compat,
    early_dial,
    hooks,
    log_redaction,
    observe,
    pacing,
    startup_log,
    withheld,
)
from .chunk_encoding import ChunkEncoder
from .connection_watch import ConnectionWatch, abort_connection, abort_transport
from .errors import (
    Drop,
    ReconnectFailedError,
    SessionLimitError,
    SessionNotResumableError,
    classify,
)
from .handle_coverage import with_catch_up
from .handle_store import HandleKeeper
from .handles import ResumptionState, redact
from .model_families import ends_turn_after_tool_call, takes_mid_session_content
from .next_connection import BackgroundCloser, NextConnection
from .observe import ReconnectReason
from .outbox import (
    Outbox,
    Replay,
    fresh_history,
    response_ids,
)
from .policy import OutageBudget, ReconnectRate, ResumePolicy
from .queue_guard import QueueGuard
from .tap import ConnectionRetired, SessionTap
from .tool_calls import ENDED_WITHOUT_RESULT, ToolCallBook
from .waiting_turns import WaitingTurns
from .withheld import without_withheld

logger = logging.getLogger("adk_live_resume.loop")

Fallback = Callable[[Any], AsyncGenerator[Any, None]]

#: Call ids of a run's session, by invocation id, for the next live run of that invocation
#: (a transfer's child, a restart), which takes them when it starts.
_earlier_calls: dict[str, frozenset[str]] = {}

#: A receive step that ended without an error: the server closed normally.
_ENDED = Drop("closed", 1000, "connection ended without an error")


class _End(enum.Enum):
    """How one connection ended, as far as the loop is concerned."""

    CLIENT_CLOSED = "client closed"
    TASK_COMPLETED = "task completed"
    TRANSFER = "transfer"
    RESTART = "restart"
    ROTATE = "go_away"
    DROPPED = "dropped"


@dataclass
class _Outcome:
    end: _End
    drop: Drop | None = None
    error: BaseException | None = None
    transfer_to: str | None = None
    #: The connection failed before it was established (connect or setup).
    at_connect: bool = True


class LiveRun:
    """One call of ``run_live``: the request, the handle, the counters."""

    def __init__(
        self, flow: Any, ctx: Any, llm: Any, policy: ResumePolicy, available: hooks.Hooks
    ) -> None:
        self.flow = flow
        self.ctx = ctx
        self.llm = llm
        self.policy = policy
        self.surface = adk_compat.surface()
        self.request: Any = None
        self.event_id = ""
        self.handles = ResumptionState()
        self.rate = ReconnectRate(policy.max_reconnects_per_minute)
        self.outage: OutageBudget | None = None
        self.connections = 0
        self.go_aways = 0
        self.history_sends = 0
        self.lost_at: float | None = None
        self.pending_reason: ReconnectReason | None = None
        self.pending_cause = ""
        self.outbox = Outbox(
            policy.replay_audio_seconds * 1000.0,
            max_utterance_ms=policy.max_utterance_seconds * 1000.0,
        )
        self.queue_guard: QueueGuard | None = None
        self.transparent = False
        self.tool_calls = ToolCallBook()
        self.waiting_turns = WaitingTurns()
        self.tool_calls.earlier_sessions(
            _earlier_calls.pop(str(getattr(ctx, "invocation_id", "")), ())
        )
        #: Running calls whose end is watched (a repeat waits for their response).
        self._watched_calls: set[str] = set()
        #: The session is being left (a transfer, the run's end): ADK stops its background
        #: tools, and a repeat held for one of them is not answered.
        self.leaving = False
        #: Encodes microphone chunks as the SDK would (``None``: the SDK encodes them).
        self.chunk_encoder = ChunkEncoder() if available.on(hooks.CHUNK_ENCODING) else None
        #: Act on a server's close frame as it arrives (see :mod:`.early_dial`).
        self.close_frame_dial = available.on(hooks.CLOSE_FRAME_DIAL)
        #: Start a goAway's deadline when its frame arrives, not when ADK reads it.
        self.go_away_frame = available.on(hooks.GO_AWAY_FRAME)
        #: The next connection starts a fresh session with the conversation rebuilt.
        self.fresh_start_needed = False
        self.fresh_starts = 0
        #: Publishes and stores handles (see handle_store); inert until the run starts.
        self.keeper = HandleKeeper(None, ttl=policy.handle_ttl, store=None)
        #: Whether ADK may see (and yield as events) handle updates: only if the caller's
        #: RunConfig asked for session resumption, as stock ADK does.
        self.pass_handles = False
        self.replayed_messages = 0
        #: The input transcription ADK had shown as pieces and not finished when the last
        #: connection ended; the next one continues it, so that its finished transcription
        #: holds the utterance whole (the pieces a replay repeats are not shown again).
        self.unfinished_input = ""
        self.session_limit_warned = False
        self.audio_sent = False
        #: The next connection, opened ahead on goAway (make-before-break).
        self.opening: NextConnection | None = None
        #: Open the next connection before closing the old one (off for the rest of the run
        #: once the server refused a resume while the old socket was open).
        self.make_before_break = True
        #: Closes retired connections and discarded openings in the background.
        self.closer = BackgroundCloser(policy.close_timeout)
        #: Opens the next connection's socket ahead: on a goAway that waits for its safe
        #: point, and on a server's close frame.
        self.dialer: early_dial.EarlyDialer | None = (
            early_dial.EarlyDialer(close=self._close_unused_socket)
            if policy.early_dial and available.on(hooks.EARLY_DIAL) and early_dial.hook()
            else None
        )

    @property
    def agent_name(self) -> str:
        return str(getattr(self.ctx.agent, "name", "?"))

    def connection_proved_healthy(self) -> None:
        self.outage = None

    # -- request per connection -----------------------------------------------------------

    def connect_request(self, handle: str | None) -> Any:
        """A copy of the request for one connection: the caller's objects stay untouched."""
        request = self.request.model_copy()
        source = self.request.live_connect_config or types.LiveConnectConfig()
        config = source.model_copy()
        asked = source.session_resumption
        transparent: bool | None = None
        if adk_compat.is_vertex(self.llm):
            asked_transparent = asked.transparent if asked is not None else None
            transparent = (
                self.policy.transparent if asked_transparent is None else asked_transparent
            )
        self.transparent = bool(transparent)
        config.session_resumption = types.SessionResumptionConfig(
            handle=handle, transparent=transparent
        )
        if config.context_window_compression is None and self.policy.sliding_window:
            config.context_window_compression = types.ContextWindowCompressionConfig(
                sliding_window=types.SlidingWindow()
            )
        history = getattr(source, "history_config", None)  # google-genai < 1.6x: none
        if handle:
            if history is not None and history.initial_history_in_client_content is not None:
                trimmed = history.model_copy(update={"initial_history_in_client_content": None})
                config.history_config = trimmed if trimmed.model_dump(exclude_none=True) else None
        elif request.contents and adk_compat.sdk_accepts_history_config(
            adk_compat.is_vertex(self.llm)
        ):
            # (An older google-genai refuses history_config for Vertex AI: the history then
            # goes as plain clientContent, as google-adk 1.x sends it.)
            if history is None:
                config.history_config = types.HistoryConfig(initial_history_in_client_content=True)
            elif history.initial_history_in_client_content is None:
                config.history_config = history.model_copy(
                    update={"initial_history_in_client_content": True}
                )
        request.live_connect_config = config
        return request

    def open_ahead(self, watch: ConnectionWatch) -> bool:
        """Start opening the connection that takes over from ``watch`` (goAway), with the
        current handle; return whether it started (else the caller closes the old socket).

        Not done once a server refused such a resume in this run."""
        if not self.make_before_break or not self._open_next(watch, latest=watch.rotate_by):
            return False
        if self.queue_guard is not None:
            self.queue_guard.pause()  # what the user sends next goes to the new connection
        watch.handing_over = True
        assert self.opening is not None
        self.opening.task.add_done_callback(watch.on_next_opened)
        return True

    def open_after_drop(self, watch: ConnectionWatch, error: BaseException) -> None:
        """Start the first attempt after a retryable drop at once, while the dead connection
        is still being taken down (ADK's receive step unwinding, its sender stopped).

        Only when that attempt would go at once anyway: the first of an outage, no
        ``first_attempt_jitter``. :meth:`_plan_retry` still decides: the loop discards the
        connection if it decides otherwise."""
        drop = classify(error)
        if drop is not None and drop.kind == "closed" and self._retries_at_once(watch, drop.code):
            self._open_next(watch, latest=None)

    def dial_after_close(self, watch: ConnectionWatch, code: int) -> None:
        """The server's close frame arrived: if the loop will reconnect at once once
        google-genai reports the close (:meth:`open_after_drop`), open the next socket now.
        It saves a round trip: the SDK reports the close only after the close handshake."""
        if self._retries_at_once(watch, code):
            self.dial_early(latest=None)

    def _retries_at_once(self, watch: ConnectionWatch, code: int | None) -> bool:
        """A close with ``code`` on ``watch`` is followed by an attempt without delay: the
        first of an outage, no ``first_attempt_jitter``, a code worth retrying."""
        return not (
            watch.rotating
            or watch.client_closed
            or self.outage is not None
            or self.policy.first_attempt_jitter
            or not self.rate.has_room(asyncio.get_running_loop().time())
            or (self.queue_guard is not None and self.queue_guard.close_requested)
            or not self.policy.is_retryable_code(code)
        )

    def dial_early(self, *, latest: float | None) -> None:
        """Start opening the next connection's socket now (a goAway that must wait for its
        safe point, a server's close frame), after its turn at the process's pacer; the next
        connect of this run uses it."""
        if self.dialer is not None:
            self.dialer.dial(lambda: self._pacer_turn(latest))

    async def _take_turn(self, *, latest: float | None) -> bool:
        """Wait for the pacer's go-ahead for a connection attempt, unless a socket opened ahead
        (which took its turn) will serve it; ``False`` if the run was closed first."""
        if self.dialer is not None and self.dialer.holds_turn():
            return True
        return await self._pacer_turn(latest)

    async def _pacer_turn(self, latest: float | None) -> bool:
        """This run's turn at the process's pacer (given up when the run is closed)."""
        guard = self.queue_guard
        on_close = guard.on_close if guard is not None else None
        return await pacing.take_turn(self.policy, latest=latest, on_close=on_close)

    def _close_unused_socket(self, websocket: Any) -> None:
        transport = getattr(websocket, "transport", None)
        self.closer.close_one(websocket, transport.abort if transport is not None else None)

    def _open_next(self, watch: ConnectionWatch, *, latest: float | None) -> bool:
        """Start opening the connection after ``watch``'s, resuming the current handle (it
        takes its turn at the process's pacer first); return whether it started.

        Not done without a handle the next connection would resume: a fresh session is
        rebuilt only after the old one ended."""
        handle = self.handles.handle
        if (
            self.opening is not None
            or self.fresh_start_needed
            or not handle
            or self._handle_unusable(asyncio.get_running_loop().time()) is not None
        ):
            return False
        request = self.connect_request(handle)

        async def opener(stack: contextlib.AsyncExitStack) -> Any:
            if not await self._take_turn(latest=latest):
                return None
            return await self._connect(stack, request)

        logger.debug("opening connection %d ahead", watch.number + 1)
        self.opening = NextConnection(
            handle, opener, name=f"adk_live_resume open #{watch.number + 1}"
        )
        return True

    async def _discard_opening(self) -> None:
        opening, self.opening = self.opening, None
        if opening is not None:
            await opening.discard(self.closer, abort_connection)

    # -- the run --------------------------------------------------------------------------

    async def events(self) -> AsyncGenerator[Any, None]:
        from google.adk.events.event import Event

        surface = self.surface
        self.event_id = Event.new_id()
        async with contextlib.aclosing(self._prepare_request()) as pre:
            async for event in pre:
                yield event
        if self.ctx.end_invocation:
            return
        if self.ctx.live_request_queue is None:
            raise ValueError(
                "run_live needs a LiveRequestQueue: pass live_request_queue= to Runner.run_live."
            )
        asked = (
            self.request.live_connect_config.session_resumption
            if self.request.live_connect_config is not None
            else None
        )
        self.handles = ResumptionState.starting_with(
            (asked.handle if asked is not None else None) or self.ctx.live_session_resumption_handle
        )
        # -- handle store hook: handles go to events only if asked; a stored one resumes.
        self.pass_handles = asked is not None
        self.keeper = HandleKeeper.start(self.ctx, self.policy, agent_name=self.agent_name)
        stored, catch_up = self.keeper.loaded, self.keeper.catch_up
        self.keeper.catch_up = None  # given only with the stored handle, once
        if not self.handles.handle and stored is not None:
            if catch_up and adk_compat.speaks_gemini_3_live(self.request.model):
                # Gemini 3.x Live takes no client content mid-session (as in _handle_unusable)
                logger.info("the session holds turns after the stored handle; starting fresh")
            else:
                self.handles = ResumptionState.starting_with(stored.handle)
                self.handles.received_at = asyncio.get_running_loop().time() - stored.age()
                self.keeper.catch_up = catch_up
        self.queue_guard = QueueGuard(self.ctx.live_request_queue)
        self.queue_guard.on_content(self._content_queued)
        self.queue_guard.on_withheld(self._withheld)
        try:
            async with contextlib.aclosing(self._connections()) as stream:
                async for event in stream:
                    yield event
        finally:
            ending = sys.exc_info()[1]
            await self._discard_opening()
            if self.dialer is not None:
                await self.dialer.discard()
            await self.closer.wait()
            self.queue_guard.release()
            self.leaving = True  # ADK stops the background tools: nothing to answer now
            await surface.stop_background(self.flow, self.ctx)
            await self.keeper.close()
            observe.run_ended(self, ending)

    # -- tools ADK runs in the background (NON_BLOCKING) ----------------------------------

    def tool_running(self, call_id: str, name: str | None) -> bool:
        """ADK runs the tool of ``call_id`` in the background now."""
        return adk_compat.running_tool_task(self.ctx, call_id, name) is not None

    def watch_running_call(self, call_id: str) -> None:
        """A repeat waits for the response of the running ``call_id``: learn when ADK's
        background run of it ends (the response, if any, is queued before that)."""
        if call_id in self._watched_calls:
            return
        task = adk_compat.running_tool_task(self.ctx, call_id, self.tool_calls.name_of(call_id))
        if task is None:  # ended in between: its response, if any, is queued already
            self._running_call_ended(call_id)
            return
        self._watched_calls.add(call_id)
        task.add_done_callback(lambda _: self._running_call_ended(call_id))

    def _running_call_ended(self, call_id: str) -> None:
        self._watched_calls.discard(call_id)
        if self.leaving:
            return  # ADK stopped it: this session ends (a transfer, the run's end)
        repeat = self.tool_calls.on_running_ended(call_id)
        if repeat is None:
            return
        repeat_id, name = repeat
        logger.warning(
            "tool %s ended without a response while the model's repeat of the call waited"
            " for it; the repeat is answered with an error and the tool is not run again",
            name,
        )
        response = types.FunctionResponse(id=repeat_id, name=name, response=ENDED_WITHOUT_RESULT)
        content = types.Content(role="user", parts=[types.Part(function_response=response)])
        self.ctx.live_request_queue.send_content(content)

    @property
    def session_id(self) -> str:
        return str(getattr(getattr(self.ctx, "session", None), "id", "") or "")

    def _withheld(self, content: Any) -> None:
        logger.debug("ADK's send step withheld a user turn (screened): kept out of history")
        withheld.note(self.session_id, content)

    def _content_queued(self, content: Any) -> None:
        for part in getattr(content, "parts", None) or []:
            response = getattr(part, "function_response", None)
            if response is not None and response.id:
                self.tool_calls.on_response_queued(str(response.id))

    async def _prepare_request(self) -> AsyncGenerator[Any, None]:
        """ADK's request preprocessing: history from the ADK session, tools, config."""
        from google.adk.models.llm_request import LlmRequest

        self.request = LlmRequest()
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
        if not self.handles.handle:
            return None
        age = self.handles.age(now)
        if age is not None and age > self.policy.handle_ttl:
            return f"resumption handle is {age:.0f} s old; starting a fresh session"
        if self.outbox.has_context() and not self.takes_mid_session_content():
            # Gemini 3.1 Live takes no client content mid-session: what the handle lacks
            # goes to a fresh session as history instead of being lost.
            return (
                f"the conversation since handle {redact(self.handles.handle)} cannot be"
                f" replayed to a {self.request.model} session (it takes no clientContent"
                " mid-session); starting a fresh session with the conversation so far"
            )
        return None

    def takes_mid_session_content(self) -> bool:
        """The model takes ``clientContent`` mid-session (see :mod:`.model_families`)."""
        model = self.request.model
        dialect = adk_compat.speaks_gemini_3_live(model)
        return takes_mid_session_content(model, gemini_3_dialect=dialect)

    def tool_turns_need_an_end(self) -> bool:
        """ADK holds tool calls until a ``turnComplete`` this model does not send after them
        (native audio, see :mod:`.model_families`): the tap must end the turn for ADK."""
        model = self.request.model
        dialect = adk_compat.speaks_gemini_3_live(model)
        return adk_compat.holds_tool_calls_until_turn_complete() and not (
            ends_turn_after_tool_call(model, gemini_3_dialect=dialect)
            or dialect  # ADK passes 3.x Live calls on at once
        )

    async def _connections(self) -> AsyncGenerator[Any, None]:
        loop = asyncio.get_running_loop()
        while True:
            unusable = self._handle_unusable(loop.time())
            if unusable is not None:
                logger.info("%s", unusable)
                self._need_fresh_start()
            if self.opening is not None and (
                self.fresh_start_needed or self.opening.handle != self.handles.handle
            ):
                await self._discard_opening()
            if self.fresh_start_needed:
                self.fresh_start_needed = False
                self.fresh_starts += 1
                async with contextlib.aclosing(self._prepare_request()) as pre:
                    async for event in pre:
                        yield event
            watch = ConnectionWatch(self, self.connections + 1)
            outcome = _Outcome(_End.DROPPED)
            async with contextlib.aclosing(self._serve(watch, outcome)) as stream:
                async for event in stream:
                    yield event
            if self.opening is not None and outcome.end not in (_End.ROTATE, _End.DROPPED):
                await self._discard_opening()  # the run ends, or moves on another way
            if (
                outcome.end in (_End.DROPPED, _End.ROTATE, _End.RESTART)
                and not outcome.at_connect
                and not self.handles.handle
            ):
                # The server never gave a handle for this session: what it held is gone, so
                # the next one starts fresh with the conversation rebuilt.
                self._need_fresh_start()
            if watch.model_turn_open and outcome.end in (_End.DROPPED, _End.ROTATE):
                # The model was cut off mid-turn: tell the client to stop playing it.
                yield self._interrupted_event()
            end = outcome.end
            if end in (_End.CLIENT_CLOSED, _End.TASK_COMPLETED):
                return
            if end in (_End.TRANSFER, _End.RESTART):
                # The next live run starts its own session: nothing opened ahead serves it.
                await self._discard_opening()
                if self.dialer is not None:
                    await self.dialer.discard()
                if self.queue_guard is not None:
                    # The next live run takes the queue over with a guard of its own; this
                    # one steps aside (a guard left around it would see each request the
                    # next run sends as taken and never sent: as withheld by screening).
                    self.queue_guard.release()
            if end is _End.TRANSFER:
                assert outcome.transfer_to is not None
                async with contextlib.aclosing(self._transfer(outcome.transfer_to)) as child:
                    async for event in child:
                        yield event
                return
            if end is _End.RESTART:
                async with contextlib.aclosing(self._restart()) as fresh:
                    async for event in fresh:
                        yield event
                return
            self.keeper.store_now()  # a drop, a goAway move: the next worker may need it
            now = loop.time()
            if self.lost_at is None:
                self.lost_at = watch.lost_at if watch.lost_at is not None else now
            if self.queue_guard is not None and self.queue_guard.close_requested:
                logger.debug("the request queue was closed during the outage; ending the run")
                return
            if end is _End.ROTATE:
                self.pending_reason = "go_away"
                self.pending_cause = watch.rotating or "goAway"
                wait = 0.0
            else:
                wait = self._plan_retry(outcome, now)
            if not self.rate.allow(now):
                raise ReconnectFailedError(
                    f"gave up: more than {self.policy.max_reconnects_per_minute} reconnects within"
                    f" 60 s (last cause: {self.pending_cause}). The server keeps dropping the"
                    " connection; check the service status or raise"
                    " ResumePolicy.max_reconnects_per_minute.",
                    attempts=self.outage.attempts if self.outage else 0,
                    elapsed=now - (self.lost_at or now),
                ) from outcome.error
            if wait:
                logger.debug("waiting %.3f s before reconnecting", wait)
            guard = self.queue_guard
            if guard is not None and await guard.wait_closed(wait):
                logger.debug("the request queue was closed during the outage; ending the run")
                return
            if self.opening is not None and not wait:
                continue  # opened ahead (goAway, or at once after the drop): paced already
            await self._discard_opening()
            # The process-wide pacer spreads a herd of reconnects; a lone one goes at once.
            latest = watch.rotate_by if end is _End.ROTATE else None
            if not await self._take_turn(latest=latest):
                logger.debug("the request queue was closed during the outage; ending the run")
                return

    def session_limited(self) -> bool:
        """An audio session without context window compression: the service ends it at 15 min."""
        config = self.request.live_connect_config if self.request is not None else None
        if config is not None and config.context_window_compression is not None:
            return False
        if self.policy.sliding_window:
            return False
        modalities = getattr(self.ctx.run_config, "response_modalities", None) or []
        audio_out = any(str(getattr(m, "value", m)).upper() == "AUDIO" for m in modalities)
        return audio_out or self.outbox.activity.utterances > 0 or self.audio_sent

    def warn_session_limit(self) -> None:
        """Say once per run that an audio session without compression ends at 15 minutes."""
        if self.session_limit_warned or not self.session_limited():
            return
        self.session_limit_warned = True
        logger.warning(
            "live session of agent %s streams audio without context window compression: the"
            " Live API ends such a session after 15 minutes whatever the connection does."
            " Set RunConfig(context_window_compression=types.ContextWindowCompressionConfig("
            "sliding_window=types.SlidingWindow())) or ResumePolicy(sliding_window=True).",
            self.agent_name,
        )

    def _need_fresh_start(self) -> None:
        """The handle is dead: the next connection starts a fresh session."""
        self.handles.forget()
        self.ctx.live_session_resumption_handle = None
        self.keeper.forget()
        self.fresh_start_needed = True

    def _interrupted_event(self) -> Any:
        from google.adk.events.event import Event

        return Event(
            invocation_id=self.ctx.invocation_id,
            author=self.agent_name,
            branch=getattr(self.ctx, "branch", None),
            interrupted=True,
        )

    def _plan_retry(self, outcome: _Outcome, now: float) -> float:
        """Decide about a drop: return the wait before the next attempt, or raise."""
        drop = outcome.drop
        assert drop is not None
        cause = drop.describe()
        self.pending_reason = "drop"
        self.pending_cause = cause
        fatal = drop.kind == "rejected" or (
            drop.kind == "closed" and not self.policy.is_retryable_code(drop.code)
        )
        refused = fatal and outcome.at_connect and self.handles.handle and drop.code in (1007, 1008)
        if refused and drop.code == 1007 and self.session_limited():
            raise SessionLimitError(
                f"the live server refused to resume this audio session ({cause}). Audio"
                " sessions without context window compression end after 15 minutes and cannot"
                " be resumed or continued. Set RunConfig(context_window_compression="
                "types.ContextWindowCompressionConfig(sliding_window=types.SlidingWindow()))"
                " or ResumePolicy(sliding_window=True) for longer conversations.",
                code=drop.code,
            ) from outcome.error
        if refused and self.policy.restart_when_handle_dead:
            logger.info(
                "the server refused handle %s (%s); starting a fresh session with the"
                " conversation so far",
                redact(self.handles.handle),
                cause,
            )
            self._need_fresh_start()
            fatal = False
        if fatal:
            resumed = (
                " while resuming with a handle"
                if outcome.at_connect and self.handles.handle
                else ""
            )
            raise SessionNotResumableError(
                f"the live server ended the session with {cause}{resumed}; this close is not"
                " retryable (ResumePolicy.retryable_close_codes). For 1008 check the model"
                " name, API key and that the handle is not expired; for 1007 the request"
                " content or an exhausted context window.",
                code=drop.code,
            ) from outcome.error
        if self.outage is None:
            self.outage = OutageBudget(self.policy, started_at=now)
        decision, wait, why = self.outage.next_attempt(now)
        if decision == "give_up":
            raise ReconnectFailedError(
                f"gave up reconnecting the live session: {why} (last cause: {cause}). The"
                " server or network did not come back within ResumePolicy(max_attempts="
                f"{self.policy.max_attempts}, outage_timeout={self.policy.outage_timeout}).",
                attempts=self.outage.attempts,
                elapsed=now - self.outage.started_at,
            ) from outcome.error
        observe.attempt_failed(
            cause, self.outage.attempts, self.policy.max_attempts, wait, redact(self.handles.handle)
        )
        return wait

    async def _serve(self, watch: ConnectionWatch, outcome: _Outcome) -> AsyncGenerator[Any, None]:
        """Run one connection; record how it ended in ``outcome``."""
        surface = self.surface
        queue = self.ctx.live_request_queue
        opening, self.opening = self.opening, None
        handle = opening.handle if opening is not None else self.handles.handle
        send_task: asyncio.Task[None] | None = None
        connection: Any = None
        clean_exit = ended = False
        stack = contextlib.AsyncExitStack()
        try:
            try:
                if opening is not None:
                    connection = await opening.take(stack)
                else:
                    connection = await self._connect(stack, self.connect_request(handle))
                if connection is None:
                    outcome.end = _End.CLIENT_CLOSED
                    return
                self.connections += 1
                outcome.at_connect = False
                watch.session = adk_compat.genai_session(connection)
                watch.tap = SessionTap(
                    watch.session,
                    watch,
                    pass_handles=self.pass_handles,
                    encoder=self.chunk_encoder,
                    end_tool_turns=self.tool_turns_need_an_end(),
                )
                adk_compat.set_genai_session(connection, watch.tap)
                adk_compat.continue_input_transcription(connection, self.unfinished_input)
                self.unfinished_input = ""
                watch.watch_socket()
                self.outbox.begin_connection()
                history: list[Any] = []  # a resumed session has it already
                if handle:
                    self.tool_calls.on_resumed()
                    replay = self.outbox.take_replay(self.tool_calls.unknown_ids())
                    replay = with_catch_up(self.keeper.catch_up, replay)  # (once: sent below)
                    self.keeper.catch_up = None
                else:
                    in_history_responses = response_ids(self.request.contents or [])
                    self.tool_calls.on_fresh_session(answered_in_history=in_history_responses)
                    self.waiting_turns.on_fresh_session(in_history_responses)
                    history, in_history = fresh_history(
                        without_withheld(
                            self.request.contents or [], withheld.texts(self.session_id)
                        ),
                        self.outbox.utterance_transcript(),
                        speaking=self.outbox.activity.speaking,
                        fragments=self.outbox.transcript_fragments,
                    )
                    replay = self.outbox.take_audio(utterance_in_history=in_history)
                await self._replay(watch, replay, history=(connection, history))
                if replay.dropped_audio_ms:
                    logger.warning(
                        "%.0f ms of voiced user audio sent before the drop left the replay"
                        " window (%.1f s, plus the unanswered utterance up to %.0f s) and was"
                        " not replayed",
                        replay.dropped_audio_ms,
                        self.policy.replay_audio_seconds,
                        self.policy.max_utterance_seconds,
                    )
                if replay.dropped_silence_ms:
                    logger.debug(
                        "%.0f ms of unvoiced user audio (silence) left the replay window",
                        replay.dropped_silence_ms,
                    )
                self.replayed_messages += len(replay.messages)
                self._report_reconnect(state_restored=bool(handle), replay=replay)
                if self.queue_guard is not None:
                    self.queue_guard.resume()
                send_task = asyncio.create_task(
                    surface.send_step(self.flow, connection, self.ctx, self.request),
                    name=f"adk_live_resume send #{watch.number}",
                )
                send_task.add_done_callback(watch.on_send_done)
                async with contextlib.aclosing(
                    surface.receive_step(
                        self.flow, connection, self.ctx, self.request, self.event_id
                    )
                ) as events:
                    async for event in events:
                        if event is None:
                            break
                        mode = surface.sentinel_mode(event)
                        if mode == "restart":
                            outcome.end = _End.RESTART
                            break
                        if mode is not None:  # ADK's own goAway reconnect: plan ours instead
                            watch.rotate("ADK reconnect request")
                            continue
                        yield event
                        if event.get_function_responses():
                            queue.send_content(event.content)
                        transfer = event.actions.transfer_to_agent if event.actions else None
                        if transfer:
                            self.leaving = True  # (as at the run's end)
                            await surface.stop_background(self.flow, self.ctx)
                            await asyncio.sleep(surface.transfer_delay)
                            outcome.end, outcome.transfer_to = _End.TRANSFER, transfer
                            break
                        if any(
                            response.name == "task_completed"
                            for response in event.get_function_responses()
                        ):
                            await asyncio.sleep(surface.task_completion_delay)
                            outcome.end = _End.TASK_COMPLETED
                            break
                    else:
                        # ADK's receive step ended on its own: the connection is over.
                        outcome.end = _End.DROPPED
                        outcome.drop = _ENDED
                self._classify_end(watch, outcome, None)
                ended = True
            except Exception as error:
                self._classify_end(watch, outcome, error)
                ended = True
            else:
                clean_exit = True
            finally:
                try:
                    if ended:  # not while cancelled or closed
                        await self._let_next_open(watch, outcome)
                finally:
                    moving_on = ended and outcome.end not in (
                        _End.CLIENT_CLOSED,
                        _End.TASK_COMPLETED,
                    )
                    await self._stop_sender(watch, send_task, moving_on=moving_on)
                    await watch.finish(graceful=clean_exit)
        finally:
            if connection is not None:
                self.unfinished_input = adk_compat.unfinished_input_transcription(connection)
            if watch.retired:  # the next connection is up: do not wait for this one's close
                session = watch.session
                self.closer.close(stack, lambda: abort_transport(session))
            else:
                await stack.aclose()
        if outcome.end is _End.DROPPED and outcome.error is not None and outcome.drop is None:
            raise outcome.error

    async def _connect(self, stack: contextlib.AsyncExitStack, request: Any) -> Any:
        """Open a connection (bounded by ``connect_timeout``); ``None`` if the queue closed.

        Closing the ``LiveRequestQueue`` while a connection is being opened ends the attempt
        at once: nobody would talk on it.
        """
        guard = self.queue_guard
        closed = False
        try:
            async with asyncio.timeout(self.policy.connect_timeout) as deadline:

                def on_close() -> None:
                    nonlocal closed
                    closed = True
                    deadline.reschedule(asyncio.get_running_loop().time())

                remove = guard.on_close(on_close) if guard is not None else None
                dialing = early_dial.dialing_for(self.dialer)  # google-genai's socket, if ready
                try:
                    return await stack.enter_async_context(self.llm.connect(request))
                finally:
                    early_dial.stop_dialing(dialing)
                    if remove is not None:
                        remove()
        except TimeoutError:  # (raised as the timeout's block exits)
            if closed:
                return None
            raise

    async def _let_next_open(self, watch: ConnectionWatch, outcome: _Outcome) -> None:
        """While the next connection is being opened after a drop, taking this one down (its
        sender, timers, socket) waits: none of it needs to come first, and on a busy event
        loop it would only slow the new connection's handshake down."""
        opening = self.opening
        if (
            opening is None
            or watch.retired
            or opening.task.done()
            or outcome.end not in (_End.DROPPED, _End.ROTATE)
        ):
            return
        watch.dead = True  # what ADK's sender still sends goes to the outbox
        if self.queue_guard is not None:
            self.queue_guard.pause()
        await asyncio.wait({opening.task})

    async def _stop_sender(
        self, watch: ConnectionWatch, task: asyncio.Task[None] | None, *, moving_on: bool
    ) -> None:
        """Stop ADK's send step for a connection that ended, without cutting ADK's work short.

        The connection takes no more sends first (what the sender still sends is recorded in
        the outbox for the next connection), and the queue hands it no new request. A request
        it is working on (ADK appends the user event to the session, screens the content with
        ``before_model_callback``) is never cancelled halfway when the session goes on
        (``moving_on``: a new connection, a transfer, a restart): the next connection waits
        until ADK's work on it is done, once, and then replays its send, if the screening let
        it through. Only when the run itself ends (closed, cancelled) is the sender cancelled,
        after ``close_timeout``.
        """
        watch.dead = True
        guard = self.queue_guard
        if guard is not None:
            guard.pause()
        if task is None:
            return
        try:
            if not task.done() and guard is not None and guard.in_hand:
                guard.recovered += 1
                if moving_on:
                    await self._finish_request(guard, task)
                else:
                    await guard.wait_idle(self.policy.close_timeout)
        finally:
            if not task.done():
                task.cancel()
                await asyncio.wait({task}, timeout=1.0)

    async def _finish_request(self, guard: QueueGuard, task: asyncio.Task[None]) -> None:
        """Wait until ADK's sender is done with the request in its hand (or has stopped)."""
        idle = asyncio.ensure_future(guard.wait_idle(None))
        try:
            done, _ = await asyncio.wait(
                {idle, task},
                timeout=self.policy.close_timeout,
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

    def _classify_end(
        self, watch: ConnectionWatch, outcome: _Outcome, error: BaseException | None
    ) -> None:
        """Fill ``outcome`` from how the connection ended (``error`` is what receive raised)."""
        if isinstance(error, ConnectionRetired):
            outcome.end = _End.ROTATE  # the next connection, opened ahead, took over
            return
        if error is None and outcome.end is not _End.DROPPED:
            return  # restart, transfer, task_completed: decided while receiving
        send_error = watch.send_error
        if send_error is not None and classify(send_error) is None:
            outcome.end, outcome.error, outcome.drop = _End.DROPPED, send_error, None
            return
        if watch.client_closed:
            outcome.end = _End.CLIENT_CLOSED
            if error is not None and classify(error) is None:
                outcome.end, outcome.error, outcome.drop = _End.DROPPED, error, None
            return
        if error is not None:
            drop = classify(error)
            outcome.error = error
            if drop is None:
                outcome.end, outcome.drop = _End.DROPPED, None
                return
            outcome.drop = drop
        if watch.rotating:
            outcome.end = _End.ROTATE
            return
        outcome.end = _End.DROPPED
        if outcome.drop is None:
            outcome.drop = _ENDED

    async def _replay(
        self, watch: ConnectionWatch, replay: Replay, *, history: tuple[Any, list[Any]]
    ) -> None:
        """Send a fresh session's ``history`` (``(connection, contents)``; none for a resumed
        one), then ``replay``, on a new connection; what is not sent stays in the outbox.

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
                self.history_sends += 1
                watch.sending_history = True  # the session's state from its start on
                try:
                    await connection.send_history(contents)
                finally:
                    watch.sending_history = False
            for method, kwargs in pending:
                handed += 1
                await tap.replay(method, kwargs)
        except BaseException:
            for later_method, later_kwargs in pending[handed:]:
                self.outbox.record(later_method, later_kwargs)
            raise

    def _report_reconnect(self, *, state_restored: bool, replay: Replay) -> None:
        if self.pending_reason is None:
            return
        loop = asyncio.get_running_loop()
        gap = 0.0 if self.lost_at is None else (loop.time() - self.lost_at) * 1000
        session = getattr(self.ctx, "session", None)
        observe.report(
            observe.ReconnectInfo(
                reason=self.pending_reason if state_restored else "restart",
                attempt=self.outage.attempts if self.outage else 1,
                gap_ms=gap,
                state_restored=state_restored,
                cause=self.pending_cause,
                agent_name=self.agent_name,
                invocation_id=str(getattr(self.ctx, "invocation_id", "")),
                session_id=str(getattr(session, "id", "")),
                connection_number=self.connections,
                replayed_messages=len(replay.messages) + (1 if replay.context else 0),
                dropped_audio_ms=replay.dropped_audio_ms,
                dropped_silence_ms=replay.dropped_silence_ms,
            )
        )
        self.pending_reason = None
        self.lost_at = None

    # -- leaving this agent ---------------------------------------------------------------

    def _fresh_context(self) -> Any:
        """A copy of the invocation context for a new live session (no handle)."""
        run_config = self.ctx.run_config
        update: dict[str, Any] = {"live_session_resumption_handle": None}
        if run_config is not None and run_config.session_resumption is not None:
            update["run_config"] = run_config.model_copy(
                update={
                    "session_resumption": run_config.session_resumption.model_copy(
                        update={"handle": None}
                    )
                }
            )
        return self.ctx.model_copy(update=update)

    async def _transfer(self, agent_name: str) -> AsyncGenerator[Any, None]:
        agent = adk_compat.agent_to_run(self.flow, self.ctx, agent_name)
        logger.debug("transferring the live session to agent %s (fresh session)", agent_name)
        await self.keeper.close()  # our last handle lands before the new agent's first
        with self._calls_to_the_next_run():
            async with contextlib.aclosing(agent.run_live(self._fresh_context())) as child:
                async for event in child:
                    yield event

    @contextlib.contextmanager
    def _calls_to_the_next_run(self) -> Iterator[None]:
        """The next live run of this invocation (its session is new) learns this session's
        call ids: a response to one of them still in the queue (the transfer call's, say)
        must not go to its session."""
        key = str(getattr(self.ctx, "invocation_id", ""))
        _earlier_calls[key] = self.tool_calls.issued()
        try:
            yield
        finally:
            _earlier_calls.pop(key, None)

    async def _restart(self) -> AsyncGenerator[Any, None]:
        logger.debug("ADK asked for a fresh live session")
        self.keeper.forget()  # the fresh session must not resume from the stored handle
        await self.keeper.close()
        with self._calls_to_the_next_run():
            async with contextlib.aclosing(self.flow.run_live(self._fresh_context())) as fresh:
                async for event in fresh:
                    yield event


async def run_live(
    flow: Any, ctx: Any, *, policy: ResumePolicy, fallback: Fallback
) -> AsyncGenerator[Any, None]:
    """Run ``flow`` live for ``ctx``, resuming across lost connections.

    ``fallback`` is the original ``run_live`` of the flow, used unchanged for models that
    have no google-genai live session underneath (anything but ADK's ``Gemini``).
    """
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
    run = LiveRun(flow, ctx, llm, policy, available)
    async with contextlib.aclosing(run.events()) as events:
        async for event in events:
            yield event
