"""How users see what the live loop does: callbacks, log lines, OpenTelemetry.

* :func:`on_reconnect`: every completed reconnect of any patched live run calls each callback
  with a :class:`ReconnectInfo` (plain or ``async`` callbacks).
* :func:`on_run_end`: every patched live run, however it ends, calls each callback once with
  its :class:`RunStats` (connections, goAways, fresh starts, replays, dropped audio, tokens,
  how fast the model answered...), made from the typed :class:`RunCounters` the loop hands
  :func:`run_ended` and the :class:`~.connection_end.ConnectionReport` of each
  of its connections (:func:`connection_ended` turns the figures of each into OpenTelemetry
  signals as it ends).
* :func:`on_before_move`: every planned move (a ``goAway``, a move asked for) calls each
  hook with a :class:`MoveNotice` before the old connection is given up.
* Logs on the ``adk_live_resume`` logger: one INFO line per reconnect; one INFO line per
  failed connection attempt with the wait before the next; one WARNING with the cause when a
  run gives up (:class:`~adk_live_resume.ReconnectFailedError` or
  :class:`~adk_live_resume.SessionNotResumableError`); one INFO line, once per model class,
  when a model is not ADK's ``Gemini`` and the original ``run_live`` runs unchanged; the
  run's counters at DEBUG when it ends.
* OpenTelemetry span events and metrics (:mod:`adk_live_resume.observe.telemetry`).

A callback that raises is logged and ignored: it never breaks the conversation. An ``async``
callback is started as a task on the running event loop (not awaited by the live loop).
"""

from __future__ import annotations

import asyncio
import dataclasses
import inspect
import logging
import math
import threading
import time
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal, TypeVar

from ..conversation.token_usage import TokenUsage, total
from . import telemetry

if TYPE_CHECKING:
    from ..rules.next_step import Step
    from ..rules.outage import AttemptEnd
    from .connection_end import ConnectionReport

logger = logging.getLogger("adk_live_resume")
#: The live loop's logger: what follows each end is told on it.
_loop_logger = logging.getLogger("adk_live_resume.loop")

ReconnectReason = Literal["drop", "go_away", "restart", "stall", "requested"]


@dataclass(frozen=True)
class ReconnectInfo:
    """One completed reconnect of a live run."""

    #: ``"drop"`` (the socket was lost), ``"go_away"`` (planned, after the server's goAway),
    #: ``"stall"`` (the session stalled on an open socket: resumed, or started fresh when
    #: ``state_restored`` is false; :attr:`stall` says what was seen),
    #: ``"requested"`` (the app asked for it: :func:`~adk_live_resume.request_move`, or
    #: :func:`~adk_live_resume.request_fresh_start` when ``state_restored`` is false; :attr:`cause`
    #: is the app's reason), or ``"restart"`` (a fresh start: a new live session without the
    #: old state, its history rebuilt from the ADK session; also the one the run starts on its
    #: own after a lost context). ``"restart"`` stays this value's spelling in this release,
    #: as hooks and dashboards compare against it; it is to become ``"fresh_start"`` in a later
    #: release, announced in the changelog first.
    reason: ReconnectReason
    #: Connection attempts this outage took (1 = the first try worked).
    attempt: int
    #: Milliseconds from losing the old connection to the new one being ready.
    gap_ms: float
    #: Whether the server restored the session from a handle (``False``: fresh session).
    state_restored: bool
    #: How the old connection ended, e.g. ``"1011 Deadline expired"``, or why it was moved
    #: (``"goAway at a safe point"``; for a move the app asked for, the app's reason).
    cause: str
    agent_name: str
    invocation_id: str
    session_id: str
    #: Connections this run has opened so far, the new one included.
    connection_number: int
    #: Client messages sent again on the new connection (user turns, audio, tool responses).
    replayed_messages: int = 0
    #: Voiced user audio (ms, speech) that left the replay window uncovered since the
    #: previous reconnect, so was not replayed: what the user said that the model lost.
    dropped_audio_ms: float = 0.0
    #: Unvoiced user audio (ms: silence, room noise) that left it the same way; nothing
    #: said was lost with it.
    dropped_silence_ms: float = 0.0
    #: Video and image frames that left uncovered since the previous reconnect and were
    #: not sent again: older than the frame window (``ResumePolicy.replay_frames``), seen
    #: in an exchange the model finished (it goes back as text), or before a fresh start.
    dropped_frames: int = 0
    #: For ``reason == "stall"``: what was seen, e.g. ``"no answer 15.0 s after a typed
    #: turn"`` or ``"3 turns in a row answered with nothing (last: turnCompleteReason
    #: RESPONSE_REJECTED)"``; ``""`` otherwise.
    stall: str = ""
    #: How the end that made this connection was read, when it was one of the ways the
    #: service says no: ``"quota"`` (a close saying a quota is spent: this was the
    #: confirming attempt, or the wait a retry hook chose), ``"idle_close"`` (1008 on a
    #: quiet connection: the handle tried once), ``"refused_handle"`` (the server refused
    #: the handle: a fresh start), ``"poisoned_handle"`` (two resumes in a row died the same
    #: way before any answer: a fresh start, the handle left behind), ``"stall"``; ``""``
    #: for an ordinary drop or a move.
    failure_class: str = ""
    #: What the service counted on the connection the session left (its ``usageMetadata``,
    #: summed; ``None``: it sent none there).
    usage: TokenUsage | None = None
    #: Whether the resumed session kept its context: its first ``promptTokenCount`` compared
    #: with the last before the reconnect (each counts the whole context): ``False`` when it
    #: fell below half (the model forgot the conversation; a WARNING says what to do),
    #: ``True`` when it did not, ``None`` when there is no usage to tell (a fresh start, a
    #: service that sends none). This report waits until it is known: see
    #: :func:`on_reconnect`.
    context_restored: bool | None = None


@dataclass(frozen=True)
class RunStats:
    """The counters of one patched live run, reported once when it ends."""

    agent_name: str
    invocation_id: str
    session_id: str
    #: Connections opened (1 = never reconnected).
    connections: int
    #: goAway messages received from the server.
    go_aways: int
    #: Fresh sessions started without the old state (conversation rebuilt from ADK's session).
    fresh_starts: int
    #: Times the conversation history was sent to a fresh session.
    history_sends: int
    #: Client messages sent again on a new connection.
    replayed_messages: int
    #: Requests the sender had taken off the queue when a socket died, sent on the next one.
    requests_recovered: int
    #: Tool calls answered from an earlier result instead of running the tool again.
    tool_calls_reused: int
    #: Voiced user audio (ms, speech) that left the replay window uncovered, over the run.
    dropped_audio_ms: float
    #: Unvoiced user audio (ms: silence, room noise) that left it uncovered, over the run.
    dropped_silence_ms: float = 0.0
    #: The most user audio (ms) held for replay at once: at most 1.25 x
    #: (``replay_audio_seconds`` + ``max_utterance_seconds``) plus one chunk.
    peak_replay_audio_ms: float = 0.0
    #: The most entries held for replay at once: client messages (audio chunks, turns,
    #: responses) and the server facts kept beside them (model text, transcriptions).
    peak_replay_messages: int = 0
    #: Video and image frames that left the frame window uncovered, over the run, and the
    #: most frames held for replay at once (at most ``replay_frames`` and a quarter more).
    dropped_frames: int = 0
    peak_replay_frames: int = 0
    #: Microphone chunks put on the wire as the SDK's own encoding of them, learnt once per
    #: run (:mod:`adk_live_resume.compat.chunk_encoding`); the other sends went through the SDK.
    chunks_encoded: int = 0
    #: Server messages read into google-genai's types by pydantic's JSON validation, checked
    #: to read as the SDK's own reading does (:mod:`adk_live_resume.compat.message_decoding`);
    #: the others were read by the SDK.
    messages_decoded: int = 0
    #: Sockets opened ahead of a reconnect (:mod:`adk_live_resume.shell.early_dial`), and how many
    #: of them a connection used (the others were closed unused).
    sockets_dialed_early: int = 0
    early_sockets_used: int = 0
    #: Server messages of kinds google-genai does not know, skipped before it read them
    #: (each kind is named once per run in a WARNING); the conversation went on.
    unknown_messages_skipped: int = 0
    #: Unknown keys among them that were not named, because a run names at most 32 kinds
    #: (a kind past that counts each time it comes).
    unknown_kinds_unnamed: int = 0
    #: Stalls seen (the socket open, no answer: see ``ResumePolicy.stall_timeout`` and
    #: ``degenerate_turns``), and how many of their recoveries were fresh starts (the others
    #: resumed; a run that stalled past its last step ended with ``SessionStalledError``).
    stalls: int = 0
    stall_fresh_starts: int = 0
    #: What the service counted over the run (its ``usageMetadata``, each per turn, summed as
    #: sent); ``None`` when it sent none.
    usage: TokenUsage | None = None
    #: The same for each connection, in order (``None`` for one where it sent none).
    usage_by_connection: tuple[TokenUsage | None, ...] = ()
    #: Resumes after which the session had lost its context (see
    #: :attr:`ReconnectInfo.context_restored`).
    contexts_lost: int = 0
    #: Answers to user turns, and the 50th and 95th percentile of their time to first output
    #: (ms from the user turn: a typed turn sent, the last voiced microphone audio, to the
    #: first model output: text, audio, its transcription or a tool call); ``None`` without
    #: answers.
    answers: int = 0
    first_output_p50_ms: float | None = None
    first_output_p95_ms: float | None = None
    #: Function calls the model asked for, summed over the connections (a call asked again
    #: after a reconnect counts again; :attr:`tool_calls_reused` says how many of those
    #: were answered from an earlier result).
    tool_calls: int = 0
    #: ``None`` for a normal end, else the exception that ended the run, e.g.
    #: ``"ReconnectFailedError: gave up reconnecting..."`` (``"cancelled"`` when the consumer
    #: stopped iterating).
    error: str | None = None

    @property
    def reconnects(self) -> int:
        """Connections after the first."""
        return max(0, self.connections - 1)


ReconnectCallback = Callable[[ReconnectInfo], Awaitable[None] | None]
RunEndCallback = Callable[[RunStats], Awaitable[None] | None]
_Callback = TypeVar("_Callback", bound=Callable[..., Any])

_lock = threading.Lock()
_callbacks: list[ReconnectCallback] = []
_run_callbacks: list[RunEndCallback] = []
_background: set[asyncio.Task[Any]] = set()


def _register(registry: list[_Callback], callback: _Callback, what: str) -> Callable[[], None]:
    if not callable(callback):
        raise TypeError(
            f"{what}() needs a function that takes one argument, not "
            f"{type(callback).__name__} {callback!r}"
        )
    with _lock:
        registry.append(callback)

    def remove() -> None:
        with _lock:
            if callback in registry:
                registry.remove(callback)

    return remove


def on_reconnect(callback: ReconnectCallback) -> Callable[[], None]:
    """Call ``callback`` after every reconnect; return a function that unregisters it.

    The call comes once the new connection is restored and it is known whether the session
    kept its context (:attr:`ReconnectInfo.context_restored`): for a resume after the run saw
    a prompt count, at the resumed session's first one (the end of its first answer), or
    after two answers without one, or when that connection ends, whichever comes first; for
    any other reconnect, as soon as the new connection is restored. ``callback`` may be a
    plain function or an ``async`` one. Raises :class:`TypeError` at once if it is not
    callable.
    """
    return _register(_callbacks, callback, "on_reconnect")


def on_run_end(callback: RunEndCallback) -> Callable[[], None]:
    """Call ``callback`` with the :class:`RunStats` of every patched live run when it ends;
    return a function that unregisters it. Plain or ``async``; not callable: :class:`TypeError`.
    """
    return _register(_run_callbacks, callback, "on_run_end")


def _call_all(registry: list[_Callback], value: object) -> None:
    with _lock:
        callbacks = list(registry)
    for callback in callbacks:
        try:
            result = callback(value)
            if inspect.isawaitable(result):
                task = asyncio.ensure_future(result)
                _background.add(task)
                task.add_done_callback(_callback_done)
        except Exception:
            logger.exception("callback %r failed; ignored", callback)


def _callback_done(task: asyncio.Task[Any]) -> None:
    _background.discard(task)
    if not task.cancelled() and task.exception() is not None:
        logger.error("async callback failed; ignored", exc_info=task.exception())


def report(info: ReconnectInfo) -> None:
    """Log ``info`` at INFO on ``adk_live_resume`` and call the registered callbacks."""
    logger.info(
        "live session %s reconnected: reason=%s attempt=%d gap=%.0fms state_restored=%s "
        "cause=%r agent=%s connection=%d replayed=%d dropped_audio=%.0fms"
        " dropped_silence=%.0fms dropped_frames=%d%s",
        info.session_id,
        info.reason,
        info.attempt,
        info.gap_ms,
        info.state_restored,
        info.cause,
        info.agent_name,
        info.connection_number,
        info.replayed_messages,
        info.dropped_audio_ms,
        info.dropped_silence_ms,
        info.dropped_frames,
        f" failure_class={info.failure_class}" if info.failure_class else "",
    )
    telemetry.record_reconnect(
        {
            "adk_live_resume.reason": info.reason,
            "adk_live_resume.attempt": info.attempt,
            "adk_live_resume.gap_ms": info.gap_ms,
            "adk_live_resume.state_restored": info.state_restored,
            "adk_live_resume.cause": info.cause,
            "adk_live_resume.connection_number": info.connection_number,
            "adk_live_resume.replayed_messages": info.replayed_messages,
            "adk_live_resume.dropped_audio_ms": info.dropped_audio_ms,
            "adk_live_resume.dropped_silence_ms": info.dropped_silence_ms,
            "adk_live_resume.dropped_frames": info.dropped_frames,
            **({"adk_live_resume.stall": info.stall} if info.stall else {}),
            **({"adk_live_resume.failure_class": info.failure_class} if info.failure_class else {}),
            **(
                {"adk_live_resume.context_restored": info.context_restored}
                if info.context_restored is not None
                else {}
            ),
            **_usage_attributes(info.usage),
        }
    )
    _call_all(_callbacks, info)


def _usage_attributes(usage: TokenUsage | None) -> dict[str, int]:
    """The left connection's token counts as span attributes (none without usage)."""
    if usage is None:
        return {}
    return {
        "adk_live_resume.prompt_tokens": usage.prompt_tokens,
        "adk_live_resume.response_tokens": usage.response_tokens,
        "adk_live_resume.total_tokens": usage.total_tokens,
    }


class PendingReconnect:
    """A reconnect's report that waits to be told whether the session kept its context
    (:attr:`ReconnectInfo.context_restored`); told once, later calls do nothing."""

    def __init__(self, info: ReconnectInfo) -> None:
        self._info: ReconnectInfo | None = info

    def tell(self, context_restored: bool | None) -> None:
        """Report the reconnect (log line, OpenTelemetry, callbacks), once."""
        info, self._info = self._info, None
        if info is not None:
            report(dataclasses.replace(info, context_restored=context_restored))


def step_taken(
    end: AttemptEnd,
    step: Step,
    *,
    session_id: str,
    agent_name: str,
    max_attempts: int,
    handle: str,
) -> None:
    """Say what follows ``end`` (an :class:`~adk_live_resume.rules.outage.AttemptEnd`): ``step`` (a
    :data:`~adk_live_resume.rules.next_step.Step`). A WARNING per stall and per handle left behind
    because resumes of it kept failing, an INFO line per other handle left behind, per close
    read as a spent quota or an idle close, and per failed attempt (:func:`attempt_failed`);
    nothing for a give-up (the run's end says it) or a move. ``handle`` must be redacted."""
    from ..rules.next_step import FreshStart, GiveUp

    if isinstance(step, GiveUp):
        return
    fresh = step if isinstance(step, FreshStart) else None
    if end.kind == "stall":
        _loop_logger.warning(
            "live session %s of agent %s stalled on an open connection (%s); %s",
            session_id,
            agent_name,
            end.what,
            "starting a fresh session with the conversation rebuilt"
            if fresh is not None
            else "resuming from the newest handle with the unanswered input replayed",
        )
        return
    if end.kind != "drop":
        return
    if fresh is not None and fresh.failure == "poisoned_handle":
        _loop_logger.warning(
            "live session %s of agent %s: %s; starting a fresh session with the conversation"
            " so far (the handle is left behind)",
            session_id,
            agent_name,
            fresh.why,
        )
    elif fresh is not None and fresh.abandons:
        _loop_logger.info("%s; starting a fresh session with the conversation so far", fresh.why)
    elif step.failure in ("quota", "idle_close"):
        _loop_logger.info(
            "the service closed the connection (%s): read as %s; trying %s once",
            end.describe(),
            "a spent quota" if step.failure == "quota" else "an idle close",
            "another connection" if step.failure == "quota" else "the handle",
        )
    outage = step.outage
    attempt = outage.attempts if outage is not None else 1
    attempt_failed(end.describe(), attempt, max_attempts, step.wait, handle)


def attempt_failed(cause: str, attempt: int, max_attempts: int, wait: float, handle: str) -> None:
    """One INFO line per failed connection: why, which attempt comes next, after what wait.

    ``handle`` must already be redacted.
    """
    logger.info(
        "live connection lost (%s); reconnect attempt %d of %d in %.3f s with handle %s",
        cause,
        attempt,
        max_attempts,
        wait,
        handle,
    )


@dataclass(frozen=True)
class RunCounters:
    """What the live loop hands :func:`run_ended`: the run's own counters, and the report of
    each of its connections (in order) that the per-connection figures come from."""

    agent_name: str
    invocation_id: str
    session_id: str
    go_aways: int
    fresh_starts: int
    history_sends: int
    replayed_messages: int
    requests_recovered: int
    tool_calls_reused: int
    dropped_audio_ms: float
    dropped_silence_ms: float
    peak_replay_audio_ms: float
    peak_replay_messages: int
    dropped_frames: int
    peak_replay_frames: int
    chunks_encoded: int
    messages_decoded: int
    sockets_dialed_early: int
    early_sockets_used: int
    unknown_messages_skipped: int
    unknown_kinds_unnamed: int
    stalls: int
    stall_fresh_starts: int
    #: How the latest end was, in words (for the give-up signals).
    last_cause: str
    #: Each connection that was set up, in order.
    connections: tuple[ConnectionReport, ...] = ()


#: The :class:`RunStats` fields a :class:`RunCounters` field of the same name fills.
_COPIED = frozenset(f.name for f in dataclasses.fields(RunStats)) - {"connections"}


def run_ended(counters: RunCounters, error: BaseException | None) -> None:
    """Report the end of a live run: its :class:`RunStats` to the callbacks and at DEBUG; a
    WARNING with the cause (and OpenTelemetry signals) if it gave up.

    ``counters`` are the run's (:class:`RunCounters`); ``error`` is the exception ending it,
    if any.
    """
    from ..rules.errors import ReconnectFailedError, SessionNotResumableError

    described: str | None = None
    if isinstance(error, (asyncio.CancelledError, GeneratorExit)):
        described = "cancelled"
    elif error is not None:
        described = f"{type(error).__name__}: {error}"
    reports = counters.connections
    by_connection = tuple(report.figures.usage for report in reports)
    firsts = sorted(a.first_output_ms for r in reports for a in r.figures.answers)
    stats = RunStats(
        **{
            f.name: getattr(counters, f.name)
            for f in dataclasses.fields(counters)
            if f.name in _COPIED
        },
        connections=len(reports),
        usage=total(by_connection),
        usage_by_connection=by_connection,
        contexts_lost=sum(report.context_restored is False for report in reports),
        answers=len(firsts),
        first_output_p50_ms=percentile(firsts, 50),
        first_output_p95_ms=percentile(firsts, 95),
        tool_calls=sum(report.figures.tool_calls for report in reports),
        error=described,
    )
    if isinstance(error, (ReconnectFailedError, SessionNotResumableError)):
        logger.warning(
            "live session %s of agent %s gave up after %d connection(s): %s",
            stats.session_id,
            stats.agent_name,
            stats.connections,
            error,
        )
        telemetry.record_gave_up(error, counters.last_cause or str(error))
    logger.debug("live run ended: %s", stats)
    _call_all(_run_callbacks, stats)


def percentile(ordered: Sequence[float], rank: float) -> float | None:
    """The ``rank``-th percentile of ``ordered`` (ascending), nearest rank; ``None`` when it
    is empty."""
    if not ordered:
        return None
    return ordered[max(0, math.ceil(rank / 100 * len(ordered)) - 1)]


def connection_ended(report: ConnectionReport, *, model: str) -> None:
    """Tell OpenTelemetry what a connection counted, once it is over: its tokens (one
    counter per kind, by model and modality) and each answer (a span event stamped when it
    ended, and the two histograms)."""
    figures = report.figures
    if figures.usage is not None:
        for kind, modalities in figures.usage.by_modality().items():
            for modality, tokens in modalities.items():
                telemetry.count(
                    f"adk_live_resume.tokens.{kind}",
                    tokens,
                    {"adk_live_resume.model": model, "adk_live_resume.modality": modality},
                    unit="{token}",
                    description=f"Tokens the service counted ({kind}), per turn as sent",
                )
    if figures.tool_calls:
        telemetry.count(
            "adk_live_resume.tool_calls",
            figures.tool_calls,
            {"adk_live_resume.model": model},
            unit="{call}",
            description="Function calls the model asked for",
        )
    if not figures.answers:
        return
    # (answers are timed on the event loop's clock; span events want the wall clock)
    wall_offset = time.time() - asyncio.get_running_loop().time()
    labels = {"adk_live_resume.model": model}
    for answer in figures.answers:
        telemetry.event(
            "adk_live_resume.answer",
            {
                "adk_live_resume.first_output_ms": answer.first_output_ms,
                "adk_live_resume.duration_ms": answer.duration_ms,
                "adk_live_resume.characters": answer.characters,
                "adk_live_resume.interrupted": answer.interrupted,
                "adk_live_resume.connection_number": report.number,
            },
            timestamp_ns=int((answer.ended_at + wall_offset) * 1e9),
        )
        telemetry.measure(
            "adk_live_resume.answer.first_output",
            answer.first_output_ms,
            labels,
            unit="ms",
            description="Time from a user turn to the model's first output",
        )
        telemetry.measure(
            "adk_live_resume.answer.duration",
            answer.duration_ms,
            labels,
            unit="ms",
            description="Time from an answer's first output to its end",
        )


MoveReason = Literal["go_away", "requested", "restart"]


@dataclass(frozen=True)
class MoveNotice:
    """A move of a live session to a new connection is about to happen (:func:`on_before_move`)."""

    #: ``"go_away"`` (the server announced the connection's end), ``"requested"`` (the app
    #: asked: :func:`~adk_live_resume.request_move` or
    #: :func:`~adk_live_resume.request_fresh_start`) or ``"restart"`` (the run starts a
    #: fresh session on its own: the context was lost on resume).
    reason: MoveReason
    #: Seconds until the server's deadline (the goAway's ``timeLeft``); ``None`` when there
    #: is no deadline (an asked move) or the server named none.
    seconds_left: float | None
    #: The connection about to be given up (from 1 in the run).
    connection_number: int
    agent_name: str
    session_id: str
    #: Why, in words: the app's reason for an asked move, else what began it.
    detail: str = ""
    #: The move goes to a fresh session (the history rebuilt), not a resumed one.
    fresh: bool = False


MoveCallback = Callable[[MoveNotice], Awaitable[None] | None]
_move_callbacks: list[MoveCallback] = []


def on_before_move(hook: MoveCallback) -> Callable[[], None]:
    """Call ``hook`` with a :class:`MoveNotice` before every planned move of a live session;
    return a function that unregisters it.

    Called once per ``goAway``, when it arrives, before the old connection is given up (the
    move waits for a safe point, at the latest ``timeLeft - go_away_margin`` seconds later):
    time to show "reconnecting" or let a sentence finish. Also once per move the app asked
    for (:func:`~adk_live_resume.request_move`) and per fresh start the run begins on its
    own, as the move begins. A plain ``hook`` is called before the move goes on; an
    ``async`` one is started as a task (not awaited). One that raises is logged and ignored.
    Raises :class:`TypeError` at once if ``hook`` is not callable.
    """
    return _register(_move_callbacks, hook, "on_before_move")


def before_move(notice: MoveNotice) -> None:
    """Tell the :func:`on_before_move` hooks, and the log at DEBUG, that a move is coming."""
    logger.debug(
        "live session %s: moving off connection %d (%s%s)",
        notice.session_id,
        notice.connection_number,
        notice.reason,
        "" if notice.seconds_left is None else f", {notice.seconds_left:.1f} s left",
    )
    _call_all(_move_callbacks, notice)


_not_gemini_reported: set[str] = set()


def not_gemini(llm: Any) -> None:
    """Say once per model class, at INFO, that a model runs on ADK's original live loop."""
    kind = f"{type(llm).__module__}.{type(llm).__qualname__}"
    with _lock:
        if kind in _not_gemini_reported:
            return
        _not_gemini_reported.add(kind)
    logger.info(
        "model %s (%s) is not ADK's Gemini: its live runs use ADK's original run_live, "
        "without adk_live_resume's reconnects (only google-genai live sessions are covered)",
        getattr(llm, "model", "?"),
        kind,
    )
