"""Turn-taking on one fake-server connection: which client input becomes a user turn, and when.

* Text (``clientContent`` user turn, ``realtimeInput.text``) is a user turn at once; audio goes
  through voice activity detection (:mod:`~adk_live_resume.testing.vad`): speech that starts
  while the model answers cuts the answer (``interrupted``, and ``toolCallCancellation`` for
  pending calls; not with ``activityHandling: NO_INTERRUPTION``), ``inputTranscription``
  pieces follow the speech as it is decoded when the setup asks for them
  (``inputAudioTranscription``; the service sends none otherwise, see
  :mod:`~adk_live_resume.testing.generation` for the sources; on Gemini 3.1 Live one
  transcription comes once the utterance ended, :mod:`~adk_live_resume.testing.families`),
  and the finished utterance
  is a user turn (on the Vertex AI dialect, recognised by its websocket path, a
  transcription ends with ``finished: true`` at the end of the utterance; the Gemini API
  sends no such end). Text, ``clientContent`` or ``activityEnd`` arriving mid-utterance end
  the utterance there (it becomes a turn first); ``audioStreamEnd`` too, with automatic
  detection;
* ``clientContent`` holding several turns, or a model turn, is history: remembered, and
  answered only when it ends with a complete user turn; the model family
  (:mod:`~adk_live_resume.testing.families`) rules mid-session ``clientContent`` (else kept in
  ``record.rejected_client_content`` and closed with 1007, unless ``lenient_client_content``);
* Gemini 3.x Live (:mod:`~adk_live_resume.testing.dialect`): initial history (before the first
  realtime input of a fresh session whose setup set ``historyConfig.
  initialHistoryInClientContent``) ending with a user turn is answered at the next realtime
  input (ADK sends ``"."``);
* function responses answer pending calls (the model goes on), or open NON_BLOCKING ones;
  responses for calls of an earlier connection are recorded as stale, others as unknown; on
  the Gemini 3.x Live families a handle follows the response of the last pending call,
  before the answer (recorded on 3.1: :mod:`~adk_live_resume.testing.wire_shapes`);
* every ``handle_schedule.every_audio_ms`` of audio received while idle, a handle is issued;
* a user turn to an extended-thinking model (:mod:`~adk_live_resume.testing.families`) takes
  the handle the model issues while it works before the turn is remembered;
* in voice sessions with automatic detection, ``serverContent.speechState`` says ``SPEECH``
  once 240 ms of an utterance were heard and ``NON_SPEECH`` with its end (in the frame of the
  final transcription), where the wire shapes send it
  (:mod:`~adk_live_resume.testing.wire_shapes`, its sources there);
* ``contextUpdate`` sets the session's system instruction and tools from then on, kept in
  its handles (:mod:`~adk_live_resume.testing.context_update`);
* a second ``setup`` on a connection closes it with 1007.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import Any, Literal

from . import protocol as wire
from .connection_clocks import SessionClocks
from .connection_wire import ConnectionWire
from .context_update import read_context_update
from .generation import Generation
from .handle_issuing import ConsumedLedger, HandleIssuer
from .model import Turn, turns_overlap
from .protocol import JsonDict, has, pick, pick_dict, pick_list
from .records import HeardTurn
from .session_state import SessionState
from .settings import INVALID_ARGUMENT_REASON, ServerSettings, SharedState
from .setup_choices import SetupChoices
from .speech import pcm_duration_ms
from .vad import SpeechEvent, SpeechStarted, SpeechTracker, Transcribed, Utterance

__all__ = ["SPEECH_ONSET_MS", "TurnTaking"]

#: Milliseconds of an utterance heard before ``speechState: SPEECH`` (measured about 0.24 s
#: after speech onset: notes, "Field facts of 2026-11-29").
SPEECH_ONSET_MS = 240

logger = logging.getLogger("adk_live_resume.testing")


class TurnTaking:
    """Client messages of one connection, handled in order: they become user turns, history,
    tool responses. Owns the voice activity detection and what waits for the next input."""

    def __init__(
        self,
        wire_: ConnectionWire,
        session: SessionState,
        ledger: ConsumedLedger,
        handles: HandleIssuer,
        clocks: SessionClocks,
        model: Generation,
        *,
        choices: SetupChoices,
        settings: ServerSettings,
        shared: SharedState,
    ) -> None:
        self._wire = wire_
        self._record = wire_.record
        self._session = session
        self._ledger = ledger
        self._handles = handles
        self._clocks = clocks
        self._model = model
        self._choices = choices
        self._settings = settings
        self._shared = shared
        self._tracker = SpeechTracker(choices.vad)
        self._audio_rate = 16000
        self._unanswered_user = False
        self._realtime_seen = False
        self._awaiting_trigger = False
        self._trigger_tool_results: list[tuple[str, Any]] = []
        #: Milliseconds of the utterance in progress heard, for ``speechState`` (``None``:
        #: none in progress, or the server sends no speech states).
        self._heard_ms: int | None = None
        #: ``speechState: SPEECH`` was said for the utterance in progress.
        self._said_speech = False

    def speaking(self) -> bool:
        """True while the user is in the middle of an utterance."""
        return self._tracker.speaking

    def held_since(self) -> int | None:
        """The first client message whose audio the voice activity detection still holds."""
        return self._tracker.held_since

    async def handle(self, message: JsonDict) -> None:
        """Handle the latest client message (``ConsumedLedger.received`` numbers it)."""
        if has(message, "clientContent"):
            body = pick_dict(message, "clientContent") or {}
            if not self._accepts_client_content(body):
                return
            await self._end_utterance()
            await self._client_content(body)
        elif has(message, "realtimeInput"):
            await self._realtime_input(pick_dict(message, "realtimeInput") or {})
            self._realtime_seen = True
        elif has(message, "toolResponse"):
            shapes, choices = self._settings.wire_shapes, self._choices
            early = (
                self._handles.before_response(self._ledger.received)
                if shapes.handle_after_response(choices.gemini3, choices.resumption)
                else None
            )
            answered = self._tool_response(pick_dict(message, "toolResponse") or {})
            self._realtime_seen = True
            if answered and not self._model.calls_pending() and early is not None:
                # recorded on 3.1 (see wire_shapes): before the answer it starts
                await self._handles.send_issued(early)
        elif has(message, "contextUpdate"):
            self._context_update(pick_dict(message, "contextUpdate") or {})
        elif has(message, "setup"):  # one setup per connection, as the service says
            self._wire.terminate("rejected", code=1007, reason=INVALID_ARGUMENT_REASON)
        else:
            logger.warning(
                "fake live server: connection %d: ignoring client message with keys %s",
                self._record.index,
                sorted(message),
            )

    def _accepts_client_content(self, body: JsonDict) -> bool:
        """A family that takes no mid-session context (3.1): only initial history; False
        (and closed) when strict."""
        if self._choices.family.client_content_mid_session:
            return True
        if self._initial_history_open():
            return True
        self._record.rejected_client_content.append(body)
        if self._settings.lenient_client_content:
            logger.info(
                "fake live server: connection %d: clientContent a Gemini 3.x Live model "
                "rejects, accepted (lenient)",
                self._record.index,
            )
            return True
        self._wire.terminate("rejected", code=1007, reason=INVALID_ARGUMENT_REASON)
        return False

    def _initial_history_open(self) -> bool:
        """Gemini 3.x: the setup asked for initial history and no realtime input came yet."""
        initial = self._choices.history_in_client_content and not self._record.resumed
        return initial and not self._realtime_seen

    async def _client_content(self, body: JsonDict) -> None:
        turn_complete = bool(pick(body, "turnComplete", False))
        turns: list[Turn] = []
        tool_results: list[tuple[str, Any]] = []  # function responses ending the history
        calls_only: list[bool] = []  # per turn: it holds function calls and nothing else
        for raw_turn in pick_list(body, "turns"):
            role: Literal["user", "model"] = (
                "model" if pick(raw_turn, "role") == "model" else "user"
            )
            parts = pick_list(raw_turn, "parts")
            texts = [pick(part, "text") for part in parts]
            turns.append(Turn(role, "".join(t for t in texts if isinstance(t, str))))
            calls_only.append(bool(parts) and all(has(part, "functionCall") for part in parts))
            responses = [
                r for part in parts if isinstance(r := pick(part, "functionResponse"), dict)
            ]
            tool_results = [(str(pick(r, "name")), pick(r, "response", {})) for r in responses]
        index = self._ledger.received
        if not turns:
            remembered = self._session.turns
            if turn_complete and self._unanswered_user and remembered:
                self._unanswered_user = False
                await self._model.interrupt()
                self._model.start(remembered[-1].text)
            return
        only_results = len(turns) == 1 and turns[0].role == "user" and not turns[0].text
        if turn_complete and only_results and responses:
            # Only function results, for calls the session knows from earlier (no open
            # call): the model tells them as it tells a NON_BLOCKING call's result.
            for response in responses:
                self._record.tool_responses.append(response)
                self._model.background_result(str(pick(response, "name")), response)
            return
        late = len(turns) == 2 and calls_only[0] and turns[0].role == "model"
        if turn_complete and late and turns[1].role == "user" and not turns[1].text and responses:
            # A late result as content: the call (a model turn) and its result, for a call
            # whose id the session does not know (Pipecat PR 5497, Strands PR 4244). Told as
            # a NON_BLOCKING call's result is (WHEN_IDLE: after the answer in progress).
            for response in responses:
                self._model.background_result(str(pick(response, "name")), response)
            return
        is_history = len(turns) > 1 or turns[-1].role == "model" or not turn_complete
        is_history = is_history or any(turn.role == "model" for turn in turns)
        # Gemini 3.x Live takes clientContent as the initial history (see dialect): there even
        # a single user turn is history, answered at the next realtime input.
        # A family that takes clientContent all session long (3.8) takes only the first one as
        # that history; later ones are turns as on Gemini 2.x.
        initial = self._choices.gemini3 and self._initial_history_open()
        if self._choices.family.client_content_mid_session and self._record.history_sends:
            initial = False
        held = initial or (
            self._choices.gemini3 and not self._choices.family.client_content_mid_session
        )
        is_history = is_history or initial
        if not is_history:
            await self._user_turn(self._typed(turns[0].text, index))
            return
        duplicate = turns_overlap(self._session.turns, turns)
        self._record.history_sent(duplicate=duplicate)
        if duplicate:
            logger.info(
                "fake live server: connection %d: history delivered again", self._record.index
            )
        answer = turn_complete and turns[-1].role == "user"
        if answer and not held:
            await self._model.interrupt()
        # Turns that carried only function calls or responses have no text to remember.
        self._session.remember(*(t for t in turns if t.text))
        for t in turns:
            if t.role == "user" and t.text:
                self._heard(HeardTurn(t.text, "history", self._record.index, index, index))
        self._unanswered_user = turns[-1].role == "user" and not turn_complete
        if answer and held:
            # Gemini 3.x Live answers history only at the next realtime input (ADK sends "."),
            # with the tool results the history ends with, if any.
            self._awaiting_trigger = True
            self._trigger_tool_results = tool_results
        elif (
            answer
            and tool_results
            and all(n in self._choices.non_blocking for n, _ in tool_results)
        ):
            # History ending with NON_BLOCKING calls' results (a fresh session after they
            # ended): told as such a result is, answering no user turn (the turn that asked
            # was answered when the call started).
            self._model.start("", tool_results=tool_results, answers_user=False)
        elif answer and tool_results:
            # History ending with a tool's result: answer with it, as after a toolResponse,
            # for the user turn that asked for the tool.
            asked = self._session.last_user_text()
            self._model.start(asked, tool_results=tool_results)
        elif answer:
            self._model.start(turns[-1].text)

    async def _realtime_input(self, body: JsonDict) -> None:
        index = self._ledger.received
        if has(body, "activityStart"):
            if self._tracker.config.disabled:
                await self._speech(self._tracker.activity_start(message=index))
            else:
                await self._model.interrupt()
        text = pick(body, "text")
        if isinstance(text, str) and text:
            await self._end_utterance()
            if self._awaiting_trigger and not text.strip(" .?!"):
                self._awaiting_trigger = False
                await self._model.interrupt()
                asked = self._session.last_user_text()
                results, self._trigger_tool_results = self._trigger_tool_results, []
                self._model.start(asked, tool_results=results)
            else:
                self._awaiting_trigger = False
                await self._user_turn(self._typed(text, index))
        blobs = [
            pick_dict(body, "audio"),
            pick_dict(body, "media"),
            *pick_list(body, "mediaChunks"),
        ]
        for blob in blobs:
            if isinstance(blob, dict):
                await self._audio(blob)
        if has(body, "activityEnd"):
            await self._speech(self._tracker.activity_end(message=index))
        if pick(body, "audioStreamEnd"):
            await self._speech(self._tracker.stream_end(message=index))

    async def _audio(self, blob: JsonDict) -> None:
        mime = str(pick(blob, "mimeType") or "audio/pcm")
        if not mime.startswith("audio/"):
            return
        for param in mime.split(";")[1:]:
            key, _, value = param.strip().partition("=")
            if key == "rate" and value.isdigit():
                self._audio_rate = int(value)
        data = pick(blob, "data")
        if not isinstance(data, str) or not data:
            return
        pcm = wire.b64decode_any(data)
        self._session.heard_audio()
        self._clocks.enforce_session_limit()
        idle = self._handles.resumable()
        events = self._tracker.audio(
            pcm, message=self._ledger.received, sample_rate=self._audio_rate
        )
        self._record.audio_ignored(self._tracker.ignored_audio_ms)
        await self._speech(events)
        await self._speech_state(pcm_duration_ms(pcm, self._audio_rate))
        if (
            idle
            and self._handles.audio_received(pcm_duration_ms(pcm, self._audio_rate))
            and self._handles.resumable()
        ):
            # this message's audio is in the state already: it counts as handled
            await self._handles.issue(handled=self._ledger.received)

    async def _speech_state(self, ms: int) -> None:
        """``speechState: SPEECH`` once :data:`SPEECH_ONSET_MS` of the utterance in progress
        were heard (automatic detection, where the wire shapes send it)."""
        if self._heard_ms is None or self._said_speech:
            return
        self._heard_ms += ms
        if self._heard_ms >= SPEECH_ONSET_MS:
            self._said_speech = True
            await self._wire.send(wire.server_content(speech_state="SPEECH"))

    async def _speech(self, events: Sequence[SpeechEvent]) -> None:
        """Act on what the voice activity detection found."""
        for event in events:
            if isinstance(event, SpeechStarted):
                if self._speech_states and not self._tracker.config.disabled:
                    self._heard_ms, self._said_speech = 0, False
                if self._tracker.config.interrupts:
                    await self._model.interrupt()
            elif isinstance(event, Transcribed):
                if self._choices.input_transcription and not self._whole_transcriptions:
                    await self._wire.send(
                        wire.server_content(input_transcription={"text": event.text})
                    )
            elif isinstance(event, Utterance):
                pieces_sent = event.has_text and not self._whole_transcriptions
                ending: JsonDict = {} if pieces_sent else {"text": event.text}
                if self._wire.vertex:  # Vertex AI marks the end of a transcription
                    ending["finished"] = True
                final: JsonDict = {}
                if ending and self._choices.input_transcription:
                    final["input_transcription"] = ending
                if self._said_speech:  # (in the final transcription's frame)
                    final["speech_state"] = "NON_SPEECH"
                self._heard_ms, self._said_speech = None, False
                if final:
                    await self._wire.send(wire.server_content(**final))
                spoken = HeardTurn(
                    event.text,
                    "spoken",
                    self._record.index,
                    event.first_message,
                    event.last_message,
                    event.ended_by,
                    event.cut_start,
                )
                await self._user_turn(spoken)

    @property
    def _speech_states(self) -> bool:
        """The server says ``speechState`` (the wire shapes' switch)."""
        return self._settings.wire_shapes.speech_state

    @property
    def _whole_transcriptions(self) -> bool:
        """The family transcribes an utterance once it ended, whole (3.1 Live)."""
        return self._choices.family.transcribes_after_utterance

    async def _end_utterance(self) -> None:
        """Other input arrived: the audio held so far becomes a turn first."""
        if self._tracker.held_since is not None:
            await self._speech(self._tracker.cut(message=self._ledger.received))

    def _tool_response(self, body: JsonDict) -> bool:
        """Take the function responses; True if one answered a call pending here."""
        answered = False
        for response in pick_list(body, "functionResponses"):
            if not isinstance(response, dict):
                continue
            self._record.tool_responses.append(response)
            call_id = pick(response, "id")
            known = self._shared.tool_calls.get(call_id) if isinstance(call_id, str) else None
            if known is not None:
                known.responses.append(pick(response, "response", {}))
            result = pick(response, "response", {})
            pending = isinstance(call_id, str) and self._model.resolve(call_id, result)
            background = self._session.close_call(call_id) if isinstance(call_id, str) else None
            if pending:
                answered = True
                self._record.accepted_tool_response_ids.append(str(call_id))
            elif background is not None:
                self._record.accepted_tool_response_ids.append(str(call_id))
                self._model.background_result(background, response, call_id=str(call_id))
            elif isinstance(call_id, str) and call_id in self._shared.issued_tool_ids:
                self._record.stale_tool_response_ids.append(call_id)
            else:
                self._record.unknown_tool_response_ids.append(str(call_id))
                logger.warning(
                    "fake live server: connection %d: tool response for unknown id %r",
                    self._record.index,
                    call_id,
                )
        return answered

    def _context_update(self, body: JsonDict) -> None:
        """New system instruction and tools, in order with the other input (google-genai
        2.32 ``send_context_update``; notes, "Field facts that contradict or extend the
        above"): kept in the session (and its handles), ``tools=[]`` clears them."""
        update = read_context_update(body, self._choices.family)
        self._record.context_updates.append(body)
        self._choices = self._session.update_context(update).choices(self._choices)
        self._model.use_context(self._choices)

    def _typed(self, text: str, index: int) -> HeardTurn:
        """A typed turn: carried by client message ``index`` alone."""
        return HeardTurn(text, "typed", self._record.index, index, index)

    def _heard(self, turn: HeardTurn) -> None:
        self._record.user_turns.append(turn.text)
        self._record.heard.append(turn)

    async def _user_turn(self, turn: HeardTurn) -> None:
        await self._model.interrupt()
        self._unanswered_user = False
        working = self._choices.family.speaks_while_working
        # (taken before the turn is remembered: the handle an extended-thinking model issues
        # while it works restores the session without the request)
        before = self._handles.before_request(turn.first_message) if working else None
        self._session.remember(Turn("user", turn.text))
        self._heard(turn)
        self._model.start(turn.text, work_handle=before)
