"""Client messages that the state behind the current handle may not include.

The live loop records every client message (as the google-genai send call that carried it)
and the server facts that matter for replay (model output, input transcription, tool calls,
turn completions). When a resumable handle arrives, what it covers is dropped: on the Gemini
API everything recorded before it arrived; with Vertex ``transparent`` exactly the messages
up to ``lastConsumedClientMessageIndex``.

On resume, :meth:`Outbox.take_replay` splits what is left at the last *resolved* turn (a
``turnComplete`` with no tool call still waiting for its response):

* before it, the exchange already happened: it is returned as context turns, to be sent as
  history that does not ask for an answer (nothing is said twice, nothing forgotten). A turn
  is resolved when the model said something after the latest user input or tool response and
  no tool call waits for its response;
* after it, the messages are returned as they were sent, to be replayed in order (the model
  answers them once), except function responses for calls the resumed session never saw,
  and audio older than the replay window, which is counted, never dropped silently.

Pure: no I/O.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from google.genai import types

Method = Literal["send", "send_client_content", "send_realtime_input", "send_tool_response"]

_RATE_DEFAULT = 16000


@dataclass(frozen=True)
class ClientMessage:
    """One client message as sent: the session method and its keyword arguments."""

    index: int  #: 1-based on the connection it was sent on (the setup is 0)
    method: str
    kwargs: Mapping[str, Any]
    audio_ms: float = 0.0
    user_text: str | None = None
    response_ids: tuple[str, ...] = ()


@dataclass(frozen=True)
class _Fact:
    kind: Literal["model_text", "input_text", "tool_call", "turn_complete"]
    text: str = ""
    ids: tuple[str, ...] = ()


@dataclass
class Replay:
    """What to send on a resumed connection, in this order."""

    context: list[tuple[str, str]] = field(default_factory=list)
    messages: list[ClientMessage] = field(default_factory=list)
    dropped_audio_ms: float = 0.0
    dropped_responses: list[str] = field(default_factory=list)

    def context_contents(self) -> list[types.Content]:
        """The context as ``Content`` turns (roles ``user``/``model``)."""
        return [
            types.Content(role=role, parts=[types.Part(text=text)]) for role, text in self.context
        ]


class Outbox:
    """The record of one live session since its newest resumable handle."""

    def __init__(self, audio_window_ms: float = 2000.0) -> None:
        self.audio_window_ms = audio_window_ms
        self._items: list[ClientMessage | _Fact] = []
        self._index = 0
        #: Total audio (ms) that fell out of the replay window over the run.
        self.dropped_audio_ms_total = 0.0

    def __len__(self) -> int:
        return sum(isinstance(item, ClientMessage) for item in self._items)

    # -- recording ------------------------------------------------------------------------

    def begin_connection(self) -> None:
        """Client message numbering restarts on every connection."""
        self._index = 0

    def record(self, method: str, kwargs: Mapping[str, Any]) -> ClientMessage:
        """Record a client message about to be sent; return its description."""
        self._index += 1
        audio_ms, text, ids = describe(method, kwargs)
        message = ClientMessage(self._index, method, dict(kwargs), audio_ms, text, ids)
        self._items.append(message)
        return message

    def model_text(self, text: str) -> None:
        if text:
            self._items.append(_Fact("model_text", text))

    def input_text(self, text: str) -> None:
        if text:
            self._items.append(_Fact("input_text", text))

    def tool_call(self, ids: Iterable[str]) -> None:
        self._items.append(_Fact("tool_call", ids=tuple(ids)))

    def turn_complete(self) -> None:
        self._items.append(_Fact("turn_complete"))

    def covered(self, last_consumed_index: int | None) -> None:
        """A resumable handle arrived: forget what its state includes."""
        if last_consumed_index is None:
            self._items.clear()
            return
        last = -1
        for position, item in enumerate(self._items):
            if isinstance(item, ClientMessage) and item.index <= last_consumed_index:
                last = position
        del self._items[: last + 1]

    # -- replaying ------------------------------------------------------------------------

    def take_replay(self, unknown_call_ids: Iterable[str] = ()) -> Replay:
        """Return what a resumed session needs and empty the outbox (see module doc)."""
        unknown = set(unknown_call_ids)
        items, self._items = self._items, []
        # A turn is resolved when the model said something after the latest user input or
        # tool response and no tool call waits for its response. Raw audio chunks are not a
        # turn by themselves; the server's input transcription is.
        resolved, pending, answered = -1, set[str](), True
        for position, item in enumerate(items):
            if isinstance(item, ClientMessage):
                pending.difference_update(item.response_ids)
                if item.user_text or item.response_ids:
                    answered = False
            elif item.kind == "tool_call":
                pending.update(item.ids)
            elif item.kind == "input_text":
                answered = False
            elif item.kind == "model_text":
                answered = True
            elif item.kind == "turn_complete" and not pending and answered:
                resolved = position
        replay = Replay(context=_context(items[: resolved + 1]))
        raw: list[ClientMessage] = []
        for item in items[resolved + 1 :]:
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
            raw.append(item)
        # Keep the newest audio up to the window; older audio is reported as dropped.
        budget = self.audio_window_ms
        for item in reversed(raw):
            if item.audio_ms <= 0:
                replay.messages.append(item)
            elif budget >= item.audio_ms:
                budget -= item.audio_ms
                replay.messages.append(item)
            else:
                budget = 0.0
                replay.dropped_audio_ms += item.audio_ms
        replay.messages.reverse()
        self.dropped_audio_ms_total += replay.dropped_audio_ms
        return replay

    def take_audio(self) -> Replay:
        """For a fresh session: only the audio tail (text is in the rebuilt history)."""
        replay = self.take_replay()
        replay.context = []
        replay.messages = [m for m in replay.messages if m.audio_ms > 0]
        return replay


def _context(items: list[ClientMessage | _Fact]) -> list[tuple[str, str]]:
    turns: list[tuple[str, str]] = []

    def add(role: str, text: str) -> None:
        if turns and turns[-1][0] == role:
            turns[-1] = (role, turns[-1][1] + ("" if role == "model" else " ") + text)
        else:
            turns.append((role, text))

    for item in items:
        if isinstance(item, ClientMessage):
            if item.user_text:
                add("user", item.user_text)
        elif item.kind == "input_text":
            add("user", item.text)
        elif item.kind == "model_text":
            add("model", item.text)
    return [(role, text.strip()) for role, text in turns if text.strip()]


# -- reading google-genai send calls ------------------------------------------------------


def _get(obj: Any, name: str) -> Any:
    if isinstance(obj, Mapping):
        return obj.get(name)
    return getattr(obj, name, None)


def _blob_ms(blob: Any) -> float:
    data = _get(blob, "data")
    mime = str(_get(blob, "mime_type") or _get(blob, "mimeType") or "")
    if not data or not mime.startswith("audio/"):
        return 0.0
    rate = _RATE_DEFAULT
    for piece in mime.split(";"):
        key, _, value = piece.strip().partition("=")
        if key == "rate" and value.isdigit():
            rate = int(value)
    size = len(data) if isinstance(data, (bytes, bytearray)) else len(str(data)) * 3 // 4
    return size / 2 / rate * 1000.0


def _content_text(turns: Any, turn_complete: Any) -> str | None:
    if not turn_complete or turns is None:
        return None
    if not isinstance(turns, (list, tuple)):
        turns = [turns]
    texts = []
    for turn in turns:
        if isinstance(turn, str):
            texts.append(turn)
            continue
        if (_get(turn, "role") or "user") != "user":
            continue
        for part in _get(turn, "parts") or []:
            text = _get(part, "text")
            if text:
                texts.append(text)
    return " ".join(texts) or None


def _responses(value: Any) -> list[Any]:
    if value is None:
        return []
    if isinstance(value, (list, tuple)):
        return list(value)
    return [value]


def describe(method: str, kwargs: Mapping[str, Any]) -> tuple[float, str | None, tuple[str, ...]]:
    """``(audio ms, user text, function response ids)`` of one send call."""
    if method == "send":
        value = kwargs.get("input")
        if isinstance(value, types.LiveClientToolResponse):
            return 0.0, None, _ids(value.function_responses)
        if isinstance(value, types.FunctionResponse) or (
            isinstance(value, list) and value and isinstance(value[0], types.FunctionResponse)
        ):
            return 0.0, None, _ids(_responses(value))
        if isinstance(value, types.LiveClientContent):
            return 0.0, _content_text(value.turns, value.turn_complete), ()
        if isinstance(value, types.LiveClientRealtimeInput):
            chunks = _responses(value.media_chunks) + _responses(value.audio)
            return sum(_blob_ms(c) for c in chunks), value.text or None, ()
        if isinstance(value, (types.Content, str)):
            return 0.0, _content_text(value, kwargs.get("end_of_turn")), ()
        return 0.0, None, ()
    if method == "send_client_content":
        return 0.0, _content_text(kwargs.get("turns"), kwargs.get("turn_complete", True)), ()
    if method == "send_realtime_input":
        ms = sum(_blob_ms(kwargs.get(key)) for key in ("media", "audio") if kwargs.get(key))
        return ms, kwargs.get("text") or None, ()
    if method == "send_tool_response":
        return 0.0, None, _ids(_responses(kwargs.get("function_responses")))
    return 0.0, None, ()


def _ids(responses: Iterable[Any] | None) -> tuple[str, ...]:
    return tuple(str(i) for r in responses or [] if (i := _get(r, "id")))


def without_responses(
    method: str, kwargs: Mapping[str, Any], ids: set[str]
) -> dict[str, Any] | None:
    """``kwargs`` minus the function responses with ``ids``; ``None`` if nothing is left."""

    def keep(responses: Iterable[Any]) -> list[Any]:
        return [r for r in responses if str(_get(r, "id")) not in ids]

    if method == "send_tool_response":
        kept = keep(_responses(kwargs.get("function_responses")))
        return {**kwargs, "function_responses": kept} if kept else None
    if method == "send":
        value = kwargs.get("input")
        if isinstance(value, types.LiveClientToolResponse):
            kept = keep(value.function_responses or [])
            if not kept:
                return None
            return {**kwargs, "input": value.model_copy(update={"function_responses": kept})}
        if isinstance(value, (list, types.FunctionResponse)):
            kept = keep(_responses(value))
            return {**kwargs, "input": kept} if kept else None
    return dict(kwargs)


def call_key(name: str | None, args: Any) -> str:
    """A stable key for "the same call": tool name and canonical JSON of its arguments."""
    return f"{name}:{json.dumps(args or {}, sort_keys=True, default=str)}"
