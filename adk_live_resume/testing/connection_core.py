"""The state one fake-server connection shares across its layers, and its wire: send, end, tasks.

:class:`ConnectionCore` is the bottom layer of
:class:`~adk_live_resume.testing.connection.LiveConnection`. Each layer above adds one concern
and calls only the layers below it: :mod:`~adk_live_resume.testing.handle_issuing` (resumable
points, handles), :mod:`~adk_live_resume.testing.connection_clocks` (lifetime, session limits,
faults armed later), :mod:`~adk_live_resume.testing.generation` (the model's answer),
:mod:`~adk_live_resume.testing.turn_taking` (client messages become turns) and
:mod:`~adk_live_resume.testing.connection` (setup, resumption, the message loop). Every
attribute is made here, once, so that every layer reads the same state.

Guarantees:

* the messages of one :meth:`ConnectionCore._send` call go out back to back (nothing of this
  connection goes in between); each is in ``record.server_messages`` once handed to the
  socket, and taken back out when the closed socket refused it;
* :meth:`ConnectionCore.terminate`: the first call wins; every other task of the connection is
  cancelled; the close codes that may not travel in a frame (1005, 1006, 1015) drop TCP;
* every task the connection starts is cancelled and awaited by :meth:`ConnectionCore._finish`,
  and the record is final (``record.finished``) from then on.
"""

from __future__ import annotations

import asyncio
import collections
import json
import logging
import secrets
from collections.abc import Callable, Coroutine, Sequence
from typing import Any, Literal

from websockets.asyncio.server import ServerConnection
from websockets.exceptions import ConnectionClosed

from . import protocol as wire
from .armed_faults import ArmedFaults
from .families import GEMINI_2_LIVE
from .faults import Fault
from .handles import HandleIssue, SessionInfo
from .model import ScriptedModel, Turn
from .protocol import JsonDict
from .records import ConnectionRecord, EndedBy
from .settings import ServerSettings, SharedState
from .vad import SpeechTracker, VadConfig

__all__ = ["ConnectionCore", "_Ended"]

logger = logging.getLogger("adk_live_resume.testing")

_UNSENDABLE_CODES = frozenset({1005, 1006, 1015})


class _Ended(Exception):
    """Raised inside a connection task once the connection is ending."""


class ConnectionCore:
    """Serves one websocket connection; see the module docstring for the layers."""

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
        # What the setup said (read in connection.py).
        self._setup_answered = False
        self._modality: Literal["TEXT", "AUDIO"] = "TEXT"
        self._model = ScriptedModel()
        #: Functions declared NON_BLOCKING in the setup.
        self._non_blocking: frozenset[str] = frozenset()
        self._family = GEMINI_2_LIVE
        self._gemini3 = False
        self._history_in_client_content = False
        self._compression = False
        #: The setup asked for transcriptions (``inputAudioTranscription``,
        #: ``outputAudioTranscription``): the service sends them only then.
        self._input_transcription = False
        self._output_transcription = False
        # The session: restored from the handle's snapshot on a resume.
        self._session = SessionInfo(secrets.token_hex(8), self._loop.time(), audio=False)
        self._session_audio = False
        self._memory: list[Turn] = []
        #: Open NON_BLOCKING calls of the session, by id (name): kept across resumption.
        self._background: dict[str, str] = {}
        #: NON_BLOCKING calls whose result arrived and waits to be told (``WHEN_IDLE``): still
        #: open in the handles issued meanwhile, as an answer in flight is never continued
        #: after a resume (the client sends the result again).
        self._telling: dict[str, str] = {}
        self._counted_open = False  # counted in shared.open_sessions
        self._over_limit = False
        # The answer in progress (generation.py).
        self._generation: asyncio.Task[None] | None = None
        self._finishing = False
        #: An answer in progress is being cut off for input that starts the next one: no
        #: background result may start its telling in between (one generation at a time).
        self._interrupting = 0
        self._pending_tools: dict[str, tuple[str, asyncio.Future[Any]]] = {}
        # Client input (turn_taking.py).
        self._tracker = SpeechTracker(VadConfig())
        self._audio_rate = 16000
        self._message_index = 0
        self._handled_index = 0
        self._unanswered_user = False
        self._realtime_seen = False
        self._awaiting_trigger = False
        self._trigger_tool_results: list[tuple[str, Any]] = []
        # What the handles hold (handle_issuing.py).
        self._fingerprints: list[str | None] = [None]  # by message number; 0 is the setup
        self._base_consumed: collections.Counter[str] = collections.Counter()
        self._consumed: collections.Counter[str] = collections.Counter()  # through _consumed_upto
        self._consumed_upto = 0
        self._restored_consumed: collections.Counter[str] = collections.Counter()
        self._audio_since_handle_ms = 0
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

    def _end_by_fault(self, fault: Fault) -> None:
        if fault.kind == "abort":
            self.terminate("fault", abort=True)
        else:
            self.terminate("fault", code=fault.code or 1000, reason=fault.reason)

    # ---- sending ---------------------------------------------------------------------------

    async def _send_scripted(self, matches: Callable[[Fault], bool]) -> None:
        """Send the messages of the armed ``server_message`` faults that ``matches``."""
        for fault in self._faults.take_messages(matches):
            await self._send(json.loads(fault.message))

    async def send_message_now(self, message: JsonDict) -> bool:
        """Send ``message`` as given now; False if the setup was not answered yet or the
        connection is ending (nothing sent)."""
        if not self._setup_answered or self.ending:
            return False
        try:
            await self._send(message)
        except _Ended:
            return False
        return True

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
