"""Property: a sent turn waits until answered; an utterance is answered only by a turn after it.

Two state machines play random sessions of client sends and server messages:

* :class:`UnansweredTurns` against the module's guarantee: ``unanswered`` is never false while a
  typed turn or function response sent on the session has not been followed by a whole
  generation that began after it (model output after the turn, then the end of that
  generation: ``turnComplete`` or ``interrupted``), across new connections (a generation in
  progress is cut with its connection, the turn stays unanswered);
* :class:`UserActivity` against docs/guarantees.md ("When an utterance counts as answered")
  and the module's guarantees, with a clock that advances with the audio sent and with
  pauses: ``speaking`` from the first voiced chunk until ``hangover_ms`` of unvoiced audio
  (or ``activityEnd``/``audioStreamEnd``; from ``activityStart`` to ``activityEnd`` whatever
  the audio), and ``unanswered`` from the start of an utterance until a turn with model
  output (text, audio or a tool call) completes with the user not in manual activity, no
  voice sent since its output began, no utterance begun during it, not cut off
  (``interrupted``, a new connection) and not between two chunks of a word of a stream
  still flowing.
"""

from __future__ import annotations

from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, rule

from adk_live_resume.conversation.activity import (
    DEFAULT_HANGOVER_MS,
    MID_SPEECH_QUIET_MS,
    UserActivity,
)
from adk_live_resume.conversation.answers import UnansweredTurns

VOICED = b"\x00\x20" * 160  # 8192 of 32768: speech
QUIET = b"\x00\x00" * 160


class UnansweredTurnsMachine(RuleBasedStateMachine):
    def __init__(self) -> None:
        super().__init__()
        self.turns = UnansweredTurns()
        self.clock = 0
        #: When each unanswered turn was sent (the reference's clock of events).
        self.unanswered: list[int] = []
        #: When the output of the generation in progress began (None: none in progress).
        self.generation_began: int | None = None

    def _tick(self) -> int:
        self.clock += 1
        return self.clock

    @rule()
    def turn_sent(self) -> None:
        self.unanswered.append(self._tick())
        self.turns.on_turn_sent()

    @rule()
    def model_output(self) -> None:
        now = self._tick()
        if self.generation_began is None:
            self.generation_began = now
        self.turns.on_model_output()

    @rule()
    def generation_end(self) -> None:
        """``turnComplete`` or ``interrupted``."""
        self._tick()
        began = self.generation_began
        if began is not None:
            self.unanswered = [sent for sent in self.unanswered if sent > began]
        self.generation_began = None
        self.turns.on_generation_end()

    @rule()
    def new_connection(self) -> None:
        self._tick()
        self.generation_began = None
        self.turns.on_new_connection()

    @invariant()
    def a_turn_waits_until_a_generation_begun_after_it_ends(self) -> None:
        assert self.turns.unanswered is bool(self.unanswered), (
            f"unanswered={self.turns.unanswered}, turns sent at {self.unanswered} unanswered"
        )


class UserActivityMachine(RuleBasedStateMachine):
    def __init__(self) -> None:
        super().__init__()
        self.now = 0.0  # seconds
        self.activity = UserActivity(clock=lambda: self.now)
        # -- the reference --
        self.manual = False
        self.voiced_recently = False
        self.quiet_ms = 0.0
        self.last_audio_at: float | None = None
        self.unanswered = False
        self.output_began = False
        self.voice_since_output = False
        self.audio_since_output = False
        self.begun_since_output = False

    @property
    def speaking(self) -> bool:
        return self.manual or self.voiced_recently

    def _begin(self) -> None:
        if not self.speaking and self.output_began:
            self.begun_since_output = True
        self.unanswered = True

    @rule(ms=st.sampled_from([10, 20, 40, 100, 250]), voiced=st.booleans())
    def audio_chunk(self, ms: int, voiced: bool) -> None:
        self.now += ms / 1000
        self.audio_since_output = True
        self.last_audio_at = self.now
        if voiced:
            self.voice_since_output = True
            self._begin()
            self.voiced_recently, self.quiet_ms = True, 0.0
        elif self.voiced_recently:
            self.quiet_ms += ms
            if self.quiet_ms >= DEFAULT_HANGOVER_MS:
                self.voiced_recently = False
        assert self.activity.on_audio(VOICED if voiced else QUIET, ms) is voiced

    @rule(ms=st.sampled_from([1, 50, 150, 399, 400, 1000]))
    def pause(self, ms: int) -> None:
        """No audio for a while (the microphone stopped, or the next chunk is late)."""
        self.now += ms / 1000

    @rule()
    def activity_start(self) -> None:
        self._begin()
        self.manual = True
        self.activity.on_activity_start()

    @rule(stream_end=st.booleans())
    def activity_end(self, stream_end: bool) -> None:
        self.manual = self.voiced_recently = False
        if stream_end:
            self.activity.on_audio_stream_end()
        else:
            self.activity.on_activity_end()

    @rule()
    def input_transcription(self) -> None:
        if not self.speaking:
            self.unanswered = True
        self.activity.on_input_transcription()

    @rule()
    def model_output(self) -> None:
        """Text, an output transcription, audio parts alone or a tool call."""
        if not self.output_began:
            self.output_began = True
            self.voice_since_output = self.audio_since_output = self.begun_since_output = False
        self.activity.on_model_output()

    @rule()
    def turn_complete(self) -> None:
        mid_word = (
            not self.audio_since_output
            and self.voiced_recently
            and self.quiet_ms < MID_SPEECH_QUIET_MS
            and self.last_audio_at is not None
            and (self.now - self.last_audio_at) * 1000 < DEFAULT_HANGOVER_MS
        )
        was_unanswered = self.unanswered
        if self.output_began and not self.manual and not self.voice_since_output and not mid_word:
            self.voiced_recently = False
            if not self.begun_since_output:
                self.unanswered = False
        self.output_began = self.begun_since_output = False
        self.activity.on_turn_complete()
        if was_unanswered and not self.activity.unanswered:
            assert not self.speaking, "an utterance taken as answered while still going on"

    @rule()
    def generation_cut(self) -> None:
        """``interrupted``, or the connection ended."""
        self.output_began = self.begun_since_output = False
        self.activity.on_generation_cut()

    @invariant()
    def speaking_and_unanswered_follow_the_contract(self) -> None:
        assert self.activity.speaking is self.speaking, (
            f"speaking={self.activity.speaking}, the contract {self.speaking}"
        )
        assert self.activity.unanswered is self.unanswered, (
            f"unanswered={self.activity.unanswered}, the contract {self.unanswered}"
        )


TestATurnWaitsUntilAWholeGenerationBegunAfterItEnds = UnansweredTurnsMachine.TestCase
TestAnUtteranceIsAnsweredOnlyByAWholeTurnBegunAfterItWithTheUserQuiet = UserActivityMachine.TestCase
