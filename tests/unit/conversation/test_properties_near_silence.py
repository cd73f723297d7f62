"""Property: near-silent model audio answers nothing, neither a turn nor an utterance.

A stall's ``quiet_audio`` answer (the fake's ``Fault.stall("quiet_audio")``, from the field
reports in the protocol notes, "Stalls") is model audio that is all near silence: the user
heard nothing. Two rules of :class:`~adk_live_resume.conversation.outbox.Outbox` follow from it
(docs/guarantees.md, "Nothing lost, nothing said twice"), and a fresh history reads a third
beside the first; each is played against a reference written from the rule alone:

* :meth:`Outbox.answered_last` is true only after an answer that said something (text,
  voiced audio, a tool call) came after the last user turn (a typed turn or a function
  response, replayed ones included); a near-silent answer, or none, leaves it false, however
  handles and resumes trimmed the record of that turn. A whole answer aloud to every turn,
  with nothing in progress before it, makes it true, and a handle changes it in neither
  direction;
* :attr:`Outbox.responses_sent_last` (whether a fresh history whose last turn is function
  responses may close it as answered) holds the ids of every function response sent since the
  last typed turn, replayed ones included, whatever handles and resumes came between;
* model audio that is near silent (:func:`~adk_live_resume.conversation.activity.near_silent_audio`,
  as the connection watch reads each part) answers no utterance: the utterance stays unanswered and
  a resumed session gets its audio whole, whatever silence followed and whether a handle came after
  the answer (one between the utterance and the answer is a known gap: see the strict xfail in
  test_voice_rules.py); an answer with voiced audio in it answers the utterance.
"""

from __future__ import annotations

import itertools
import math

from google.genai import types
from hypothesis import given
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, precondition, rule

from adk_live_resume.conversation.activity import near_silent_audio
from adk_live_resume.conversation.client_message import ClientMessage
from adk_live_resume.conversation.outbox import Outbox

from ...helpers import RATE, audio_input, tool_response, typed_turn

#: The model's audio rate (24 kHz PCM, the Live API's output).
MODEL_RATE = 24000
#: Peaks of model audio the reference calls near silent (the speech threshold is an RMS of
#: 330: these stay far below it) and voiced (far above).
QUIET_PEAKS = (0, 20, 120)
VOICED_PEAKS = (2000, 9000)
#: What a generation is made of: model output, and tool calls (answered at once, or later).
GENERATION_STEPS: tuple[str | int, ...] = (
    "text",
    *QUIET_PEAKS,
    *VOICED_PEAKS,
    "tool call",
    "tool call answered",
)


def _sine(peak: int, ms: int, rate: int) -> bytes:
    samples = rate * ms // 1000
    return b"".join(
        int(peak * math.sin(2 * math.pi * 440 * n / rate)).to_bytes(2, "little", signed=True)
        for n in range(samples)
    )


#: 20 ms microphone chunks: speech, and the quiet of a room.
SPEECH = _sine(3000, 20, RATE)
QUIET = _sine(40, 20, RATE)


def _model_part(peak: int) -> types.Part:
    """40 ms of model audio whose sine peaks at ``peak``."""
    blob = types.Blob(data=_sine(peak, 40, MODEL_RATE), mime_type=f"audio/pcm;rate={MODEL_RATE}")
    return types.Part(inline_data=blob)


class AnsweredLast(RuleBasedStateMachine):
    """Typed turns, generations (model output aloud and near silent, tool calls and their
    responses, each way a generation ends), handles and resumes, against the rule of
    :meth:`Outbox.answered_last`."""

    def __init__(self) -> None:
        super().__init__()
        self.outbox = Outbox(1000.0, max_utterance_ms=3000.0)
        self.outbox.begin_connection()
        self.labels = itertools.count(1)
        self.calls = itertools.count(1)
        self.open_calls: list[str] = []
        #: The reference: something was said (not near silence) since the last user turn.
        self.said_since_turn = False
        #: Model output came since the last end of a generation (or new connection).
        self.output_since_end = False
        #: The reference: the ids of the function responses sent since the last typed turn.
        self.responses_since_typed: set[str] = set()
        #: The reference: asks (typed turns, function responses) no generation began for yet
        #: (each generation that begins answers the oldest), and whether one is going on.
        self.unpaired = 0
        self.generating = False

    def record(self, method: str, kwargs: dict[str, object]) -> ClientMessage:
        message = self.outbox.record(method, kwargs)
        if message.user_text or message.response_ids:
            self.said_since_turn = False  # a user turn: nothing answered it yet
            self.unpaired += 1
        if method == "send_client_content" and kwargs["turn_complete"]:
            self.responses_since_typed.clear()  # a typed turn (a replay's context is not one)
        for response in kwargs.get("function_responses") or []:
            self.responses_since_typed.add(response.id)  # type: ignore[attr-defined]
        return message

    def output(self, *, aloud: bool) -> None:
        self.said_since_turn = self.said_since_turn or aloud
        self.output_since_end = True

    def begins(self) -> None:
        """Model output is about to arrive: a generation begins unless one is going on."""
        if not self.generating:
            self.generating = True
            self.unpaired = max(0, self.unpaired - 1)

    @rule()
    def typed_turn(self) -> None:
        self.record("send_client_content", typed_turn(f"t{next(self.labels)}"))

    @precondition(lambda self: self.open_calls)
    @rule(data=st.data())
    def function_response(self, data: st.DataObject) -> None:
        call_id = data.draw(st.sampled_from(self.open_calls))
        self.open_calls.remove(call_id)
        self.record("send_tool_response", tool_response(call_id, "tool"))

    @rule(
        steps=st.lists(st.sampled_from(GENERATION_STEPS), min_size=1, max_size=5),
        end=st.sampled_from(["turn_complete", "interrupted", "work_goes_on", "none"]),
    )
    def generation(self, steps: list[str | int], end: str) -> None:
        """Model output (text, audio parts by their peak, a tool call, which ADK may answer
        at once) and how the generation ends: ``turnComplete``, ``interrupted``, a
        ``turnComplete`` whose ``interactionStatus`` says the model's work goes on, or not yet
        (what comes next may come in the middle of it)."""
        for step in steps:
            self.begins()
            if step == "text":
                self.outbox.model_text("answer ")
                self.output(aloud=True)
            elif isinstance(step, int):
                self.outbox.model_audio(voiced=not near_silent_audio(_model_part(step)))
                self.output(aloud=step in VOICED_PEAKS)
            else:
                call_id = f"c{next(self.calls)}"
                self.outbox.tool_call([call_id])
                self.output(aloud=True)
                self.generating = False  # (what the model says after it begins anew)
                if step == "tool call answered":
                    self.record("send_tool_response", tool_response(call_id, "tool"))
                else:
                    self.open_calls.append(call_id)
        if end != "none":
            getattr(self.outbox, end)()
            self.output_since_end = self.generating = False

    @rule()
    def handle(self) -> None:
        """A handle trims the record, not what was answered: whether the last turn was
        answered is the same after it."""
        before = self.outbox.answered_last()
        self.outbox.covered(None)
        assert self.outbox.answered_last() == before, "a handle changed answered_last"

    @rule()
    def drop_and_resume(self) -> None:
        """The live loop's resume: a new connection, the replay sent again through the tap
        (the context first, as one message that asks for no answer)."""
        self.outbox.begin_connection()
        self.output_since_end = self.generating = False
        self.unpaired = 0  # (the asks still waiting are replayed: recorded again below)
        replay = self.outbox.take_replay()
        if replay.context:
            context = {"turns": replay.context_contents(), "turn_complete": False}
            self.record("send_client_content", context)
        for message in replay.messages:
            self.record(message.method, dict(message.kwargs))

    @precondition(lambda self: not self.output_since_end)
    @rule()
    def whole_answer_aloud(self) -> None:
        """A generation for every turn sent (each answers the oldest waiting), each saying
        something and ending."""
        for _ in range(max(1, self.unpaired)):
            self.outbox.model_text("answer ")
            self.outbox.turn_complete()
        self.unpaired = 0
        self.generating = False
        self.said_since_turn = True
        assert self.outbox.answered_last(), "a whole answer aloud answered the last turn"

    @invariant()
    def the_responses_sent_last_are_those_since_the_last_typed_turn(self) -> None:
        """What a fresh history asks of the outbox (``fresh_history(responses_sent_last=)``):
        every function response sent since the last typed turn, replayed ones included, and
        none sent before it; handles and resumes change nothing of it."""
        assert self.outbox.responses_sent_last == self.responses_since_typed

    @invariant()
    def answered_only_after_something_was_said_since_the_last_turn(self) -> None:
        if self.outbox.answered_last():
            assert self.said_since_turn, "answered_last, but only near silence (or nothing) came"


TestAnsweredLastOnlyAfterAnAnswerThatSaidSomething = AnsweredLast.TestCase


@given(
    speech_chunks=st.integers(10, 60),
    pause_chunks=st.integers(25, 60),
    answer=st.lists(st.sampled_from(QUIET_PEAKS + VOICED_PEAKS), min_size=1, max_size=4),
    # (a handle before the answer is a known gap, a strict xfail in test_voice_rules.py:
    # test_an_utterance_answered_with_near_silence_after_a_handle_is_replayed_whole)
    handle=st.sampled_from(["none", "after the answer"]),
    after_chunks=st.integers(0, 150),
)
def test_near_silent_model_audio_answers_no_utterance_which_a_resume_replays_whole(
    speech_chunks: int, pause_chunks: int, answer: list[int], handle: str, after_chunks: int
) -> None:
    outbox = Outbox(audio_window_ms=200, max_utterance_ms=3000)
    outbox.begin_connection()
    for _ in range(speech_chunks):
        outbox.record("send_realtime_input", audio_input(SPEECH))
    outbox.input_text("grove")  # (the server transcribed it)
    for _ in range(pause_chunks):  # past the hangover: the utterance ended
        outbox.record("send_realtime_input", audio_input(QUIET))
    for peak in answer:  # as the connection watch reads each part of the model's turn
        outbox.model_audio(voiced=not near_silent_audio(_model_part(peak)))
    outbox.turn_complete()
    if handle == "after the answer":
        outbox.covered(None)
    for _ in range(after_chunks):
        outbox.record("send_realtime_input", audio_input(QUIET))
    near_silence_only = all(peak in QUIET_PEAKS for peak in answer)
    assert outbox.activity.unanswered == near_silence_only
    replay = outbox.take_replay()
    spoken = [m for m in replay.messages if m.voiced]
    if near_silence_only:
        assert replay.dropped_audio_ms == 0, "the utterance is replayed whole"
        assert len(spoken) == speech_chunks, "every chunk of its speech is replayed"
