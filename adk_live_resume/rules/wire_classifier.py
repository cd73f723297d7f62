"""What one raw server frame is: a goAway, a resumption update, content, an error or unknown.

:func:`classify_frame` reads a frame's payload (the JSON text of one server message, as it
arrives, before google-genai parses it) into a :class:`Frame`: its kind and the fields the
live loop needs from it. The frame watch
(:func:`adk_live_resume.compat.websockets_compat.watch_frames`) calls it once for every whole data
frame and tells its listener the :class:`Frame`; nothing else reads raw frames.

Kinds, by the message's top-level keys (a message may carry several, e.g. ``serverContent``
with ``usageMetadata``), the first that applies:

* ``"go_away"``: a ``goAway`` (``time_left`` as sent, e.g. ``"57s"``, or ``None``);
* ``"resumption_update"``: a ``sessionResumptionUpdate``;
* ``"content"``: any other key the installed google-genai knows (``serverContent``,
  ``toolCall``, ``setupComplete``, ``usageMetadata``...);
* ``"error"``: none known, but a ``code`` or ``error`` key (``{"code": 503}``): the SDK
  raises it as an ``APIError``, which must still happen;
* ``"unknown"``: none of the above (``{"someFutureMessage": {...}}``; the service adds kinds
  over time). google-genai 1.75 and later raise ``TypeError`` on such a message, ending the
  live run; 1.56 passes it to ADK as an empty message. ``unknown_keys`` names its keys;
* ``"unparsed"``: not a JSON object (left for the SDK to report, as before).

Two more kinds are not read from a payload; the frame watch tells them as they are:
``"split"`` (:data:`SPLIT`: a whole message that came in several frames, not classified)
and ``"close"`` (:func:`close_frame`: the close frame that starts the peer's close).

A ``"content"`` frame also carries its ``serverContent.interactionStatus`` (``IN_PROGRESS``,
``IDLE``...: whether the model still works on the request, see
:mod:`adk_live_resume.conversation.model_work`) when it has one: google-genai releases before 2.x
drop the field while parsing, so the loop reads it here, from the frame. So is its
``serverContent.speechState`` (``SPEECH`` / ``NON_SPEECH``: the server's voice activity detection,
which no google-genai release parses; the Vertex AI RPC reference, notes "Field facts of
2026-11-29"), :attr:`Frame.speech_state`. A ``toolCallCancellation`` (content) also gives the ids it
names (:attr:`Frame.cancelled_ids`): the server cancels a call in progress when new input arrives
(Gemini 3.8, Vertex migration guide 2.5 -> 3.8), while ADK, running a blocking tool inside its
receive step, reads the cancellation only after it sent the tool's response.

Guarantees:

* Total: any payload (bytes, bytearray, str, empty, invalid UTF-8) gives a :class:`Frame`;
  nothing raises.
* A message with at least one known key is never ``"unknown"``, whatever else it carries.
* Cheap for the frames that carry the conversation: a payload whose first key is known
  content is parsed only as far as that key when it is longer than :data:`FULL_PARSE_MAX`
  (model audio is kilobytes), and also when it is shorter but names none of the keys that
  would make it something else or that the loop reads from it (``goAway``,
  ``sessionResumptionUpdate``, ``toolCallCancellation``): a key in quotes cannot occur
  inside a JSON string, so a payload without it has no such key (the text of a turn, its
  ``turnComplete`` and usage are read without a second parse, the SDK's being the first).
  The whole payload is parsed otherwise.
* ``interaction_status`` is the string the frame's ``serverContent`` carries under
  ``interactionStatus`` (or ``interaction_status``), else ``None``; a long frame is searched
  for the key without being parsed (the key in quotes cannot occur inside a JSON string);
  ``speech_state`` likewise for ``speechState`` (or ``speech_state``).
* :class:`SkippedMessages` counts every skipped message and names each unknown key once, the
  first :data:`MAX_NAMED_KINDS` kinds only, each cut to :data:`MAX_KIND_CHARS` characters:
  what a run keeps and logs of them is bounded whatever the server sends.

Pure: no I/O.
"""

from __future__ import annotations

import json
import re
from collections.abc import Set
from dataclasses import dataclass, field
from typing import Literal

FrameKind = Literal[
    "go_away", "resumption_update", "content", "error", "unknown", "unparsed", "split", "close"
]

#: Payloads at most this long are parsed whole (a goAway or a resumption update is a few
#: dozen bytes); longer ones only as far as their first key, when that key is known.
FULL_PARSE_MAX = 2048

GO_AWAY = "goAway"
RESUMPTION_UPDATE = "sessionResumptionUpdate"
TOOL_CALL_CANCELLATION = "toolCallCancellation"
#: Keys of an error the service sends as a message (the SDK raises it as an ``APIError``).
ERROR_KEYS = frozenset({"code", "error"})
#: The snake_case spelling of goAway some recordings and older fakes carry.
_GO_AWAY_SNAKE = "go_away"

SERVER_CONTENT = "serverContent"
_STATUS_KEYS = ("interactionStatus", "interaction_status")
_STATUS = re.compile(rb'"interaction(?:Status|_status)"\s*:\s*"([A-Za-z_]{1,64})"')
_SPEECH_KEYS = ("speechState", "speech_state")
_SPEECH = re.compile(rb'"speech(?:State|_state)"\s*:\s*"([A-Za-z_]{1,64})"')

_FIRST_KEY = re.compile(rb'\A\s*\{\s*"([^"\\]{1,200})"\s*:')
#: Keys that make a short frame worth a whole parse (in quotes: as a key would be written).
_READ_WHOLE = re.compile(
    rb'"(?:goAway|go_away|sessionResumptionUpdate|toolCallCancellation|tool_call_cancellation)"'
)


@dataclass(frozen=True)
class Frame:
    """One server frame, classified (see the module docstring for the kinds)."""

    kind: FrameKind
    #: The top-level keys read: all of them when the payload was parsed whole, else the first.
    keys: tuple[str, ...] = ()
    #: A goAway's ``timeLeft`` as sent (``"57s"``), else ``None``.
    time_left: object = None
    #: The top-level keys the SDK does not know (only for ``"unknown"``).
    unknown_keys: tuple[str, ...] = ()
    #: ``serverContent.interactionStatus`` as sent (only for ``"content"``), else ``None``.
    interaction_status: str | None = None
    #: The call ids a ``toolCallCancellation`` names (content parsed whole), else empty.
    cancelled_ids: tuple[str, ...] = ()
    #: ``serverContent.speechState`` as sent (only for ``"content"``), else ``None``.
    speech_state: str | None = None
    #: A close frame's status code (only for ``"close"``: 1005 when it has none), else ``None``.
    close_code: int | None = None
    #: A close frame's reason (only for ``"close"``), else empty.
    close_reason: str = ""


#: A whole message split over several frames: not classified (its payload is not read).
SPLIT = Frame("split")


def close_frame(code: int, reason: str) -> Frame:
    """The close frame the peer sent to start a close, with its status ``code`` (1005: none)
    and ``reason``."""
    return Frame("close", close_code=code, close_reason=reason)


def _kind_of_keys(keys: tuple[str, ...], known: Set[str]) -> FrameKind:
    if GO_AWAY in keys or _GO_AWAY_SNAKE in keys:
        return "go_away"
    if RESUMPTION_UPDATE in keys:
        return "resumption_update"
    if any(key in known for key in keys):
        return "content"
    if any(key in ERROR_KEYS for key in keys):
        return "error"
    return "unknown"


def classify_frame(data: bytes | bytearray | memoryview | str, known: Set[str]) -> Frame:
    """Classify the payload ``data`` of one server frame; ``known`` is the set of top-level
    keys the installed google-genai parses (see
    :func:`adk_live_resume.compat.genai_compat.server_message_keys`)."""
    raw = data.encode() if isinstance(data, str) else bytes(data)
    long = len(raw) > FULL_PARSE_MAX
    if long or _READ_WHOLE.search(raw) is None:
        match = _FIRST_KEY.match(raw, 0, 256)
        first = match.group(1).decode("utf-8", "replace") if match is not None else None
        if first is not None and first in known and first not in (GO_AWAY, RESUMPTION_UPDATE):
            content = first == SERVER_CONTENT
            status = _STATUS.search(raw) if content else None
            speech = _SPEECH.search(raw) if content else None
            return _content_frame(first, _decoded(status), _decoded(speech))
    try:
        message = json.loads(raw)
    except ValueError:  # also UnicodeDecodeError
        return Frame("unparsed")
    if not isinstance(message, dict) or not message:
        return Frame("unparsed")
    keys = tuple(str(key) for key in message)
    kind = _kind_of_keys(keys, known)
    if kind == "go_away":
        go_away = message.get(GO_AWAY, message.get(_GO_AWAY_SNAKE))
        if not isinstance(go_away, dict):  # not one the loop can act on; left to the SDK
            return Frame("content", keys)
        return Frame("go_away", keys, go_away.get("timeLeft", go_away.get("time_left")))
    if kind == "content":
        cancelled = message.get(TOOL_CALL_CANCELLATION, message.get("tool_call_cancellation"))
        ids = cancelled.get("ids") if isinstance(cancelled, dict) else None
        return Frame(
            kind,
            keys,
            interaction_status=_status_of(message.get(SERVER_CONTENT)),
            speech_state=_status_of(message.get(SERVER_CONTENT), _SPEECH_KEYS),
            cancelled_ids=tuple(str(i) for i in ids) if isinstance(ids, list) else (),
        )
    return Frame(kind, keys, unknown_keys=keys if kind == "unknown" else ())


#: Content frames read by their first key, by that key, status and speech state: a frame is
#: immutable, so one is shared by every frame that reads the same (at most
#: :data:`_SHARED_MAX` of them, as a status is whatever word the server sends).
_SHARED: dict[tuple[str, str | None, str | None], Frame] = {}
_SHARED_MAX = 64


def _content_frame(first: str, status: str | None, speech: str | None) -> Frame:
    frame = _SHARED.get((first, status, speech))
    if frame is None:
        frame = Frame("content", (first,), interaction_status=status, speech_state=speech)
        if len(_SHARED) < _SHARED_MAX:
            _SHARED[first, status, speech] = frame
    return frame


def _decoded(match: re.Match[bytes] | None) -> str | None:
    return match.group(1).decode("ascii") if match is not None else None


def _status_of(content: object, keys: tuple[str, ...] = _STATUS_KEYS) -> str | None:
    """``interactionStatus`` (or another field under ``keys``) of a parsed ``serverContent``
    (``None``: absent, or not a string)."""
    if not isinstance(content, dict):
        return None
    for key in keys:
        status = content.get(key)
        if isinstance(status, str) and status:
            return status
    return None


#: Distinct unknown kinds one run remembers and names in its WARNINGs; the kinds past them
#: are counted (:attr:`SkippedMessages.unnamed`), not kept: a broken or hostile server that
#: sends thousands of new keys costs a few kilobytes, not megabytes.
MAX_NAMED_KINDS = 32
#: The longest a kind is kept and named (characters); a longer key is cut, ending in "…".
MAX_KIND_CHARS = 64


def _kind_name(key: str) -> str:
    return key if len(key) <= MAX_KIND_CHARS else key[: MAX_KIND_CHARS - 1] + "…"


@dataclass
class SkippedMessages:
    """The server messages of unknown kinds one live run skipped: all counted, the first
    :data:`MAX_NAMED_KINDS` kinds named (each cut to :data:`MAX_KIND_CHARS`)."""

    #: Messages skipped so far.
    count: int = 0
    #: Unknown keys not named because :data:`MAX_NAMED_KINDS` kinds were named before them
    #: (each time one comes: the kinds past the cap are not kept, so not told apart).
    unnamed: int = 0
    _named: set[str] = field(default_factory=set)

    def note(self, frame: Frame) -> tuple[str, ...]:
        """Count ``frame`` as skipped; return its unknown keys not named before, cut to
        :data:`MAX_KIND_CHARS` (each key is returned once per :class:`SkippedMessages`, so a
        WARNING names each kind once), while fewer than :data:`MAX_NAMED_KINDS` were named;
        count the others in :attr:`unnamed`."""
        self.count += 1
        new: list[str] = []
        for key in dict.fromkeys(frame.unknown_keys):
            kind = _kind_name(key)
            if kind in self._named:
                continue
            if len(self._named) >= MAX_NAMED_KINDS:
                self.unnamed += 1
                continue
            self._named.add(kind)
            new.append(kind)
        return tuple(new)
