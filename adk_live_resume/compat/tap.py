"""A tap on the google-genai ``AsyncSession`` that sits under ADK's live connection.

Every ADK release reads and writes the socket through ``GeminiLlmConnection._gemini_session``;
what ADK does above it differs by release (1.27 drops ``goAway``; 2.x erases the handle on
``resumable=false``, logs it whole and reconnects at once on ``goAway``; 1.28+ holds tool
calls until ``turnComplete``). The tap sees every raw server message first and every client
send, and gives ADK one behaviour on all releases:

* ``goAway`` is reported to the live loop and removed before ADK sees it (the loop plans the
  reconnect; ADK 2.x would otherwise cut the current turn).
* ``sessionResumptionUpdate`` is reported; an update that carries no usable handle is removed
  (so ADK 2.x cannot erase the good handle). A usable one passes through only with
  ``pass_handles=True`` (the caller's ``RunConfig`` asked for session resumption: ADK 2.x then
  emits it as an event, as stock ADK does); otherwise it is removed too, so no event that
  ``run_live`` yields (and no session database row) carries a handle the app never asked for.
* ``inputTranscription`` text is passed to ADK as far as the listener says (a replayed
  utterance's transcription that repeats what the user was already shown is held back);
  a transcription left without text or end mark is removed, and a message left empty.
* tool calls are reported; the listener may answer some itself (a call the model repeats
  after a resume, whose result is already known) or hold them (a repeat of a call whose tool
  still runs, answered with its result later) and those are removed.
* every client send goes through :meth:`TapListener.before_send`, which records it (for
  replay) and may rewrite or drop it (a function response for a call the session never saw);
  after it, and after each server message, the sends the listener held and that are due
  now (:meth:`TapListener.due_sends`) go, in order.
  With an ``encoder``, a microphone chunk then goes on the websocket as the text the SDK
  would send for it (:mod:`adk_live_resume.compat.chunk_encoding`), without the SDK's per-call work.
* with ``end_tool_turns`` (a native-audio model, whose turn goes on after a ``toolCall``, under
  an ADK release that holds tool calls until ``turnComplete``; see
  :mod:`adk_live_resume.rules.model_families`), a message passing tool calls to ADK is followed by
  a ``turnComplete`` of the tap's own and ``receive`` ends there, as the SDK's does at a turn
  end: ADK then passes the calls to the tools instead of waiting for ever. The loop's
  listener never sees that ``turnComplete`` (the model's turn is not over).
* ``send_context_update`` (google-genai 2.32+) is a send like the others (recorded for
  replay); a send method the tap does not know is passed through unchanged and reported
  (to :meth:`TapListener.before_send`, whose answer it does not wait for).
* ``close()`` called by ADK (the request queue was closed) is reported, so the loop can tell
  a client close from a lost connection.
* :meth:`SessionTap.retire` (the loop moved the session to a new connection) ends ``receive``
  with :class:`ConnectionRetired` at once, without waiting for the old socket's close: no
  message of the old connection reaches ADK after that.

Guarantee: the tap never reorders messages and never swallows an exception, but one: a held
send that fails on the reading side because the socket is gone (the reading goes on through
what the socket delivered before it went, then reports the loss itself).
"""

from __future__ import annotations

import asyncio
import contextlib
import datetime
import re
from collections.abc import AsyncIterator, Awaitable, Mapping
from typing import Any, Protocol

from google.genai import types

from ..conversation.context_updates import CONTEXT_UPDATE, KNOWN_SENDS
from ..rules.errors import classify
from . import genai_compat
from .chunk_encoding import ChunkEncoder


def _tool_turn_end() -> types.LiveServerMessage:
    """The ``turnComplete`` that releases the tool calls ADK holds (see ``end_tool_turns``)."""
    return types.LiveServerMessage(server_content=types.LiveServerContent(turn_complete=True))


class TapListener(Protocol):
    """What the live loop learns from, and decides for, a tapped session."""

    def on_server_message(self, message: types.LiveServerMessage) -> None:
        """Any message arrived (proves the connection healthy; carries content facts)."""

    def input_transcription(self, text: str) -> str:
        """The message just reported to :meth:`on_server_message` carries this
        ``inputTranscription`` text: return what of it ADK should get ("" for none)."""

    def on_go_away(self, time_left: float | None) -> None:
        """The server announced the end of this connection in ``time_left`` seconds."""

    def on_resumption_update(
        self, new_handle: str | None, resumable: bool | None, last_consumed_index: int | None
    ) -> None:
        """A ``sessionResumptionUpdate`` arrived."""

    async def on_tool_calls(self, calls: list[types.FunctionCall]) -> list[types.FunctionCall]:
        """Tool calls arrived; return those ADK should run (the rest were answered)."""

    def before_send(
        self, method: str, kwargs: dict[str, Any], *, replay: bool
    ) -> tuple[str, dict[str, Any]] | None:
        """A client send is about to happen; return the call to make, or ``None`` to skip.
        A send method the tap does not know (not in ``KNOWN_SENDS``) is only reported here,
        with its keyword arguments: it is made as called, whatever the answer."""

    def due_sends(self) -> list[tuple[str, dict[str, Any]]]:
        """Sends the listener held and that are due now (after a send went): made as given,
        without :meth:`before_send`."""

    def on_receive_error(self, error: BaseException) -> None:
        """Reading the socket failed (the connection is probably gone)."""

    def on_client_close(self) -> None:
        """ADK asked to close the connection (the ``LiveRequestQueue`` was closed)."""


class ConnectionRetired(Exception):
    """``receive`` of a tapped session ended because the loop retired its connection."""


_DURATION = re.compile(r"^\s*(-?\d+(?:\.\d+)?)\s*s?\s*$")


def _remaining(
    message: types.LiveServerMessage, changes: dict[str, Any]
) -> types.LiveServerMessage | None:
    """``message`` with ``changes`` made; None when nothing is left of it."""
    if not changes:
        return message
    remaining = message.model_copy(update=changes)
    if not remaining.model_dump(exclude_none=True):
        return None
    return remaining


def parse_time_left(value: object) -> float | None:
    """Seconds in a protobuf-JSON duration such as ``"57s"`` or ``"0.600s"``."""
    if value is None:
        return None
    if isinstance(value, datetime.timedelta):
        return value.total_seconds()
    if isinstance(value, (int, float)):
        return float(value)
    match = _DURATION.match(str(value))
    return float(match.group(1)) if match else None


class SessionTap:
    """Stands in for a google-genai ``AsyncSession``; forwards everything else unchanged."""

    def __init__(
        self,
        session: Any,
        listener: TapListener,
        *,
        pass_handles: bool = True,
        encoder: ChunkEncoder | None = None,
        end_tool_turns: bool = False,
    ) -> None:
        self._tapped_session = session
        self._end_tool_turns = end_tool_turns
        self._listener = listener
        self._pass_handles = pass_handles
        #: Where encoded microphone chunks go, and their encoder: both or neither.
        self._websocket: Any = genai_compat.websocket_of(session) if encoder is not None else None
        self._encoder = encoder if self._websocket is not None else None
        self._retired = False
        #: The task waiting for the next server message, while it waits.
        self._waiting: asyncio.Task[Any] | None = None
        #: The task :meth:`retire` cancelled, until the cancellation is taken back.
        self._cancelled: asyncio.Task[Any] | None = None

    @property
    def tapped_session(self) -> Any:
        """The real ``AsyncSession``."""
        return self._tapped_session

    @property
    def session_id(self) -> Any:
        """The SDK session's ``session_id``, read here without :meth:`__getattr__`'s detour
        (ADK reads it for every message; a google-genai without it raises AttributeError
        as before)."""
        return self._tapped_session.session_id

    def __getattr__(self, name: str) -> Any:
        attribute = getattr(self._tapped_session, name)
        if name == CONTEXT_UPDATE:  # recorded and replayed as the other sends

            async def send_context_update(**kwargs: Any) -> None:
                await self._send(CONTEXT_UPDATE, kwargs, replay=False)

            return send_context_update
        if name.startswith("send") and name not in KNOWN_SENDS and callable(attribute):
            return self._passed_through(name, attribute)
        return attribute

    def _passed_through(self, name: str, method: Any) -> Any:
        """A send method the tap does not know: passed through, and reported."""

        async def send(*args: Any, **kwargs: Any) -> Any:
            self._listener.before_send(name, dict(kwargs), replay=False)  # (noted only)
            return await method(*args, **kwargs)

        return send

    # -- server -> client ---------------------------------------------------------------

    async def receive(self) -> AsyncIterator[types.LiveServerMessage]:
        async with contextlib.aclosing(self._tapped_session.receive()) as messages:
            while True:
                if self._retired:
                    raise self._retirement()
                self._waiting = asyncio.current_task()
                try:
                    message = await anext(messages)
                except StopAsyncIteration:
                    return
                except asyncio.CancelledError:
                    if self._retired and self._take_back_cancel():
                        raise self._retirement() from None
                    raise  # a cancellation of the run itself
                except Exception as error:
                    if self._retired:
                        raise self._retirement() from error
                    self._listener.on_receive_error(error)
                    raise
                finally:
                    self._waiting = None
                if self._retired:
                    raise self._retirement()
                if message.tool_call is None:  # (the common case: no await needed)
                    passed = _remaining(message, self._read(message))
                else:
                    passed = await self._filter(message)
                due = self._listener.due_sends()  # (a turn's end may make one due)
                if due:
                    await self._send_due_while_reading(due)
                if passed is not None:
                    yield passed
                    if self._end_tool_turns and passed.tool_call is not None:
                        yield _tool_turn_end()
                        return

    async def _filter(self, message: types.LiveServerMessage) -> types.LiveServerMessage | None:
        """What ADK gets of ``message`` (None: nothing), the listener told of it."""
        changes = self._read(message)
        tool_call = message.tool_call
        if tool_call is not None and tool_call.function_calls:
            calls = list(tool_call.function_calls)
            to_run = await self._listener.on_tool_calls(calls)
            if len(to_run) != len(calls):
                changes["tool_call"] = (
                    tool_call.model_copy(update={"function_calls": to_run}) if to_run else None
                )
        return _remaining(message, changes)

    def _read(self, message: types.LiveServerMessage) -> dict[str, Any]:
        """Tell the listener of ``message`` (but its tool calls); the fields ADK must not get
        as they came (a new value, or None to drop the field)."""
        self._listener.on_server_message(message)
        changes: dict[str, Any] = {}
        content = message.server_content
        heard = content.input_transcription if content is not None else None
        if content is not None and heard is not None and heard.text:
            shown = self._listener.input_transcription(heard.text)
            if shown != heard.text:
                kept = heard.model_copy(update={"text": shown or None})
                rest = content.model_copy(
                    update={
                        "input_transcription": kept if kept.model_dump(exclude_none=True) else None
                    }
                )
                changes["server_content"] = rest if rest.model_dump(exclude_none=True) else None
        if message.go_away is not None:
            self._listener.on_go_away(parse_time_left(message.go_away.time_left))
            changes["go_away"] = None
        update = message.session_resumption_update
        if update is not None:
            self._listener.on_resumption_update(
                update.new_handle or None,
                update.resumable,
                getattr(update, "last_consumed_client_message_index", None),
            )
            if not (self._pass_handles and update.resumable and update.new_handle):
                changes["session_resumption_update"] = None
        return changes

    def retire(self) -> None:
        """End ``receive`` with :class:`ConnectionRetired`: at once if it waits for a message
        (its wait is cancelled, which websockets allows without losing data), else before it
        reads the next one. Messages still on their way are never passed on."""
        if self._retired:
            return
        self._retired = True
        if self._waiting is not None and self._waiting.cancel():
            self._cancelled = self._waiting

    def _retirement(self) -> ConnectionRetired:
        self._take_back_cancel()  # a cancellation the SDK swallowed must not linger
        return ConnectionRetired("the session moved to a new connection")

    def _take_back_cancel(self) -> bool:
        """Undo the cancellation :meth:`retire` requested; ``False`` if there was none, or if
        the task was also cancelled by someone else (that one must go on)."""
        task, self._cancelled = self._cancelled, None
        return task is not None and task.uncancel() == 0

    # -- client -> server ---------------------------------------------------------------

    async def _send(self, method: str, kwargs: dict[str, Any], *, replay: bool) -> None:
        """``kwargs`` is the listener's to keep: a fresh dict for every send."""
        decided = self._listener.before_send(method, kwargs, replay=replay)
        if decided is not None:
            await self._send_now(*decided)
        due = self._listener.due_sends()
        if due:
            await self._send_all(due)

    async def send_due(self) -> None:
        """Send what the listener holds and is due now (:meth:`TapListener.due_sends`)."""
        await self._send_all(self._listener.due_sends())

    async def _send_due_while_reading(self, due: list[tuple[str, dict[str, Any]]]) -> None:
        """Send ``due`` (what the listener gave as due now) from the reading side. A socket
        already gone does not end the reading: the messages it delivered before it went are
        still read, to the last (a turn's end among them); what could not be sent stays in
        the outbox, recorded by :meth:`TapListener.due_sends`, for the next connection."""
        try:
            await self._send_all(due)
        except Exception as error:
            if classify(error) is None:
                raise

    async def _send_all(self, due: list[tuple[str, dict[str, Any]]]) -> None:
        for name, arguments in due:
            await getattr(self._tapped_session, name)(**arguments)

    def _send_now(self, name: str, arguments: dict[str, Any]) -> Awaitable[None]:
        """Make the send ``name(**arguments)`` now; await what this returns. A microphone
        chunk goes as the text the SDK would send for it (:mod:`.chunk_encoding`); any other
        send through the session. Not a coroutine of its own: every chunk goes through it."""
        if self._encoder is not None:
            text = self._encoder.encode(self._tapped_session, name, arguments)
            if text is not None:
                chunk: Awaitable[None] = self._websocket.send(text)
                return chunk
        send: Awaitable[None] = getattr(self._tapped_session, name)(**arguments)
        return send

    async def send_held(self, method: str, kwargs: dict[str, Any]) -> None:
        """Send a message the listener recorded and held (its :meth:`TapListener.before_send`
        answered ``None``), as it was recorded: it goes on this connection after all."""
        await self._send_now(method, kwargs)

    async def replay(self, method: str, kwargs: Mapping[str, Any]) -> None:
        """Send a recorded message again (on a new connection), through the listener."""
        await self._send(method, dict(kwargs), replay=True)

    async def send(self, **kwargs: Any) -> None:
        await self._send("send", kwargs, replay=False)

    async def send_client_content(self, **kwargs: Any) -> None:
        await self._send("send_client_content", kwargs, replay=False)

    async def send_realtime_input(self, **kwargs: Any) -> None:
        await self._send("send_realtime_input", kwargs, replay=False)

    async def send_tool_response(self, **kwargs: Any) -> None:
        await self._send("send_tool_response", kwargs, replay=False)

    async def close(self) -> None:
        self._listener.on_client_close()
        await self._tapped_session.close()
