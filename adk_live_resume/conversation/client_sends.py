"""What one google-genai send call carries, read from its session method and keyword arguments.

A send call is a session method (``send``, ``send_client_content``, ``send_realtime_input``,
``send_tool_response``) and its keyword arguments, as the tap saw them. Read from it: its user
audio (:func:`audio_pcm`; its length in :func:`describe`), its typed user text
(:func:`describe`), its function responses (:func:`responses_of`; their ids in
:func:`describe`), its activity signals (:func:`signals`), and whether it is a video or
image frame (:func:`is_frame`). :func:`plain_blob` and
:func:`plain_audio` recognise the microphone's common case cheaply. A call is changed only in
a copy: :func:`without_responses` leaves function responses out, :func:`readdressed` sends one
as the answer to another call.

Pure: no I/O.
"""

from __future__ import annotations

import base64
import binascii
import functools
from collections.abc import Callable, Iterable, Mapping
from typing import Any, Literal

from google.genai import types

Method = Literal["send", "send_client_content", "send_realtime_input", "send_tool_response"]
Signal = Literal["activity_start", "activity_end", "audio_stream_end"]

_RATE_DEFAULT = 16000


def _get(obj: Any, name: str) -> Any:
    if isinstance(obj, Mapping):
        return obj.get(name)
    return getattr(obj, name, None)


@functools.lru_cache(maxsize=64)
def _audio_rate(mime: str) -> int | None:
    """The sample rate of an ``audio/...`` MIME type (16 kHz unless it says), else None."""
    if not mime.startswith("audio/"):
        return None
    rate = _RATE_DEFAULT
    for piece in mime.split(";"):
        key, _, value = piece.strip().partition("=")
        if key == "rate" and value.isdigit():
            rate = int(value)
    return rate


def _blob_ms(blob: Any) -> float:
    data = _get(blob, "data")
    rate = _audio_rate(str(_get(blob, "mime_type") or _get(blob, "mimeType") or ""))
    if not data or rate is None:
        return 0.0
    size = len(data) if isinstance(data, (bytes, bytearray)) else len(str(data)) * 3 // 4
    return size / 2 / rate * 1000.0


def plain_blob(method: str, kwargs: Mapping[str, Any]) -> tuple[str, types.Blob] | None:
    """``(argument, blob)`` of a send that carries one ``Blob`` of non-empty bytes (as
    ``media`` or ``audio``) and nothing else, which is what ADK sends for every microphone
    chunk; None for any other send. Checked first on every chunk: by the outbox's record and
    by :class:`~adk_live_resume.compat.chunk_encoding.ChunkEncoder`."""
    if method != "send_realtime_input" or len(kwargs) != 1:
        return None
    ((key, blob),) = kwargs.items()
    if (
        key not in ("media", "audio")
        or type(blob) is not types.Blob
        or type(blob.data) is not bytes
        or not blob.data
    ):
        return None
    return key, blob


def plain_audio(method: str, kwargs: Mapping[str, Any]) -> tuple[bytes, float] | None:
    """``(pcm, ms)`` of a :func:`plain_blob` send of audio; None for any other send. The same
    figures as :func:`describe` and :func:`audio_pcm` give, without their general walk."""
    plain = plain_blob(method, kwargs)
    if plain is None:
        return None
    blob = plain[1]
    rate = _audio_rate(blob.mime_type or "")
    if rate is None:
        return None
    data: bytes = blob.data  # type: ignore[assignment]  # bytes, checked by plain_blob
    return data, len(data) / 2 / rate * 1000.0


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


def _blob_pcm(blob: Any) -> bytes:
    data = _get(blob, "data")
    mime = str(_get(blob, "mime_type") or _get(blob, "mimeType") or "")
    if not data or not mime.startswith("audio/"):
        return b""
    if isinstance(data, (bytes, bytearray)):
        return bytes(data)
    text = str(data).replace("-", "+").replace("_", "/")
    try:
        return base64.b64decode(text + "=" * (-len(text) % 4))
    except (binascii.Error, ValueError):
        return b""


def _is_picture(blob: Any) -> bool:
    """A video or image frame: a blob whose MIME type is ``image/...`` or ``video/...``, or
    an image object google-genai converts (a PIL image: neither a ``Blob`` nor a mapping)."""
    if blob is None:
        return False
    if isinstance(blob, (types.Blob, Mapping)):
        mime = str(_get(blob, "mime_type") or _get(blob, "mimeType") or "")
        return mime.startswith(("image/", "video/"))
    return not isinstance(blob, (str, bytes, bytearray, bool, int, float))


def is_frame(method: str, kwargs: Mapping[str, Any]) -> bool:
    """Whether one send call is a video or image frame of realtime input and nothing else
    (``send_realtime_input(media=...)`` or ``video=...`` with an ``image/``/``video/`` blob,
    or the same through ``send``): what a camera or a screen share sends, one call a frame."""
    if method == "send_realtime_input":
        if any(kwargs.get(key) is not None for key in kwargs if key not in ("media", "video")):
            return False
        blobs = [kwargs.get("media"), kwargs.get("video")]
    elif method == "send":
        value = kwargs.get("input")
        if isinstance(value, types.LiveClientRealtimeInput):
            if value.audio is not None or value.text or value.activity_start is not None:
                return False
            if value.activity_end is not None or value.audio_stream_end:
                return False
            blobs = [*_responses(value.media_chunks), value.video]
        elif isinstance(value, types.Blob):
            blobs = [value]
        else:
            return False
    else:
        return False
    present = [blob for blob in blobs if blob is not None]
    return bool(present) and all(_is_picture(blob) for blob in present)


def audio_pcm(method: str, kwargs: Mapping[str, Any]) -> bytes:
    """The user audio (raw PCM bytes) one send call carries, ``b""`` if none."""
    if method == "send":
        value = kwargs.get("input")
        if isinstance(value, types.LiveClientRealtimeInput):
            chunks = _responses(value.media_chunks) + _responses(value.audio)
            return b"".join(_blob_pcm(c) for c in chunks)
        return _blob_pcm(value) if isinstance(value, (types.Blob, Mapping)) else b""
    if method == "send_realtime_input":
        return b"".join(_blob_pcm(kwargs.get(key)) for key in ("media", "audio") if kwargs.get(key))
    return b""


def signals(method: str, kwargs: Mapping[str, Any]) -> list[Signal]:
    """The activity signals (``activityStart``/``End``, ``audioStreamEnd``) of one send call."""
    found: list[Signal] = []
    if method == "send_realtime_input":
        source: Any = kwargs
    elif method == "send":
        value = kwargs.get("input")
        if isinstance(value, types.ActivityStart):
            return ["activity_start"]
        if isinstance(value, types.ActivityEnd):
            return ["activity_end"]
        source = value if isinstance(value, (types.LiveClientRealtimeInput, Mapping)) else None
    else:
        return found
    if source is None:
        return found
    if _get(source, "activity_start") is not None:
        found.append("activity_start")
    if _get(source, "activity_end") is not None:
        found.append("activity_end")
    if _get(source, "audio_stream_end"):
        found.append("audio_stream_end")
    return found


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


def tells_results(method: str, kwargs: Mapping[str, Any]) -> bool:
    """Whether the send is client content telling tool results: a complete turn holding
    function responses (a result told as content, :func:`~.late_results.as_content`), which
    asks the model for an answer as a typed turn does."""
    if method != "send_client_content" or not kwargs.get("turn_complete", True):
        return False
    return any(
        _get(part, "function_response") is not None
        for turn in _responses(kwargs.get("turns"))
        for part in _get(turn, "parts") or []
    )


def context_turns(method: str, kwargs: Mapping[str, Any]) -> list[tuple[str, str]]:
    """``(role, text)`` of each turn of client content that asks for no answer
    (``turn_complete=False``: the context a replay sends); none for any other send call."""
    if method != "send_client_content" or kwargs.get("turn_complete", True):
        return []
    turns = kwargs.get("turns") or []
    found: list[tuple[str, str]] = []
    for turn in turns if isinstance(turns, (list, tuple)) else [turns]:
        if isinstance(turn, str):
            found.append(("user", turn))
            continue
        text = "".join(_get(part, "text") or "" for part in _get(turn, "parts") or [])
        if text:
            found.append((str(_get(turn, "role") or "user"), text))
    return found


def _ids(responses: Iterable[Any] | None) -> tuple[str, ...]:
    return tuple(str(i) for r in responses or [] if (i := _get(r, "id")))


def _map_responses(
    method: str, kwargs: Mapping[str, Any], change: Callable[[Any], Any]
) -> dict[str, Any] | None:
    """``kwargs`` with each function response replaced by ``change(response)`` (dropped when
    it returns ``None``); ``None`` if no response is left."""

    def mapped(responses: Iterable[Any]) -> list[Any]:
        return [c for c in (change(r) for r in responses) if c is not None]

    if method == "send_tool_response":
        kept = mapped(_responses(kwargs.get("function_responses")))
        return {**kwargs, "function_responses": kept} if kept else None
    if method == "send":
        value = kwargs.get("input")
        if isinstance(value, types.LiveClientToolResponse):
            kept = mapped(value.function_responses or [])
            if not kept:
                return None
            return {**kwargs, "input": value.model_copy(update={"function_responses": kept})}
        if isinstance(value, (list, types.FunctionResponse)):
            kept = mapped(_responses(value))
            return {**kwargs, "input": kept} if kept else None
    return dict(kwargs)


def without_responses(
    method: str, kwargs: Mapping[str, Any], ids: set[str]
) -> dict[str, Any] | None:
    """``kwargs`` minus the function responses with ``ids``; ``None`` if nothing is left."""
    return _map_responses(method, kwargs, lambda r: None if str(_get(r, "id")) in ids else r)


def readdressed(
    method: str, kwargs: Mapping[str, Any], to: Mapping[str, tuple[str, str | None]]
) -> dict[str, Any]:
    """``kwargs`` with the function response of each id in ``to`` sent as the answer to
    another call: ``to[id]`` is that call's ``(id, name)``. Nothing else changes."""

    def change(response: Any) -> Any:
        target = to.get(str(_get(response, "id")))
        if target is None:
            return response
        update = {"id": target[0], "name": target[1]}
        if isinstance(response, types.FunctionResponse):
            return response.model_copy(update=update)
        return {**response, **update}

    return _map_responses(method, kwargs, change) or dict(kwargs)


def responses_of(method: str, kwargs: Mapping[str, Any]) -> list[types.FunctionResponse]:
    """The function responses one send call carries."""
    if method == "send_tool_response":
        values = _responses(kwargs.get("function_responses"))
    elif method == "send":
        value = kwargs.get("input")
        if isinstance(value, types.LiveClientToolResponse):
            values = list(value.function_responses or [])
        elif isinstance(value, (list, types.FunctionResponse)):
            values = _responses(value)
        else:
            values = []
    else:
        values = []
    return [
        v if isinstance(v, types.FunctionResponse) else types.FunctionResponse.model_validate(v)
        for v in values
        if isinstance(v, (types.FunctionResponse, Mapping))
    ]
