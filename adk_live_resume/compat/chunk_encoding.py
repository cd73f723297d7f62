"""Microphone chunks put on the wire exactly as google-genai would, without its per-call work.

For every audio chunk, google-genai's ``AsyncSession.send_realtime_input`` validates its
arguments into a pydantic model, converts that for the dialect (Gemini API or Vertex AI),
turns it into a dict, base64-encodes the bytes and dumps the JSON: about 40 µs of CPU for a
20 ms chunk on a 2-core machine, a third of what ADK spends on a chunk end to end. For one
*shape* of call (the argument, ``media`` or ``audio``; the MIME type; the dialect), the text
it sends differs from chunk to chunk only in the base64 of the data.

:class:`ChunkEncoder` learns that text once per shape from the SDK itself: it runs the
session's own ``send_realtime_input`` against a stand-in websocket that keeps what it is
given, and keeps the text before and after a probe chunk's base64 (in the alphabet the SDK
uses: URL-safe in google-genai 1.x and 2.x). Later chunks of that shape are
``before + base64(data) + after``, sent on the session's websocket.

Guarantees:

* What is sent is byte for byte what the SDK would send for the same call. A shape is learnt
  only if the probe's base64 occurs exactly once in the SDK's text, and the template then
  reproduces the SDK's text for three probes: one of each padding length, all with bytes
  that standard and URL-safe base64 encode differently (exactly one alphabet must match).
* Anything else goes through the SDK unchanged: another method or argument, several
  arguments, a ``Blob`` with fields other than ``data`` and ``mime_type``, data that is not
  ``bytes``, an empty chunk, a session without a reachable websocket, or a shape whose
  learning failed (tried once per shape, then left to the SDK).
* A ``send_realtime_input`` that is not google-genai's own (wrapped for tracing, with
  ``functools.wraps`` or not; replaced; overridden; set on the session) sees every chunk,
  exactly once, and never a probe: the SDK's own is told by its code
  (:func:`genai_compat.sdk_send_realtime_input`), checked for every chunk (a wrapper put in
  place mid-run gets the chunks from then on), and learning calls only the SDK's own.
* Socket errors are the SDK's own: the same ``websocket.send`` is called.
"""

from __future__ import annotations

import base64
import logging
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from google.genai import types

from ..conversation.client_sends import plain_blob
from . import genai_compat

logger = logging.getLogger(__name__)

#: Bytes whose base64 holds ``+`` and ``/`` (``-`` and ``_`` in the URL-safe alphabet), so a
#: template learnt from them cannot pass for the other alphabet. 642 bytes: no padding.
_PROBE = bytes(range(256)) + b"\xfb\xff\xbf" * 2 + bytes(range(255, -1, -1)) + b"\xfb\xef" * 62
#: The probes checked against the SDK: no padding, ``==`` and ``=``.
_PROBES = (_PROBE, _PROBE[:-2], _PROBE[:-1])
_BLOB_FIELDS = frozenset({"data", "mime_type"})


class _KeptText:
    """Stands in for the websocket while the SDK encodes a probe: keeps what it is sent."""

    def __init__(self) -> None:
        self.sent: list[Any] = []

    async def send(self, message: Any) -> None:
        self.sent.append(message)


def sdk_text(session: Any, key: str, data: bytes, mime_type: str) -> Any:
    """What ``session.send_realtime_input(**{key: Blob(data, mime_type)})`` sends, computed by
    the SDK itself against a stand-in websocket (nothing reaches the real one). The caller
    makes sure the method is the SDK's own (:class:`ChunkEncoder` does)."""
    kept = _KeptText()
    blob = types.Blob(data=data, mime_type=mime_type)
    send = type(session).send_realtime_input
    genai_compat.run_on_stand_in(session, kept, lambda stand_in: send(stand_in, **{key: blob}))
    if len(kept.sent) != 1:
        raise RuntimeError(f"the SDK sent {len(kept.sent)} messages for one chunk")
    return kept.sent[0]


#: The base64 alphabets an SDK may use (google-genai 1.x and 2.x use the URL-safe one).
_ENCODERS: tuple[Callable[[bytes], bytes], ...] = (base64.urlsafe_b64encode, base64.b64encode)


@dataclass(frozen=True)
class Template:
    """The SDK's text for one shape of chunk: ``before + encode(data) + after``."""

    before: str
    encode: Callable[[bytes], bytes]
    after: str

    def text(self, data: bytes) -> str:
        return self.before + self.encode(data).decode("ascii") + self.after


def learn(session: Any, key: str, mime_type: str) -> Template | None:
    """How the SDK encodes a ``key`` chunk of ``mime_type`` on ``session``'s dialect; None if
    its text is not the base64 of the data between a fixed start and end."""
    first = sdk_text(session, key, _PROBES[0], mime_type)
    if not isinstance(first, str):
        return None
    found = [
        (encode, encoded)
        for encode in _ENCODERS
        if first.count(encoded := encode(_PROBES[0]).decode("ascii")) == 1
    ]
    if len(found) != 1:
        return None
    ((encode, encoded),) = found
    before, _, after = first.partition(encoded)
    template = Template(before, encode, after)
    for probe in _PROBES[1:]:
        if sdk_text(session, key, probe, mime_type) != template.text(probe):
            return None
    return template


class ChunkEncoder:
    """The templates of one live run's microphone chunks, learnt on first use per shape.

    :attr:`encoded` counts the chunks it encoded (the rest went through the SDK)."""

    def __init__(self) -> None:
        self._templates: dict[tuple[bool, str, str], Template | None] = {}
        self.encoded = 0
        #: The last ``send_realtime_input`` found to be the SDK's own (checked once each).
        self._sdk_own: Any = None
        #: The last session encoded for, and whether it talks the Vertex AI dialect.
        self._session: Any = None
        self._vertex = False

    def encode(self, session: Any, method: str, arguments: Mapping[str, Any]) -> str | None:
        """The text the SDK would send for ``session.<method>(**arguments)`` if it is a plain
        audio chunk of a learnt shape; None if the SDK must send it."""
        plain = plain_blob(method, arguments)
        if plain is None:
            return None
        key, blob = plain
        if not blob.mime_type or not blob.model_fields_set <= _BLOB_FIELDS:
            return None
        if not self._sends_through_sdk_own(session):
            return None
        if session is not self._session:  # (a new connection's)
            self._session, self._vertex = session, genai_compat.is_vertex_session(session)
        shape = (self._vertex, key, blob.mime_type)
        try:
            template = self._templates[shape]
        except KeyError:
            template = self._templates[shape] = self._learn(session, key, blob.mime_type)
        if template is None:
            return None
        self.encoded += 1
        return template.text(blob.data)  # type: ignore[arg-type]  # bytes, per plain_blob

    def _sends_through_sdk_own(self, session: Any) -> bool:
        """``session.send_realtime_input`` is google-genai's own (else every chunk must go
        through whatever it is: a tracing wrapper, say)."""
        method = getattr(type(session), genai_compat.GENAI_SEND_REALTIME_INPUT, None)
        if method is self._sdk_own and genai_compat.GENAI_SEND_REALTIME_INPUT not in getattr(
            session, "__dict__", ()
        ):
            return True
        if genai_compat.sdk_send_realtime_input(session) is None:
            if self._sdk_own is not False:
                logger.debug("send_realtime_input is not google-genai's own; chunks go through it")
            self._sdk_own = False
            return False
        self._sdk_own = method
        return True

    @staticmethod
    def _learn(session: Any, key: str, mime_type: str) -> Template | None:
        try:
            template = learn(session, key, mime_type)
        except Exception:  # any surprise leaves the shape to the SDK
            logger.debug("could not learn the SDK's encoding of %s chunks", key, exc_info=True)
            return None
        if template is None:
            logger.debug("the SDK's encoding of %s chunks (%s) is left to it", key, mime_type)
        return template
