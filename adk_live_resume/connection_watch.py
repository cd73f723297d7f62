"""Per-connection state of a live run, fed by the tap and the send task.

:class:`ConnectionWatch` is the :class:`~adk_live_resume.tap.TapListener` of one connection:
what the tap reports is fed into the run's rules (outbox, handles, tool calls, user
activity). The connection's lifecycle (moving, draining, retired, lost, the goAway deadline)
is a :class:`~adk_live_resume.connection_state.ConnectionState`: the watch feeds it the
events it sees and carries out the actions it returns (timers, opening ahead, closing the
socket). What outlives a connection (handles, the outbox, tool-call bookkeeping, pacing)
belongs to the run, which creates one watch per connection and reads how the connection
ended from the state it ended in. What the watch needs of its run is
:class:`WatchedRun` (the loop's ``LiveRun`` is one): this module does not import the loop.

Guarantees: nothing here blocks the receive or the send path (a close runs in a task of its
own, bounded by ``close_timeout``, then aborted); :meth:`ConnectionWatch.finish` never raises
and leaves no task behind; handles seen while the session is being moved to a new connection
are ignored (the new one resumes the handle the move began with).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Iterator, Sequence
from typing import Any, Protocol

from google.genai import types

from . import genai_compat, websockets_compat
from .client_sends import readdressed, responses_of, without_responses
from .connection_state import (
    Action,
    CancelTimer,
    CloseSocket,
    ConnectionState,
    DialAfterClose,
    DialAhead,
    NoteGoAway,
    OpenAfterDrop,
    OpenAhead,
    ProveHealthy,
    Retire,
    StartTimer,
    State,
    StopOpeningAhead,
)
from .connector import abort_transport
from .deferred_results import DeferredResults
from .early_dial import EarlyDialer
from .errors import classify
from .handle_store import HandleKeeper
from .handles import ResumptionState, redact
from .next_connection import BackgroundCloser
from .outbox import Outbox
from .policy import ResumePolicy
from .queue_guard import QueueGuard
from .stall_rule import Stall
from .stall_watch import StallWatch, non_blocking_names
from .tap import SessionTap, parse_time_left
from .tool_calls import ToolCallBook
from .wire_classifier import Frame

logger = logging.getLogger("adk_live_resume.loop")


class WatchedRun(Protocol):
    """What a connection's watch reads of its run, and the run's answers to its events."""

    ctx: Any
    request: Any
    policy: ResumePolicy
    handles: ResumptionState
    outbox: Outbox
    tool_calls: ToolCallBook
    deferred_results: DeferredResults
    keeper: HandleKeeper
    queue_guard: QueueGuard | None
    transparent: bool
    close_frame_dial: bool
    go_away_frame: bool

    @property
    def dialer(self) -> EarlyDialer | None: ...

    @property
    def closer(self) -> BackgroundCloser: ...

    def connection_proved_healthy(self) -> None: ...

    def takes_mid_session_content(self) -> bool: ...

    def go_away_arrived(self) -> None: ...

    def audio_started(self) -> None: ...

    def stop_opening_ahead(self) -> None: ...

    def skip_message(self, frame: Frame) -> None: ...

    def tool_running(self, call_id: str, name: str | None) -> bool: ...

    def watch_running_call(self, call_id: str) -> None: ...

    def dial_early(self, *, latest: float | None) -> None: ...

    def open_ahead(self, watch: ConnectionWatch) -> bool: ...

    def open_after_drop(self, watch: ConnectionWatch, error: BaseException) -> None: ...

    def dial_after_close(self, watch: ConnectionWatch, code: int, reason: str) -> None: ...


class ConnectionWatch:
    """Per-connection state fed by the :class:`SessionTap` and the send task."""

    def __init__(self, run: WatchedRun, number: int) -> None:
        self.run = run
        self.number = number
        self.session: Any = None  # the real google-genai AsyncSession
        #: The connection's lifecycle: fed by this watch, its actions carried out here.
        self.lifecycle = ConnectionState()
        #: A fresh session's initial history is being sent: part of the session's state from
        #: its setup on (any handle it issues holds it), so it is never recorded for replay.
        self._history_going = False
        #: The model was in the middle of a turn (output seen, no turnComplete yet).
        self.model_turn_open = False
        #: Model output seen on this connection since its last turnComplete.
        self.output_in_turn = False
        self.tap: SessionTap | None = None
        self._timer: asyncio.TimerHandle | None = None
        self._closer: asyncio.Task[None] | None = None
        self._watcher: asyncio.Task[None] | None = None
        #: ``(text, what ADK gets of it)`` for the input transcription just handled.
        self._input_shown: tuple[str, str] | None = None
        #: The stall seen on this connection, which ended it (``None``: none).
        self.stall: Stall | None = None
        self.stall_watch = StallWatch(
            run.policy.stall_timeout,
            run.policy.degenerate_turns,
            on_stall=self._stalled,
            user_speaking=lambda: run.outbox.activity.speaking,
            non_blocking=non_blocking_names(run.request),
        )

    def attach(self, session: Any, tap: SessionTap) -> None:
        """The connection is established: ``session`` is its google-genai session, ``tap``
        the tap under ADK's connection that reports to this watch."""
        self.session = session
        self.tap = tap
        self.stall_watch.start()

    @contextlib.contextmanager
    def sending_history(self) -> Iterator[None]:
        """A fresh session's history is sent inside: not recorded for replay (it is the
        session's state from its setup on), only counted."""
        self._history_going = True
        try:
            yield
        finally:
            self._history_going = False

    # -- the lifecycle, read ----------------------------------------------------------------

    @property
    def state(self) -> State:
        return self.lifecycle.state

    @property
    def send_error(self) -> BaseException | None:
        return self.lifecycle.send_error

    @property
    def moving(self) -> str | None:
        """Why the session is being moved off this connection (``None``: it is not)."""
        return self.lifecycle.why_moved

    @property
    def client_closed(self) -> bool:
        return self.lifecycle.state is State.CLIENT_CLOSED

    @property
    def retired(self) -> bool:
        """The next connection took over: this one's socket closes in the background."""
        return self.lifecycle.state is State.RETIRED

    @property
    def move_by(self) -> float | None:
        """``loop.time()`` by which a goAway move must reconnect (``None``: no goAway)."""
        return self.lifecycle.deadline

    @property
    def lost_at(self) -> float | None:
        """``loop.time()`` of the first sign that the connection was lost."""
        return self.lifecycle.lost_at

    def _now(self) -> float:
        return asyncio.get_running_loop().time()

    def _carry_out(self, actions: list[Action], error: BaseException | None = None) -> None:
        """Do what the lifecycle asked for, in order (``error``: what reading raised)."""
        run = self.run
        for action in actions:
            match action:
                case ProveHealthy():
                    run.connection_proved_healthy()
                case NoteGoAway(time_left=time_left, delay=delay):
                    run.go_away_arrived()
                    logger.debug(
                        "goAway on connection %d: time left %s s, reconnecting within %.2f s",
                        self.number,
                        time_left,
                        delay,
                    )
                case StartTimer(delay=delay):
                    self._timer = asyncio.get_running_loop().call_later(delay, self._deadline)
                case CancelTimer():
                    if self._timer is not None:
                        self._timer.cancel()
                case DialAhead(latest=latest):
                    run.dial_early(latest=latest)
                case OpenAhead():
                    self._carry_out(self.lifecycle.ahead_started(run.open_ahead(self)))
                case CloseSocket(abort=abort):
                    self.close_socket(abort=abort)
                case Retire():
                    self._retire()
                case OpenAfterDrop():
                    assert error is not None
                    run.open_after_drop(self, error)
                case DialAfterClose(code=code, reason=reason):
                    run.dial_after_close(self, code, reason)
                case StopOpeningAhead():
                    run.stop_opening_ahead()

    # -- TapListener ----------------------------------------------------------------------

    def on_server_message(self, message: types.LiveServerMessage) -> None:
        self._note_content(message.server_content)
        # (a retirement lets this message, and its handle, still reach the loop and ADK)
        self._carry_out(self.lifecycle.message_read(turn_open=self.model_turn_open))
        self.stall_watch.server_message(message)

    def _message_arrived(self) -> None:
        self.lifecycle.frame_arrived()

    def _note_content(self, content: types.LiveServerContent | None) -> None:
        if content is None:
            return
        outbox = self.run.outbox
        for part in (content.model_turn.parts or []) if content.model_turn else []:
            if part.text and not part.thought:
                outbox.model_text(part.text)
            else:
                outbox.model_audio()
            self.model_turn_open = self.output_in_turn = True
        if content.output_transcription and content.output_transcription.text:
            outbox.model_text(content.output_transcription.text)
            self.model_turn_open = self.output_in_turn = True
        if content.input_transcription and content.input_transcription.text:
            text = content.input_transcription.text
            self._input_shown = (text, outbox.input_text(text))
        if content.interrupted:
            outbox.interrupted()
        if content.turn_complete or content.interrupted:
            self.model_turn_open = False
        if content.turn_complete:
            outbox.turn_complete()
            if self.output_in_turn:
                self.run.tool_calls.on_answered()
            self.output_in_turn = False

    def input_transcription(self, text: str) -> str:
        handled, self._input_shown = self._input_shown, None
        return handled[1] if handled is not None and handled[0] == text else text

    def on_go_away(self, time_left: float | None) -> None:
        """The goAway reached ADK's reading of the connection: every message before it has
        been handled, so the safe point can be judged (the deadline runs since its frame
        arrived, see :meth:`on_go_away_frame`)."""
        margin = self.run.policy.go_away_margin
        self._carry_out(
            self.lifecycle.go_away_read(
                time_left, now=self._now(), margin=margin, safe=self.at_safe_point()
            )
        )

    def _go_away_frame(self, time_left: object) -> None:
        self.on_go_away_frame(parse_time_left(time_left))

    def on_go_away_frame(self, time_left: float | None) -> None:
        """A goAway frame arrived on the socket, possibly while ADK is busy (a blocking tool
        runs inside its receive step) and reads it only later: the deadline timer starts
        now, and the next socket is dialed ahead. Whether the move can happen at once is
        decided when the message is read in order (:meth:`on_go_away`)."""
        margin = self.run.policy.go_away_margin
        self._carry_out(
            self.lifecycle.go_away_frame(
                time_left, now=self._now(), margin=margin, safe=self.at_safe_point()
            )
        )

    def _deadline(self) -> None:
        """``timeLeft - go_away_margin`` has come (see :meth:`ConnectionState.timer_fired`)."""
        self._carry_out(self.lifecycle.timer_fired())

    def at_safe_point(self) -> bool:
        """The newest handle holds everything: no turn in flight or waiting for its answer
        (a handle may cross the user's next turn), no request in ADK's hand, the user is not
        speaking and has no utterance waiting for its answer."""
        run = self.run
        outbox = run.outbox
        activity = outbox.activity
        guard = run.queue_guard
        return bool(
            run.handles.handle
            and run.handles.resumable_now
            and not outbox.turns.unanswered
            and not (guard is not None and guard.in_hand)
            and not activity.speaking
            and not activity.unanswered
        )

    def on_resumption_update(
        self, new_handle: str | None, resumable: bool | None, last_consumed_index: int | None
    ) -> None:
        # (Also while the next connection is being opened: a newer handle makes the loop
        # discard that connection, opened with an older one, and open one with the newest.)
        loop = asyncio.get_running_loop()
        changed = self.run.handles.observe(
            new_handle=new_handle,
            resumable=resumable,
            last_consumed_index=last_consumed_index,
            now=loop.time(),
        )
        if changed:
            self.run.tool_calls.on_handle()
            transparent = self.run.transparent
            self.run.outbox.covered(last_consumed_index if transparent else None)
            self.run.ctx.live_session_resumption_handle = self.run.handles.handle
            logger.debug("new resumption handle %s", redact(self.run.handles.handle))
            if self.run.handles.handle:
                self.run.keeper.observe(self.run.handles.handle)  # never blocks
            if self.lifecycle.move_pending:
                self._carry_out(self.lifecycle.handle_changed(safe=self.at_safe_point()))

    async def on_tool_calls(self, calls: list[types.FunctionCall]) -> list[types.FunctionCall]:
        run = self.run
        with_ids = [call for call in calls if call.id]
        decision = run.tool_calls.on_calls(
            ((str(c.id), c.name, c.args) for c in with_ids), running=run.tool_running
        )
        run.outbox.tool_call(str(call.id) for call in with_ids)
        held = {call_id for call_id, _ in decision.answer}
        for repeat, running in decision.hold:
            logger.debug(
                "holding a repeated tool call until the earlier call, still running, answers"
            )
            held.add(repeat)
            run.watch_running_call(running)
        if decision.answer and self.tap is not None:
            names = {str(call.id): call.name for call in with_ids}
            logger.debug(
                "answering %d repeated tool call(s) with the result from before the reconnect",
                len(decision.answer),
            )
            responses = [
                types.FunctionResponse(id=call_id, name=names[call_id], response=result)
                for call_id, result in decision.answer
            ]
            await self.tap.replay("send_tool_response", {"function_responses": responses})
        return [call for call in calls if not call.id or str(call.id) not in held]

    def on_receive_error(self, error: BaseException) -> None:
        self._carry_out(self.lifecycle.receive_failed(now=self._now()), error)

    def on_close_frame(self, code: int, reason: str) -> None:
        """The server's close frame arrived; google-genai reports the close a round trip
        later, once the TCP connection is gone. A close we started ourselves (a move, the
        client's close) aside, the connection is lost now, and the next socket is opened
        at once if the loop will reconnect at once (:meth:`LiveRun.dial_after_close`)."""
        self._carry_out(self.lifecycle.close_frame(code, reason, now=self._now()))

    def before_send(
        self, method: str, kwargs: dict[str, Any], *, replay: bool
    ) -> tuple[str, dict[str, Any]] | None:
        if self._history_going:
            # Not recorded, but the server numbers it (Vertex AI's lastConsumedClientMessageIndex)
            self.run.outbox.count_unrecorded()
            self.stall_watch.history_sent(method, kwargs)
            return method, kwargs
        run = self.run
        book = run.tool_calls
        unknown: set[str] = set()
        # (realtime input, every microphone chunk, carries no function responses)
        responses = responses_of(method, kwargs) if method != "send_realtime_input" else ()
        readdress: dict[str, tuple[str, str | None]] = {}
        for response in responses:
            if response.id:
                call_id, result = str(response.id), dict(response.response or {})
                book.on_result(call_id, result)
                repeat = book.take_repeat(call_id)
                if repeat is not None:
                    # A running call's result: the repeat the current session issued gets it.
                    readdress[call_id] = repeat
                    call_id = repeat[0]
                    book.on_result(call_id, result)
                if book.is_unknown(call_id):
                    unknown.add(call_id)
        if readdress:
            logger.debug("sending %d result(s) to the repeated call(s) waiting", len(readdress))
            kwargs = readdressed(method, kwargs, readdress)
        as_turn = {i for i in unknown if book.goes_as_turn(i)}
        turn = self._responses_as_turn(responses, as_turn) if as_turn else None
        if turn is not None and without_responses(method, kwargs, as_turn) is None:
            if self._user_busy():
                # Sent now it would split the utterance: it goes once the user is quiet.
                logger.debug(
                    "holding %d background result(s) until the user is quiet", len(as_turn)
                )
                run.deferred_results.hold(turn, asyncio.get_running_loop().time())
                self._sent(replay)
                return None
            method, kwargs = turn
        elif unknown:
            # The resumed session never saw these calls: a response would confuse it. The
            # replayed user turn makes the model ask again; the result is reused then.
            logger.debug("holding back %d response(s) to calls the session never saw", len(unknown))
            kept = without_responses(method, kwargs, unknown)
            if kept is None:
                self._sent(replay)
                return None
            kwargs = kept
        message = run.outbox.record(method, kwargs)
        self.stall_watch.client_send(message, method, kwargs)
        self._sent(replay)
        if message.audio_ms > 0:
            run.audio_started()
        if self.holds_sends:
            # Kept in the outbox for the next connection; this socket gets nothing more.
            return None
        return method, kwargs

    def _user_busy(self) -> bool:
        """The user speaks, or has an utterance the model has not answered yet."""
        activity = self.run.outbox.activity
        return activity.speaking or activity.unanswered

    def due_sends(self) -> list[tuple[str, dict[str, Any]]]:
        if not self.run.deferred_results or self.holds_sends or self._history_going:
            return []
        now = asyncio.get_running_loop().time()
        due = self.run.deferred_results.due(user_busy=self._user_busy(), now=now)
        for method, kwargs in due:
            logger.debug("giving held background result(s) to the session now")
            self.run.outbox.record(method, kwargs)
        return due

    def _responses_as_turn(
        self, responses: Sequence[types.FunctionResponse], ids: set[str]
    ) -> tuple[str, dict[str, Any]] | None:
        """The responses with ``ids`` as one user turn, for a fresh session whose history
        lacks their calls (a NON_BLOCKING tool that ended after it started); ``None`` where
        the model family takes no turn in mid-session (Gemini 3.1 Live, which also calls
        functions synchronously only)."""
        if not self.run.takes_mid_session_content():
            logger.warning(
                "the result of %d background tool call(s) came after a fresh session started;"
                " a %s session takes no turn in mid-session, so the model does not get it now"
                " (the ADK session has it, for a later fresh session)",
                len(ids),
                self.run.request.model,
            )
            return None
        logger.debug("giving %d background result(s) to the fresh session as a turn", len(ids))
        parts = [types.Part(function_response=r) for r in responses if str(r.id) in ids]
        turn = types.Content(role="user", parts=parts)
        return "send_client_content", {"turns": [turn], "turn_complete": True}

    @property
    def holds_sends(self) -> bool:
        """The connection takes no more client sends: it is being taken down, or the next
        connection is being opened to take over (what is sent now goes to that one, from the
        outbox)."""
        return self.lifecycle.holds_sends

    def stop_sends(self) -> None:
        """The connection is being taken down: what ADK's sender still sends goes to the
        outbox, for the next connection."""
        self.lifecycle.stop_sends()

    def _sent(self, replay: bool) -> None:
        if not replay and self.run.queue_guard is not None:
            self.run.queue_guard.mark_sent()

    def on_client_close(self) -> None:
        self.lifecycle.client_closed()

    # -- send task ------------------------------------------------------------------------

    def on_send_done(self, task: asyncio.Task[None]) -> None:
        if task.cancelled():
            return
        error = task.exception()
        if error is None:
            return  # the queue was closed; ADK closed the connection itself
        # Unblock the receive side, which may be waiting on a socket nobody will answer.
        abort = classify(error) is None
        self._carry_out(self.lifecycle.send_failed(error, abort=abort, now=self._now()))

    # -- the socket -----------------------------------------------------------------------

    def watch_socket(self) -> None:
        """Note the moment the websocket closes, even while ADK is busy (a tool runs), act
        on the server's close frame and goAway as soon as they arrive, and skip messages of
        kinds google-genai does not know before it reads them."""
        websocket = genai_compat.websocket_of(self.session)
        run = self.run
        watching = websockets_compat.watch_frames(
            websocket,
            on_close=self.on_close_frame
            if run.dialer is not None and run.close_frame_dial
            else None,
            on_go_away=self._go_away_frame if run.go_away_frame else None,
            on_message=self._message_arrived if run.go_away_frame else None,
            on_unknown=run.skip_message,
            known=genai_compat.server_message_keys(),
        )
        if watching and run.go_away_frame:
            self.lifecycle.count_frames()  # (the frames ADK's reading has not caught up with)
        wait_closed = getattr(websocket, "wait_closed", None)
        if wait_closed is None:
            return

        async def watch() -> None:
            await wait_closed()
            self.lifecycle.socket_closed(now=self._now())

        self._watcher = asyncio.get_running_loop().create_task(
            watch(), name=f"adk_live_resume socket watch #{self.number}"
        )

    def _stalled(self, stall: Stall) -> None:
        """The session stalled on this connection: end it; the loop recovers."""
        actions = self.lifecycle.stalled(now=self._now())
        if actions:
            self.stall = stall
            self._carry_out(actions)

    def move(self, why: str) -> None:
        """Move the session to a new connection on purpose: open it ahead while this one is
        still open, or close this socket so the loop resumes."""
        self._carry_out(self.lifecycle.move(why))

    def on_next_opened(self, task: asyncio.Task[Any]) -> None:
        """The connection opened ahead is ready (retire this one) or failed (close this one;
        the loop then retries as after a drop)."""
        if task.cancelled():
            return
        error = task.exception()
        if error is not None:
            logger.debug(
                "opening the next connection while the old one was open failed (%r);"
                " closing the old one first from now on",
                error,
            )
        ok = error is None and task.result() is not None
        self._carry_out(self.lifecycle.next_opened(ok=ok, error=error is not None))

    def _retire(self) -> None:
        """The next connection takes over: nothing more of this one reaches ADK."""
        if self.tap is not None:
            self.tap.retire()
        # Closed now, in the background: ADK may not read this connection again for a while
        # (a blocking tool runs), and the server's deadline must not find it open.
        session = self.session
        self.run.closer.close_one(session, lambda: abort_transport(session))

    def close_socket(self, *, abort: bool) -> None:
        if self._closer is not None or self.session is None:
            return
        self._closer = asyncio.get_running_loop().create_task(self._close(abort=abort))

    async def _close(self, *, abort: bool) -> None:
        if not abort:
            try:
                await asyncio.wait_for(self.session.close(), self.run.policy.close_timeout)
                return
            except Exception:  # a broken socket or a silent server: abort below
                pass
        abort_transport(self.session)

    async def finish(self, *, graceful: bool) -> None:
        """Stop timers and make sure the socket is going away; never raises.

        ``graceful`` closes with a close frame (bounded by ``close_timeout``); otherwise, after
        an error or a cancellation, the transport is aborted at once.
        """
        self.stall_watch.stop()
        self._carry_out(self.lifecycle.finish(graceful=graceful))
        if self._watcher is not None:
            self._watcher.cancel()
            await asyncio.wait({self._watcher})
        if self.session is None or self.retired:
            return  # a retired connection is closed in the background
        if not graceful:
            abort_transport(self.session)
        if self._closer is not None and not self._closer.done():
            await asyncio.wait({self._closer}, timeout=self.run.policy.close_timeout + 0.5)
