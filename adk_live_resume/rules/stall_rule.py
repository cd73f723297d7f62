"""When an open, healthy live session has stalled: the rule, fed with events, without a clock.

A *stall* is one of:

* **silence**: a user turn (a typed turn, a function response to a call the model waits
  for, ``activityEnd``, or an utterance the server transcribed) that got no answering
  server message (model output, a transcription of it, ``turnComplete``,
  ``generationComplete``, a tool call or its cancellation; not ``interrupted``, which is the
  server taking new input in: a model may never answer after it, cookbook issue 1228) within
  ``stall_timeout`` seconds of waiting;
* **degenerate turns**: ``degenerate_turns`` turns in a row that answered a user turn with
  nothing (:func:`degenerate`: no content, ``turnCompleteReason: RESPONSE_REJECTED``, or
  audio that is all near silence), or with the very words that answered the turn before, a
  different user turn (a canned answer).

The wait for an answer is excused, and starts over when the excuse ends, while a tool runs,
while the model says it works (``serverContent.interactionStatus: IN_PROGRESS``), while the
user is speaking, while messages that arrived on the socket wait for ADK's reading (a slow
session service or a busy event loop holds it: the server did answer), and before the setup
completed (:class:`Excuses`). Resumption updates,
``goAway``, usage and input transcriptions answer nothing: a session that sends only those
is silent. Nor does an ``interrupted`` that cut no model output: the server had taken the
user's turn and said nothing (:meth:`StallRule.cut_before_output`); from then on, until an
answer, the user speaking (or the reader being behind) *pauses* the wait instead of starting
it over, so a user who keeps talking to a stalled session is not kept waiting forever (each
of their pauses counts); a tool running or the model saying it works still starts it over.
A user turn sent while an older one waits begins no wait of its own; but when an
``interrupted`` cuts the output that answered the older turn, the server took the later turn
in over that answer and owes it one: its wait begins at the cut
(:meth:`StallRule.cut_after_output`; a reader that reads the older turn's first output only
after the later turn went sees exactly this, and cookbook issue 1228's model then says
nothing).

Pure: no I/O, no clock (times are ``loop.time()`` values passed in).

Guarantees:

* :meth:`StallRule.check` never returns a stall while an excuse holds, nor before
  :meth:`StallRule.setup_completed`.
* A silence is returned only when at least ``stall_timeout`` seconds passed, with no
  answering message, since the later of the oldest unanswered user turn and the last check
  that saw an excuse; after :meth:`StallRule.cut_before_output`, the seconds the user spoke
  (or the reader was behind) are left out of the count instead (the quiet stretches before
  and after add up), unless a tool ran or the model said it works meanwhile.
* ``stall_timeout == 0`` turns the silence rule off; ``degenerate_turns == 0`` turns the
  degenerate rule off; a turn with content resets the count of degenerate turns.
* A user turn sent while an older one waited, before that wait ended, is waited for from an
  ``interrupted`` that cut output (:meth:`StallRule.cut_after_output`) if no other turn waits
  then and no turn ended in between.
* Once a stall was returned, no other is returned by the same rule (one per connection),
  unless :meth:`StallRule.nudged` says a nudge answered it (then one more).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal, NamedTuple

#: How often an excused wait is looked at again (s, at most): the wait starts over from the
#: last look that saw the excuse.
EXCUSE_POLL = 0.25

#: The ``turnCompleteReason`` of a turn the service refused to answer.
RESPONSE_REJECTED = "RESPONSE_REJECTED"

#: What ``ResumePolicy.stall_nudge`` sends as realtime text before a silence is recovered
#: (cookbook issue 1228: a nudge through ``realtimeInput.text`` after 4 s of silence).
NUDGE = "Please answer the user's last message."


class Excuses(NamedTuple):
    """What may keep a healthy session quiet for a while (each: the wait starts over).

    A value made on every server message while a turn waits: a tuple, cheaper to make than
    a frozen dataclass."""

    tool_running: bool = False
    model_working: bool = False
    user_speaking: bool = False
    #: Server messages arrived on the socket that ADK's reading has not reached yet (a slow
    #: session service, a busy event loop): the server did answer; the reader is behind.
    reader_behind: bool = False

    def why(self) -> str | None:
        """The first excuse that holds, in words (``None``: none)."""
        if self.reader_behind:
            return "messages arrived that are not read yet"
        if self.tool_running:
            return "a tool runs"
        if self.model_working:
            return "the model works (interactionStatus IN_PROGRESS)"
        if self.user_speaking:
            return "the user speaks"
        return None


@dataclass(frozen=True)
class Stall:
    """A stall seen: its kind and, in words, what was seen (for the error and the hooks)."""

    kind: Literal["silence", "degenerate"]
    seen: str


def degenerate(
    *,
    rejected: bool,
    content: bool,
    voiced_audio: bool,
    quiet_audio: bool,
    repeated: bool = False,
) -> str:
    """Why a finished turn that answered a user turn is degenerate ("" when it is not).

    ``rejected``: its ``turnCompleteReason`` was ``RESPONSE_REJECTED``; ``content``: text,
    an output transcription or a tool call came in it; ``voiced_audio``/``quiet_audio``:
    audio above/below the speech threshold came in it; ``repeated``: its words are those of
    the turn before, which answered another user turn (a canned answer: the same refusal
    seven turns in a row, forum 142056; notes, "Field facts of 2026-11-29")."""
    if rejected:
        return "turnCompleteReason RESPONSE_REJECTED"
    if repeated:
        return "the same answer as to the turn before"
    if content or voiced_audio:
        return ""
    if quiet_audio:
        return "answer audio near silence"
    return "turnComplete with no content"


Recovery = Literal["resume", "fresh_start", "give_up"]


def give_up_message(seen: Sequence[str], taken: Sequence[Recovery]) -> str:
    """The error that ends a run whose session stalled past the ladder's last step: what
    happened and what to do first (within 120 bytes: a browser is shown the first 123), then
    what was seen at each stall. ``taken``: the recoveries tried, in order (only those are
    named)."""
    tried = {
        ("resume", "fresh_start"): "a resume and a fresh session",
        ("fresh_start",): "a fresh session",
        ("resume",): "a resume",
    }.get(tuple(taken), "no recovery")
    times = {1: "once", 2: "twice"}.get(len(seen), f"{len(seen)} times")
    kinds = "; ".join(f"{number}: {what}" for number, what in enumerate(seen, 1))
    return (
        f"live session stalled {times}; {tried} brought no answer. Check the service status and"
        f" quota. Seen: {kinds}. For RESPONSE_REJECTED or empty turns, check the input the"
        " service refuses (safety settings, the content, the audio format: 16-bit PCM at the"
        " rate the mime type says); for silence, that each turn is ended (turnComplete,"
        " activityEnd) and the model name. If your model legitimately takes longer to answer,"
        " raise ResumePolicy.stall_timeout (or degenerate_turns); 0 turns the check off."
    )


class StallRule:
    """One connection's stall rule (see the module): events in, :meth:`check` out."""

    def __init__(self, stall_timeout: float, degenerate_turns: int) -> None:
        if stall_timeout < 0 or degenerate_turns < 0:
            raise ValueError("stall_timeout and degenerate_turns must be >= 0")
        self.stall_timeout = stall_timeout
        self.degenerate_turns = degenerate_turns
        self._setup = False
        #: What the oldest unanswered user turn was, and since when the wait runs.
        self._waiting: str | None = None
        self._since = 0.0
        self._excused = False
        #: The server cut a generation that had said nothing while a turn waited: the user
        #: speaking pauses the wait from then on, and what was waited before is kept here.
        self._owed = False
        self._banked = 0.0
        #: The first user turn sent while an older one waited (which kind), until a cut or
        #: the end of a turn claims it: the answer that ends the wait may be the older one's.
        self._later: str | None = None
        #: The excuse seen last only pauses a wait the server owes (the user speaks, or the
        #: reader is behind: no sign of work); and the quiet stretch it ended (counted if a
        #: cut comes during it).
        self._pausing = False
        self._quiet_before = 0.0
        #: Degenerate turns in a row, and why the last one was.
        self._degenerate = 0
        self._last_degenerate = ""
        self._reported = False

    @property
    def waiting(self) -> bool:
        """A user turn waits for its answer."""
        return self._waiting is not None

    @property
    def idle(self) -> bool:
        """Nothing to look at now: no turn waits and no run of degenerate turns is due, so
        :meth:`check` finds no stall and :meth:`next_check` is ``None`` whatever the time
        and the excuses (the watch skips both on every message while this holds)."""
        return self._waiting is None and (
            self._reported
            or not self._setup
            or not self.degenerate_turns
            or self._degenerate < self.degenerate_turns
        )

    def setup_completed(self, now: float) -> None:
        """The setup completed: the rule applies from now on (a wait begun before counts
        from now)."""
        if not self._setup:
            self._setup = True
            self._since = max(self._since, now)

    def user_turn(self, what: str, now: float) -> None:
        """A user turn (``what``: which kind) was sent, or the server transcribed one: the
        wait for its answer begins, unless an older turn already waits."""
        if self._waiting is None:
            self._waiting = what
            self._since = now
            self._owed = False
            self._banked = self._quiet_before = 0.0
            self._later = None
        elif self._later is None:
            self._later = what

    def answered(self) -> None:
        """An answering server message arrived: nothing waits any more (a user turn sent
        while the answered one waited is kept for :meth:`cut_after_output`)."""
        self._waiting = None
        self._owed = False
        self._banked = self._quiet_before = 0.0

    def cut_before_output(self) -> None:
        """``interrupted`` cut a generation that had said nothing: the server had taken the
        user's turn and gave no answer. The wait goes on (this answers nothing), and until an
        answer the user speaking pauses it instead of starting it over (the quiet stretch
        before the speaking that brought the cut counts too)."""
        self._later = None  # (the wait that goes on is for the later turn's answer too)
        if self._waiting is None:
            return
        self._owed = True
        if self._excused and self._pausing:
            self._bank_quiet()

    def cut_after_output(self, now: float) -> None:
        """``interrupted`` cut a generation that had said something: the server took new
        input in over an answer. If no turn waits and a user turn was sent while the answered
        one waited (the answer arrived after it went, so it answered the older turn), that
        later turn is what the server took in: the wait for its answer begins ``now``."""
        later, self._later = self._later, None
        if self._waiting is None and later is not None:
            self.user_turn(later, now)

    def _bank_quiet(self) -> None:
        self._banked += self._quiet_before
        self._quiet_before = 0.0

    def turn_ended(self, why_degenerate: str) -> None:
        """A turn that answered a user turn finished; ``why_degenerate`` from
        :func:`degenerate` ("" for a turn with content). A user turn sent while the answered
        one waited is no longer kept for a cut (the model may have answered both)."""
        self._later = None
        if why_degenerate:
            self._degenerate += 1
            self._last_degenerate = why_degenerate
        else:
            self._degenerate = 0

    def check(self, now: float, excuses: Excuses) -> Stall | None:
        """The stall seen at ``now``, if any (see the module's guarantees)."""
        if self._reported or not self._setup:
            return None
        if self.degenerate_turns and self._degenerate >= self.degenerate_turns:
            self._reported = True
            return Stall(
                "degenerate",
                f"{self._degenerate} turns in a row answered with nothing"
                f" (last: {self._last_degenerate})",
            )
        if not self.stall_timeout or self._waiting is None:
            return None
        if excuses.why() is not None:
            works = excuses.tool_running or excuses.model_working
            if works:
                self._banked = self._quiet_before = 0.0  # (a sign of work starts it over)
            elif not self._excused:  # a pause begins: the quiet stretch before it is over
                self._quiet_before = max(0.0, now - self._since)
                if self._owed:
                    self._bank_quiet()
            self._pausing = not works
            self._excused = True
            self._since = max(self._since, now)
            return None
        self._excused = self._pausing = False
        self._quiet_before = 0.0
        waited = self._banked + now - self._since
        if waited < self.stall_timeout:
            return None
        self._reported = True
        return Stall("silence", f"no answer {waited:.1f} s after {self._waiting}")

    def nudged(self, now: float) -> None:
        """A silence this rule returned was answered with a nudge (``stall_nudge``): the
        wait runs again from ``now``, for the nudge, and another stall may be returned."""
        self._reported = False
        self._waiting = "a nudge after a silence"
        self._since = now
        self._owed = False
        self._later = None
        self._banked = self._quiet_before = 0.0

    def next_check(self, now: float) -> float | None:
        """Seconds from ``now`` until :meth:`check` may find a silence (``None``: nothing
        waits, or the rule is off or spent)."""
        if self._reported or not self.stall_timeout or self._waiting is None:
            return None
        if self._excused or not self._setup:
            return min(EXCUSE_POLL, self.stall_timeout)
        return max(0.0, self._since + self.stall_timeout - self._banked - now)
