"""Server-side voice activity detection on received PCM, and the utterances it finds.

:class:`SpeechTracker` is pure (no I/O, no clock): the connection feeds it every audio chunk
with the number of the client message that carried it, and acts on the events it returns.

Automatic detection (the default, ``realtimeInputConfig.automaticActivityDetection``):

* the PCM is cut into frames of ``frame_ms`` (20 ms) of *audio time*; a frame is voiced when
  its RMS reaches :data:`~adk_live_resume.testing.speech.SPEECH_THRESHOLD_RMS`;
* speech starts once voiced frames add up to ``prefixPaddingMs`` (default 20 ms, one frame) in
  a row; the utterance includes those frames;
* speech ends after ``silenceDurationMs`` (default 500 ms) of unvoiced frames in a row. Both
  durations are audio time (the samples received), never wall-clock time, so they are not
  scaled by ``time_scale`` and do not depend on how fast the client sends: an utterance ends
  only when enough silence *arrives* (or at ``audioStreamEnd`` / :meth:`SpeechTracker.cut`);
* ``startOfSpeechSensitivity`` / ``endOfSpeechSensitivity`` are accepted and ignored.

Manual detection (``automaticActivityDetection.disabled``): an utterance is exactly the audio
between :meth:`~SpeechTracker.activity_start` and :meth:`~SpeechTracker.activity_end`; audio
outside an activity is ignored and counted in :attr:`SpeechTracker.ignored_audio_ms`.

Which client messages an utterance holds (for ``lastConsumedClientMessageIndex``):
:attr:`SpeechTracker.held_since` is the number of the first message whose audio is still held
(an utterance in progress, voiced frames awaiting ``prefixPaddingMs``, or a partial frame with
a loud sample); None when nothing is held. Precisely, the utterance starts at the message that
carried the first loud sample (``abs(sample) >= threshold``) of its first voiced frame, so
silence that merely shares a frame with the start of speech does not hold its message.

:func:`decode_speech` runs the same detection over a whole clip (tests read the model's audio
answers back with it).
"""

from __future__ import annotations

import array
import collections
from dataclasses import dataclass
from typing import Any, Literal

from .protocol import pick, pick_dict
from .speech import (
    SPEECH_THRESHOLD_RMS,
    PcmStream,
    SpeechDecoder,
    has_loud,
    is_loud,
    rms,
    samples_of,
)

__all__ = [
    "SpeechEvent",
    "SpeechStarted",
    "SpeechTracker",
    "Transcribed",
    "Utterance",
    "VadConfig",
    "decode_speech",
]

EndedBy = Literal["silence", "activity_end", "stream_end", "cut"]


@dataclass(frozen=True)
class VadConfig:
    """Voice activity detection settings (from the setup's ``realtimeInputConfig``).

    ``interrupts`` is False when ``activityHandling`` is ``NO_INTERRUPTION``: speech then does
    not cut the model's answer.
    """

    disabled: bool = False
    silence_duration_ms: int = 500
    prefix_padding_ms: int = 20
    frame_ms: int = 20
    threshold: float = SPEECH_THRESHOLD_RMS
    interrupts: bool = True

    def __post_init__(self) -> None:
        if self.silence_duration_ms < 0 or self.prefix_padding_ms < 0 or self.frame_ms <= 0:
            raise ValueError("silence_duration_ms, prefix_padding_ms must be >= 0, frame_ms > 0")

    @classmethod
    def from_setup(cls, setup: dict[str, Any]) -> VadConfig:
        """Read ``realtimeInputConfig`` (either key casing); absent fields keep the defaults."""
        config = pick_dict(setup, "realtimeInputConfig") or {}
        detection = pick_dict(config, "automaticActivityDetection") or {}
        handling = str(pick(config, "activityHandling") or "")
        defaults = cls()

        def number(name: str, default: int) -> int:
            value = pick(detection, name)
            return int(value) if isinstance(value, (int, float)) and value >= 0 else default

        return cls(
            disabled=bool(pick(detection, "disabled", False)),
            silence_duration_ms=number("silenceDurationMs", defaults.silence_duration_ms),
            prefix_padding_ms=number("prefixPaddingMs", defaults.prefix_padding_ms),
            interrupts="NO_INTERRUPTION" not in handling.upper(),
        )


@dataclass(frozen=True)
class SpeechStarted:
    """The user started speaking; ``message`` carried the start (barge-in happens here)."""

    message: int


@dataclass(frozen=True)
class Transcribed:
    """Text newly heard in the utterance in progress (an ``inputTranscription`` piece)."""

    text: str


@dataclass(frozen=True)
class Utterance:
    """A finished utterance.

    ``text`` is the decoded text, or ``<audio N ms>`` when the audio carried none
    (``has_text`` False); ``duration_ms`` counts the audio up to its last voiced frame (all of
    it when ended by ``activity_end``, ``stream_end`` or ``cut``); ``first_message`` /
    ``last_message`` are the client messages that carried its first loud sample and its end;
    ``cut_start`` is True when the first character was heard without its start (the clip's
    head was lost: a fragment).
    """

    text: str
    has_text: bool
    duration_ms: int
    first_message: int
    last_message: int
    ended_by: EndedBy
    cut_start: bool


SpeechEvent = SpeechStarted | Transcribed | Utterance


class SpeechTracker:
    """Finds utterances in a stream of PCM chunks; see the module docstring for the rules."""

    def __init__(self, config: VadConfig, sample_rate: int = 16000) -> None:
        self.config = config
        self.sample_rate = sample_rate
        #: Milliseconds of audio received outside any activity (manual detection only).
        self.ignored_audio_ms = 0
        self._stream = PcmStream()
        # Bytes not yet cut into frames, and which message each run of them came from.
        self._pending = bytearray()
        self._origins: collections.deque[list[int]] = collections.deque()  # [message, bytes]
        # Voiced frames awaiting prefixPaddingMs: (samples, first loud message).
        self._candidate: list[tuple[array.array[int], int]] = []
        self._speaking = False
        self._first_message = 0
        self._decoder = SpeechDecoder()
        self._samples = 0  # samples in the utterance so far
        self._voiced_samples = 0  # samples up to the end of its last voiced frame
        self._silence_ms = 0

    # ---- state -------------------------------------------------------------------------

    @property
    def speaking(self) -> bool:
        """True while an utterance is in progress (speech started, not yet ended)."""
        return self._speaking

    @property
    def held_since(self) -> int | None:
        """The first client message whose audio is still held (not yet a turn), else None."""
        if self._speaking:
            return self._first_message
        if self._candidate:
            return self._candidate[0][1]
        if self.config.disabled:
            return None
        return self._first_loud_pending()

    # ---- input -------------------------------------------------------------------------

    def audio(self, data: bytes, *, message: int, sample_rate: int) -> list[SpeechEvent]:
        """Feed one chunk of PCM carried by client message ``message``; return the events."""
        self.sample_rate = sample_rate
        data = self._stream.feed(data)
        if self.config.disabled:
            return self._manual_audio(data)
        if data:
            self._pending.extend(data)
            self._origins.append([message, len(data)])
        events: list[SpeechEvent] = []
        frame_bytes = 2 * max(1, self.sample_rate * self.config.frame_ms // 1000)
        while len(self._pending) >= frame_bytes:
            self._frame(frame_bytes, message, events)
        return _merge_pieces(events)

    def activity_start(self, *, message: int) -> list[SpeechEvent]:
        """``activityStart``: in manual mode an utterance starts here (no-op if one is open)."""
        if not self.config.disabled or self._speaking:
            return []
        self._begin(message)
        return [SpeechStarted(message)]

    def activity_end(self, *, message: int) -> list[SpeechEvent]:
        """``activityEnd``: ends the utterance in progress (any mode)."""
        return self._end_now(message, "activity_end")

    def stream_end(self, *, message: int) -> list[SpeechEvent]:
        """``audioStreamEnd``: automatic mode ends the utterance in progress, manual ignores it."""
        if self.config.disabled:
            return []
        return self._end_now(message, "stream_end")

    def cut(self, *, message: int) -> list[SpeechEvent]:
        """End whatever audio is held now (other input arrived): the utterance becomes a turn."""
        return self._end_now(message, "cut")

    # ---- automatic detection -----------------------------------------------------------

    def _take(self, size: int) -> tuple[bytes, list[tuple[int, int]]]:
        """Remove ``size`` bytes from the pending buffer with their (message, bytes) origins."""
        chunk = bytes(self._pending[:size])
        del self._pending[:size]
        origins: list[tuple[int, int]] = []
        need = size
        while need and self._origins:
            head = self._origins[0]
            used = min(need, head[1])
            origins.append((head[0], used))
            head[1] -= used
            need -= used
            if not head[1]:
                self._origins.popleft()
        return chunk, origins

    @staticmethod
    def _loud_message(samples: array.array[int], origins: list[tuple[int, int]]) -> int | None:
        if not has_loud(samples):
            return None
        index = next(i for i, s in enumerate(samples) if is_loud(s))
        offset = 2 * index
        for message, size in origins:
            if offset < size:
                return message
            offset -= size
        return origins[-1][0] if origins else None

    def _first_loud_pending(self) -> int | None:
        if not self._pending:
            return None
        origins = [(m, n) for m, n in self._origins]
        return self._loud_message(samples_of(self._pending), origins)

    def _frame(self, size: int, message: int, events: list[SpeechEvent]) -> None:
        chunk, origins = self._take(size)
        samples = samples_of(chunk)
        voiced = rms(samples) >= self.config.threshold
        if self._speaking:
            self._extend(samples, voiced, events)
            if self._silence_ms >= self.config.silence_duration_ms:
                events.append(self._finish(message, "silence"))
            return
        if not voiced:
            self._candidate.clear()
            return
        loud = self._loud_message(samples, origins)
        self._candidate.append((samples, loud if loud is not None else message))
        if len(self._candidate) * self.config.frame_ms >= self.config.prefix_padding_ms:
            self._start_from_candidate(events)

    def _extend(self, samples: array.array[int], voiced: bool, events: list[SpeechEvent]) -> None:
        piece = self._decoder.feed(samples)
        if piece:
            events.append(Transcribed(piece))
        self._samples += len(samples)
        if voiced:
            self._voiced_samples = self._samples
            self._silence_ms = 0
        else:
            self._silence_ms += len(samples) * 1000 // self.sample_rate

    # ---- manual detection --------------------------------------------------------------

    def _manual_audio(self, data: bytes) -> list[SpeechEvent]:
        if not self._speaking:
            self.ignored_audio_ms += len(data) // 2 * 1000 // self.sample_rate
            return []
        samples = samples_of(data)
        piece = self._decoder.feed(samples)
        self._samples += len(samples)
        self._voiced_samples = self._samples
        return [Transcribed(piece)] if piece else []

    # ---- utterances --------------------------------------------------------------------

    def _start_from_candidate(self, events: list[SpeechEvent]) -> None:
        """The voiced frames held as a candidate are speech: start the utterance with them."""
        frames, first = self._candidate, self._candidate[0][1]
        self._candidate = []
        self._begin(first)
        events.append(SpeechStarted(first))
        for frame, _ in frames:
            self._extend(frame, True, events)

    def _begin(self, first_message: int) -> None:
        self._speaking = True
        self._first_message = first_message
        self._decoder = SpeechDecoder()
        self._samples = self._voiced_samples = self._silence_ms = 0

    def _end_now(self, message: int, ended_by: EndedBy) -> list[SpeechEvent]:
        events: list[SpeechEvent] = []
        if not self.config.disabled and self._pending:
            # The partial frame at the end of the stream is judged as a (short) frame.
            size = len(self._pending)
            self._frame(size, message, events)
            if not self._speaking and self._candidate:
                self._start_from_candidate(events)
        self._candidate.clear()
        self._stream.reset()
        if self._speaking:
            self._voiced_samples = self._samples
            events.append(self._finish(message, ended_by))
        return _merge_pieces(events)

    def _finish(self, message: int, ended_by: EndedBy) -> Utterance:
        self._speaking = False
        duration = self._voiced_samples * 1000 // self.sample_rate
        text = self._decoder.text
        return Utterance(
            text=text or f"<audio {duration} ms>",
            has_text=bool(text),
            duration_ms=duration,
            first_message=self._first_message,
            last_message=message,
            ended_by=ended_by,
            cut_start=self._decoder.cut_start,
        )


def _merge_pieces(events: list[SpeechEvent]) -> list[SpeechEvent]:
    """Join consecutive :class:`Transcribed` pieces into one (one message per chunk)."""
    merged: list[SpeechEvent] = []
    for event in events:
        if isinstance(event, Transcribed) and merged and isinstance(merged[-1], Transcribed):
            merged[-1] = Transcribed(merged[-1].text + event.text)
        else:
            merged.append(event)
    return merged


def decode_speech(pcm: bytes, *, sample_rate: int = 16000) -> list[str]:
    """Return the text of every utterance in ``pcm``, in order, as the server's VAD finds them.

    Utterances are separated by silence of at least 500 ms (the default ``silenceDurationMs``);
    utterances without text (tone) are left out. Answers from the server come back as one
    utterance, so ``"".join(decode_speech(audio))`` is the answer's text.
    """
    tracker = SpeechTracker(VadConfig())
    events = tracker.audio(pcm, message=1, sample_rate=sample_rate)
    events += tracker.stream_end(message=1)
    return [e.text for e in events if isinstance(e, Utterance) and e.has_text]
