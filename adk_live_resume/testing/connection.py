"""One websocket connection of the fake server: setup, resumption, the model loop, faults, timers.

Per connection, in order:

1. the lifetime timers start (``goAway`` at ``connection_lifetime - go_away_lead``, the deadline
   close at ``connection_lifetime``, both in service seconds from the TCP accept);
2. the first message must be ``{"setup": {...}}``; a resumption handle in it is checked (an
   unknown or expired one, or a ``Fault.refuse_resume``, closes with ``refuse_close_code``);
3. setup delays, flapping, then ``{"setupComplete": {}}``;
4. client messages are handled one at a time, in order; the model answers in a task of its own
   so that new input can interrupt it.

Input and turns:

* text (``clientContent`` user turn, ``realtimeInput.text``) is a user turn at once; audio goes
  through voice activity detection (:mod:`~adk_live_resume.testing.vad`): speech that starts
  while the model answers cuts the answer (``interrupted``, and ``toolCallCancellation`` for
  pending calls; not with ``activityHandling: NO_INTERRUPTION``), ``inputTranscription``
  pieces follow the speech as it is decoded, and the finished utterance is a user turn (on the
  Vertex AI dialect, recognised by its websocket path, a transcription ends with
  ``finished: true``, the input's at the end of the utterance and an audio answer's before
  ``generationComplete``; the Gemini API sends no such end). Text,
  ``clientContent`` or ``activityEnd`` arriving mid-utterance end the utterance there (it
  becomes a turn first); ``audioStreamEnd`` too, with automatic detection;
* handles are issued at resumable points per the :class:`~adk_live_resume.testing.handles.
  HandleSchedule` (see :mod:`~adk_live_resume.testing.handles` for what a snapshot holds and
  what ``lastConsumedClientMessageIndex`` counts);
* NON_BLOCKING functions (``behavior`` in the setup's declaration): their calls do not hold
  the turn nor the resumable point; they stay open in the session (and in the snapshots of
  the handles issued meanwhile) until their response arrives, which the model then answers
  per its ``scheduling`` (see :mod:`~adk_live_resume.testing.model`);
* on a resumed connection, a client message whose identity the snapshot already consumed is
  recorded in ``record.resent_consumed`` (and handled as usual);
* the model family (:mod:`~adk_live_resume.testing.families`) rules ``turnComplete`` after a
  ``toolCall``, NON_BLOCKING calls, thought parts, mid-session ``clientContent`` (else kept in
  ``record.rejected_client_content`` and closed with 1007, unless ``lenient_client_content``)
  and a session age cap (closed with 1011 whatever the compression, then resumes refused);
* Gemini 3.x Live (:mod:`~adk_live_resume.testing.dialect`): initial history (before the first
  realtime input of a fresh session whose setup set ``historyConfig.
  initialHistoryInClientContent``) ending with a user turn is answered at the next realtime
  input (ADK sends ``"."``);
* session length: a session that carried audio (AUDIO responses or audio input) and whose
  current setup has no ``contextWindowCompression`` is closed with 1011 once ``session_limit``
  service seconds have passed since its first connection (across resumptions); resuming it
  afterwards is refused with 1007;
* pings are answered ``pong_delay`` (or ``Fault.hold_pongs``) service seconds late
  (:mod:`~adk_live_resume.testing.keepalive`); :meth:`LiveConnection.arm` adds faults later.
* a second ``setup`` on a connection closes it with 1007; with ``refuse_resume_while_open``, a
  resume of a session whose earlier socket is still open is closed with 1011, as the service
  does (off by default: a client that drops TCP and resumes at once races the server's notice).

Every task the connection starts is cancelled and awaited before its handler returns, and the
record is final (``record.finished``) from then on.
"""

from __future__ import annotations

import asyncio
import collections
import json
import logging
import secrets
from collections.abc import Coroutine, Sequence
from typing import Any, Literal

from websockets.asyncio.server import ServerConnection
from websockets.exceptions import ConnectionClosed

from . import protocol as wire
from .armed_faults import ArmedFaults
from .dialect import history_in_client_content, is_gemini_3_live, model_name
from .families import GEMINI_2_LIVE, family_for
from .faults import Fault
from .handles import HandleIssue, IssuePoint, SessionInfo, Snapshot, fingerprint
from .keepalive import hold_pongs
from .model import (
    STARTED,
    CallTools,
    ScriptedModel,
    Turn,
    split_chunks,
    thought_part,
    turns_overlap,
)
from .protocol import JsonDict, has, pick, pick_dict, pick_list
from .records import (
    ConnectionRecord,
    EndedBy,
    HeardHow,
    HeardTurn,
    ResentMessage,
    ToolCallRecord,
    short_handle,
)
from .settings import (
    INTERNAL_ERROR_REASON,
    INVALID_ARGUMENT_REASON,
    ServerSettings,
    SharedState,
)
from .speech import pcm_duration_ms, speech_pcm
from .vad import SpeechEvent, SpeechStarted, SpeechTracker, Transcribed, Utterance, VadConfig

__all__ = ["LiveConnection"]

logger = logging.getLogger("adk_live_resume.testing")

OUTPUT_SAMPLE_RATE = 24000
#: Samples of answer audio per UTF-8 byte of answer text (short clips keep answers cheap).
OUTPUT_SAMPLES_PER_BYTE = 10
_UNSENDABLE_CODES = frozenset({1005, 1006, 1015})


class _Ended(Exception):
    """Raised inside a connection task once the connection is ending."""


class LiveConnection:
    """Serves one websocket connection; see the module docstring for the sequence."""

    def __init__(
        self,
        ws: ServerConnection,
        record: ConnectionRecord,
        faults: Sequence[Fault],
        settings: ServerSettings,
        shared: SharedState,
    ) -> None:
        self.ws = ws
        self.record = record
        self._faults = ArmedFaults(
            faults,
            connection=record.index,
            end=self._end_by_fault,
            spawn=self._spawn,
            real=settings.real,
        )
        self._settings = settings
        self._shared = shared
        self._loop = asyncio.get_running_loop()
        self._tasks: set[asyncio.Task[None]] = set()
        self._send_lock = asyncio.Lock()
        self._closer: asyncio.Task[None] | None = None
        self._memory: list[Turn] = []
        self._model = ScriptedModel()
        self._modality: Literal["TEXT", "AUDIO"] = "TEXT"
        self._generation: asyncio.Task[None] | None = None
        self._finishing = False
        #: An answer in progress is being cut off for input that starts the next one: no
        #: background result may start its telling in between (one generation at a time).
        self._interrupting = 0
        self._pending_tools: dict[str, tuple[str, asyncio.Future[Any]]] = {}
        #: Functions declared NON_BLOCKING in the setup.
        self._non_blocking: frozenset[str] = frozenset()
        #: Open NON_BLOCKING calls of the session, by id (name): kept across resumption.
        self._background: dict[str, str] = {}
        self._tracker = SpeechTracker(VadConfig())
        self._audio_rate = 16000
        self._message_index = 0
        self._handled_index = 0
        self._fingerprints: list[str | None] = [None]  # by message number; 0 is the setup
        self._base_consumed: collections.Counter[str] = collections.Counter()
        self._consumed: collections.Counter[str] = collections.Counter()  # through _consumed_upto
        self._consumed_upto = 0
        self._restored_consumed: collections.Counter[str] = collections.Counter()
        self._audio_since_handle_ms = 0
        self._unanswered_user = False
        self._setup_answered = False
        self._counted_open = False  # counted in shared.open_sessions
        self._gemini3 = False
        self._family = GEMINI_2_LIVE
        self._history_in_client_content = False
        self._realtime_seen = False
        self._awaiting_trigger = False
        self._trigger_tool_results: list[tuple[str, Any]] = []
        self._session = SessionInfo(secrets.token_hex(8), self._loop.time(), audio=False)
        self._session_audio = False
        self._compression = False
        self._over_limit = False
        self._late_handle: tuple[JsonDict, HandleIssue] | None = None

    # ---- lifecycle -------------------------------------------------------------------------

    @property
    def _vertex(self) -> bool:
        """True when the client speaks the Vertex AI dialect (its websocket path)."""
        return "aiplatform" in self.record.path

    @property
    def ending(self) -> bool:
        """True once the connection has been ended by anyone."""
        return self.record.ended_by is not None

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

    def terminate(
        self, ended_by: EndedBy, *, code: int = 1000, reason: str = "", abort: bool = False
    ) -> None:
        """End the connection now: with a close frame, or by dropping TCP when ``abort``.

        The first call wins; later calls do nothing. Safe to call from any task of this
        connection, including the one that will then stop at its next send. The codes 1005,
        1006 and 1015 may not travel in a close frame, so they drop TCP as ``abort`` does (the
        client then sees 1006).
        """
        if self.ending:
            return
        abort = abort or code in _UNSENDABLE_CODES
        self.record.ended_by = ended_by
        self.record.ended_at = self._loop.time()
        logger.info(
            "fake live server: connection %d ended by %s (%s)",
            self.record.index,
            ended_by,
            "abort" if abort else code,
        )
        current = asyncio.current_task()
        for task in [*self._tasks, self._generation]:
            if task is not None and task is not current and not task.done():
                task.cancel()
        if abort:
            self.record.close_code = 1006
            self.record.close_reason = ""
            transport = self.ws.transport
            if transport is not None:
                transport.abort()
        else:
            self.record.close_code = code
            self.record.close_reason = reason
            self._closer = self._loop.create_task(self._close(code, reason))

    async def _close(self, code: int, reason: str) -> None:
        try:
            await self.ws.close(code, reason)
        except Exception:  # never leave the handler hanging: drop the connection instead
            logger.exception("fake live server: close(%d) failed; aborting", code)
            transport = self.ws.transport
            if transport is not None:
                transport.abort()

    async def _finish(self) -> None:
        if self._counted_open:
            self._shared.open_sessions[self._session.id] -= 1
            self._counted_open = False
        if not self.ending:
            self.record.ended_by = "client"
            self.record.ended_at = self._loop.time()
            code = self.ws.close_code
            self.record.close_code = 1006 if code is None else code
            self.record.close_reason = self.ws.close_reason or ""
            logger.info(
                "fake live server: connection %d closed by the client (%s)",
                self.record.index,
                self.record.close_code,
            )
        tasks = [task for task in [*self._tasks, self._generation] if task is not None]
        for task in tasks:
            task.cancel()
        if tasks:
            await asyncio.wait(tasks)
        if self._closer is not None:
            await asyncio.wait([self._closer])
        for _, future in self._pending_tools.values():
            future.cancel()
        self._pending_tools.clear()
        self.record.finished = True

    def _spawn(self, coro: Coroutine[Any, Any, None]) -> asyncio.Task[None]:
        task = self._loop.create_task(self._guard(coro))
        task.add_done_callback(lambda _: coro.close())  # a task cancelled before it ran
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)
        return task

    async def _guard(self, coro: Coroutine[Any, Any, None]) -> None:
        try:
            await coro
        except (_Ended, ConnectionClosed):
            pass
        except asyncio.CancelledError:
            raise
        except Exception as exc:
            logger.exception("fake live server: task of connection %d failed", self.record.index)
            self.record.errors.append(repr(exc))

    # ---- sending ---------------------------------------------------------------------------

    async def _send(self, *messages: JsonDict) -> None:
        """Send ``messages`` back to back (nothing of this connection goes in between)."""
        if self.ending:
            raise _Ended
        async with self._send_lock:
            for message in messages:
                if self.ending:
                    raise _Ended
                self.record.server_messages.append(message)
                handed_at = self._loop.time()
                try:
                    await self.ws.send(wire.dumps(message))
                except ConnectionClosed:
                    self.record.server_messages.pop()
                    raise _Ended from None
                if self.record.first_sent_at is None:
                    self.record.first_sent_at = handed_at
                self.record.last_sent_at = handed_at

    # ---- faults and timers -----------------------------------------------------------------

    def arm(self, faults: Sequence[Fault]) -> None:
        """Add ``faults`` to this connection, already open. Triggers count as for a fault armed
        at the start, with two differences: ``after_setup`` fires at once when the setup was
        answered already, and ``after_seconds`` counts from now. ``after_client_messages=N``
        counts the connection's messages from its start, so ``N`` must not be reached yet
        (``ValueError`` otherwise, before anything is armed)."""
        self._faults.arm(
            faults,
            messages_seen=self._message_index,
            setup_answered=self._setup_answered and not self.ending,
            hold_pongs=self._hold_pongs,
        )

    def _hold_pongs(self, service_seconds: float) -> None:
        hold_pongs(self.ws, self._settings.real(service_seconds), self._spawn)

    def _end_by_fault(self, fault: Fault) -> None:
        if fault.kind == "abort":
            self.terminate("fault", abort=True)
        else:
            self.terminate("fault", code=fault.code or 1000, reason=fault.reason)

    async def _idle_handles(self, interval: float) -> None:
        """Issue a handle every ``interval`` real seconds while the model is idle."""
        while True:
            await asyncio.sleep(interval)
            if self._resumable():
                await self._issue_handle(self._idle_point())

    async def _session_clock(self, limit: float) -> None:
        """At ``limit`` real seconds after the session started, enforce the session limit."""
        await asyncio.sleep(max(0.0, self._session.started_at + limit - self._loop.time()))
        self._over_limit = True
        self._enforce_session_limit()

    def _enforce_session_limit(self) -> None:
        if not self._over_limit or not self._session_audio or self._compression:
            return
        self._shared.ended_sessions.add(self._session.id)
        limit = self._settings.session_limit
        self.terminate(
            "session_limit",
            code=1011,
            reason=(
                f"Session limit reached: an audio session without contextWindowCompression "
                f"lasts at most {limit:g} s."
            ),
        )

    async def _session_cap(self, cap: float) -> None:
        """At ``cap`` real seconds of session age, end the session whatever its compression."""
        await asyncio.sleep(max(0.0, self._session.started_at + cap - self._loop.time()))
        self._shared.ended_sessions.add(self._session.id)
        self.terminate("session_limit", code=1011, reason=self._settings.deadline_reason)

    async def _lifetime(self) -> None:
        lifetime = self._settings.real(self._settings.connection_lifetime)
        lead = min(self._settings.real(self._settings.go_away_lead), lifetime)
        await asyncio.sleep(lifetime - lead)
        await self._go_away(lead, warn=lead > 0 and self._setup_answered)

    def go_away_now(self, time_left: float) -> bool:
        """Send ``goAway`` with ``time_left`` (real seconds, as on the wire) now and end the
        connection at that deadline, as the service does; False if the setup was not
        answered yet (the service sends no goAway before it)."""
        if not self._setup_answered or self.ending:
            return False
        self._spawn(self._go_away(time_left))
        return True

    async def _go_away(self, time_left: float, *, warn: bool = True) -> None:
        """``goAway`` (if ``warn``), then the deadline close ``time_left`` real seconds later."""
        settings = self._settings
        if warn:
            await self._send(wire.go_away(wire.format_time_left(round(time_left, 3))))
            self.record.go_away_sent = True
        await asyncio.sleep(time_left)
        self.terminate(
            "deadline", code=settings.deadline_close_code, reason=settings.deadline_reason
        )

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

    def _session_over(self, session: SessionInfo) -> bool:
        """True when the session of a snapshot has ended (or its time ran out meanwhile)."""
        if session.id in self._shared.ended_sessions:
            return True
        cap = self._family.session_cap
        if cap is not None and self._loop.time() - session.started_at >= self._settings.real(cap):
            return True
        limit = self._settings.session_limit
        if limit is None or self._compression or not (session.audio or self._session_audio):
            return False
        return self._loop.time() - session.started_at >= self._settings.real(limit)

    # ---- client messages -------------------------------------------------------------------

    async def _handle(self, message: JsonDict) -> None:
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
            self._tool_response(pick_dict(message, "toolResponse") or {})
            self._realtime_seen = True
        elif has(message, "setup"):  # one setup per connection, as the service says
            self.terminate("rejected", code=1007, reason=INVALID_ARGUMENT_REASON)
        else:
            logger.warning(
                "fake live server: connection %d: ignoring client message with keys %s",
                self.record.index,
                sorted(message),
            )

    def _accepts_client_content(self, body: JsonDict) -> bool:
        """A family that takes no mid-session context (3.1): only initial history; False
        (and closed) when strict."""
        if self._family.client_content_mid_session:
            return True
        if self._initial_history_open():
            return True
        self.record.rejected_client_content.append(body)
        if self._settings.lenient_client_content:
            logger.info(
                "fake live server: connection %d: clientContent a Gemini 3.x Live model "
                "rejects, accepted (lenient)",
                self.record.index,
            )
            return True
        self.terminate("rejected", code=1007, reason=INVALID_ARGUMENT_REASON)
        return False

    def _initial_history_open(self) -> bool:
        """Gemini 3.x: the setup asked for initial history and no realtime input came yet."""
        initial = self._history_in_client_content and not self.record.resumed
        return initial and not self._realtime_seen

    async def _client_content(self, body: JsonDict) -> None:
        turn_complete = bool(pick(body, "turnComplete", False))
        turns: list[Turn] = []
        tool_results: list[tuple[str, Any]] = []  # function responses ending the history
        for raw_turn in pick_list(body, "turns"):
            role: Literal["user", "model"] = (
                "model" if pick(raw_turn, "role") == "model" else "user"
            )
            parts = pick_list(raw_turn, "parts")
            texts = [pick(part, "text") for part in parts]
            turns.append(Turn(role, "".join(t for t in texts if isinstance(t, str))))
            responses = [
                r for part in parts if isinstance(r := pick(part, "functionResponse"), dict)
            ]
            tool_results = [(str(pick(r, "name")), pick(r, "response", {})) for r in responses]
        index = self._message_index
        if not turns:
            if turn_complete and self._unanswered_user and self._memory:
                self._unanswered_user = False
                await self._interrupt()
                self._start_generation(self._memory[-1].text)
            return
        only_results = len(turns) == 1 and turns[0].role == "user" and not turns[0].text
        if turn_complete and only_results and responses:
            # Only function results, for calls the session knows from earlier (no open
            # call): the model tells them as it tells a NON_BLOCKING call's result.
            for response in responses:
                self.record.tool_responses.append(response)
                self._background_result(str(pick(response, "name")), response)
            return
        is_history = len(turns) > 1 or turns[-1].role == "model" or not turn_complete
        is_history = is_history or any(turn.role == "model" for turn in turns)
        # Gemini 3.x Live takes clientContent as the initial history (see dialect): there even
        # a single user turn is history, answered at the next realtime input.
        # A family that takes clientContent all session long (3.8) takes only the first one as
        # that history; later ones are turns as on Gemini 2.x.
        initial = self._gemini3 and self._initial_history_open()
        if self._family.client_content_mid_session and self.record.history_sends:
            initial = False
        held = initial or (self._gemini3 and not self._family.client_content_mid_session)
        is_history = is_history or initial
        if not is_history:
            await self._user_turn(turns[0].text, "typed", index, index)
            return
        self.record.history_sends += 1
        if turns_overlap(self._memory, turns):
            self.record.duplicate_history_sends += 1
            logger.info(
                "fake live server: connection %d: history delivered again", self.record.index
            )
        answer = turn_complete and turns[-1].role == "user"
        if answer and not held:
            await self._interrupt()
        # Turns that carried only function calls or responses have no text to remember.
        self._memory.extend(t for t in turns if t.text)
        for t in turns:
            if t.role == "user" and t.text:
                self._heard(t.text, "history", index, index)
        self._unanswered_user = turns[-1].role == "user" and not turn_complete
        if answer and held:
            # Gemini 3.x Live answers history only at the next realtime input (ADK sends "."),
            # with the tool results the history ends with, if any.
            self._awaiting_trigger = True
            self._trigger_tool_results = tool_results
        elif answer and tool_results:
            # History ending with a tool's result: answer with it, as after a toolResponse,
            # for the user turn that asked for the tool.
            asked = next((t.text for t in reversed(self._memory) if t.role == "user"), "")
            self._start_generation(asked, tool_results=tool_results)
        elif answer:
            self._start_generation(turns[-1].text)

    async def _realtime_input(self, body: JsonDict) -> None:
        index = self._message_index
        if has(body, "activityStart"):
            if self._tracker.config.disabled:
                await self._speech(self._tracker.activity_start(message=index))
            else:
                await self._interrupt()
        text = pick(body, "text")
        if isinstance(text, str) and text:
            await self._end_utterance()
            if self._awaiting_trigger and not text.strip(" .?!"):
                self._awaiting_trigger = False
                await self._interrupt()
                asked = next((t.text for t in reversed(self._memory) if t.role == "user"), "")
                results, self._trigger_tool_results = self._trigger_tool_results, []
                self._start_generation(asked, tool_results=results)
            else:
                self._awaiting_trigger = False
                await self._user_turn(text, "typed", index, index)
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
        self._session_audio = True
        self._enforce_session_limit()
        idle = self._resumable()
        events = self._tracker.audio(pcm, message=self._message_index, sample_rate=self._audio_rate)
        self.record.ignored_audio_ms = self._tracker.ignored_audio_ms
        await self._speech(events)
        every = self._settings.handle_schedule.every_audio_ms
        if every is not None and idle:
            self._audio_since_handle_ms += pcm_duration_ms(pcm, self._audio_rate)
            if self._audio_since_handle_ms >= every and self._resumable():
                # this message's audio is in the state already: it counts as handled
                await self._issue_handle(self._idle_point(), handled=self._message_index)

    async def _speech(self, events: Sequence[SpeechEvent]) -> None:
        """Act on what the voice activity detection found."""
        for event in events:
            if isinstance(event, SpeechStarted):
                if self._tracker.config.interrupts:
                    await self._interrupt()
            elif isinstance(event, Transcribed):
                await self._send(wire.server_content(input_transcription={"text": event.text}))
            elif isinstance(event, Utterance):
                ending: JsonDict = {} if event.has_text else {"text": event.text}
                if self._vertex:  # Vertex AI marks the end of a transcription
                    ending["finished"] = True
                if ending:
                    await self._send(wire.server_content(input_transcription=ending))
                await self._user_turn(
                    event.text,
                    "spoken",
                    event.first_message,
                    event.last_message,
                    ended_by=event.ended_by,
                    cut_start=event.cut_start,
                )

    async def _end_utterance(self) -> None:
        """Other input arrived: the audio held so far becomes a turn first."""
        if self._tracker.held_since is not None:
            await self._speech(self._tracker.cut(message=self._message_index))

    def _tool_response(self, body: JsonDict) -> None:
        for response in pick_list(body, "functionResponses"):
            if not isinstance(response, dict):
                continue
            self.record.tool_responses.append(response)
            call_id = pick(response, "id")
            known = self._shared.tool_calls.get(call_id) if isinstance(call_id, str) else None
            if known is not None:
                known.responses.append(pick(response, "response", {}))
            pending = self._pending_tools.pop(call_id, None) if isinstance(call_id, str) else None
            background = self._background.pop(call_id, None) if isinstance(call_id, str) else None
            if pending is not None:
                self.record.accepted_tool_response_ids.append(str(call_id))
                if not pending[1].done():
                    pending[1].set_result(pick(response, "response", {}))
            elif background is not None:
                self.record.accepted_tool_response_ids.append(str(call_id))
                self._background_result(background, response)
            elif isinstance(call_id, str) and call_id in self._shared.issued_tool_ids:
                self.record.stale_tool_response_ids.append(call_id)
            else:
                self.record.unknown_tool_response_ids.append(str(call_id))
                logger.warning(
                    "fake live server: connection %d: tool response for unknown id %r",
                    self.record.index,
                    call_id,
                )

    def _background_result(self, name: str, response: JsonDict) -> None:
        """The response of an open NON_BLOCKING call: react per its ``scheduling``."""
        scheduling = str(pick(response, "scheduling") or "WHEN_IDLE").upper()
        result = pick(response, "response", {})
        if scheduling == "SILENT":
            return
        self._spawn(self._answer_result(name, result, interrupt=scheduling == "INTERRUPT"))

    async def _answer_result(self, name: str, result: Any, *, interrupt: bool) -> None:
        if interrupt:
            await self._interrupt()
        while True:  # WHEN_IDLE: the answer in progress first, and the input cutting it off
            generation = self._generation
            if generation is not None and not generation.done():
                await asyncio.wait([generation])
            elif self._interrupting:
                await asyncio.sleep(0.005)  # its caller starts the next answer at once
            else:
                break
        self._start_generation("", tool_results=[(name, result)], answers_user=False)

    # ---- resumption handles ----------------------------------------------------------------

    def _resumable(self) -> bool:
        """True at a resumable point: no answer in progress, no function call pending."""
        generation = self._generation
        return (
            self.record.resumption_enabled
            and self._setup_answered
            and not self.ending
            and not self._finishing
            and (generation is None or generation.done())
            and not self._pending_tools
        )

    def _idle_point(self) -> IssuePoint:
        return "idle_silent" if self._tracker.held_since is None else "idle_speaking"

    def _last_consumed(self, handled: int = 0) -> int:
        """The last client message whose content the session state includes.

        That is the last message handled (or ``handled``, for a message whose content is in
        the state already while it is being handled), unless audio is held: then the message
        before the first one holding it.
        """
        done = max(self._handled_index, handled)
        held = self._tracker.held_since
        return done if held is None else min(done, held - 1)

    def _new_handle(self, point: IssuePoint, handled: int = 0) -> tuple[JsonDict, HandleIssue]:
        """Snapshot the session now; return its update message and its issue record."""
        index = self._last_consumed(handled)
        consumed = self._consumed_through(index)
        now = self._loop.time()
        session = SessionInfo(self._session.id, self._session.started_at, self._session_audio)
        sent_index = index if self.record.transparent else None
        snapshot = Snapshot(
            tuple(self._memory),
            now,
            self.record.index,
            session,
            sent_index,
            consumed,
            tuple(self._background.items()),
        )
        handle = self._shared.handles.issue(snapshot)
        issue = HandleIssue(handle, self.record.index, point, sent_index, len(self._memory), now)
        message = wire.resumption_update(
            new_handle=handle, resumable=True, last_consumed_index=sent_index
        )
        return message, issue

    def _consumed_through(self, index: int) -> collections.Counter[str]:
        """Fingerprints of the session's consumed messages, through message ``index`` here."""
        while self._consumed_upto < index:
            self._consumed_upto += 1
            mark = self._fingerprints[self._consumed_upto]
            if mark is not None:
                self._consumed[mark] += 1
        if index == self._consumed_upto:
            return collections.Counter(self._consumed)
        marks = self._fingerprints[1 : index + 1]  # the index went back: count afresh
        return self._base_consumed + collections.Counter(m for m in marks if m is not None)

    def _issued(self, issue: HandleIssue) -> None:
        self.record.handles_issued.append(issue.handle)
        self.record.handle_issues.append(issue)
        self._audio_since_handle_ms = 0

    async def _send_late_handle(self) -> None:
        """Send the held turn handle (``HandleSchedule.turn_handle_late``), if any."""
        if self._late_handle is not None:
            (update, issue), self._late_handle = self._late_handle, None
            await self._send(update)
            self._issued(issue)

    async def _issue_handle(self, point: IssuePoint, handled: int = 0) -> HandleIssue:
        message, issue = self._new_handle(point, handled)
        await self._send(message)
        self._issued(issue)
        return issue

    async def issue_handle_now(self) -> HandleIssue | None:
        """Issue a handle now if this connection is at a resumable point, else None.

        When it is not (the model generates or a call is pending), ``{"resumable": false}`` is
        sent instead, as the service does. None too when the setup did not ask for handles.
        """
        if not self.record.resumption_enabled or not self._setup_answered or self.ending:
            return None
        try:
            if not self._resumable():
                await self._not_resumable()
                return None
            return await self._issue_handle(self._idle_point())
        except (_Ended, ConnectionClosed):
            return None

    # ---- the model -------------------------------------------------------------------------

    def _heard(
        self,
        text: str,
        how: HeardHow,
        first: int,
        last: int,
        *,
        ended_by: str | None = None,
        cut_start: bool = False,
    ) -> None:
        self.record.user_turns.append(text)
        self.record.heard.append(
            HeardTurn(text, how, self.record.index, first, last, ended_by, cut_start)
        )

    async def _user_turn(
        self,
        text: str,
        how: HeardHow,
        first: int,
        last: int,
        *,
        ended_by: str | None = None,
        cut_start: bool = False,
    ) -> None:
        await self._interrupt()
        self._unanswered_user = False
        self._memory.append(Turn("user", text))
        self._heard(text, how, first, last, ended_by=ended_by, cut_start=cut_start)
        self._start_generation(text)

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

    async def _not_resumable(self) -> None:
        if self.record.resumption_enabled:
            await self._send(
                wire.resumption_update(new_handle=None, resumable=False, last_consumed_index=None)
            )

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
                if number == 0 and self._faults.fire(lambda f: f.mid_turn):
                    return
            if self._vertex and self._modality != "TEXT":
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
        await self._send(
            wire.server_content(model_turn={"parts": [wire.audio_part(pcm, OUTPUT_SAMPLE_RATE)]}),
            wire.server_content(output_transcription={"text": chunk}),
        )
