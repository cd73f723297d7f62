"""Synthetic "speech": 16-bit PCM that carries text the fake server can read back.

Real speech recognition is out of reach in a test, so :func:`speech_pcm` writes the text into
the samples themselves, spread evenly over the whole clip. The format (mono, signed 16-bit
little-endian, any sample rate) is:

* the clip is cut into one run of samples per UTF-8 byte ``b`` of the text, in order, each run
  as long as the clip allows (``seconds * rate / len(bytes)`` samples, at least one);
* the first sample of a run (its *onset*) has magnitude ``12288 + 16 * b``, every other sample
  of the run ``4096 + 16 * b``;
* signs alternate sample by sample, so the clip is a loud tone (RMS >= 4096), far above
  :data:`SPEECH_THRESHOLD_RMS`: voiced from its first sample to its last.

Guarantees the fake server relies on:

* :class:`SpeechDecoder` reads the text back sample by sample, so the bytes may arrive in any
  chunking (odd byte counts included: :class:`PcmStream` keeps the odd byte for the next chunk);
* a *fragment* of a clip decodes to the matching fragment of the text: the samples of the last
  60 % of a clip decode to roughly the last 60 % of its text (a character whose run was cut
  still counts). Repeated letters survive (every run starts with its own onset, and a run
  whose onset was lost starts a character of its own). A fragment that starts inside a
  multi-byte UTF-8 character drops that character's stray bytes;
* tone (:func:`tone_pcm`, amplitude 800, RMS about 566) is voiced but carries no text;
  silence (:func:`silence_pcm`) is below the threshold and carries no text;
* clips concatenated without silence decode to their texts joined, with nothing lost.

The server answers in the same format at 24 kHz, so tests read the model's audio back with
:func:`~adk_live_resume.testing.vad.decode_speech` (which finds utterances as the server does).
"""

from __future__ import annotations

import array
import codecs
import math
import random
import sys
from collections.abc import Iterable

__all__ = [
    "SPEECH_THRESHOLD_RMS",
    "PcmStream",
    "SpeechDecoder",
    "has_loud",
    "is_loud",
    "pcm_duration_ms",
    "rms",
    "samples_of",
    "silence_pcm",
    "speech_pcm",
    "tone_pcm",
]

#: Frames whose RMS reaches this are voiced (about -40 dBFS). Silence and noise stay below.
SPEECH_THRESHOLD_RMS = 300.0

_BODY_BASE = 4096
_ONSET_BASE = 12288
_STEP = 16
_TONE_AMPLITUDE = 800
_TONE_HZ = 220.0
_MAX_NOISE = 100
#: Default clip length per UTF-8 byte of text when ``speech_pcm`` gets no ``seconds``.
SECONDS_PER_BYTE = 0.06


def samples_of(pcm: bytes | bytearray | memoryview) -> array.array[int]:
    """The 16-bit little-endian samples of ``pcm`` (a trailing odd byte is ignored)."""
    samples = array.array("h")
    data = bytes(pcm)
    samples.frombytes(data[: len(data) - len(data) % 2])
    if sys.byteorder == "big":  # pragma: no cover - no big-endian CI machine
        samples.byteswap()
    return samples


def _pack(samples: Iterable[int]) -> bytes:
    packed = array.array("h", samples)
    if sys.byteorder == "big":  # pragma: no cover
        packed.byteswap()
    return packed.tobytes()


def rms(samples: array.array[int]) -> float:
    """Root mean square of ``samples`` (0.0 for none)."""
    if not samples:
        return 0.0
    return math.sqrt(sum(s * s for s in samples) / len(samples))


def is_loud(sample: int) -> bool:
    """True for a sample whose magnitude alone reaches the speech threshold."""
    return abs(sample) >= SPEECH_THRESHOLD_RMS


def has_loud(samples: array.array[int]) -> bool:
    """True when any of ``samples`` is loud (:func:`is_loud`); runs on every audio chunk, so
    it looks at the extremes (C loops) instead of every sample in Python."""
    return bool(samples) and (
        max(samples) >= SPEECH_THRESHOLD_RMS or -min(samples) >= SPEECH_THRESHOLD_RMS
    )


def tone_pcm(
    seconds: float,
    *,
    sample_rate: int = 16000,
    frequency: float = _TONE_HZ,
    amplitude: int = _TONE_AMPLITUDE,
) -> bytes:
    """Return ``seconds`` of a plain sine tone as mono 16-bit little-endian PCM.

    The default tone (amplitude 800) is *voiced* (above :data:`SPEECH_THRESHOLD_RMS`) but
    carries no text: the fake server hears an utterance made only of tone as ``<audio N ms>``.
    ``amplitude`` must stay below 4096 so the tone cannot look like text.
    """
    if not 0 <= amplitude < _BODY_BASE:
        raise ValueError("amplitude must be in [0, 4096)")
    count = max(0, round(seconds * sample_rate))
    step = 2 * math.pi * frequency / sample_rate
    return _pack(round(amplitude * math.sin(step * i)) for i in range(count))


def silence_pcm(seconds: float, *, sample_rate: int = 16000, noise: int = 0) -> bytes:
    """Return ``seconds`` of silence: digital zeros, or low noise when ``noise`` > 0.

    ``noise`` is the largest sample magnitude (at most 100, far below the speech threshold);
    the noise is deterministic (seeded), so equal calls return equal bytes.
    """
    if not 0 <= noise <= _MAX_NOISE:
        raise ValueError(f"noise must be in [0, {_MAX_NOISE}] to stay below the speech threshold")
    count = max(0, round(seconds * sample_rate))
    if not noise:
        return bytes(2 * count)
    rng = random.Random(count)
    return _pack(rng.randint(-noise, noise) for _ in range(count))


def speech_pcm(text: str, *, sample_rate: int = 16000, seconds: float | None = None) -> bytes:
    """Return a clip that the fake server "hears" as ``text``, voiced throughout.

    The clip lasts ``seconds`` (default: 60 ms per UTF-8 byte of ``text``) and holds nothing but
    the text, spread evenly over it (see the module docstring). It has no trailing silence: a
    server with automatic activity detection ends the utterance only after the silence that
    follows it (send :func:`silence_pcm` longer than ``silenceDurationMs``, 500 ms by default),
    at ``audioStreamEnd``, or at ``activityEnd``.

    Raises ``ValueError`` for empty text (use :func:`tone_pcm` for voiced audio without text)
    or a clip too short to give every byte a sample.
    """
    data = text.encode("utf-8")
    if not data:
        raise ValueError("text must not be empty; use tone_pcm() for voiced audio without text")
    if seconds is None:
        seconds = SECONDS_PER_BYTE * len(data)
    total = round(seconds * sample_rate)
    if total < len(data):
        raise ValueError(
            f"a {seconds} s clip at {sample_rate} Hz has {total} samples, fewer than the "
            f"{len(data)} bytes of the text; give seconds >= {len(data) / sample_rate:.6f}"
        )
    samples: list[int] = []
    for index, byte in enumerate(data):
        start, end = index * total // len(data), (index + 1) * total // len(data)
        samples.append(_ONSET_BASE + _STEP * byte)
        samples.extend([_BODY_BASE + _STEP * byte] * (end - start - 1))
    return _pack(value if i % 2 == 0 else -value for i, value in enumerate(samples))


def pcm_duration_ms(pcm: bytes | int, sample_rate: int = 16000) -> int:
    """Return the duration of mono 16-bit PCM (bytes, or a byte count) in whole milliseconds."""
    size = pcm if isinstance(pcm, int) else len(pcm)
    return (size // 2) * 1000 // sample_rate


def _decode_sample(sample: int) -> tuple[bool, int] | None:
    """``(is_onset, byte)`` for a text sample, None for anything else."""
    value = abs(sample)
    for base, onset in ((_ONSET_BASE, True), (_BODY_BASE, False)):
        offset, rest = divmod(value - base, _STEP)
        if not rest and 0 <= offset <= 255:
            return onset, offset
    return None


class SpeechDecoder:
    """Reads the text of synthetic speech back, incrementally, sample by sample.

    :meth:`feed` returns the text newly decoded from those samples; the concatenation of every
    return value is the decoded text so far (:attr:`text`). A character is decoded at its first
    sample, so the text grows while the clip is still arriving.
    """

    def __init__(self) -> None:
        self._utf8 = codecs.getincrementaldecoder("utf-8")(errors="ignore")
        self._current: int | None = None
        self.text = ""
        #: True when the first character was decoded without its onset (a cut clip).
        self.cut_start = False
        self._any = False

    def feed(self, samples: Iterable[int]) -> str:
        """Decode ``samples``; return the new text (possibly empty)."""
        new = bytearray()
        for sample in samples:
            decoded = _decode_sample(sample)
            if decoded is None:
                self._current = None
                continue
            onset, byte = decoded
            if onset or byte != self._current:
                if not self._any:
                    self.cut_start = not onset
                    self._any = True
                new.append(byte)
            self._current = byte
        piece = self._utf8.decode(bytes(new)) if new else ""
        self.text += piece
        return piece


class PcmStream:
    """Turns chunks of bytes of any size into whole 16-bit samples (keeps an odd byte)."""

    def __init__(self) -> None:
        self._odd = b""

    def feed(self, chunk: bytes) -> bytes:
        """Return the whole samples available after ``chunk``, as bytes of even length."""
        data = self._odd + chunk
        cut = len(data) - len(data) % 2
        self._odd = data[cut:]
        return data[:cut]

    def reset(self) -> None:
        """Forget a kept odd byte."""
        self._odd = b""
