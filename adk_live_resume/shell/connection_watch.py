"""Per-connection state of a live run, fed by the tap and the send task.

:class:`ConnectionWatch` is the :class:`~adk_live_resume.compat.tap.TapListener` of one connection:
what the tap reports is fed into the run's rules (outbox, handles, tool calls, user
activity). The connection's lifecycle (moving, draining, retired, lost, the goAway deadline)
is a :class:`~adk_live_resume.rules.connection_state.ConnectionState`: the watch feeds it the
events it sees and carries out the actions it returns (timers, opening ahead, closing the
socket). What outlives a connection (handles, the outbox, tool-call bookkeeping, pacing)
belongs to the run, which creates one watch per connection. What the watch learnt reaches
the run one way: the :class:`~adk_live_resume.observe.connection_end.ConnectionReport`
(:meth:`ConnectionWatch.report`) the connection's outcome carries, with the connection's
figures (tokens, answers: :mod:`..conversation.connection_figures`). What the watch needs of its run
is :class:`WatchedRun` (the loop's ``LiveRun`` is one): this module does not import the loop.

Guarantees: nothing here blocks the receive or the send path (a close runs in a task of its
own, bounded by ``close_timeout``, then aborted); :meth:`ConnectionWatch.finish` never raises
and leaves no task behind; handles seen while the session is being moved to a new connection
are ignored (the new one resumes the handle the move began with), and so are handles issued
while the model's reply streams (a resume from one may replay the reply, or drop it).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any, Protocol

from google.genai import types

from ..compat import genai_compat, websockets_compat
from ..compat.tap import SessionTap, parse_time_left
from ..conversation import connection_figures
from ..conversation.activity import near_silent_audio
from ..conversation.context_check import ContextCheck
from ..conversation.late_results import LateResultsWay
from ..conversation.model_work import FrameStatuses, ModelWork, TurnEnd, WorkingLabels
from ..conversation.send_plan import send_way
from ..conversation.unknown_status import UnknownStatusHold
from ..observe.connection_end import ConnectionReport
from ..rules.connection_state import ConnectionState, State
from ..rules.errors import Drop, classify
from ..rules.lifecycle_events import (
    Action,
    Asked,
    CancelTimer,
    CloseSocket,
    MoveOrigin,
    NoteGoAway,
    Retire,
    ServeOn,
    StartTimer,
)
from ..rules.opening_ahead import OpeningAhead
from ..rules.outage import AttemptEnd, EndKind
from ..rules.policy import ResumePolicy
from ..rules.stall_nudge import StallNudge
from ..rules.stall_rule import Stall
from ..rules.wire_classifier import Frame
from .run_rules import RunRules
from .stall_watch import StallWatch
from .tool_traffic import ToolTraffic

logger = logging.getLogger("adk_live_resume.loop")


@dataclass(frozen=True)
class FrameWatching:
    """Which raw frames a connection's watch acts on as they arrive (each a hook of its own,
    see :mod:`..compat.hooks`): the server's close frame (when the next socket can be dialed early)
    and the goAway (its deadline starts with its frame)."""

    close_frame: bool
    go_away: bool


class WatchedRun(Protocol):
    """What a connection's watch needs of its run: its policy and rules, and the run's
    answers to the watch's events."""

    policy: ResumePolicy
    rules: RunRules

    def frame_watching(self) -> FrameWatching: ...

    def lifecycle_action(
        self, watch: ConnectionWatch, action: Action, error: BaseException | None
    ) -> None:
        """Carry out the run's part of ``action``, if it has one (``error``: what reading
        raised); an :class:`OpenAhead` is answered with :meth:`ConnectionWatch.ahead_started`."""
        ...

    def resumption_update(
        self,
        new_handle: str | None,
        resumable: bool | None,
        last_consumed_index: int | None,
        now: float,
        *,
        work_in_progress: bool = False,
    ) -> bool:
        """A handle update arrived: feed it to the rules; return whether the newest handle
        changed. ``work_in_progress``: the model's turn is not finished
        (:attr:`ModelWork.in_progress`): on the Gemini API the handle covers nothing."""
        ...

    def audio_started(self) -> None: ...

    def skip_message(self, frame: Frame) -> None: ...

    def late_results_way(self, count: int) -> LateResultsWay:
        """How the model gets ``count`` tool results that outlived their connection: as
        content now, from a fresh session (the watch then moves the session), or later."""
        ...


class ConnectionWatch:
    """Per-connection state fed by the :class:`SessionTap` and the send task."""

    def __init__(
        self,
        run: WatchedRun,
        number: int,
        *,
        non_blocking: frozenset[str] = frozenset(),
        context_before: int | None = None,
        asked: Asked | None = None,
    ) -> None:
        """``non_blocking``: the functions the request declares NON_BLOCKING (for the stall
        watch: their results may go unanswered); ``context_before``: the latest
        ``promptTokenCount`` of the run before this connection (the context's size then);
        ``asked``: a move asked for that an earlier connection did not begin (this one
        begins it at its first safe point)."""
        self.run = run
        self.number = number
        #: What the connection counts: tokens, answers (:mod:`..conversation.connection_figures`).
        self.figures = connection_figures.new()
        #: What its tool calls and the results it is sent become (:mod:`.tool_traffic`).
        self.results = ToolTraffic(
            run.rules,
            way=run.late_results_way,
            to_fresh_session=lambda why: self.move(why, "run"),
        )
        #: Whether a resumed session kept its context; the reconnect's report waits for it.
        self.context = ContextCheck(
            number, context_before, fresh_start=run.policy.fresh_start_when_context_lost
        )
        self.session: Any = None  # the real google-genai AsyncSession
        #: The connection's lifecycle: fed by this watch, its actions carried out here.
        self.lifecycle = ConnectionState()
        self._restored = False
        if asked is not None:
            self.lifecycle.move_asked(asked, safe=False)
        #: A fresh session's initial history is being sent: part of the session's state from
        #: its setup on (any handle it issues holds it), so it is never recorded for replay.
        self._history_going = False
        #: The model's turn and work (:mod:`..conversation.model_work`), read from each server
        #: message once (:meth:`on_server_message`): whether the model is working (its output
        #: streams, or its ``interactionStatus`` said the task goes on: what the stall watch
        #: reads), whether a ``turnComplete`` finished its turn, whether its reply streams (a
        #: handle issued meanwhile is not taken: :meth:`on_resumption_update`).
        self.work = ModelWork()
        #: ``interactionStatus`` from the raw frames, where google-genai drops it.
        self._frame_statuses = FrameStatuses()
        #: Which frames the watch acts on as they arrive (set when the socket is watched).
        self._watching = FrameWatching(close_frame=False, go_away=False)
        #: Labels what ADK builds of a working utterance (:mod:`..conversation.model_work`).
        self.labels = WorkingLabels()
        self._sdk_status = genai_compat.parses_interaction_status()
        #: An unknown ``interactionStatus`` holds a move for one answer's time at most.
        self._unknown = UnknownStatusHold(
            self.work,
            run.policy.stall_timeout,
            lambda: self._carry_out(self.lifecycle.handle_changed(safe=self.at_safe_point())),
        )
        self.tap: SessionTap | None = None
        self._timer: asyncio.TimerHandle | None = None
        #: The sends held for the connection opened ahead; its failures (:class:`ServeOn`).
        self.ahead = OpeningAhead(number, run.policy)
        self._closer: asyncio.Task[None] | None = None
        self._watcher: asyncio.Task[None] | None = None
        #: ``(text, what ADK gets of it)`` for the input transcription just handled.
        self._input_shown: tuple[str, str] | None = None
        #: The stall seen on this connection, which ended it (``None``: none).
        self.stall: Stall | None = None
        #: Its setup carried a handle; ``loop.time()`` it was set up (``None``: not yet).
        self.resumed = False
        self.connected_at: float | None = None
        #: The model answered on it: model output (text, audio, its transcription) or a
        #: tool call. What makes a connection progress (:mod:`..rules.outage`).
        self.answered = False
        #: ``loop.time()`` of its latest traffic: a client send or model output.
        self._last_traffic: float | None = None
        #: The nudge a silence gets first (``stall_nudge``), once.
        self._nudge = StallNudge(number, run.policy.close_timeout)
        self.stall_watch = StallWatch(
            run.policy.stall_timeout,
            run.policy.degenerate_turns,
            on_stall=self._stalled,
            user_speaking=lambda: run.rules.outbox.activity.speaking,
            model_working=lambda: self.work.working,
            reader_behind=lambda: self.lifecycle.unread_frames,
            non_blocking=non_blocking,
        )

    def attach(self, session: Any, tap: SessionTap, *, resumed: bool = False) -> None:
        """The connection is established: ``session`` is its google-genai session, ``tap``
        the tap under ADK's connection that reports to this watch; ``resumed``: its setup
        carried a handle."""
        self.session = session
        self.tap = tap
        self.resumed = resumed
        self.connected_at = self._last_traffic = self._now()
        self.run.rules.outbox.activity.on_new_connection()
        self.stall_watch.start()

    def report(self) -> ConnectionReport:
        """What this connection learnt so far (all of it, once it is over)."""
        lifecycle = self.lifecycle
        return ConnectionReport(
            number=self.number,
            resumed=self.resumed,
            stall=self.stall,
            moved_why=lifecycle.why_moved,
            move_origin=lifecycle.move_origin,
            move_by=lifecycle.deadline,
            turn_open=self.work.turn_open,
            lost_at=lifecycle.lost_at,
            answered=self.answered,
            stall_answers=self.stall_watch.answers,
            connected_at=self.connected_at,
            last_traffic=self._last_traffic,
            asked=lifecycle.asked,
            context_restored=self.context.verdict,
            figures=self.figures.figures(),
        )

    def attempt_end(
        self,
        kind: EndKind,
        *,
        drop: Drop | None,
        resumed: bool,
        now: float,
        at_connect: bool = False,
    ) -> AttemptEnd:
        """How this connection ended (``kind``, the close ``drop``), as the decision about
        what follows reads it (:meth:`ConnectionReport.attempt_end`)."""
        return self.report().attempt_end(
            kind, drop=drop, resumed=resumed, now=now, at_connect=at_connect
        )

    def _model_answered(self) -> float:
        self.answered = True
        now = self._last_traffic = self._now()
        return now

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
        """Do what the lifecycle asked for, in order (``error``: what reading raised): each
        action goes to the run once (its part, if any: :meth:`LiveRun.lifecycle_action`),
        then the watch does its own."""
        run = self.run
        for action in actions:
            run.lifecycle_action(self, action, error)
            match action:
                case NoteGoAway(time_left=time_left, delay=delay):
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
                case CloseSocket(abort=abort):
                    self.close_socket(abort=abort)
                case Retire():
                    # (nothing more of this one reaches ADK; the run closes it in the
                    # background: ADK may not read it again for a while, a blocking tool
                    # runs, and the server's deadline must not find it open)
                    if self.tap is not None:
                        self.tap.retire()
                case ServeOn(wait=wait):
                    self.ahead.serve_on(
                        wait,
                        self.tap.send_held if self.tap is not None else None,
                        holding=lambda: self.holds_sends,
                        failed=self._send_failed,
                        retry=lambda: self._carry_out(
                            self.lifecycle.retry_move(safe=self.at_safe_point())
                        ),
                    )

    def ahead_started(self, started: bool) -> None:
        """The run's answer to an :class:`OpenAhead`: whether opening the next connection
        ahead started."""
        self._carry_out(self.lifecycle.ahead_started(started))

    # -- TapListener ----------------------------------------------------------------------

    def on_server_message(self, message: types.LiveServerMessage) -> None:
        raw_status = self._frame_statuses.read()
        self.labels.message_read()
        content = message.server_content
        status = getattr(content, "interaction_status", None) if self._sdk_status else raw_status
        end = self.work.read(message, status)
        if message.usage_metadata is not None:
            self._usage(message.usage_metadata)
        self._note_content(content, end)
        cancellation = message.tool_call_cancellation
        if cancellation is not None and cancellation.ids:
            self.on_tool_calls_cancelled(tuple(str(i) for i in cancellation.ids))
        # (a retirement lets this message, and its handle, still reach the loop and ADK)
        self._carry_out(self.lifecycle.message_read(turn_open=self.work.turn_open))
        self.stall_watch.server_message(message)

    def on_frame(self, frame: Frame) -> None:
        """A frame arrived on the socket, told by the frame watch
        (:func:`..compat.websockets_compat.watch_frames`) before ADK reads it, possibly while ADK is
        busy (a blocking tool runs inside its receive step): acted on by its kind, where the
        run watches for it (:meth:`LiveRun.frame_watching`)."""
        kind = frame.kind
        if kind == "unknown":
            self.run.skip_message(frame)
            return
        if kind == "close":
            if self._watching.close_frame:
                code = frame.close_code
                self.on_close_frame(1005 if code is None else code, frame.close_reason)
            return
        if self._watching.go_away:
            self.lifecycle.frame_arrived()
            if frame.speech_state is not None:
                self._speech_state(frame.speech_state)
            if not self._sdk_status:
                self._frame_statuses.arrived(frame.interaction_status)
            if kind == "go_away":
                self.on_go_away_frame(parse_time_left(frame.time_left))
        if frame.cancelled_ids:
            self.on_tool_calls_cancelled(frame.cancelled_ids)

    def _note_content(self, content: types.LiveServerContent | None, end: TurnEnd | None) -> None:
        """Tell the outbox and the figures what ``content`` carries (``end``: what its
        ``turnComplete`` ended, as :attr:`work` read it)."""
        if content is None:
            return
        outbox = self.run.rules.outbox
        figures = self.figures
        for part in (content.model_turn.parts or []) if content.model_turn else []:
            if part.text and not part.thought:
                outbox.model_text(part.text)
                told = len(part.text)
            else:
                outbox.model_audio(voiced=not near_silent_audio(part))
                told = 0
            figures.output(self._model_answered(), told)
        if content.output_transcription and content.output_transcription.text:
            outbox.model_text(content.output_transcription.text)
            figures.output(self._model_answered(), len(content.output_transcription.text))
        if content.input_transcription and content.input_transcription.text:
            text = content.input_transcription.text
            self._input_shown = (text, outbox.input_text(text))
        if content.interrupted:
            outbox.interrupted()
        if content.turn_complete or content.interrupted:
            figures.answer_ended(self._now(), interrupted=not content.turn_complete)
        if end is None:
            return
        if end.finished:
            self._turn_finished(answered=end.had_output)
        else:
            # (an utterance the model ends while its work goes on answers nothing yet)
            outbox.work_goes_on()
            self.labels.work_goes_on(self.work.status)
        self._unknown.turn_complete()
        self._turn_ended()

    def _turn_finished(self, *, answered: bool) -> None:
        """The model's turn is finished (``answered``: with output in it): what it answered is
        answered."""
        self.run.rules.outbox.turn_complete()
        if answered:
            self.run.rules.tool_calls.on_answered()
            self.hold_late_results()

    def _speech_state(self, state: str) -> None:
        """The server's ``speechState``, as its frame arrives (no google-genai parses it):
        whether the user speaks (:meth:`UserActivity.on_speech_state`); ``NON_SPEECH`` also
        starts the stall clock for the utterance, which the server now owes an answer."""
        self.run.rules.outbox.activity.on_speech_state(state)
        if state == "NON_SPEECH":
            self.stall_watch.utterance_ended()

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
        speaking and has no utterance waiting for its answer
        (:meth:`RunRules.at_safe_point`), and the model's last ``interactionStatus`` did not
        say its work goes on nor was of an unknown kind less than one answer's time ago
        (:attr:`ModelWork.holds_move`). The last holds on its own where
        the server cut an answer (``interrupted``) while the work goes on: the cut counts as
        taking the request in, though the handle issued during the work does not hold it."""
        return self.run.rules.at_safe_point() and not self.work.holds_move

    def on_resumption_update(
        self, new_handle: str | None, resumable: bool | None, last_consumed_index: int | None
    ) -> None:
        # (Also while the next connection is being opened: a newer handle makes the loop
        # discard that connection, opened with an older one, and open one with the newest.)
        if new_handle and self.work.reply_streams:
            # A session resumed from a handle issued while a reply streams may replay that
            # reply before its next answer (Omi probes, pydantic-ai PR 7379; notes, "Field
            # facts of 2026-11-29"), or not continue it at all: either way the newest
            # handle stays the one from before the reply, whose resume asks again.
            logger.debug("a handle issued while the model's reply streams is not taken")
            return
        changed = self.run.resumption_update(
            new_handle,
            resumable,
            last_consumed_index,
            self._now(),
            work_in_progress=self.work.in_progress,
        )
        if changed and self.lifecycle.move_pending:
            self._carry_out(self.lifecycle.handle_changed(safe=self.at_safe_point()))

    # -- what the connection counts, and the moves asked for --------------------------------

    def _usage(self, metadata: types.UsageMetadata) -> None:
        """A ``usageMetadata`` arrived: counted; the first prompt count on a resumed
        connection tells whether the session kept its context
        (:mod:`..conversation.context_check`)."""
        usage = self.figures.usage(metadata)
        if usage.prompt_tokens and self.context.prompt(usage.prompt_tokens):
            self.ask_move(Asked("the context was lost on resume", "run", fresh=True))

    def _turn_ended(self) -> None:
        """A ``turnComplete`` was read: a reconnect's report waits no longer than two turns
        without usage (the service sends none in this mode), and an asked move may begin."""
        self.context.turn_ended(self.figures.turns_since_usage)
        if self.lifecycle.asked is not None and self.at_safe_point():
            self._carry_out(self.lifecycle.safe_point())

    def ask_move(self, asked: Asked) -> bool:
        """Move the session off this connection at its next safe point (now, if it is one
        and the connection is restored), as ``asked``; ``False``: this connection takes no
        asked move (one began or is asked already, or it is closed, stalled, lost or over):
        the caller keeps it for the next."""
        if not self.lifecycle.takes_asks:
            return False
        safe = self._restored and self.at_safe_point()
        self._carry_out(self.lifecycle.move_asked(asked, safe=safe))
        return True

    def restored(self) -> None:
        """The session is restored on the connection (its history or replay sent): a move
        asked for meanwhile begins now if this is a safe point."""
        self._restored = True
        if self.lifecycle.asked is not None and self.at_safe_point():
            self._carry_out(self.lifecycle.safe_point())

    async def on_tool_calls(self, calls: list[types.FunctionCall]) -> list[types.FunctionCall]:
        self.figures.output(self._model_answered())
        self.figures.tool_call(len(calls))
        return await self.results.calls(calls, self.tap.replay if self.tap is not None else None)

    def on_tool_calls_cancelled(self, ids: tuple[str, ...]) -> None:
        """The server cancelled the calls ``ids`` (new input arrived while they ran): their
        responses are not sent, told late, or given to a repeat. Seen as the frame arrives
        (ADK, which may run a blocking tool inside its receive step, can send the response
        before it reads the cancellation), and again when ADK reads it."""
        if self.run.rules.tool_calls.on_cancelled(ids):
            logger.debug("the server cancelled %d tool call(s); their results stay here", len(ids))

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
        now = self._last_traffic = self._now()
        way = send_way(method, history_going=self._history_going)
        if way == "unknown":
            # Passed through by the tap, unrecorded; the server numbers it all the same, and
            # a new session may lack it (a WARNING says so then).
            self.run.rules.outbox.count_unrecorded()
            self.run.rules.outbox.context.on_unknown(method)
            return None
        if way == "history":
            # Not recorded, but the server numbers it (Vertex AI's lastConsumedClientMessageIndex)
            self.run.rules.outbox.count_unrecorded()
            self.stall_watch.history_sent(method, kwargs)
            return method, kwargs
        run = self.run
        rules = run.rules
        rewritten = self.results.rewrite(method, kwargs)
        if rewritten is None:
            self._sent(replay)
            return None
        method, kwargs = rewritten
        message = rules.outbox.record(method, kwargs)
        self.stall_watch.client_send(message, method, kwargs)
        if message.voiced or message.user_text is not None:
            self.figures.user_turn(now)
        self._sent(replay)
        if message.audio_ms > 0:
            run.audio_started()
        # (kept in the outbox for the next connection: this socket gets nothing more, but
        # for the sends held for one opened ahead that fails for now, see OpeningAhead)
        if self.ahead.holds(method, kwargs, for_next=self.lifecycle.opening_ahead):
            return None
        return None if self.holds_sends else (method, kwargs)

    def due_sends(self) -> list[tuple[str, dict[str, Any]]]:
        rules = self.run.rules
        if not rules.deferred_results or self.holds_sends or self._history_going:
            return []
        now = asyncio.get_running_loop().time()
        due = rules.deferred_results.due(user_busy=rules.user_busy(), now=now)
        for method, kwargs in due:
            logger.debug("giving held background result(s) to the session now")
            rules.outbox.record(method, kwargs)
        return due

    def hold_late_results(self) -> None:
        """Results that outlived their connection go to the session as content once the
        user is quiet (:meth:`ToolTraffic.hold_late`)."""
        self.results.hold_late()

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
        guard = self.run.rules.queue_guard
        if not replay and guard is not None:
            guard.mark_sent()

    def on_client_close(self) -> None:
        self.lifecycle.client_closed()

    # -- send task ------------------------------------------------------------------------

    def on_send_done(self, task: asyncio.Task[None]) -> None:
        if task.cancelled():
            return
        error = task.exception()
        if error is None:
            return  # the queue was closed; ADK closed the connection itself
        self._send_failed(error)  # (the receive side may wait on a socket nobody answers)

    # -- the socket -----------------------------------------------------------------------

    def watch_socket(self) -> None:
        """Note the moment the websocket closes, even while ADK is busy (a tool runs), act
        on the server's close frame and goAway as soon as they arrive, and skip messages of
        kinds google-genai does not know before it reads them."""
        websocket = genai_compat.websocket_of(self.session)
        run = self.run
        frames = run.frame_watching()
        if frames.go_away:  # (the frames ADK's reading has not caught up with, counted)
            self.lifecycle.count_frames()
            self._frame_statuses.start()
        self._watching = frames
        websockets_compat.watch_frames(websocket, self, known=genai_compat.server_message_keys())
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
        """The session stalled on this connection: end it; the loop recovers. A silence is
        first nudged, once per connection, where ``ResumePolicy.stall_nudge`` asks for it."""
        if (
            stall.kind == "silence"
            and self.run.policy.stall_nudge
            and not self._nudge.sent
            and self.session is not None
            and not self.holds_sends
        ):
            logger.info(
                "no answer on connection %d (%s): nudging the model once before recovering",
                self.number,
                stall.seen,
            )
            self._nudge.send(
                self.session, stall, answered=self.stall_watch.nudged, failed=self._end_stalled
            )
            return
        self._end_stalled(stall)

    def _end_stalled(self, stall: Stall) -> None:
        actions = self.lifecycle.stalled(now=self._now())
        if actions:
            self.stall = stall
            self._carry_out(actions)

    def move(self, why: str, origin: MoveOrigin = "go_away") -> None:
        """Move the session to a new connection on purpose: open it ahead while this one is
        still open, or close this socket so the loop resumes."""
        self._carry_out(self.lifecycle.move(why, origin))

    def on_next_opened(self, task: asyncio.Task[Any]) -> None:
        """The connection opened ahead is ready (retire this one) or failed: what follows
        is :func:`~adk_live_resume.rules.opening_ahead.failure_of`'s (close this one, or serve on
        and try the move again later)."""
        if task.cancelled():
            return
        error = task.exception()
        if error is None:
            self._carry_out(self.lifecycle.next_opened(ok=task.result() is not None))
            return
        failure = self.ahead.failed(error)
        self._carry_out(
            self.lifecycle.next_opened(ok=False, refused=failure.refused, retry_in=failure.retry_in)
        )

    def _send_failed(self, error: BaseException) -> None:
        abort = classify(error) is None
        self._carry_out(self.lifecycle.send_failed(error, abort=abort, now=self._now()))

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
        genai_compat.abort_transport(self.session)

    async def finish(self, *, graceful: bool) -> None:
        """Stop timers and make sure the socket is going away; never raises.

        ``graceful`` closes with a close frame (bounded by ``close_timeout``); otherwise, after
        an error or a cancellation, the transport is aborted at once.
        """
        self.stall_watch.stop()
        self._unknown.stop()
        await self._nudge.stop()
        self.context.ended()
        self._carry_out(self.lifecycle.finish(graceful=graceful))
        await self.ahead.stop()
        if self._watcher is not None:
            self._watcher.cancel()
            await asyncio.wait({self._watcher})
        if self.session is None or self.retired:
            return  # a retired connection is closed in the background
        if not graceful:
            genai_compat.abort_transport(self.session)
        if self._closer is not None and not self._closer.done():
            await asyncio.wait({self._closer}, timeout=self.run.policy.close_timeout + 0.5)
