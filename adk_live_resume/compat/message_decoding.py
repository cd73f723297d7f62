"""Server messages read as google-genai reads them, without its per-message work.

For every server message, google-genai's ``AsyncSession._receive`` parses the JSON, copies the
top-level fields it knows (its Gemini API converter), walks the result to remove what its types
lack, checks every field's type in Python and validates the rest into a ``LiveServerMessage``:
30 to 70 µs of CPU per message on a 2-core machine, about a tenth of what ADK spends on a text
turn end to end, and more than half of what a model's audio chunk costs to read. On the Gemini
API that converter copies each known field's value as it came (the camelCase names inside are
the types' own aliases), so pydantic, given the same JSON, builds the same message in one call
of its compiled core.

:class:`MessageDecoder` does that for the sessions it is given (:meth:`MessageDecoder.install`:
the session's ``receive`` then reads each message through it), and hands every other message to
the SDK's own ``_receive``, with the JSON it read already, through a stand-in websocket.

Guarantees:

* Every message is equal to what the SDK's own ``_receive`` returns for the same JSON, down
  to the fields each part says were set. The
  fast way is taken only for JSON that pydantic's validation of ``LiveServerMessage`` accepts
  as it is (the types forbid fields they lack: a message with one goes to the SDK, which
  drops the field), with no ``null`` in it (the SDK's converter skips a top-level null), and
  whose top-level fields are among those that :data:`PROBES` checked: once per process and SDK
  version, each probe (text, audio in both base64 alphabets, transcriptions, turn ends, usage,
  handle updates, tool calls, goAway) is read both ways, and a single difference leaves every
  message to the SDK.
* Only where that reading is known: a Gemini API session of a google-genai no newer than the
  newest tested (:data:`~.genai_compat.TESTED_GENAI_NEWEST`), whose ``_receive`` is the SDK's
  own (:func:`~.genai_compat.sdk_receive`: not wrapped, replaced or set on the session). A
  Vertex AI session (whose converter renames usage fields) is left alone.
* Errors are the SDK's own: the same websocket read, and an error it raises (a close, above
  all) goes through the SDK's ``_receive`` as if it had read it (an ``APIError`` with the close
  code); a cancellation passes through as it does there.

Pure but for the one read per message.
"""

from __future__ import annotations

import base64
import functools
import json
import logging
from collections.abc import Callable
from typing import Any

from google.genai import types

from . import genai_compat

logger = logging.getLogger(__name__)

#: Bytes whose base64 holds ``+`` and ``/`` (``-`` and ``_`` in the URL-safe alphabet).
_AUDIO = bytes(range(256)) + b"\xfb\xff\xbf" * 2
_PADDED = base64.b64encode(_AUDIO).decode()  # ("==" at its end)


def _probe(message: dict[str, Any]) -> bytes:
    return json.dumps(message).encode()


def _audio(data: str) -> bytes:
    part = {"inlineData": {"mimeType": "audio/pcm;rate=24000", "data": data}}
    return _probe({"serverContent": {"modelTurn": {"role": "model", "parts": [part]}}})


#: Server messages as the Gemini API sends them, one of each kind the fast way may read: each
#: is read both ways before any message is (a probe with a field the installed types lack is
#: left out: messages that carry it go to the SDK anyway).
PROBES: tuple[bytes, ...] = (
    _probe({"setupComplete": {}}),
    _probe({"serverContent": {"modelTurn": {"role": "model", "parts": [{"text": "Hel lo"}]}}}),
    _audio(_PADDED),
    _audio(_PADDED.replace("+", "-").replace("/", "_")),
    _audio(_PADDED.rstrip("=")),
    _probe({"serverContent": {"outputTranscription": {"text": " yes", "finished": False}}}),
    _probe({"serverContent": {"inputTranscription": {"text": "what time"}}}),
    _probe({"serverContent": {"generationComplete": True}}),
    _probe({"serverContent": {"turnComplete": True}}),
    _probe({"serverContent": {"turnComplete": True, "turnCompleteReason": "NEED_MORE_INPUT"}}),
    _probe({"serverContent": {"interrupted": True}}),
    _probe({"serverContent": {"interactionStatus": "IN_PROGRESS"}}),
    _probe(
        {
            "usageMetadata": {
                "promptTokenCount": 120,
                "responseTokenCount": 12,
                "totalTokenCount": 132,
                "promptTokensDetails": [{"modality": "TEXT", "tokenCount": 120}],
                "responseTokensDetails": [{"modality": "AUDIO", "tokenCount": 12}],
            }
        }
    ),
    _probe({"sessionResumptionUpdate": {"newHandle": "h-1", "resumable": True}}),
    _probe({"sessionResumptionUpdate": {"lastConsumedClientMessageIndex": "17"}}),
    _probe({"sessionResumptionUpdate": {"lastConsumedClientMessageIndex": 17}}),
    _probe(
        {
            "toolCall": {
                "functionCalls": [
                    {"id": "c-1", "name": "look_up", "args": {"q": "x", "n": [1, 2.5, True]}}
                ]
            }
        }
    ),
    _probe({"toolCallCancellation": {"ids": ["c-1", "c-2"]}}),
    _probe({"goAway": {"timeLeft": "9.5s"}}),
)

_NULL = b"null"


class _Given:
    """Stands in for the websocket while the SDK reads one message: gives it the JSON read
    already, or raises the error the real read raised."""

    def __init__(self, raw: Any = None, error: BaseException | None = None) -> None:
        self._raw = raw
        self._error = error

    async def recv(self, decode: bool | None = None) -> Any:
        if self._error is not None:
            raise self._error
        return self._raw


def sdk_message(session: Any, read: Callable[[Any], Any], given: _Given) -> Any:
    """What the SDK's ``read`` (its ``_receive``) makes of ``given`` on ``session``'s dialect,
    run on a copy of the session (its websocket is never touched)."""
    return genai_compat.run_on_stand_in(session, given, read)


def fast_message(raw: Any, fields: frozenset[str]) -> types.LiveServerMessage | None:
    """``raw`` (a message's JSON) validated by pydantic as a ``LiveServerMessage``, if it
    takes only the fast way's rules (see the module: no null, no field the types lack,
    top-level fields among ``fields``); else None."""
    if isinstance(raw, str):
        raw = raw.encode()
    if not isinstance(raw, (bytes, bytearray)) or _NULL in raw:
        return None
    try:
        message = types.LiveServerMessage.model_validate_json(raw)
    except ValueError:  # (pydantic's ValidationError, also for JSON it cannot parse)
        return None
    return message if message.model_fields_set <= fields else None


#: The SDK's ``_receive`` function -> the top-level fields its probes read alike.
_AGREED: dict[Any, frozenset[str]] = {}


def agreed_fields(session: Any, read: Callable[[Any], Any]) -> frozenset[str]:
    """The top-level fields of the probes that both ways read alike on ``session``'s
    dialect (empty: some probe read differently, and every message goes to the SDK). Learnt
    once per SDK ``read`` function (its ``_receive``)."""
    try:
        return _AGREED[read]
    except KeyError:
        fields = _AGREED[read] = _learn(session, read)
        return fields


def _learn(session: Any, read: Callable[[Any], Any]) -> frozenset[str]:
    every = frozenset(types.LiveServerMessage.model_fields)
    fields: set[str] = set()
    for probe in PROBES:
        fast = fast_message(probe, every)
        if fast is None:
            continue  # a field the installed types lack: such messages go to the SDK
        try:
            sdk = sdk_message(session, read, _Given(probe))
        except Exception:
            logger.debug("google-genai could not read a probe message", exc_info=True)
            return frozenset()
        if sdk != fast:
            logger.debug("google-genai reads %r otherwise: messages go through it", probe[:60])
            return frozenset()
        fields |= fast.model_fields_set
    return frozenset(fields)


class MessageDecoder:
    """Reads the server messages of the sessions it is given (see the module).

    :attr:`decoded` counts the messages read the fast way (the rest went through the SDK)."""

    def __init__(self) -> None:
        self.decoded = 0

    def install(self, session: Any) -> bool:
        """Have ``session.receive`` read each message through this decoder; False (the
        session unchanged) where the module's rules leave it to the SDK."""
        read = genai_compat.sdk_receive(session)
        if (
            read is None
            or genai_compat.is_vertex_session(session)
            or genai_compat.websocket_of(session) is None
            or genai_compat.genai_is_newer_than_tested()
        ):
            return False
        fields = agreed_fields(session, read)
        if not fields:
            return False
        genai_compat.set_receive(session, functools.partial(self._receive, session, read, fields))
        return True

    async def _receive(
        self, session: Any, read: Callable[[Any], Any], fields: frozenset[str]
    ) -> types.LiveServerMessage:
        websocket = genai_compat.websocket_of(session)
        try:
            raw = await websocket.recv(decode=False)
        except TypeError:  # (a websocket without ``decode``: the SDK reads it its own way)
            return await read(session)  # type: ignore[no-any-return]
        except Exception as error:  # a close, above all: the SDK's own error for it
            return sdk_message(session, read, _Given(error=error))  # type: ignore[no-any-return]
        message = fast_message(raw, fields)
        if message is None:
            return sdk_message(session, read, _Given(raw))  # type: ignore[no-any-return]
        self.decoded += 1
        return message
