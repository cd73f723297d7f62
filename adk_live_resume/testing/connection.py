"""One websocket connection of the fake server, served from its setup to its close.

Per connection, in order:

1. the lifetime timers start (:mod:`~adk_live_resume.testing.connection_clocks`);
2. the first message must be ``{"setup": {...}}``; a resumption handle in it is checked (an
   unknown or expired one, or a ``Fault.refuse_resume``, closes with ``refuse_close_code``; a
   session that has ended, 1007); with ``refuse_resume_while_open``, a resume of a session
   whose earlier socket is still open is closed with 1011, as the service does (off by
   default: a client that drops TCP and resumes at once races the server's notice);
3. setup delays, flapping, then ``{"setupComplete": {}}``;
4. client messages are handled one at a time, in order
   (:mod:`~adk_live_resume.testing.turn_taking`); the model answers in a task of its own
   (:mod:`~adk_live_resume.testing.generation`) so that new input can interrupt it; handles
   are issued at resumable points (:mod:`~adk_live_resume.testing.handle_issuing`). On a
   resumed connection, a client message whose identity the snapshot already consumed is
   recorded in ``record.resent_consumed`` (and handled as usual).

:class:`LiveConnection` is the top of a stack of layers, each in its own module and each
calling only the ones below it (see :mod:`~adk_live_resume.testing.connection_core`). Every
task the connection starts is cancelled and awaited before its handler returns, and the record
is final (``record.finished``) from then on.
"""

from __future__ import annotations

import asyncio
import collections
import json
import logging

from websockets.exceptions import ConnectionClosed

from . import protocol as wire
from .connection_core import _Ended
from .dialect import history_in_client_content, is_gemini_3_live, model_name
from .families import family_for
from .faults import Fault
from .handles import fingerprint
from .model import ScriptedModel
from .protocol import JsonDict, has, pick, pick_dict, pick_list
from .records import ResentMessage, short_handle
from .settings import INTERNAL_ERROR_REASON, INVALID_ARGUMENT_REASON
from .turn_taking import TurnTaking
from .vad import SpeechTracker, VadConfig

__all__ = ["LiveConnection"]

logger = logging.getLogger("adk_live_resume.testing")


class LiveConnection(TurnTaking):
    """Serves one websocket connection; see the module docstring for the sequence."""

    async def run(self) -> None:
        """Serve the connection until it closes; never raises for connection errors."""
        request = self.ws.request
        self.record.path = request.path if request is not None else ""
        self.record.accepted_at = self._loop.time()
        self._spawn(self._lifetime())
        held = [f.seconds for f in self._faults.of_kind("hold_pongs")]
        pong_delay = held[-1] if held else self._settings.pong_delay
        if pong_delay is not None:
            self._hold_pongs(pong_delay)
        try:
            await self._serve()
        except (ConnectionClosed, _Ended):
            pass
        except Exception as exc:  # a bug in the fake: keep it visible in the record
            logger.exception("fake live server: connection %d failed", self.record.index)
            self.record.errors.append(repr(exc))
            self.terminate("fault", code=1011, reason="fake server error")
        finally:
            await self._finish()

    # ---- setup -----------------------------------------------------------------------------

    async def _serve(self) -> None:
        timeout = self._settings.setup_timeout
        try:
            async with asyncio.timeout(None if timeout is None else self._settings.real(timeout)):
                raw = await self.ws.recv()
        except TimeoutError:
            self.terminate("setup_timeout", code=1011, reason="no setup in time")
            return
        message = self._parse(raw)
        setup = pick_dict(message, "setup") if message is not None else None
        if setup is None:
            self.terminate("refused", code=1007, reason=INVALID_ARGUMENT_REASON)
            return
        self.record.setup = setup
        self._apply_setup(setup)
        if not self._restore():
            return
        self.record.session_id = self._session.id
        self._shared.open_sessions[self._session.id] += 1
        self._counted_open = True
        delay = sum(f.seconds for f in self._faults.of_kind("setup_delay"))
        if delay:
            await asyncio.sleep(self._settings.real(delay))
        flap = self._shared.flap
        if flap is not None and (self.record.resumed or not flap.resuming_only):
            if flap.after_setup:
                await self._send(wire.setup_complete())
            self.terminate("flap", code=flap.code, reason=flap.reason)
            return
        if not self._faults.of_kind("no_setup_complete"):
            await self._send(wire.setup_complete())
        self._setup_answered = True
        self._faults.start_timers()
        await self._send_scripted(lambda f: f.after_setup)
        if self._faults.fire(lambda f: f.after_setup):
            return
        schedule = self._settings.handle_schedule
        if schedule.idle_interval is not None and self.record.resumption_enabled:
            self._spawn(self._idle_handles(self._settings.real(schedule.idle_interval)))
        if self._settings.session_limit is not None:
            self._spawn(self._session_clock(self._settings.real(self._settings.session_limit)))
        if self._family.session_cap is not None:
            self._spawn(self._session_cap(self._settings.real(self._family.session_cap)))
        async for raw in self.ws:
            if self.ending:
                continue
            message = self._parse(raw)
            self._message_index += 1
            self.record.client_messages.append(
                message if message is not None else {"unparsed": str(raw)}
            )
            mark = fingerprint(message) if message is not None else None
            self._fingerprints.append(mark)
            if mark is not None and self._restored_consumed[mark] > 0:
                self._restored_consumed[mark] -= 1
                kind = mark.partition(":")[0]
                self.record.resent_consumed.append(
                    ResentMessage(self.record.index, self._message_index, kind)
                )
                logger.info(
                    "fake live server: connection %d: message %d (%s) was already consumed",
                    self.record.index,
                    self._message_index,
                    kind,
                )
            if message is not None:
                try:
                    await self._send_late_handle()
                    await self._handle(message)
                except _Ended:
                    continue
            self._handled_index = self.record.handled_messages = self._message_index
            try:
                await self._send_scripted(self._is_due_after_messages)
            except _Ended:
                continue
            self._faults.fire(self._is_due_after_messages)

    def _is_due_after_messages(self, fault: Fault) -> bool:
        return fault.after_client_messages == self._message_index

    @staticmethod
    def _parse(raw: str | bytes) -> JsonDict | None:
        try:
            value = json.loads(raw)
        except (ValueError, UnicodeDecodeError):
            return None
        return value if isinstance(value, dict) else None

    def _apply_setup(self, setup: JsonDict) -> None:
        config = pick_dict(setup, "generationConfig") or {}
        modalities = pick_list(config, "responseModalities") or pick_list(
            setup, "responseModalities"
        )
        self._modality = "AUDIO" if any(str(m).upper() == "AUDIO" for m in modalities) else "TEXT"
        self._session_audio = self._modality == "AUDIO"
        self._gemini3 = is_gemini_3_live(model_name(setup))
        self._family = family_for(model_name(setup))
        names: list[str] = []
        non_blocking: list[str] = []
        for tool in pick_list(setup, "tools"):
            for declaration in pick_list(tool, "functionDeclarations"):
                name = pick(declaration, "name")
                if isinstance(name, str):
                    names.append(name)
                    if self._family.non_blocking(pick(declaration, "behavior")):
                        non_blocking.append(name)
        self._model = ScriptedModel(names)
        self._non_blocking = frozenset(non_blocking)
        self._history_in_client_content = history_in_client_content(setup)
        self._compression = bool(pick(setup, "contextWindowCompression"))
        self._input_transcription = has(setup, "inputAudioTranscription")
        self._output_transcription = has(setup, "outputAudioTranscription")
        self._tracker = SpeechTracker(VadConfig.from_setup(setup))
        resumption = pick(setup, "sessionResumption")
        if has(setup, "sessionResumption") and (resumption is None or isinstance(resumption, dict)):
            self.record.resumption_enabled = True
            handle = pick(resumption, "handle")
            self.record.resume_handle = handle if isinstance(handle, str) and handle else None
            self.record.transparent = bool(pick(resumption, "transparent"))

    def _restore(self) -> bool:
        """Restore the snapshot of the setup's handle; False (and refused) if it is invalid."""
        handle = self.record.resume_handle
        if handle is None:
            return True
        refusal = next(iter(self._faults.of_kind("refuse_resume")), None)
        snapshot = None
        if refusal is None:
            snapshot = self._shared.handles.lookup(handle, now=self._loop.time())
        if snapshot is not None and self._session_over(snapshot.session):
            self._shared.ended_sessions.add(snapshot.session.id)
            logger.info("fake live server: connection %d: session has ended", self.record.index)
            self.terminate("refused", code=1007, reason=INVALID_ARGUMENT_REASON)
            return False
        if (
            snapshot is not None
            and self._settings.refuse_resume_while_open
            and self._shared.open_sessions[snapshot.session.id] > 0
        ):
            logger.info(
                "fake live server: connection %d: resume while the session's old socket is open",
                self.record.index,
            )
            self.terminate("refused", code=1011, reason=INTERNAL_ERROR_REASON)
            return False
        if snapshot is None:
            code = self._settings.refuse_close_code
            if refusal is not None and refusal.code is not None:
                code = refusal.code
            reason = (refusal.reason if refusal is not None else "") or self._settings.refuse_reason
            logger.info(
                "fake live server: connection %d refused handle %s",
                self.record.index,
                short_handle(handle),
            )
            self.terminate("refused", code=code, reason=reason)
            return False
        self._memory = list(snapshot.turns)
        self._background = dict(snapshot.background)
        self._session = snapshot.session
        self._session_audio = self._session_audio or snapshot.session.audio
        self._base_consumed = collections.Counter(snapshot.consumed)
        self._consumed = collections.Counter(snapshot.consumed)
        self._restored_consumed = collections.Counter(snapshot.consumed)
        self.record.resumed = True
        logger.info(
            "fake live server: connection %d resumed %s (%d turns)",
            self.record.index,
            short_handle(handle),
            len(self._memory),
        )
        return True
