"""Compare a recorded session with what the fake server says to the same client messages.

:func:`compare_with_fake` replays the client's side of a recording
(:mod:`~adk_live_resume.fault_proxy.recording`) against a :class:`FakeLiveServer`, connection by
connection, and reports where the fake's messages differ from the recorded ones: their kinds
and their order after each client message. A difference is a fact about the service the fake
does not follow yet (or a recording of a model the fake plays differently): it becomes a
conformance case (``tests/service/``) and then a fake behaviour.

What is compared (pure: :func:`kinds`, :func:`segments`, :func:`differences`): each server
message becomes its kinds (``serverContent.modelTurn``, ``serverContent.turnComplete``,
``serverContent{}`` for an empty one, ``toolCall``, ``sessionResumptionUpdate.newHandle``,
``sessionResumptionUpdate.resumable=false``, ``usageMetadata``, ``goAway``, ...); the kinds
the server sent after each client message (and after the setup), with repeats in a row
collapsed (a model speaks in any number of chunks), are compared in order. Empty
``sessionResumptionUpdate {}`` frames come on a clock, not in answer to anything: they are
left out of the order and compared once per connection (a difference when one side sent
none and the other at least two; a connection's length decides how many come).

What the replay does with what the recording redacted: a resumed setup's ``"<handle N>"``
becomes the handle the fake issued in the same position (the N-th distinct one), the call ids
of function responses the ids the fake issued in the same order, and ``"<N bytes>"`` of
audio N bytes of silence (so spoken turns are not heard by the fake: record typed turns, and
the fake's grammar, e.g. ``call get_time {}``, for tool rounds).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from websockets.asyncio.client import connect
from websockets.exceptions import ConnectionClosed

from ..fault_proxy.recording import RecordedLine, read_recording
from .protocol import b64encode, pick, pick_dict, pick_list

if TYPE_CHECKING:
    from .server import FakeLiveServer

__all__ = ["Difference", "Segment", "compare_with_fake", "differences", "kinds", "segments"]

EMPTY_UPDATE = "sessionResumptionUpdate{}"
_GEMINI_PATH = "/ws/google.ai.generativelanguage.v1beta.GenerativeService.BidiGenerateContent"
_BYTES = re.compile(r"^<(\d+) bytes>$")
_HANDLE = re.compile(r"^<handle (\d+)>$")


def kinds(message: Any) -> list[str]:
    """The kinds of one server message (see the module docstring)."""
    if not isinstance(message, dict):
        return ["(not JSON)"]
    found: list[str] = []
    for key, body in message.items():
        if key == "serverContent":
            parts = [f"serverContent.{k}" for k in body] if isinstance(body, dict) else []
            found.extend(parts or ["serverContent{}"])
        elif key == "sessionResumptionUpdate":
            body = body if isinstance(body, dict) else {}
            if pick(body, "newHandle"):
                found.append("sessionResumptionUpdate.newHandle")
            elif "resumable" in body:
                found.append(f"sessionResumptionUpdate.resumable={str(body['resumable']).lower()}")
            else:
                found.append(EMPTY_UPDATE)
        else:
            found.append(key)
    return found


@dataclass(frozen=True)
class Segment:
    """What the server sent after one client message (``after``: what that message was)."""

    after: str
    kinds: tuple[str, ...]


@dataclass
class _Connection:
    segments: list[Segment] = field(default_factory=list)
    empty_updates: int = 0


def _client_label(number: int, message: Any) -> str:
    key = next(iter(message), "?") if isinstance(message, dict) else "?"
    if key in ("realtimeInput", "realtime_input"):
        inner = next(iter(message[key]), "") if isinstance(message[key], dict) else ""
        key = f"{key}.{inner}"
    return "the setup" if key == "setup" else f"client message {number} ({key})"


def _collapse(found: Iterable[str]) -> tuple[str, ...]:
    out: list[str] = []
    for kind in found:
        if not out or out[-1] != kind:
            out.append(kind)
    return tuple(out)


def segments(lines: Sequence[RecordedLine]) -> dict[int, _Connection]:
    """Per connection, the server's kinds after each client message (pure)."""
    connections: dict[int, _Connection] = {}
    current: dict[int, tuple[str, list[str]]] = {}
    numbers: dict[int, int] = {}
    for line in lines:
        connection = connections.setdefault(line.connection, _Connection())
        if line.kind == "client":
            if line.connection in current:
                after, found = current[line.connection]
                connection.segments.append(Segment(after, _collapse(found)))
            number = numbers.get(line.connection, 0)
            numbers[line.connection] = number + 1
            current[line.connection] = (_client_label(number, line.message), [])
        elif line.kind == "server":
            found = kinds(line.message)
            connection.empty_updates += found.count(EMPTY_UPDATE)
            if line.connection in current:
                current[line.connection][1].extend(k for k in found if k != EMPTY_UPDATE)
    for number, (after, found) in current.items():
        connections[number].segments.append(Segment(after, _collapse(found)))
    return connections


@dataclass(frozen=True)
class Difference:
    """Where the fake said something else than the recording."""

    connection: int
    after: str
    recorded: tuple[str, ...]
    fake: tuple[str, ...]

    def describe(self) -> str:
        return (
            f"connection {self.connection}, after {self.after}: recorded "
            f"[{', '.join(self.recorded)}], the fake [{', '.join(self.fake)}]"
        )


def differences(recorded: dict[int, _Connection], fake: dict[int, _Connection]) -> list[Difference]:
    """Every segment whose kinds differ, and empty updates sent on one side only (pure)."""
    found: list[Difference] = []
    for number, mine in recorded.items():
        theirs = fake.get(number, _Connection())
        for index, segment in enumerate(mine.segments):
            other = theirs.segments[index] if index < len(theirs.segments) else None
            if other is None or other.kinds != segment.kinds:
                fake_kinds = other.kinds if other is not None else ("(not replayed)",)
                found.append(Difference(number, segment.after, segment.kinds, fake_kinds))
        counts = sorted((mine.empty_updates, theirs.empty_updates))
        if counts[0] == 0 and counts[1] >= 2:  # (one may fall on a connection's last moment)
            found.append(
                Difference(
                    number,
                    "the whole connection",
                    (f"{EMPTY_UPDATE} x{mine.empty_updates}",),
                    (f"{EMPTY_UPDATE} x{theirs.empty_updates}",),
                )
            )
    return found


class _Replay:
    """Maps what the recording redacted to what the fake issued in the same positions."""

    def __init__(self) -> None:
        self.recorded_calls: list[str] = []
        self.fake_calls: list[str] = []
        self.fake_handles: list[str] = []

    def note_recorded(self, message: Any) -> None:
        for call in pick_list(pick_dict(message, "toolCall"), "functionCalls"):
            self.recorded_calls.append(str(pick(call, "id")))

    def note_fake(self, message: Any) -> None:
        for call in pick_list(pick_dict(message, "toolCall"), "functionCalls"):
            self.fake_calls.append(str(pick(call, "id")))
        handle = pick(pick_dict(message, "sessionResumptionUpdate"), "newHandle")
        if handle:
            self.fake_handles.append(str(handle))

    def restore(self, value: Any, key: str = "") -> Any:
        if isinstance(value, dict):
            return {k: self.restore(v, k) for k, v in value.items()}
        if isinstance(value, list):
            return [self.restore(v, key) for v in value]
        if not isinstance(value, str):
            return value
        if key == "data" and (size := _BYTES.match(value)):
            return b64encode(bytes(int(size.group(1))))
        if key == "handle" and (number := _HANDLE.match(value)):
            index = int(number.group(1)) - 1
            handles = self.fake_handles
            return handles[index] if index < len(handles) else (handles[-1] if handles else "")
        if key == "id" and value in self.recorded_calls:
            index = self.recorded_calls.index(value)
            return self.fake_calls[index] if index < len(self.fake_calls) else value
        return value


async def _read_until_quiet(ws: Any, settle: float, replay: _Replay, out: list[Any]) -> bool:
    """Read server messages until none but empty updates came for ``settle`` s; False once
    the connection closed."""
    loop = asyncio.get_running_loop()
    quiet_from = loop.time()
    while True:
        try:
            raw = await asyncio.wait_for(ws.recv(), max(0.0, quiet_from + settle - loop.time()))
        except TimeoutError:
            return True
        except ConnectionClosed:
            return False
        message = json.loads(raw)
        replay.note_fake(message)
        out.append(message)
        if kinds(message) != [EMPTY_UPDATE]:
            quiet_from = loop.time()


async def compare_with_fake(
    recording: str | Path | Sequence[RecordedLine],
    server: FakeLiveServer,
    *,
    settle: float = 0.5,
) -> list[Difference]:
    """Replay ``recording``'s client messages against ``server`` and return the differences
    (empty: the fake said the same kinds, in the same order). ``settle``: real seconds of
    quiet after which the fake is taken to have answered a client message."""
    lines = read_recording(recording) if isinstance(recording, (str, Path)) else list(recording)
    replay = _Replay()
    for line in lines:
        if line.kind == "server":
            replay.note_recorded(line.message)
    fake_lines: list[RecordedLine] = []
    for number in dict.fromkeys(line.connection for line in lines):
        own = [line for line in lines if line.connection == number]
        path = next((line.path for line in own if line.kind == "open"), _GEMINI_PATH)
        sent = [line.message for line in own if line.kind == "client"]
        fake_lines.extend(await _replay_connection(server, path, sent, number, replay, settle))
    return differences(segments(lines), segments(fake_lines))


async def _replay_connection(
    server: FakeLiveServer,
    path: str,
    sent: list[Any],
    number: int,
    replay: _Replay,
    settle: float,
) -> list[RecordedLine]:
    lines: list[RecordedLine] = []
    async with connect(server.url + path, ssl=server.client_ssl_context(), max_size=None) as ws:
        for message in sent:
            lines.append(RecordedLine(0.0, number, "client", message=message))
            with contextlib.suppress(ConnectionClosed):
                await ws.send(json.dumps(replay.restore(message)))
            answered: list[Any] = []
            open_ = await _read_until_quiet(ws, settle, replay, answered)
            lines.extend(RecordedLine(0.0, number, "server", message=m) for m in answered)
            if not open_:
                break
    return lines
