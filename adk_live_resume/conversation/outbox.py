"""Client messages that the state behind the newest handle may not include.

The live loop records every client message (as the google-genai send call that carried it)
and the server facts that matter for replay (model output, input transcription, tool calls,
turn completions). When a resumable handle arrives, it covers every server message received
before it, and these client messages:

* Vertex AI ``transparent``: exactly those up to ``lastConsumedClientMessageIndex``;
* the Gemini API, where nothing says what the state holds: those that model output (or an
  ``interrupted`` generation, which the server only starts for input it took in) followed,
  except the user's current utterance. Input the model has not answered yet (a text turn
  sent while the handle was on its way, the utterance the user is speaking) stays until
  model output follows it, so a handle that crosses it never makes it forgotten.

Memory is bounded: user audio is kept only while it may still be needed, i.e. the newest
``audio_window_ms`` of audio plus the current unanswered utterance (at most
``max_utterance_ms`` of it). Audio that leaves without being covered is counted when it
leaves, never dropped silently: voiced audio (loud enough to be speech, see
:mod:`adk_live_resume.conversation.activity`) as lost (:attr:`Outbox.dropped_audio_ms_total`),
unvoiced audio (silence, room noise) apart (:attr:`Outbox.dropped_silence_ms_total`). Video and
image frames: the newest ``max_frames`` (:mod:`~.frame_window`).

On resume, :meth:`Outbox.take_replay` splits what is left at the last *resolved* turn (a
``turnComplete`` with no tool call still waiting for its response):

* before it, the exchange already happened: it is returned as context turns, to be sent as
  history that does not ask for an answer (nothing is said twice, nothing forgotten; the
  context an earlier replay sent goes again, the handle predates it too). A turn
  is resolved when the model said something after the latest user input or tool response and
  no tool call waits for its response;
* after it, the messages are returned as they were sent, to be replayed in order (the model
  answers them once), except function responses for calls the resumed session never saw;
  so is a message before it that asks for an answer and still waits for a generation of
  its own (the rest of an answer already streaming when it went out, or the answer to an
  earlier ask, resolved that turn, not it: see :mod:`~.resolved_turns`, which draws the
  line);
* a ``contextUpdate`` (system instruction, tools) the handle may not cover is replayed
  wherever it was, first (:mod:`~.context_updates`).

What a send call carries is read in :mod:`~.client_sends`; the history a fresh
session starts with is built in :mod:`~.fresh_history`.

Pure: no I/O.
"""

from __future__ import annotations

from collections.abc import Container, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from google.genai import types

from .activity import UserActivity
from .answers import UnansweredTurns
from .client_message import ClientMessage, PackedAudio
from .client_sends import (
    audio_pcm,
    context_turns,
    describe,
    is_frame,
    plain_audio,
    signals,
    without_responses,
)
from .context_updates import CONTEXT_UPDATE, ContextUpdates
from .frame_window import FrameWindow
from .fresh_history import HistoryFacts
from .resolved_turns import asks_answer, resolved_position, split, waiting_asks
from .server_facts import AUDIO_FACTS, MODEL_OUTPUT
from .server_facts import ServerFact as _Fact
from .transcript_echo import TranscriptEcho

__all__ = ["MAX_FRAGMENTS", "Outbox", "Replay"]


_DATA_AND_MIME = frozenset({"data", "mime_type"})


@dataclass
class Replay:
    """What to send on a resumed connection, in this order."""

    context: list[tuple[str, str]] = field(default_factory=list)
    messages: list[ClientMessage] = field(default_factory=list)
    #: Tool calls whose whole exchange is in the finished part that goes as context (not
    #: replayed): the resumed session has their exchange, the model will not issue them anew.
    context_calls: tuple[str, ...] = ()
    #: Voiced user audio (speech) that left the outbox uncovered since the previous replay
    #: (ms): what the user said that the resumed session will not hear.
    dropped_audio_ms: float = 0.0
    #: Unvoiced user audio (silence, room noise) that left it the same way (ms).
    dropped_silence_ms: float = 0.0
    #: Video and image frames that left the frame window uncovered since the previous replay.
    dropped_frames: int = 0
    dropped_responses: list[str] = field(default_factory=list)

    def context_contents(self) -> list[types.Content]:
        """The context as ``Content`` turns (roles ``user``/``model``)."""
        return [
            types.Content(role=role, parts=[types.Part(text=text)]) for role, text in self.context
        ]


class Outbox:
    """The record of one live session since its newest resumable handle."""

    def __init__(
        self,
        audio_window_ms: float = 2000.0,
        *,
        max_utterance_ms: float = 30000.0,
        max_frames: int = 120,
        activity: UserActivity | None = None,
    ) -> None:
        self.audio_window_ms = audio_window_ms
        self.max_utterance_ms = max_utterance_ms
        self.activity = activity if activity is not None else UserActivity()
        #: Whether a typed turn or function response waits for its answer.
        self.turns = UnansweredTurns()
        #: The generation in progress said something (text, voiced audio). A tool call or a
        #: pause while the model works ends its output: what follows is a generation of its
        #: own, which says something or not.
        self._saying = False
        #: The last generation with output that ended said something: false before any
        #: on this run, and after one of near-silent audio alone (a stall's answer).
        self._said = False
        #: The ids of the function responses sent since the last typed turn (this run).
        self.responses_sent_last: frozenset[str] = frozenset()
        self._items: list[ClientMessage | _Fact] = []
        self._index = 0
        #: Model output of a generation was seen on this connection, and no end of it.
        self._generating = False
        self._audio_ms = 0.0  # audio held now
        #: Voiced audio (ms) that left the outbox without being covered, over the run.
        self.dropped_audio_ms_total = 0.0
        #: Unvoiced audio (ms) that left the outbox without being covered, over the run.
        self.dropped_silence_ms_total = 0.0
        self._dropped_since_replay = 0.0
        self._silence_since_replay = 0.0
        #: The video and image frames held, the newest ``max_frames`` (the others counted).
        self.frames = FrameWindow(max_frames)
        #: ``(utterance number, what the server transcribed of it)``.
        self._heard: tuple[int, str] = (0, "")
        #: The most audio (ms) and the most entries (client messages and the server facts
        #: kept beside them) held at once over the run. Audio
        #: held never exceeds 1.25 x (``audio_window_ms`` + ``max_utterance_ms``) plus one
        #: message: it is trimmed back to the budget once it passes that.
        self.peak_audio_ms = 0.0
        self.peak_messages = 0
        #: What the run's context updates set, and the unknown sends passed through.
        self.context = ContextUpdates()
        self._last_utterance = 0
        #: The utterance whose start a replay sends again (0 if none): its first message
        #: with sound (a voiced chunk, ``activityStart``) recorded again, under whatever
        #: number it gets then, is still the utterance's start (a
        #: connection that dies during the replay leaves a replay that still starts it; see
        #: :meth:`_note_replayed_start`). The silence replayed before it now carries the
        #: utterance's number too, as everything sent while it waits for its answer does.
        self._replayed_start = 0
        #: Transcriptions of utterance starts that a connection heard before it died and that
        #: were replayed whole: ADK keeps their pieces, so its history reads "start" + "whole
        #: utterance" (see :func:`~.fresh_history.fresh_history`). The newest
        #: :data:`MAX_FRAGMENTS` are kept.
        self.transcript_fragments: list[str] = []
        #: ``(utterance number, text)``: what the connections before the newest replay of
        #: the unanswered utterance from its start transcribed of it, joined as ADK joins
        #: the pieces in its session. It moves to the number the replay's first sound gets
        #: (replayed once the user has gone quiet, that begins a new utterance in
        #: :class:`UserActivity`).
        self._heard_before_replay: tuple[int, str] = (0, "")
        #: What the user was shown of the unanswered utterance's transcription, and what of
        #: a replay's new transcription repeats it.
        self.echo = TranscriptEcho()

    def __len__(self) -> int:
        return sum(isinstance(item, ClientMessage) for item in self._items)

    @property
    def audio_ms(self) -> float:
        """Milliseconds of user audio held now."""
        return self._audio_ms

    # -- recording ------------------------------------------------------------------------

    def begin_connection(self) -> None:
        """Client message numbering restarts on every connection; a generation in progress
        on the last one was cut off with it."""
        self._index = 0
        self._generating = self._saying = False
        self.activity.on_generation_cut()
        self.turns.on_new_connection()
        self.echo.new_connection()

    def count_unrecorded(self) -> None:
        """A client message goes on this connection without being recorded (a fresh session's
        history, which is the session's state from its setup on): it still takes its number, so
        that ``lastConsumedClientMessageIndex`` names the same message here as on the server."""
        self._index += 1

    def record(self, method: str, kwargs: Mapping[str, Any]) -> ClientMessage:
        """Record a client message about to be sent; return its description.

        ``kwargs`` is handed over, not copied (this runs for every microphone chunk): the
        caller passes a dict made for this send (as :class:`SessionTap` does) and never
        changes it afterwards. A mapping of another type is copied."""
        self._index += 1
        activity = self.activity
        text: str | None = None
        ids: tuple[str, ...] = ()
        spoken = True  # audio or an activity signal: part of the utterance, if one is open
        begins = False  # sound that can begin an utterance: voice, activityStart
        frame = False
        chunk = plain_audio(method, kwargs)
        sent: Mapping[str, Any] | PackedAudio
        if chunk is not None:  # the microphone's common case, on every chunk: the short way
            pcm, audio_ms = chunk
            voiced = begins = activity.on_audio(pcm, audio_ms)
            sent = _packed(kwargs, pcm)
        else:
            sent = kwargs
            audio_ms, text, ids = describe(method, kwargs)
            frame = audio_ms <= 0 and is_frame(method, kwargs)
            sent_signals = signals(method, kwargs)
            spoken = audio_ms > 0 or bool(sent_signals)
            for signal in sent_signals:
                if signal == "activity_start":
                    activity.on_activity_start()
                elif signal == "activity_end":
                    activity.on_activity_end()
                else:
                    activity.on_audio_stream_end()
            pcm = audio_pcm(method, kwargs) if audio_ms > 0 else b""
            voiced = activity.on_audio(pcm, audio_ms) if audio_ms > 0 and pcm else False
            begins = voiced or "activity_start" in sent_signals
        if text or ids:
            self.turns.on_turn_sent()
        if text:
            self.responses_sent_last = frozenset()
        if ids:
            self.responses_sent_last |= frozenset(ids)
        # A typed turn or tool response sent while the user speaks is a turn of its own.
        utterance = activity.utterances if activity.unanswered and spoken else 0
        starts = utterance > self._last_utterance
        if starts:
            self._last_utterance = utterance
        if begins and utterance and self._replayed_start:
            # The replay's first sound: the utterance's start, under the number it has now
            # (its own while the user still speaks, a new one once they went quiet).
            starts, self._replayed_start = True, 0
            self._heard_before_replay = (utterance, self._heard_before_replay[1])
        if method == CONTEXT_UPDATE:
            self.context.on_update(kwargs)
        message = ClientMessage(
            self._index,
            method,
            sent if type(sent) is dict or isinstance(sent, tuple) else dict(sent),
            audio_ms,
            text,
            ids,
            voiced,
            utterance,
            starts,
            frame,
        )
        self._items.append(message)
        if frame and self.frames.added():
            self._items = self.frames.trim(self._items, _is_frame)
        if audio_ms > 0:
            audio = self._audio_ms = self._audio_ms + audio_ms
            if audio > self.peak_audio_ms:
                self.peak_audio_ms = audio
            # (the budget is never below the window: the rest is asked only beyond it)
            if audio > self.audio_window_ms * 1.25 and audio > self._audio_budget() * 1.25:
                self._trim_audio()
        held = len(self._items)  # (after a trim, which makes a new list)
        if held > self.peak_messages:
            self.peak_messages = held
        return message

    def model_text(self, text: str) -> None:
        if text:
            self._saying = True
            self.activity.on_model_output()
            self.turns.on_model_output()
            self._items.append(_Fact("model_text", text, starts=self._generation_begins()))

    def _generation_begins(self) -> bool:
        """Model output arrives: whether it begins a generation (see :meth:`covered`)."""
        begins, self._generating = not self._generating, True
        return begins

    def model_audio(self, *, voiced: bool = True) -> None:
        """Model output without text (audio, a thought) arrived: model output as text is, for
        the utterance and the typed turns it answers and for what a handle covers (an app
        that turns output transcription off gets nothing else); it carries no text to give
        back as context. Consecutive parts are kept as one fact. ``voiced``: false for audio
        that is all near silence, which covers as output does but answers no typed turn
        (:meth:`typed_turns_unanswered`) unless other output follows it in its generation,
        and no utterance: the user heard nothing, so the utterance stays unanswered (its
        audio is replayed whole to a resumed session) until voiced output comes."""
        self._saying = self._saying or voiced
        if voiced:
            self.activity.on_model_output()
        self.turns.on_model_output()
        audio, starts = AUDIO_FACTS[voiced]
        if self._generation_begins():
            self._items.append(starts)
        elif not self._items or self._items[-1] not in (audio, starts):
            self._items.append(audio)

    def input_text(self, text: str) -> str:
        """Record an ``inputTranscription`` piece; return what of it to show the user (pass
        on to ADK): all of it, except what repeats a transcription shown before a replay
        (:class:`~.transcript_echo.TranscriptEcho`)."""
        if not text:
            return text
        self.activity.on_input_transcription()
        current = self._current_utterance()
        if current:  # the pieces carry their own spacing
            before = self._heard[1] if self._heard[0] == current else ""
            self._heard = (current, before + text)
        self._items.append(_Fact("input_text", text))
        return self.echo.piece(current, text)

    def tool_call(self, ids: Iterable[str]) -> None:
        self.activity.on_model_output()
        self.turns.on_tool_call()
        self._items.append(_Fact("tool_call", ids=tuple(ids), starts=self._generation_begins()))
        # The model waits for the responses: what it says after them answers them, even
        # where no turnComplete ends the turn first (native audio, Gemini 3.x Live), and
        # says something only if it is not near silence alone.
        self._generating = self._saying = False

    def turn_complete(self) -> None:
        self.activity.on_turn_complete()
        self.turns.on_generation_end()
        if self._generating:
            self._said = self._saying
        self._generating = self._saying = False
        self._items.append(_Fact("turn_complete"))

    def work_goes_on(self) -> None:
        """A ``turnComplete`` whose ``interactionStatus`` says the model's work goes on: its
        utterance ended, answering nothing; the next output begins a new generation (what
        follows, for a handle, shows the server took in what was sent meanwhile)."""
        self.turns.on_generation_paused()
        self._generating = self._saying = False

    def interrupted(self) -> None:
        """The server cut off a generation: it had taken in the input that started it, so a
        later handle holds that input, though nothing answered it (not a turn's end)."""
        self.activity.on_generation_cut()
        self.turns.on_generation_end()
        if self._generating and not self._saying:
            self._said = False  # (cut near silence said nothing; cut speech is no new answer)
        self._generating = self._saying = False
        self._items.append(_Fact("interrupted"))

    def covered(self, last_consumed_index: int | None) -> None:
        """A resumable handle arrived: forget what its state includes (see module doc)."""
        self.context.on_handle()
        if last_consumed_index is not None:
            self._keep(
                lambda position, item: (
                    isinstance(item, ClientMessage) and item.index > last_consumed_index
                )
            )
            return
        # Gemini API: model output (or an interrupted generation) shows the server took in
        # what came before it, except the utterance the user is still speaking or has not
        # been answered for. A typed turn, a function response or results told as content
        # (:func:`~.resolved_turns.asks_answer`) need more: a generation of its own begun
        # after it was sent (or an interruption). The rest of a generation already streaming
        # when it went out, or the answer to an ask sent before it, may have been sent before
        # the server had it, and so may the handle that follows (:func:`waiting_asks`).
        answered_until = -1
        for position, item in enumerate(self._items):
            if isinstance(item, _Fact) and (
                item.kind in MODEL_OUTPUT or item.kind == "interrupted"
            ):
                answered_until = position
        waiting = set(waiting_asks(self._items))
        current = self._current_utterance()
        self._keep(
            lambda position, item: (
                isinstance(item, ClientMessage)
                and (
                    position > answered_until
                    or (current > 0 and item.utterance == current)
                    or position in waiting
                )
            )
        )

    def _current_utterance(self) -> int:
        """Number of the utterance the model has not answered yet, or 0."""
        return self.activity.utterances if self.activity.unanswered else 0

    def _keep(self, keep: Any) -> None:
        kept = [item for position, item in enumerate(self._items) if keep(position, item)]
        self._items = kept
        self._audio_ms = sum(item.audio_ms for item in kept if isinstance(item, ClientMessage))
        self.frames.recount(kept, _is_frame)

    # -- bounded audio --------------------------------------------------------------------

    def _audio_budget(self) -> float:
        return self.audio_window_ms + (self.max_utterance_ms if self.activity.unanswered else 0.0)

    def _trim_audio(self) -> None:
        """Drop the oldest audio beyond the window (and beyond the utterance cap); count it."""
        window = self.audio_window_ms
        current = self._current_utterance()
        if not current:
            self._trim_window(window)
            return
        utterance = self.max_utterance_ms
        trailing = self._trailing_silence_from(current)
        keep: set[int] = set()  # (the window's newest audio and the utterance's sound)
        for position in range(len(self._items) - 1, -1, -1):
            item = self._items[position]
            if not isinstance(item, ClientMessage) or item.audio_ms <= 0:
                continue
            spoken = item.utterance == current and position < trailing
            if spoken and utterance >= item.audio_ms:
                utterance -= item.audio_ms
                keep.add(position)
            elif window >= item.audio_ms:
                window -= item.audio_ms
                keep.add(position)
            else:
                window = 0.0
        self._drop_audio(before=len(self._items), keep=keep)

    def _trim_window(self, window: float) -> None:
        """:meth:`_trim_audio` with no utterance unanswered: the newest ``window`` ms of audio
        stay, the audio before the first chunk that does not fit goes (the same walk from
        the newest, stopped there: what is before it is not read twice). Runs once every
        quarter window of microphone audio."""
        items = self._items
        for position in range(len(items) - 1, -1, -1):
            item = items[position]
            if not isinstance(item, ClientMessage) or item.audio_ms <= 0:
                continue
            if window < item.audio_ms:
                self._drop_audio(before=position + 1)
                return
            window -= item.audio_ms

    def _drop_audio(self, *, before: int, keep: Container[int] = ()) -> None:
        """Drop the audio messages at positions before ``before`` that are not in ``keep``
        (every item from ``before`` on stays); count what went, voiced and not."""
        items = self._items
        kept: list[ClientMessage | _Fact] = []
        voiced = unvoiced = 0.0
        for position in range(before):
            item = items[position]
            if isinstance(item, ClientMessage) and item.audio_ms > 0 and position not in keep:
                if item.voiced:
                    voiced += item.audio_ms
                else:
                    unvoiced += item.audio_ms
                continue
            kept.append(item)
        kept += items[before:]
        self._items = kept
        self._audio_ms -= voiced + unvoiced
        self.dropped_audio_ms_total += voiced
        self._dropped_since_replay += voiced
        self.dropped_silence_ms_total += unvoiced
        self._silence_since_replay += unvoiced

    def _trailing_silence_from(self, current: int) -> int:
        """Position from which the audio of utterance ``current`` is silence after it ended:
        more than ``hangover_ms`` of unvoiced audio after its last voiced chunk. Until the
        model answers, the utterance goes on in name and every chunk carries its number; only
        its sound counts against ``max_utterance_ms``, and the silence after it is window
        audio, so an answer that comes late never pushes the speech out of the cap. An
        utterance the client marks with activity signals (manual activity detection) is all
        sound, voiced or not: no position (``len(items)``)."""
        end = len(self._items)
        if not current or self.activity.manual_activity:
            return end
        quiet = 0.0
        start: int | None = None
        for position, item in enumerate(self._items):
            if not isinstance(item, ClientMessage) or item.utterance != current:
                continue
            if item.audio_ms <= 0 and signals(item.method, item.kwargs):
                return end  # (manual activity detection)
            if item.voiced:
                quiet, start = 0.0, None
            elif item.audio_ms > 0:
                quiet += item.audio_ms
                if start is None and quiet > self.activity.hangover_ms:
                    start = position
        return end if start is None else start

    # -- replaying ------------------------------------------------------------------------

    def has_context(self) -> bool:
        """Whether a replay now would carry context (exchanges the handle does not hold)."""
        return resolved_position(self._items) >= 0

    def take_replay(self, unknown_call_ids: Iterable[str] = ()) -> Replay:
        """Return what a resumed session needs and empty the outbox (see module doc)."""
        replay = self._take_replay(unknown_call_ids)
        self._note_replayed_start(replay)
        return replay

    def _note_replayed_start(self, replay: Replay) -> None:
        """When ``replay`` sends the unanswered utterance again from its start, the next
        connection transcribes it from the start: what was heard so far becomes a fragment,
        and what the user was shown of it is not shown again."""
        current = self._current_utterance()
        if not current or not any(
            m.starts_utterance and m.utterance == current for m in replay.messages
        ):
            self._replayed_start = 0
            return
        self._replayed_start = current
        self.echo.replaying(current)
        number, heard = self._heard
        earlier, before = self._heard_before_replay
        before = before if earlier == current else ""
        if number == current and heard.strip():
            self.transcript_fragments = [*self.transcript_fragments, heard][-MAX_FRAGMENTS:]
            self._heard = (current, "")
            before += heard
        self._heard_before_replay = (current, before)

    def _take_replay(self, unknown_call_ids: Iterable[str] = ()) -> Replay:
        unknown = set(unknown_call_ids)
        self._trim_audio()
        items, self._items = self.frames.trim(self._items, _is_frame), []
        self._audio_ms = 0.0
        finished, asking = split(items)
        replay = Replay(
            context=_context(finished),
            context_calls=tuple(
                call_id
                for item in finished
                if isinstance(item, _Fact) and item.kind == "tool_call"
                for call_id in item.ids
            ),
        )
        # A context update the handle may not hold goes again even from the finished part
        # (its exchanges go back as context, which carries no system instruction or tools).
        replay.messages.extend(
            item
            for item in finished
            if isinstance(item, ClientMessage) and item.method == CONTEXT_UPDATE
        )
        for item in asking:
            if not isinstance(item, ClientMessage):
                continue
            dropped = [i for i in item.response_ids if i in unknown]
            if dropped:
                replay.dropped_responses.extend(dropped)
                kept = without_responses(item.method, item.kwargs, set(dropped))
                if kept is None:
                    continue
                audio_ms, text, ids = describe(item.method, kept)
                item = ClientMessage(item.index, item.method, kept, audio_ms, text, ids)
            replay.messages.append(item)
        replay.dropped_audio_ms = self._dropped_since_replay
        replay.dropped_silence_ms = self._silence_since_replay
        self._dropped_since_replay = self._silence_since_replay = 0.0
        # (a finished exchange goes back as its text: its frames are not sent again)
        not_sent = sum(1 for item in finished if isinstance(item, ClientMessage) and item.frame)
        self.frames.left_out(not_sent)
        replay.dropped_frames = self.frames.replayed() + not_sent
        return replay

    def history_facts(self) -> HistoryFacts:
        """What a fresh history is built with (:func:`~.fresh_history.
        fresh_history`), read now: a value, unchanged by what the outbox records later."""
        return HistoryFacts(
            self.utterance_transcript(),
            speaking=self.activity.speaking,
            fragments=tuple(self.transcript_fragments),
            stored=self.utterance_transcript_stored(),
            cut=tuple(self.cut_by_typed_turns()),
            unanswered=tuple(self.typed_turns_unanswered()),
            answered_last=self.answered_last(),
            responses_sent_last=self.responses_sent_last,
        )

    def utterance_transcript(self) -> str:
        """What the server transcribed of the unanswered utterance so far ("" if nothing)."""
        number, text = self._heard
        return text.strip() if number and number == self._current_utterance() else ""

    def utterance_transcript_stored(self) -> str:
        """What ADK's session holds of the unanswered utterance's transcription: every
        connection's pieces joined, those heard before a replay sent it again from its start
        first ("" if nothing). It differs from :meth:`utterance_transcript` when a replay
        restarted the utterance: a connection that died before it heard the replay leaves
        ADK's session with the first transcription alone."""
        current = self._current_utterance()
        number, before = self._heard_before_replay
        earlier = before if current and number == current else ""
        return (earlier + self.utterance_transcript()).strip()

    def cut_by_typed_turns(self) -> list[tuple[str, str]]:
        """``(typed turn, model text)`` for each generation held here that a typed turn cut
        off (the server's ``interrupted`` came after the turn was sent): the last typed turn
        sent before ``interrupted``, and what the cut generation said.

        The generation began before that turn reached the server when its first text came
        before the turn was sent, or when nothing but that turn can have cut it: no voiced
        audio was sent after the turn. (Text that came after the turn, with the user's voice
        after it, may be the turn's own answer cut off by their speech: not reported.)

        ADK writes a typed turn to its session when its sender takes it, and the text of the
        generation it cut off when ``interrupted`` arrives: after the turn, where the server
        had it before (see :func:`~.fresh_history.fresh_history`)."""
        cut: list[tuple[str, str]] = []
        text = ""  # what the generation in progress said so far
        turn = ""  # the last typed turn sent since the last turn's end
        began_before = voiced = False  # its text began before that turn; voice after it
        for item in self._items:
            if isinstance(item, ClientMessage):
                if item.user_text:
                    turn, began_before, voiced = item.user_text, bool(text), False
                elif item.voiced and turn:
                    voiced = True
            elif item.kind == "model_text":
                text += item.text
            elif item.kind == "interrupted":
                if turn and text.strip() and (began_before or not voiced):
                    cut.append((turn, text))
                text, turn = "", ""
            elif item.kind in ("turn_complete", "tool_call"):
                text, turn = "", ""
        return cut

    def answered_last(self) -> bool:
        """Whether the model answered the typed turn or function response sent last: a
        generation with output begun after it ended (:class:`UnansweredTurns`), and no typed
        turn waits (not even one a near-silent generation left,
        :meth:`typed_turns_unanswered`), and the last generation to end said something (a
        tool call or a pause of the model's work ends one: what follows is a generation of
        its own). False before any answer on this run (a history from before it may end
        with a turn nobody answered), and after an answer of near-silent audio alone, ended
        or cut (a stall's, whose turn may have left this record with a later handle: the
        fresh session is asked it again).
        The unanswered utterance is not looked at: a fresh history that holds it ends with
        it (:func:`~.fresh_history.fresh_history`), else its audio goes
        after the history."""
        return self._said and not self.turns.unanswered and not self.typed_turns_unanswered()

    def typed_turns_unanswered(self) -> list[str]:
        """The typed turns held here that no answer of their own began after, oldest first:
        each generation that begins answers the oldest ask waiting (a typed turn, a function
        response, results told as content: :func:`~.resolved_turns.waiting_asks`), so the
        model has said nothing to these yet, and model output after one of them in ADK's
        session was said before the server had it (see
        :func:`~.fresh_history.fresh_history`).

        A generation of near-silent audio only (a stall's ``quiet_audio`` answer) said
        nothing: the ask it began for stays unanswered, so a fresh session is asked it, until
        a later generation speaks. One that begins near silent and then speaks (or says text,
        or calls a tool) is an answer from its beginning. An interruption takes the asks
        waiting with it (the server had them, and a handle holds them), but not the ask of a
        generation it cut off near silent."""
        waiting: list[str | None] = []  # (asks no generation began for: None if not typed)
        silent: list[str | None] = []  # (asks whose generation ended having said nothing)
        #: The ask of the generation in progress while it has said nothing (it began near
        #: silent), and whether there is such a generation.
        current: str | None = None
        quiet = False
        for item in self._items:
            if isinstance(item, ClientMessage):
                if asks_answer(item):
                    waiting.append(item.user_text)
            elif item.starts:
                paired = waiting.pop(0) if waiting else None
                quiet, current = bool(item.quiet), paired
                if not quiet:  # (an answer that speaks answers those left in silence too)
                    silent.clear()
            elif quiet and item.kind in MODEL_OUTPUT and not item.quiet:
                quiet, current = False, None
                silent.clear()
            elif item.kind in ("turn_complete", "interrupted"):
                if quiet:
                    silent.append(current)
                quiet, current = False, None
                if item.kind == "interrupted":
                    waiting.clear()  # (the server took them in: see :meth:`covered`)
        return [text for text in silent + waiting if text]

    def take_audio(
        self, *, utterance_in_history: bool, waiting_in_history: Sequence[str] = ()
    ) -> Replay:
        """For a fresh session, whose rebuilt history holds every finished exchange: the
        audio of the utterance the model has not answered, unless the history has it too,
        and the typed turns not answered yet that the history lacks (``waiting_in_history``:
        the history's user texts, :func:`~.fresh_history.user_texts`; each
        one matches one typed turn), each once."""
        current = self._current_utterance()
        replay = self._take_replay()
        replay.context = []
        waiting = list(waiting_in_history)

        def kept(m: ClientMessage) -> bool:
            if m.audio_ms > 0:
                return bool(current and m.utterance == current and not utterance_in_history)
            if not m.user_text:
                return False
            if m.user_text in waiting:
                waiting.remove(m.user_text)
                return False
            return True

        kept_messages = [m for m in replay.messages if kept(m)]
        # (a camera's frames are not sent to a fresh session: they leave counted)
        left_out = sum(m.frame for m in replay.messages) - sum(m.frame for m in kept_messages)
        self.frames.left_out(left_out)
        replay.dropped_frames += left_out
        replay.messages = kept_messages
        self._note_replayed_start(replay)
        return replay


def _packed(kwargs: Mapping[str, Any], pcm: bytes) -> Mapping[str, Any] | PackedAudio:
    """A :func:`~.client_sends.plain_audio` send as the outbox keeps it:
    packed when its ``Blob`` has nothing but the bytes and the MIME type, else as it is."""
    ((key, blob),) = kwargs.items()
    if blob.model_fields_set == _DATA_AND_MIME and blob.display_name is None:
        return (key, pcm, blob.mime_type)
    return kwargs


MAX_FRAGMENTS = 64


def _is_frame(item: ClientMessage | _Fact) -> bool:
    return isinstance(item, ClientMessage) and item.frame


def _context(items: list[ClientMessage | _Fact]) -> list[tuple[str, str]]:
    """The finished exchanges in ``items`` as (role, text) turns, the context an earlier
    replay sent among them included (a connection resumed from the same handle needs it
    again). Transcription pieces and the model's text chunks carry their own spacing and are
    joined as they are; typed turns that follow one another are joined with a space."""
    turns: list[tuple[str, str]] = []
    last_kind = ""

    def add(role: str, text: str, kind: str) -> None:
        nonlocal last_kind
        if turns and turns[-1][0] == role:
            joiner = "" if kind == last_kind and kind != "typed" else " "
            turns[-1] = (role, turns[-1][1] + joiner + text)
        else:
            turns.append((role, text))
        last_kind = kind

    for item in items:
        if isinstance(item, ClientMessage):
            if item.user_text:
                add("user", item.user_text, "typed")
            for role, text in context_turns(item.method, item.kwargs):
                add(role, text, "context")
        elif item.kind == "input_text":
            add("user", item.text, "input_text")
        elif item.kind == "model_text":
            add("model", item.text, "model_text")
    return [(role, text.strip()) for role, text in turns if text.strip()]
