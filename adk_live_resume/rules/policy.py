"""When to reconnect, how long to wait, and when to give up.

Everything here is pure: no I/O, no clocks except the ones passed in.

Backoff formula (full jitter, as in the AWS architecture blog and ``stamina``)::

    wait(1) = uniform(0, first_attempt_jitter)    # 0 by default: the first retry is immediate
    wait(n) = uniform(0, min(max_wait, initial_wait * 2 ** (n - 2)))   for n >= 2

With ``jitter=False`` the upper bound itself is used (``first_attempt_jitter`` is always
jittered: a fixed delay would move a herd, not spread it). After its wait, every attempt
also takes its turn at the process-wide reconnect pacer (:mod:`adk_live_resume.shell.pacing`:
``process_reconnect_rate``, ``process_reconnect_burst`` and ``process_reconnect_share``),
which adds nothing while the process is quiet and spreads a herd of reconnects when a server
drops many sockets at once.

An outage ends in an error when
``max_attempts`` connection attempts have failed or ``outage_timeout`` seconds have passed
disconnected since the drop, whichever comes first. The attempt counter resets only once the
run makes progress: an answer, or a minute connected (:mod:`adk_live_resume.rules.outage`).

On top of that, ``max_reconnects_per_minute`` caps reconnects over the whole run, so a server
that accepts, says something and drops again cannot make the client spin forever.
"""

from __future__ import annotations

import dataclasses
import math
import random
import types
import typing
import warnings
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any, Literal

#: Close codes after which resuming is worth a try (see docs/guarantees.md).
DEFAULT_RETRYABLE_CLOSE_CODES: frozenset[int] = frozenset(
    {1000, 1001, 1006, 1011, 1012, 1013, 1014}
)
#: Close codes that mean "this request is wrong" (1007 invalid argument, 1008 policy
#: violation): resuming repeats the same mistake, so they are refused as retryable.
NEVER_RETRYABLE_CLOSE_CODES: frozenset[int] = frozenset({1007, 1008})

#: Policy fields renamed, old name -> new name. For one release the old name still works
#: everywhere a field name does (the constructor's keyword, the attribute, its
#: ``ADK_LIVE_RESUME_<FIELD>`` variable, a JSON key), and every use warns with a
#: :class:`DeprecationWarning` that names the new one.
RENAMED_FIELDS: dict[str, str] = {"restart_when_handle_dead": "fresh_start_when_handle_dead"}


def warn_renamed(old: str, new: str, *, stacklevel: int = 2) -> None:
    """Warn (:class:`DeprecationWarning`) that the spelling ``old`` of a renamed policy
    field is deprecated, naming ``new``, the spelling to use instead."""
    warnings.warn(
        f"{old} is deprecated and will be removed in a later release: use {new}",
        DeprecationWarning,
        stacklevel=stacklevel + 1,
    )


_testing = False


def set_testing(on: bool) -> None:
    """Turn backoff waits, first-attempt jitter and reconnect pacing off (``True``) or back
    on, for tests.

    Caps on attempts and on the reconnect rate stay in force; only the sleeping goes.
    """
    global _testing
    _testing = on


def is_testing() -> bool:
    """Return whether :func:`set_testing` turned backoff waits off."""
    return _testing


@contextmanager
def testing_backoff() -> Iterator[None]:
    """Context manager form of :func:`set_testing` that restores the previous value."""
    previous = _testing
    set_testing(True)
    try:
        yield
    finally:
        set_testing(previous)


@dataclass(frozen=True, kw_only=True)
class ResumePolicy:
    """How the live loop reconnects. Frozen and keyword-only; derive variants with
    :meth:`replace`.

    The defaults suit a voice agent on the Gemini API: a drop is retried at once, then with
    growing waits up to 5 s, for at most 8 attempts or 60 s, and a goAway is acted on at a
    safe point no later than 5 s before the server's deadline.

    Construction checks every field against its annotated type (a ``bool`` is not an ``int``;
    an ``int`` is accepted for a ``float``; NaN and infinities are refused) and raises
    :class:`TypeError` for a wrong type and :class:`ValueError` for a value that makes no
    sense (negative times, ``initial_wait > max_wait``, 1007/1008 as retryable codes...).
    Fields added later are type-checked the same way without further code.
    """

    max_attempts: int = 8
    """Connection attempts per outage before giving up (the first one is immediate): the run
    never opens more connections than this in a row without progress (an answer, or a minute
    connected)."""
    outage_timeout: float = 60.0
    """Seconds an outage may last disconnected, from the drop until progress, before giving
    up."""
    initial_wait: float = 0.25
    """Upper bound of the second retry's wait; doubles with each later attempt."""
    max_wait: float = 5.0
    """Upper bound of any single wait."""
    jitter: bool = True
    """Full jitter (``True``) or the deterministic upper bound (``False``)."""
    max_reconnects_per_minute: int = 20
    """Reconnects allowed in any 60 s window of one run (drops and goAway moves alike)."""
    retryable_close_codes: frozenset[int] = field(default=DEFAULT_RETRYABLE_CLOSE_CODES)
    """Close codes that mean "the connection is gone, the session may not be"."""
    go_away_margin: float = 5.0
    """After ``goAway{timeLeft}``, reconnect at the latest ``timeLeft - go_away_margin`` s."""
    connect_timeout: float = 15.0
    """Seconds allowed for the websocket to open and the setup to be answered."""
    close_timeout: float = 1.0
    """Seconds allowed to close the old socket before it is aborted."""
    transparent: bool = True
    """Ask Vertex AI for ``transparent`` resumption (never sent to the Gemini API, whose SDK rejects
    the field).
    """
    replay_audio_seconds: float = 2.0
    """Seconds of the newest unconfirmed user audio replayed after a resume, besides the utterance
    the model has not answered yet; older audio is counted as dropped when it leaves the buffer
    (voiced audio in ``ReconnectInfo.dropped_audio_ms``, silence in ``dropped_silence_ms``).
    """
    max_utterance_seconds: float = 30.0
    """Longest unanswered utterance kept whole for replay (s); its older audio is counted as
    dropped. Bounds memory: one voice run holds at most this plus ``replay_audio_seconds``.
    """
    replay_frames: int = 120
    """Video and image frames (a camera or a screen share: realtime input carrying an ``image/``
    or ``video/`` blob) kept for replay after a resume, the newest; an older one is counted when
    it leaves (``ReconnectInfo.dropped_frames``, ``RunStats.dropped_frames``). 120 is what the
    service keeps: the Live API takes video at 1 frame/s and ends an audio+video session without
    context window compression at 2 minutes. Bounds memory: one run holds at most this many
    frames and a quarter more between trims (150: about 11 MB of 75 KB frames). 0 keeps none.
    """
    sliding_window: bool = False
    """Add ``contextWindowCompression`` with a sliding window to every connection whose
    ``RunConfig`` sets none, so audio sessions are not ended after 15 minutes.
    """
    handle_ttl: float = 7200.0 - 60.0
    """A handle older than this (s) is not tried: a fresh session is started with the conversation
    rebuilt from the ADK session (the Gemini API keeps handles for 2 h).
    """
    fresh_start_when_handle_dead: bool = True
    """When the server refuses a handle (1007/1008 on resume) or it is too old, make a fresh
    start (a new live session with the conversation so far) instead of ending the run.
    """
    restart_when_handle_dead: dataclasses.InitVar[bool | None] = None
    """Deprecated old name of ``fresh_start_when_handle_dead``, kept for this release: given,
    it sets that field (with a :class:`DeprecationWarning`); read, it returns that field.
    """
    fresh_start_when_context_lost: bool = False
    """When a resumed session came back without its context (its first ``promptTokenCount``
    fell below half of the last one before the reconnect: the model forgot the conversation),
    start a fresh session from the history at the next safe point. Off by default until a
    recording confirms the sign: a context window compression between the two counts may
    also shrink the count. Either way the loss is logged as a WARNING and reported
    (``ReconnectInfo.context_restored``).
    """
    store_handle_in_session: bool = False
    """Keep the newest good handle, sealed with ``ADK_LIVE_RESUME_HANDLE_KEY``, in the ADK session's
    state (through the runner's session service), so the next ``run_live`` of that session, in
    this process or another worker, resumes with it while it is valid.
    """
    handle_store_interval: float = 30.0
    """With ``store_handle_in_session``: at most one store write per session per this many seconds
    (the first goes at once), plus one on goAway, on a drop and at the run's end. A handle stored
    this way says which session events it covers, so a worker that resumes from an older one
    gives the model what came after it; every write is one session event, so a larger interval
    means a smaller session. 0 writes every handle.
    """
    first_attempt_jitter: float = 0.0
    """The first attempt after a drop waits ``uniform(0, first_attempt_jitter)`` seconds. Off (0) by
    default, so a lone drop reconnects at once; the process-wide pacer spreads a herd within one
    process. Set it (e.g. 1 s) when many processes serve sessions from one server and may all
    lose them at once: the pacers of separate processes do not see each other.
    """
    process_reconnect_rate: float = 1000.0
    """Ceiling of the process-wide reconnect pacer (one per event loop, shared by every live run,
    see :mod:`adk_live_resume.shell.pacing`), in attempts per second: no 100 ms window holds more
    than ``rate / 10`` attempts (or ``process_reconnect_burst``, if more). goAway moves count too,
    but never wait past their deadline. 0 turns pacing off.
    """
    process_reconnect_burst: int = 20
    """Reconnect attempts any 100 ms may hold however small the herd: a lone drop (or up to this
    many at once) never waits for the pacer.
    """
    process_reconnect_share: float = 0.08
    """Share of a herd (the attempts that asked since the process was last calm) that any 100 ms may
    hold, when that is more than ``process_reconnect_burst``: a herd is spread over at least
    about ``0.1 / share`` seconds (1.25 s at 0.08), however busy the process.
    """
    stall_timeout: float = 15.0
    """Seconds a user turn (typed, a function response the model waits for, ``activityEnd``,
    an utterance the server transcribed) may go without any answering server message before
    the session counts as stalled and is recovered: resumed from the newest handle with the
    turn replayed, then started fresh, then given up (see the guarantees). The wait does not
    run while a tool runs, the model says it works (``interactionStatus: IN_PROGRESS``) or
    the user speaks. 15 s: answers begin within a few seconds in every recording we hold,
    the public freeze watchdogs wait 15 s, and callers hang up not much later. 0 turns it off.
    """
    degenerate_turns: int = 3
    """Turns in a row that answer a user turn with nothing (no content, ``turnCompleteReason:
    RESPONSE_REJECTED``, near-silent audio), or with the very words that answered the turn
    before, another user turn (a canned answer: the same refusal seven turns in a row, forum
    142056), after which the session counts as stalled and is recovered as for
    ``stall_timeout``. One empty turn happens in healthy sessions (the model
    chose not to speak); the field reports show runs of many (27 rejected in a row). 0 turns
    it off.
    """
    early_dial: bool = True
    """Open the next connection's socket (TCP, TLS and websocket handshakes) as soon as a reconnect
    is known to come, after its turn at the pacer: on goAway, while the answer in flight ends; on
    a server's close frame retried at once, while the close handshake ends. The setup, with the
    newest handle, still goes when ADK connects (:mod:`adk_live_resume.shell.early_dial`).
    """
    stall_nudge: bool = False
    """Before a silence (``stall_timeout``) is recovered, nudge the model once on the same
    connection: a realtime text asking it to answer the user's last message, then
    ``stall_timeout`` more for an answer; only if that goes unanswered too does the recovery
    go on (resume, fresh start, give up). What a voice client did against a model that never
    answered after a barge-in (cookbook issue 1228: a nudge after 4 s, a 10 s watchdog).
    Off by default: the nudge is input the live session keeps, and the model may answer it in
    words of its own. Degenerate turns are never nudged.
    """

    def __post_init__(self, restart_when_handle_dead: bool | None) -> None:
        if restart_when_handle_dead is not None:
            warn_renamed(
                "ResumePolicy(restart_when_handle_dead=...)",
                "fresh_start_when_handle_dead",
                stacklevel=4,  # __post_init__, __init__, the caller
            )
            object.__setattr__(self, "fresh_start_when_handle_dead", restart_when_handle_dead)
        if not isinstance(self.retryable_close_codes, frozenset) and isinstance(
            self.retryable_close_codes, (set, list, tuple)
        ):
            object.__setattr__(self, "retryable_close_codes", frozenset(self.retryable_close_codes))
        check_field_types(self)
        problems = []
        if self.max_attempts < 1:
            problems.append("max_attempts must be >= 1")
        for name in (
            "outage_timeout",
            "initial_wait",
            "max_wait",
            "connect_timeout",
            "replay_audio_seconds",
            "max_utterance_seconds",
            "handle_ttl",
            "handle_store_interval",
            "first_attempt_jitter",
            "process_reconnect_rate",
            "stall_timeout",
        ):
            if getattr(self, name) < 0:
                problems.append(f"{name} must be >= 0")
        if self.close_timeout <= 0:
            problems.append("close_timeout must be > 0")
        if self.go_away_margin < 0:
            problems.append("go_away_margin must be >= 0")
        if self.max_reconnects_per_minute < 1:
            problems.append("max_reconnects_per_minute must be >= 1")
        if self.degenerate_turns < 0:
            problems.append("degenerate_turns must be >= 0")
        if self.replay_frames < 0:
            problems.append("replay_frames must be >= 0")
        if self.process_reconnect_burst < 1:
            problems.append("process_reconnect_burst must be >= 1")
        if not 0 <= self.process_reconnect_share <= 1:
            problems.append("process_reconnect_share must be between 0 and 1")
        if self.initial_wait > self.max_wait:
            problems.append(
                f"initial_wait ({self.initial_wait}) must be <= max_wait ({self.max_wait})"
            )
        bad_codes = sorted(c for c in self.retryable_close_codes if not 1000 <= c <= 4999)
        if bad_codes:
            problems.append(f"retryable_close_codes must be websocket close codes, not {bad_codes}")
        never = sorted(self.retryable_close_codes & NEVER_RETRYABLE_CLOSE_CODES)
        if never:
            problems.append(
                f"retryable_close_codes must not contain {never}: 1007/1008 mean the request "
                "itself is wrong (bad argument, refused handle, wrong model or key), so a resume "
                "repeats it; a refused handle already starts a fresh session "
                "(fresh_start_when_handle_dead)"
            )
        if problems:
            raise ValueError("invalid ResumePolicy: " + "; ".join(problems))

    def replace(self, **changes: Any) -> ResumePolicy:
        """Return a copy with ``changes`` applied (validated like the constructor).

        Prefer it to :func:`dataclasses.replace`, which reads the deprecated
        ``restart_when_handle_dead`` (warning) and hands it back to the constructor, where it
        would win over a ``fresh_start_when_handle_dead`` in ``changes``."""
        changes.setdefault("restart_when_handle_dead", None)  # not carried over: see above
        return dataclasses.replace(self, **changes)  # type: ignore[arg-type]

    def wait_before(self, attempt: int, rng: random.Random | None = None) -> float:
        """Seconds to wait before connection attempt ``attempt`` (1-based) of an outage.

        Pacing (:mod:`adk_live_resume.shell.pacing`) comes on top, when the wait is over.
        """
        if _testing:
            return 0.0
        uniform = rng.uniform if rng is not None else random.uniform
        cap = self.wait_bound(attempt)
        if not cap:
            return 0.0
        if attempt <= 1 or self.jitter:  # (first_attempt_jitter is always jittered)
            return uniform(0.0, cap)
        return cap

    def wait_bound(self, attempt: int) -> float:
        """The longest wait :meth:`wait_before` may return for ``attempt`` (with backoff on,
        :func:`set_testing` aside): 0 means that attempt goes at once, whatever the jitter."""
        if attempt <= 1:
            return self.first_attempt_jitter
        return min(self.max_wait, self.initial_wait * 2.0 ** (attempt - 2))

    def is_retryable_code(self, code: int | None) -> bool:
        """Whether a websocket close ``code`` is worth resuming after."""
        return code is not None and code in self.retryable_close_codes


def _read_renamed_field(policy: ResumePolicy) -> bool:
    warn_renamed("ResumePolicy.restart_when_handle_dead", "fresh_start_when_handle_dead")
    return policy.fresh_start_when_handle_dead


# Reading the old name returns the new field (the dataclass left the InitVar's default, None,
# as the class attribute; the constructor's default was taken before this replaces it).
setattr(  # noqa: B010 (mypy knows the name as an InitVar, not as an attribute)
    ResumePolicy,
    "restart_when_handle_dead",
    property(_read_renamed_field, doc="Deprecated: ``fresh_start_when_handle_dead``."),
)


def check_field_types(instance: Any) -> None:
    """Raise :class:`TypeError` naming every field of the dataclass ``instance`` whose value
    does not match its annotation.

    Understands ``bool``, ``int`` (a ``bool`` is refused), ``float`` (an ``int`` is accepted;
    NaN and infinities are refused), ``str``, ``frozenset[T]`` (every item checked),
    ``X | None`` and ``Literal[...]``; other annotations are checked with ``isinstance`` on
    their origin class.
    """
    hints = typing.get_type_hints(type(instance))
    problems = []
    for item in dataclasses.fields(instance):
        value = getattr(instance, item.name)
        problem = _type_problem(value, hints[item.name])
        if problem:
            problems.append(f"{item.name} must be {problem}, not {value!r}")
    if problems:
        raise TypeError(f"invalid {type(instance).__name__}: " + "; ".join(problems))


def _type_problem(value: object, hint: Any) -> str:
    """What ``value`` should have been for ``hint`` ("" when it matches)."""
    origin = typing.get_origin(hint)
    args = typing.get_args(hint)
    if origin is Literal:
        return "" if value in args else "one of " + ", ".join(repr(a) for a in args)
    if origin in (typing.Union, types.UnionType):
        if value is None and type(None) in args:
            return ""
        wanted = [a for a in args if a is not type(None)]
        found = [_type_problem(value, a) for a in wanted]
        return "" if "" in found else " or ".join(found) + (" or None" if value is None else "")
    if hint is bool:
        return "" if isinstance(value, bool) else "True or False"
    if hint is int:
        ok = isinstance(value, int) and not isinstance(value, bool)
        return "" if ok else "an integer"
    if hint is float:
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            return "a number"
        return "" if math.isfinite(value) else "a finite number"
    if origin in (frozenset, set, list, tuple):
        if not isinstance(value, origin):
            return f"a {origin.__name__}"
        inner = args[0] if args else Any
        if inner is Any:
            return ""
        bad = [v for v in value if _type_problem(v, inner)]
        if bad:
            return f"a {origin.__name__} whose items are each {_type_problem(bad[0], inner)}"
        return ""
    if isinstance(hint, type):
        return "" if isinstance(value, hint) else f"a {hint.__name__}"
    return ""


@dataclass
class ReconnectRate:
    """Sliding 60 s window of reconnect times for ``max_reconnects_per_minute``."""

    limit: int
    window: float = 60.0
    _times: list[float] = field(default_factory=list)

    def has_room(self, now: float) -> bool:
        """Whether a reconnect at ``now`` would be allowed (nothing is recorded)."""
        self._times = [t for t in self._times if now - t < self.window]
        return len(self._times) < self.limit

    def allow(self, now: float) -> bool:
        """Record a reconnect at ``now`` if the window has room; return whether it had."""
        if not self.has_room(now):
            return False
        self._times.append(now)
        return True
