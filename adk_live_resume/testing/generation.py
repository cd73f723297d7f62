"""The fake model's answer on one connection: told in chunks, cut off, and its function calls.

* One generation at a time: :meth:`Generation._interrupt` cuts the answer in progress (the
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
* the ``turn_complete`` handle goes with ``turnComplete`` (or later, per the schedule).
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from typing import Any

from . import protocol as wire
from .connection_clocks import ConnectionClocks
from .model import STARTED, CallTools, Turn, split_chunks, thought_part
from .protocol import JsonDict, pick
from .records import ToolCallRecord
from .speech import speech_pcm

__all__ = ["OUTPUT_SAMPLES_PER_BYTE", "OUTPUT_SAMPLE_RATE", "Generation"]

OUTPUT_SAMPLE_RATE = 24000
#: Samples of answer audio per UTF-8 byte of answer text (short clips keep answers cheap).
OUTPUT_SAMPLES_PER_BYTE = 10


class Generation(ConnectionClocks):
    """The model's answers on one connection (a layer of ``LiveConnection``)."""

    async def _interrupt(self) -> None:
        """Cut off the answer in progress, if any, telling the client ``interrupted``."""
        generation = self._generation
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
        if self._generation is generation:
            self._generation = None
        cancelled = list(self._pending_tools)
        self._pending_tools.clear()
        self.record.interrupted += 1
        for call_id in cancelled:
            known = self._shared.tool_calls.get(call_id)
            if known is not None:
                known.cancelled = True
        if cancelled:
            self.record.cancelled_tool_ids.extend(cancelled)
            await self._send(wire.tool_call_cancellation(cancelled))
        await self._send(wire.server_content(interrupted=True))

    def _start_generation(
        self,
        user_text: str,
        *,
        tool_results: Sequence[tuple[str, Any]] = (),
        answers_user: bool = True,
    ) -> None:
        previous = tuple(self._memory[:-1] if answers_user else self._memory)
        coro = self._generate(user_text, previous, tuple(tool_results), answers_user)
        self._generation = self._loop.create_task(self._guard(coro))
        self._generation.add_done_callback(lambda _: coro.close())  # cancelled before it ran

    def _background_result(
        self, name: str, response: JsonDict, *, call_id: str | None = None
    ) -> None:
        """The response of an open NON_BLOCKING call (``call_id``): react per its
        ``scheduling``."""
        scheduling = str(pick(response, "scheduling") or "WHEN_IDLE").upper()
        result = pick(response, "response", {})
        if scheduling == "SILENT":
            return
        if call_id is not None:
            self._telling[call_id] = name
        self._spawn(
            self._answer_result(name, result, interrupt=scheduling == "INTERRUPT", call_id=call_id)
        )

    async def _answer_result(
        self, name: str, result: Any, *, interrupt: bool, call_id: str | None = None
    ) -> None:
        if interrupt:
            await self._interrupt()
        # WHEN_IDLE: the answer in progress first, the input cutting it off, and the
        # utterance the user is speaking (idle means neither the model nor the user talks)
        while True:
            generation = self._generation
            if generation is not None and not generation.done():
                await asyncio.wait([generation])
            elif self._interrupting or (not interrupt and self._tracker.speaking):
                await asyncio.sleep(0.005)  # its caller starts the next answer at once
            else:
                break
        if call_id is not None:
            self._telling.pop(call_id, None)
        self._start_generation("", tool_results=[(name, result)], answers_user=False)

    async def _call_tools(self, plan: CallTools) -> list[tuple[str, Any]] | None:
        """Issue the plan's calls step by step; return the results (None if a fault fired)."""
        results: list[tuple[str, Any]] = []
        for step in plan.steps:
            number = self._shared.next_tool_message()
            calls: list[JsonDict] = []
            futures: list[tuple[str, asyncio.Future[Any]]] = []
            for call in step:
                call_id = self._shared.new_tool_call_id()
                future: asyncio.Future[Any] = self._loop.create_future()
                non_blocking = call.name in self._non_blocking
                if non_blocking:  # the model goes on; the call stays open in the session
                    self._background[call_id] = call.name
                    future.set_result(STARTED)
                else:
                    self._pending_tools[call_id] = (call.name, future)
                record = ToolCallRecord(
                    call_id, call.name, call.args, self.record.index, number, non_blocking
                )
                self.record.tool_calls.append(record)
                self._shared.tool_calls[call_id] = record
                calls.append({"id": call_id, "name": call.name, "args": call.args})
                futures.append((call.name, future))
            await self._send(wire.tool_call(calls))
            if self._faults.fire(lambda f: f.mid_tool_call):
                return None
            if self._family.turn_complete_after_tool_call:  # else the turn goes on
                await self._send(wire.server_content(turn_complete=True))
            if self._pending_tools:
                await self._not_resumable()
            for name, future in futures:
                results.append((name, await future))
        return results

    async def _generate(
        self,
        user_text: str,
        previous: tuple[Turn, ...],
        tool_results: tuple[tuple[str, Any], ...] = (),
        answers_user: bool = True,
    ) -> None:
        try:
            await self._not_resumable()
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
            if self._settings.thought_summaries and self._family.may_think:
                await self._send(wire.server_content(model_turn={"parts": [thought_part(reply)]}))
            for number, chunk in enumerate(split_chunks(reply.text)):
                if number:
                    await asyncio.sleep(self._settings.chunk_delay)
                await self._send_chunk(chunk)
                if number == 0:
                    await self._send_scripted(lambda f: f.mid_turn)
                    if self._faults.fire(lambda f: f.mid_turn):
                        return
            if self._vertex and self._modality != "TEXT" and self._output_transcription:
                await self._send(wire.server_content(output_transcription={"finished": True}))
            await self._send(wire.server_content(generation_complete=True))
            self._finishing = True
            self._memory.append(Turn("model", reply.text))
            prompt = sum(len(turn.text.split()) for turn in previous) + len(user_text.split())
            final: list[JsonDict] = [
                {
                    **wire.server_content(turn_complete=True),
                    "usageMetadata": wire.usage(prompt, len(reply.text.split())),
                }
            ]
            issue = None
            schedule = self._settings.handle_schedule
            if self.record.resumption_enabled and schedule.on_turn_complete:
                update, issue = self._new_handle("turn_complete")
                if schedule.turn_handle_late:
                    self._late_handle, issue = (update, issue), None
                else:
                    final.append(update)
            await self._send(*final)
            self.record.answers.append(reply.text)
            if answers_user:
                self.record.answered_user_turns.append(user_text)
                self._shared.answered_user_turns.append(user_text)
            if issue is not None:
                self._issued(issue)
        finally:
            self._finishing = False

    async def _send_chunk(self, chunk: str) -> None:
        if self._modality == "TEXT":
            await self._send(wire.server_content(model_turn={"parts": [wire.text_part(chunk)]}))
            return
        seconds = OUTPUT_SAMPLES_PER_BYTE * len(chunk.encode()) / OUTPUT_SAMPLE_RATE
        pcm = speech_pcm(chunk, sample_rate=OUTPUT_SAMPLE_RATE, seconds=seconds)
        audio = wire.server_content(
            model_turn={"parts": [wire.audio_part(pcm, OUTPUT_SAMPLE_RATE)]}
        )
        if not self._output_transcription:
            await self._send(audio)
            return
        await self._send(audio, wire.server_content(output_transcription={"text": chunk}))
