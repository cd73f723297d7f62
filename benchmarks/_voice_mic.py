"""The microphones of ``benchmarks/voice_scale.py``: every 20 ms chunk of every session unique,
so that the fake server's records tell which chunks reached some connection and which none.

A session's microphone repeats a 2.2 s cycle, as ``steady_state`` does: a 1.2 s utterance, then
1 s of quiet room noise (the fake's voice activity detection ends the utterance after 500 ms
of it, and the model answers). What makes every chunk unique, without changing what the fake
hears:

* an utterance's text is random (seeded by the session and the cycle) and dense, about 3
  bytes per chunk: a chunk's samples are fixed by its bytes and where the runs start, so two
  chunks are equal only if they carry the same bytes at the same offsets;
* a quiet chunk carries its session and sequence number in its first 8 samples, as values
  between -48 and 48 (room noise: the fake's speech threshold is an RMS of 300).

:func:`chunk_key` names a chunk (a 64-bit hash of its bytes) on both sides: the sessions'
process notes the key of every chunk its microphones produce, the server's process the keys
of the audio every connection received (:func:`heard_by_connection`). A key that a session
produced twice (a collision) is left out of the count and reported.
"""

from __future__ import annotations

import base64
import hashlib
import random
import string
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

CHUNK_BYTES = 640  # 20 ms of 16 kHz PCM16 mono
CHUNK_SECONDS = 0.02
SPEECH_SECONDS = 1.2
QUIET_SECONDS = 1.0
CYCLE_CHUNKS = round((SPEECH_SECONDS + QUIET_SECONDS) / CHUNK_SECONDS)  # 110
SPEECH_CHUNKS = round(SPEECH_SECONDS / CHUNK_SECONDS)  # 60
#: Bytes of an utterance's text: about 3 per chunk.
UTTERANCE_BYTES = 170
_ALPHABET = string.ascii_letters + string.digits + " ,.?!'-"
_NOISE = 40
_MARK_SAMPLES = 8
_MARK_STEP = 12  # a mark sample is one of -48, -36, ..., 36 (3 bits each)


def chunk_key(chunk: bytes) -> str:
    """A chunk's name on both sides: a 64-bit hash of its bytes, in hex."""
    return hashlib.blake2b(chunk, digest_size=8).hexdigest()


def utterance_text(session: int, cycle: int) -> str:
    """The text of session ``session``'s utterance in cycle ``cycle`` (seeded, random)."""
    rng = random.Random(session * 1_000_003 + cycle)
    return "".join(rng.choice(_ALPHABET) for _ in range(UTTERANCE_BYTES))


def _quiet_chunk(session: int, sequence: int, noise: bytes) -> bytes:
    """Room noise whose first samples carry ``(session, sequence)``, 3 bits a sample."""
    import array

    samples = array.array("h", noise)
    mark = (session << 16) | (sequence & 0xFFFF)
    for i in range(_MARK_SAMPLES):
        samples[i] = ((mark >> (3 * i)) & 0b111) * _MARK_STEP - 48
    return samples.tobytes()


@dataclass(frozen=True)
class Chunk:
    """One 20 ms chunk of a microphone: its bytes, its key, and what it is."""

    data: bytes
    key: str
    #: The cycle it belongs to, and whether it is the last chunk of that cycle's utterance.
    cycle: int
    speech: bool
    utterance_end: bool


class Microphone:
    """Session ``session``'s microphone: :meth:`chunks` yields its chunks in order, forever
    (``speech=False``: room noise alone, which the model never answers)."""

    def __init__(self, session: int, *, speech: bool = True) -> None:
        from adk_live_resume.testing import silence_pcm

        self.session = session
        self.speech = speech
        self._noise = silence_pcm(QUIET_SECONDS, noise=_NOISE)

    def chunks(self) -> Iterator[Chunk]:
        from adk_live_resume.testing import speech_pcm

        sequence = 0
        cycle = 0
        while True:
            if self.speech:
                speech = speech_pcm(utterance_text(self.session, cycle), seconds=SPEECH_SECONDS)
                for i in range(SPEECH_CHUNKS):
                    data = speech[i * CHUNK_BYTES : (i + 1) * CHUNK_BYTES]
                    yield Chunk(data, chunk_key(data), cycle, True, i == SPEECH_CHUNKS - 1)
                    sequence += 1
            for i in range(CYCLE_CHUNKS - SPEECH_CHUNKS if self.speech else CYCLE_CHUNKS):
                noise = self._noise[i % 50 * CHUNK_BYTES : (i % 50 + 1) * CHUNK_BYTES]
                data = _quiet_chunk(self.session, sequence, noise)
                yield Chunk(data, chunk_key(data), cycle, False, False)
                sequence += 1
            cycle += 1


def _audio_of(message: dict[str, Any]) -> Iterator[bytes]:
    """The audio bytes a raw ``realtimeInput`` client message carries (any of its shapes)."""
    realtime = message.get("realtimeInput") or message.get("realtime_input")
    if not isinstance(realtime, dict):
        return
    blobs: list[Any] = [realtime.get("audio")]
    blobs += list(realtime.get("mediaChunks") or realtime.get("media_chunks") or [])
    for blob in blobs:
        if isinstance(blob, dict) and "data" in blob:
            mime = str(blob.get("mimeType") or blob.get("mime_type") or "")
            if mime.startswith("audio/"):
                text = str(blob["data"])  # google-genai sends URL-safe base64, unpadded
                yield base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


def heard_by_connection(records: list[Any]) -> list[dict[str, Any]]:
    """Per connection of the fake server: its timestamps, how it ended, the server session
    it served, and the keys of the audio chunks it received (in order)."""
    out = []
    for record in records:
        keys = [chunk_key(data) for m in record.client_messages for data in _audio_of(m)]
        go_away_at = None
        if record.go_away_sent:
            for message, at in zip(record.server_messages, record.sent_times, strict=False):
                if "goAway" in message:
                    go_away_at = at
                    break
        out.append(
            {
                "index": record.index,
                "session_id": record.session_id,
                "resumed": record.resumed,
                "accepted_at": record.accepted_at,
                "first_sent_at": record.first_sent_at,
                "ended_at": record.ended_at,
                "ended_by": record.ended_by,
                "go_away_at": go_away_at,
                "keys": keys,
            }
        )
    return out
