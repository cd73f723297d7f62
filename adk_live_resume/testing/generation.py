"""The fake model's answer on one connection: told in chunks, cut off, and its function calls.

* One generation at a time: :meth:`Generation.interrupt` cuts the answer in progress (the
  client gets ``toolCallCancellation`` for its pending calls, then ``interrupted``); an answer
  whose last messages are going out is let finish instead;
* the model family (:mod:`~adk_live_resume.testing.families`) rules ``turnComplete`` after a
  ``toolCall``, NON_BLOCKING calls and thought parts;
* NON_BLOCKING functions (``behavior`` in the setup's declaration): their calls do not hold
  the turn nor the resumable point; they stay open in the session (and in the snapshots of
  the handles issued meanwhile) until their response arrives, which the model then answers
  per its ``scheduling`` (see :mod:`~adk_live_resume.testing.model`);
* AUDIO answers are synthetic speech at 24 kHz (:mod:`~adk_live_resume.testing.speech`);
  when the setup asks for it (``outputAudioTranscription``), with an ``outputTranscription``
  per chunk: the service sends transcriptions only when the setup enables them (the Live
  API capabilities guide, "Audio transcriptions"; Firebase AI Logic's ``Transcription``
  reference: "returned ... if transcription is enabled with the inputAudioTranscription or
  outputAudioTranscription properties"); the recordings in the protocol notes ("Facts from
  recordings of real sessions") had both asked for; on the Vertex AI dialect the
  transcription ends with ``finished: true`` before ``generationComplete``;
* the ``turn_complete`` handle goes with ``turnComplete`` (or later, per the schedule); a
  ``mid_reply`` handle after an answer's first chunk where the schedule or the server's
  ``resume_replays_cut_reply`` asks for it, and a session resumed from one says the reply
  again before its next answer with that switch (its sources:
  :meth:`HandleIssuer.mid_reply <adk_live_resume.testing.handle_issuing.HandleIssuer.mid_reply>`);
* the recorded wire shapes (:mod:`~adk_live_resume.testing.wire_shapes`): ``fc_<digits>``
  call ids, an empty ``serverContent {}`` before and after a ``toolCall`` on the Gemini 3.x
  Live families, ``usageMetadata`` with ``turnComplete`` unless switched off;
* ``usageMetadata`` is per turn, not cumulative: its ``promptTokenCount`` counts the whole
  context again each turn (every turn the session holds, the user turn included: one token
  a word), its ``responseTokenCount`` the answer (in its modality, TEXT or AUDIO), its
  ``thoughtsTokenCount`` a thought summary; none at all on a family that sends none in a
  microphone conversation (3.1) once the session heard microphone audio (measured: 3.1
  prompts of 143, 181, 224 tokens, 2.5 native audio 373, 413, 452, and none on 3.1 with a
  microphone: pydantic-ai PR 7269's probe, kazunori279/interpretab's README;
  ``gemini-live-protocol.md``, "Field facts of 2026-11-29");
* a family that reports ``interactionStatus`` sends ``IDLE`` with the ``turnComplete`` that
  ends an answer (or the server's ``done_status``: ``REQUIRES_ACTION``, "Deprecated: Use
  IDLE instead. The server has completed all processing and background reasoning", the API
  reference and google-genai 3.6.1, notes "Field facts of 2026-11-29"; an extended-thinking
  model: ``IN_PROGRESS`` while a call it issued is open, or ``REQUIRES_ACTION`` behind the
  server's ``requires_action`` switch, a reading no source supports); an
  extended-thinking model answering a user turn first says
  :data:`WORKING` plus the turn's text, ends that utterance with ``generationComplete`` and a
  ``turnComplete`` carrying ``interactionStatus: IN_PROGRESS`` and the handle that restores
  the session without the request (:meth:`HandleIssuer.before_request
  <adk_live_resume.testing.handle_issuing.HandleIssuer.before_request>`), works for the
  server's ``work_delay`` (no handle is resumable meanwhile), then answers as usual (sources:
  :mod:`~adk_live_resume.testing.families`);
* a ``stall`` fault (:meth:`Fault.stall <adk_live_resume.testing.Fault.stall>`, its sources
  there) answers user turns in its shape instead: nothing at all (the generation waits until
  it is cut off or the connection ends, so no handle is issued meanwhile: the session is not
  at a resumable point), ``turnComplete`` alone, ``turnComplete`` with ``turnCompleteReason:
  RESPONSE_REJECTED``, near-silent audio then ``turnComplete``, nothing once a generation
  was cut off (``after_barge_in``), or the same canned answer (``canned``); no handle goes
  with a stalled turn, and it is recorded in ``record.stalled_turns``, never as answered.
"""

from __future__ import annotations

import asyncio
import collections
from collections.abc import Callable, Sequence
from typing import Any

from . import protocol as wire
from .armed_faults import ArmedFaults
from .connection_wire import ConnectionWire
from .families import IDENTICAL_CALLS_MAX
from .faults import CANNED_ANSWER
from .handle_issuing import HandleIssuer, Issued
from .model import STARTED, CallTool, CallTools, ScriptedModel, Turn, split_chunks, thought_part
from .protocol import JsonDict, compact_json, pick
from .records import ToolCallRecord
from .session_state import SessionState
from .settings import ServerSettings, SharedState
from .setup_choices import SetupChoices
from .speech import silence_pcm, speech_pcm

__all__ = ["OUTPUT_SAMPLES_PER_BYTE", "OUTPUT_SAMPLE_RATE", "WORKING", "Generation"]

OUTPUT_SAMPLE_RATE = 24000
#: Samples of answer audio per UTF-8 byte of answer text (short clips keep answers cheap).
OUTPUT_SAMPLES_PER_BYTE = 10
#: What an extended-thinking model says first, before the turn's text, while it works.
WORKING = "working on: "


class Generation:
    """The model's answers on one connection: at most one in progress, and its pending calls.

    ``user_speaking`` says whether the user is in the middle of an utterance (a ``WHEN_IDLE``
    result waits for its end).
    """

    def __init__(
        self,
        wire_: ConnectionWire,
        session: SessionState,
        handles: HandleIssuer,
        faults: ArmedFaults,
        *,
        choices: SetupChoices,
        settings: ServerSettings,
        shared: SharedState,
        user_speaking: Callable[[], bool],
    ) -> None:
        self._wire = wire_
        self._record = wire_.record
        self._session = session
        self._handles = handles
        self._faults = faults
        self._choices = choices
        self._settings = settings
        self._shared = shared
        self._user_speaking = user_speaking
        self._model = ScriptedModel(choices.functions)
        self._task: asyncio.Task[None] | None = None
        self._finishing = False
        #: An answer in progress is being cut off for input that starts the next one: no
        #: background result may start its telling in between (one generation at a time).
        self._interrupting = 0
        #: A generation on this connection was cut off (an ``after_barge_in`` stall begins).
        self._cut_off = False
        self._pending: dict[str, tuple[str, asyncio.Future[Any]]] = {}

    def busy(self) -> bool:
        """True while an answer is in progress (or finishing) or a function call is pending:
        the connection is not at a resumable point."""
        task = self._task
        return self._finishing or (task is not None and not task.done()) or bool(self._pending)

    async def interrupt(self) -> None:
        """Cut off the answer in progress, if any, telling the client ``interrupted``."""
        generation = self._task
        if generation is None or generation.done():
            return
        self._interrupting += 1
        try:
            if self._finishing:  # the answer is complete; let its last messages go out
                await asyncio.wait([generation])
                return
            generation.cancel()
            await asyncio.wait([generation])
        finally:
            self._interrupting -= 1
        if self._task is generation:
            self._task = None
        cancelled = list(self._pending)
        self._pending.clear()
        self._cut_off = True
        self._record.generation_interrupted()
        for call_id in cancelled:
            known = self._shared.tool_calls.get(call_id)
            if known is not None:
                known.cancel()
        if cancelled:
            self._record.cancelled_tool_ids.extend(cancelled)
            await self._wire.send(wire.tool_call_cancellation(cancelled))
        await self._wire.send(wire.server_content(interrupted=True))

    def start(
        self,
        user_text: str,
        *,
        tool_results: Sequence[tuple[str, Any]] = (),
        answers_user: bool = True,
        work_handle: Issued | None = None,
    ) -> None:
        """Start answering ``user_text`` (the latest turn of the session when
        ``answers_user``), or telling ``tool_results``; the caller interrupted any answer in
        progress. ``work_handle``: the handle an extended-thinking model issues while it
        works on this turn (see the module)."""
        turns = self._session.turns
        previous = turns[:-1] if answers_user else turns
        self._task = self._wire.spawn(
            self._generate(user_text, previous, tuple(tool_results), answers_user, work_handle)
        )

    def resolve(self, call_id: str, result: Any) -> bool:
        """The response to call ``call_id`` arrived: True if the call was pending here (the
        model goes on with ``result``)."""
        pending = self._pending.pop(call_id, None)
        if pending is None:
            return False
        if not pending[1].done():
            pending[1].set_result(result)
        return True

    def calls_pending(self) -> bool:
        """A blocking call waits for its response."""
        return bool(self._pending)

    def cancel_pending(self) -> None:
        """The connection ended: no pending call will be answered."""
        for _, future in self._pending.values():
            future.cancel()
        self._pending.clear()

    def use_context(self, choices: SetupChoices) -> None:
        """A ``contextUpdate`` changed the session's functions: ``choices`` from now on."""
        self._choices = choices
        self._model = ScriptedModel(choices.functions)

    def background_result(
        self, name: str, response: JsonDict, *, call_id: str | None = None
    ) -> None:
        """The response of an open NON_BLOCKING call (``call_id``): react per its
        ``scheduling``."""
        scheduling = str(pick(response, "scheduling") or "WHEN_IDLE").upper()
        result = pick(response, "response", {})
        if scheduling == "SILENT":
            return
        if call_id is not None:
            self._session.telling(call_id, name)
        self._wire.spawn(
            self._answer_result(name, result, interrupt=scheduling == "INTERRUPT", call_id=call_id)
        )

    async def _answer_result(
        self, name: str, result: Any, *, interrupt: bool, call_id: str | None = None
    ) -> None:
        if interrupt:
            await self.interrupt()
        # WHEN_IDLE: the answer in progress first, the input cutting it off, and the
        # utterance the user is speaking (idle means neither the model nor the user talks)
        while True:
            generation = self._task
            if generation is not None and not generation.done():
                await asyncio.wait([generation])
            elif self._interrupting or (not interrupt and self._user_speaking()):
                await asyncio.sleep(0.005)  # its caller starts the next answer at once
            else:
                break
        if call_id is not None:
            self._session.told(call_id)
        self.start("", tool_results=[(name, result)], answers_user=False)

    async def _call_tools(self, plan: CallTools) -> list[tuple[str, Any]] | None:
        """Issue the plan's calls step by step; return the results (None if a fault fired).
        A family that repeats calls with empty results (3.8) issues such a blocking call
        again as the next step, identically, under a new id (:data:`IDENTICAL_CALLS_MAX`)."""
        results: list[tuple[str, Any]] = []
        steps = list(plan.steps)
        issued: collections.Counter[str] = collections.Counter()
        while steps:
            step = steps.pop(0)
            number = self._shared.next_tool_message()
            calls: list[JsonDict] = []
            futures: list[tuple[str, asyncio.Future[Any]]] = []
            for call in step:
                call_id = self._shared.new_tool_call_id(self._settings.wire_shapes)
                future: asyncio.Future[Any] = self._wire.future()
                non_blocking = call.name in self._choices.non_blocking
                if non_blocking:  # the model goes on; the call stays open in the session
                    self._session.open_call(call_id, call.name)
                    future.set_result(STARTED)
                else:
                    self._pending[call_id] = (call.name, future)
                record = ToolCallRecord(
                    call_id, call.name, call.args, self._record.index, number, non_blocking
                )
                self._record.tool_calls.append(record)
                self._shared.tool_calls[call_id] = record
                calls.append({"id": call_id, "name": call.name, "args": call.args})
                futures.append((call.name, future))
                issued[compact_json([call.name, call.args])] += 1
            shapes, gemini3 = self._settings.wire_shapes, self._choices.gemini3
            await self._wire.send(
                *shapes.around_tool_call(gemini3),
                wire.tool_call(calls),
                *shapes.around_tool_call(gemini3),
            )
            if self._faults.fire(lambda f: f.mid_tool_call):
                return None
            if self._choices.family.turn_complete_after_tool_call:  # else the turn goes on
                await self._wire.send(wire.server_content(turn_complete=True))
            if self._pending:
                await self._handles.not_resumable()
            again: list[CallTool] = []
            for call, (name, future) in zip(step, futures, strict=True):
                result = await future
                results.append((name, result))
                if self._repeats(call, result, issued[compact_json([call.name, call.args])]):
                    again.append(call)
            if again:
                steps.insert(0, tuple(again))
        return results

    def _repeats(self, call: CallTool, result: Any, issued: int) -> bool:
        """The model issues ``call`` again: its family repeats calls with empty results, it
        is blocking, its result is empty and it was issued fewer than the most times."""
        if not self._choices.family.repeats_empty_calls or issued >= IDENTICAL_CALLS_MAX:
            return False
        if call.name in self._choices.non_blocking:
            return False
        values = result.values() if isinstance(result, dict) else [result]
        return all(value in (None, "", [], {}) for value in values)

    def _stall_shape(self) -> str | None:
        """The shape of the stall answering user turns here now (``None``: no stall)."""
        stalled = self._shared.stalled_sessions.get(self._session.id)
        if stalled is None:
            faults = self._faults.of_kind("stall")
            if not faults:
                return None
            fault = faults[-1]
            if fault.whole_session:
                self._shared.stalled_sessions[self._session.id] = fault.shape
            stalled = fault.shape
        if stalled == "after_barge_in":  # (silent once a generation here was cut off)
            return "silent" if self._cut_off else None
        return stalled

    async def _stall(self, shape: str, user_text: str) -> None:
        """Answer ``user_text`` in the stall's ``shape`` (see the module docstring)."""
        self._record.stalled_turns.append(user_text)
        if shape == "canned":
            for number, chunk in enumerate(split_chunks(CANNED_ANSWER)):
                if number:
                    await asyncio.sleep(self._settings.chunk_delay)
                await self._send_chunk(chunk)
            await self._wire.send(wire.server_content(generation_complete=True))
            await self._wire.send(wire.server_content(turn_complete=True))
            self._record.answers.append(CANNED_ANSWER)
            return
        if shape == "silent":
            await self._wire.future()  # cut off by the next input, or by the connection's end
            return
        if shape == "quiet_audio":
            pcm = silence_pcm(0.2, sample_rate=OUTPUT_SAMPLE_RATE, noise=20)
            await self._wire.send(
                wire.server_content(
                    model_turn={"parts": [wire.audio_part(pcm, OUTPUT_SAMPLE_RATE)]}
                )
            )
            await self._wire.send(wire.server_content(generation_complete=True))
        if shape == "rejected":
            await self._wire.send(
                wire.server_content(turn_complete=True, turn_complete_reason="RESPONSE_REJECTED")
            )
        else:
            await self._wire.send(wire.server_content(turn_complete=True))

    async def _generate(
        self,
        user_text: str,
        previous: tuple[Turn, ...],
        tool_results: tuple[tuple[str, Any], ...] = (),
        answers_user: bool = True,
        work_handle: Issued | None = None,
    ) -> None:
        try:
            shape = self._stall_shape() if answers_user and not tool_results else None
            if shape is not None:
                await self._stall(shape, user_text)
                return
            await self._handles.not_resumable()
            plan = (
                self._model.after_tools(tool_results)
                if tool_results
                else self._model.respond(user_text, previous)
            )
            if isinstance(plan, CallTools):
                results = await self._call_tools(plan)
                if results is None:
                    return
                reply = self._model.after_tools(results)
            else:
                reply = plan
                if answers_user and self._choices.family.speaks_while_working:
                    await self._speak_then_work(user_text, work_handle)
            thinks = self._settings.thought_summaries and self._choices.family.may_think
            if thinks:
                await self._wire.send(
                    wire.server_content(model_turn={"parts": [thought_part(reply)]})
                )
            replayed = self._session.take_replay() if answers_user else None
            said = f"{replayed} {reply.text}" if replayed else reply.text
            for number, chunk in enumerate(split_chunks(said)):
                if number:
                    await asyncio.sleep(self._settings.chunk_delay)
                await self._send_chunk(chunk)
                if number == 0:
                    mid_reply = self._handles.mid_reply(reply.text)
                    if mid_reply is not None:
                        await self._handles.send_issued(mid_reply)
                    await self._faults.send_messages(lambda f: f.mid_turn, self._wire.send)
                    if self._faults.fire(lambda f: f.mid_turn):
                        return
            if self._wire.vertex and self._choices.audio_out and self._choices.output_transcription:
                await self._wire.send(wire.server_content(output_transcription={"finished": True}))
            await self._wire.send(wire.server_content(generation_complete=True))
            self._finishing = True
            self._session.remember(Turn("model", reply.text))
            final: list[JsonDict] = [self._turn_complete(self._status_after_answer())]
            if self._sends_usage():
                prompt = sum(len(turn.text.split()) for turn in previous) + len(user_text.split())
                final[0]["usageMetadata"] = wire.usage(
                    prompt,
                    len(reply.text.split()),
                    response_modality="AUDIO" if self._choices.audio_out else "TEXT",
                    thoughts_tokens=len(str(thought_part(reply)["text"]).split()) if thinks else 0,
                )
            handle = self._handles.at_turn_complete()
            if handle is not None:
                final.append(handle[0])
            await self._wire.send(*final)
            self._record.answers.append(said)
            if answers_user:
                self._record.answered_user_turns.append(user_text)
                self._shared.answered_user_turns.append(user_text)
            if handle is not None:
                self._handles.issued(handle[1])
        finally:
            self._finishing = False

    def _sends_usage(self) -> bool:
        """An answer's ``turnComplete`` carries ``usageMetadata`` (see the module)."""
        if not self._settings.wire_shapes.usage_metadata:
            return False
        return self._choices.family.usage_with_microphone or not self._session.microphone

    def _status_after_answer(self) -> str:
        """The ``interactionStatus`` of an answer's ``turnComplete``: the server's
        ``done_status`` (``IDLE``; ``REQUIRES_ACTION``, its documented deprecated alias, as
        some models send it), unless a call the model issued is still open in a family whose
        task goes on meanwhile (``IN_PROGRESS``, or ``REQUIRES_ACTION`` behind the server's
        ``requires_action`` switch, the reading the API reference contradicts; sources:
        :mod:`~adk_live_resume.testing.families`)."""
        if self._choices.family.works_while_calls_open and self._session.calls_open():
            return "REQUIRES_ACTION" if self._settings.requires_action else "IN_PROGRESS"
        return self._settings.done_status

    def _turn_complete(self, status: str) -> JsonDict:
        """``turnComplete``, with ``interactionStatus`` where the family reports it."""
        if not self._choices.family.interaction_status:
            return wire.server_content(turn_complete=True)
        return wire.server_content(turn_complete=True, interaction_status=status)

    async def _speak_then_work(self, user_text: str, work_handle: Issued | None) -> None:
        """An extended-thinking model's first utterance, ended while the work goes on, then
        the work (see the module)."""
        for number, chunk in enumerate(split_chunks(WORKING + user_text)):
            if number:
                await asyncio.sleep(self._settings.chunk_delay)
            await self._send_chunk(chunk)
        if self._wire.vertex and self._choices.audio_out and self._choices.output_transcription:
            await self._wire.send(wire.server_content(output_transcription={"finished": True}))
        await self._wire.send(wire.server_content(generation_complete=True))
        ending = [self._turn_complete("IN_PROGRESS")]
        if work_handle is not None:
            ending.append(work_handle[0])
        await self._wire.send(*ending)
        if work_handle is not None:
            self._handles.issued(work_handle[1])
        await asyncio.sleep(self._settings.work_delay)

    async def _send_chunk(self, chunk: str) -> None:
        if not self._choices.audio_out:
            await self._wire.send(
                wire.server_content(model_turn={"parts": [wire.text_part(chunk)]})
            )
            return
        seconds = OUTPUT_SAMPLES_PER_BYTE * len(chunk.encode()) / OUTPUT_SAMPLE_RATE
        pcm = speech_pcm(chunk, sample_rate=OUTPUT_SAMPLE_RATE, seconds=seconds)
        audio = wire.server_content(
            model_turn={"parts": [wire.audio_part(pcm, OUTPUT_SAMPLE_RATE)]}
        )
        if not self._choices.output_transcription:
            await self._wire.send(audio)
            return
        await self._wire.send(audio, wire.server_content(output_transcription={"text": chunk}))
