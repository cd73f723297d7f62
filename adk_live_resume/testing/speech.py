"""Synthetic "speech": 16-bit PCM that carries text the fake server can read back.

Real speech recognition is out of reach in a test, so :func:`speech_pcm` writes the text into
the samples themselves. The format (mono, signed 16-bit little-endian) is:

* a low sine tone (amplitude 800) as padding, so the audio "sounds" like audio;
* a start marker, the four samples ``32000, -32000, 31000, -31000``;
* one sample per UTF-8 byte ``b`` of the text, of value ``4096 + 16 * b``;
* an end-of-utterance marker, the four samples ``-32000, 32000, -31000, 31000``.

Nothing follows the end marker, so a stream of several utterances is just their concatenation.
The guarantees the fake server relies on:

* :func:`decode_speech` returns every complete utterance of a byte string, in order, however
  the bytes were chunked before being joined;
* :class:`UtteranceDetector` finds the end marker in a stream fed in chunks of any size (odd
  sizes included) and splits it into utterances at the exact sample after each end marker;
* tone samples, payload samples and marker samples never collide, so plain tone decodes to
  nothing.

The server answers in the same format at 24 kHz, so tests can read the model's audio back with
:func:`decode_speech`.
"""

from __future__ import annotations

import math
import struct
from collections.abc import Sequence

__all__ = [
    "UtteranceDetector",
    "decode_speech",
    "pcm_duration_ms",
    "speech_pcm",
    "tone_pcm",
]

_START = (32000, -32000, 31000, -31000)
_END = (-32000, 32000, -31000, 31000)
_PAYLOAD_BASE = 4096
_PAYLOAD_STEP = 16
_TONE_AMPLITUDE = 800
_TONE_HZ = 220.0
_LEAD_IN_SECONDS = 0.02

_START_BYTES = struct.pack("<4h", *_START)
_END_BYTES = struct.pack("<4h", *_END)


def _pack(samples: Sequence[int]) -> bytes:
    return struct.pack(f"<{len(samples)}h", *samples)


def tone_pcm(
    seconds: float,
    *,
    sample_rate: int = 16000,
    frequency: float = _TONE_HZ,
    amplitude: int = _TONE_AMPLITUDE,
) -> bytes:
    """Return ``seconds`` of a plain sine tone as mono 16-bit little-endian PCM.

    The tone carries no text: the fake server transcribes an utterance made only of tone as
    ``<audio N ms>``. ``amplitude`` must stay below 4096 so the tone cannot look like text.
    """
    if not 0 <= amplitude < _PAYLOAD_BASE:
        raise ValueError("amplitude must be in [0, 4096)")
    count = max(0, round(seconds * sample_rate))
    step = 2 * math.pi * frequency / sample_rate
    return _pack([round(amplitude * math.sin(step * i)) for i in range(count)])


def speech_pcm(text: str, *, sample_rate: int = 16000, seconds: float | None = None) -> bytes:
    """Return PCM that the fake server "hears" as ``text``, ending with an end-of-utterance mark.

    The text is preceded by tone padding: 20 ms by default, or as much as makes the whole clip
    last ``seconds`` (never less than the text needs). Sending these bytes as realtime audio, in
    any chunking, makes the fake server end the utterance at the marker (simulated server-side
    voice activity detection), transcribe it as ``text`` and answer it.
    """
    payload = [_PAYLOAD_BASE + _PAYLOAD_STEP * b for b in text.encode("utf-8")]
    body = _START_BYTES + _pack(payload) + _END_BYTES
    body_seconds = (len(body) // 2) / sample_rate
    lead = _LEAD_IN_SECONDS if seconds is None else max(0.0, seconds - body_seconds)
    return tone_pcm(lead, sample_rate=sample_rate) + body


def pcm_duration_ms(pcm: bytes, sample_rate: int = 16000) -> int:
    """Return the duration of mono 16-bit PCM in whole milliseconds."""
    return (len(pcm) // 2) * 1000 // sample_rate


def _decode_body(body: bytes) -> str | None:
    """Decode the samples between a start and an end marker, or None if they are not text."""
    if len(body) % 2:
        return None
    data = bytearray()
    for (sample,) in struct.iter_unpack("<h", body):
        value, rest = divmod(sample - _PAYLOAD_BASE, _PAYLOAD_STEP)
        if rest or not 0 <= value <= 255:
            return None
        data.append(value)
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        return None


def _find_aligned(buffer: bytes, needle: bytes, start: int) -> int:
    """Find ``needle`` at an even offset >= ``start``; return -1 if absent."""
    index = buffer.find(needle, start)
    while index != -1 and index % 2:
        index = buffer.find(needle, index + 1)
    return index


def decode_utterance(pcm: bytes) -> str | None:
    """Return the text of the last start-marked utterance in ``pcm``, or None if there is none.

    The end marker is optional here: the detector has already cut it off.
    """
    end = _find_aligned(pcm, _END_BYTES, 0)
    if end == -1:
        end = len(pcm) - len(pcm) % 2
    start = -1
    probe = _find_aligned(pcm, _START_BYTES, 0)
    while probe != -1 and probe < end:
        start = probe
        probe = _find_aligned(pcm, _START_BYTES, probe + 2)
    if start == -1:
        return None
    return _decode_body(pcm[start + len(_START_BYTES) : end])


def decode_speech(pcm: bytes) -> list[str]:
    """Return the text of every complete utterance (start ... end marker) in ``pcm``, in order."""
    texts: list[str] = []
    detector = UtteranceDetector()
    for utterance in detector.feed(pcm):
        text = decode_utterance(utterance)
        if text is not None:
            texts.append(text)
    return texts


class UtteranceDetector:
    """Split a PCM byte stream into utterances at each end-of-utterance marker.

    Feed chunks of any size; :meth:`feed` returns the utterances completed by that chunk (each
    including its end marker). Bytes after the last marker stay buffered; :meth:`flush` returns
    and clears them (used at ``activityEnd`` / ``audioStreamEnd``).
    """

    def __init__(self) -> None:
        self._buffer = bytearray()
        self._scanned = 0

    @property
    def pending(self) -> int:
        """Number of bytes buffered since the last utterance ended."""
        return len(self._buffer)

    def feed(self, chunk: bytes) -> list[bytes]:
        """Append ``chunk``; return every utterance it completed, oldest first."""
        self._buffer.extend(chunk)
        done: list[bytes] = []
        while True:
            data = bytes(self._buffer)
            index = _find_aligned(data, _END_BYTES, max(0, self._scanned - len(_END_BYTES)))
            if index == -1:
                self._scanned = len(data) - len(data) % 2
                return done
            cut = index + len(_END_BYTES)
            done.append(data[:cut])
            del self._buffer[:cut]
            self._scanned = 0

    def flush(self) -> bytes:
        """Return and clear whatever is buffered (an utterance ended by the client)."""
        data = bytes(self._buffer)
        self._buffer.clear()
        self._scanned = 0
        return data
