"""Whether the user is speaking: one answer from the microphone audio sent and the server's signals.

The live loop must not move a session to a new connection while the user is in the middle
of an utterance (the new connection would hear a fragment), and must keep the audio of an
utterance the model has not answered yet. :class:`UserActivity` tracks that from:

* the PCM we send: a small energy-based voice activity check (:func:`is_voiced`) with a
  hangover, counted in *audio* time so it does not depend on how fast the client sends;
* explicit ``activityStart`` / ``activityEnd`` (manual activity detection): speaking from
  start to end, whatever the audio says;
* ``audioStreamEnd``: the microphone stopped, so the user did too;
* the server's own voice activity detection, ``serverContent.speechState`` (``SPEECH`` about
  0.24 s after the user began, ``NON_SPEECH`` about 1.2 s after they stopped; the Vertex AI
  RPC reference, notes "Field facts of 2026-11-29"): speaking from ``SPEECH`` to
  ``NON_SPEECH`` whatever the audio's energy says (quiet speech, a noisy room), on the
  connection that said it;
* the server: ``inputTranscription`` means it hears speech; a model turn that completes
  after the user went quiet means the utterance was answered (an answer cut off by a drop
  did not answer it, nor did a turn the user went on speaking over or began to speak
  during: the server began it before it heard them); a model turn that completes without
  the user making a sound since its output began means the server's own voice activity
  detection ended the utterance (a client may stop sending audio without ``activityEnd``),
  unless it came between two chunks of a stream still flowing while the user was in the
  middle of a word.

Guarantees:

* :attr:`UserActivity.speaking` is true from the first voiced chunk until ``hangover_ms`` of
  unvoiced audio followed it (or an explicit end), from ``activityStart`` to
  ``activityEnd``, and from a ``SPEECH`` speech state to ``NON_SPEECH`` or the connection's
  end (:meth:`UserActivity.on_new_connection`);
* :attr:`UserActivity.unanswered` is true from the start of an utterance until a model turn
  with output completes with no voice sent since its output began (and not between two
  chunks of a word): an utterance is never taken as answered while it is still going on
  (barge-in), nor by an answer that was cut off, nor by a turn whose output the user spoke
  over (an answer to something else).

Pure: no I/O; the one clock reading (is a stream still flowing?) comes from an injected clock.
"""

from __future__ import annotations

import array
import functools
import math
import operator
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

#: RMS (16-bit full scale 32768) above which a chunk counts as speech: about -40 dBFS.
#: Room noise and digital silence are far below; speech at a normal level is far above.
DEFAULT_THRESHOLD_RMS = 330.0
#: Unvoiced audio (ms) after which an utterance is taken as over. Natural pauses between
#: words are shorter; the Live API's own default end-of-speech silence is longer.
DEFAULT_HANGOVER_MS = 400.0
#: Unvoiced audio (ms) after the last voiced chunk below which the user is taken as still
#: in the middle of saying something (a stop inside a word): no server ends an utterance on
#: so short a silence, so a turn that arrives then was begun before it heard the speech.
MID_SPEECH_QUIET_MS = 100.0


#: Samples summed between two looks at the running energy in :func:`is_voiced`.
_VOICED_STRIDE = 32


def _samples(pcm: bytes) -> array.array[int]:
    """The whole signed 16-bit little-endian samples of ``pcm`` (an odd last byte is ignored)."""
    samples = array.array("h")
    samples.frombytes(pcm[: len(pcm) - len(pcm) % 2])
    if sys.byteorder == "big":  # pragma: no cover - the wire format is little-endian
        samples.byteswap()
    return samples


def _rms(total: int, count: int) -> float:
    return math.sqrt(total / count)


def pcm_rms(pcm: bytes) -> float:
    """Root mean square of mono signed 16-bit little-endian PCM (0 for no samples)."""
    samples = _samples(pcm)
    if not samples:
        return 0.0
    total = sum(map(operator.mul, samples, samples))  # exact in ints: no rounding to manage
    return _rms(total, len(samples))


@functools.cache
def _quiet_high_bytes(threshold_rms: float) -> bytes | None:
    """High bytes of the samples whose magnitude is at most ``256 * (k + 1)``, with the
    largest such bound below ``threshold_rms`` (None if there is none: a threshold <= 256).

    A little-endian sample ``s`` has high byte ``s >> 8 & 0xFF``: 0..k for 0 <= s < 256 (k + 1)
    and 255 - k..255 for -256 (k + 1) <= s < 0.
    """
    k = math.ceil(threshold_rms / 256) - 2
    if k < 0:
        return None
    return bytes([*range(k + 1), *range(255 - k, 256)])


@functools.cache
def _loud_high_bytes(threshold_rms: float) -> tuple[bytes, int] | None:
    """``(high bytes, level)``: the high bytes of the samples whose magnitude may be below
    ``level``, the smallest multiple of 256 at least ``4 * threshold_rms`` (None if no sample
    can reach it). Deleting them from a chunk's high bytes leaves one byte per sample whose
    magnitude is at least ``level``: with high byte ``j <= h <= 127`` (``s >= 256 j``) or
    ``128 <= h <= 255 - j`` (``s < -256 j``)."""
    j = max(1, math.ceil(4 * threshold_rms / 256))
    if j > 127:
        return None
    return bytes([*range(j), *range(256 - j, 256)]), 256 * j


def is_voiced(pcm: bytes, threshold_rms: float = DEFAULT_THRESHOLD_RMS) -> bool:
    """Whether a chunk of 16-bit PCM is loud enough to be speech: exactly
    ``pcm_rms(pcm) >= threshold_rms``, decided early where it can be, since it runs on every
    chunk sent. The samples' high bytes bound the energy from both sides without reading the
    samples one by one: a chunk whose every sample is quieter than the threshold is quiet
    (the RMS never exceeds the peak); a chunk with enough samples at least ``level`` loud
    (:func:`_loud_high_bytes`) is voiced, since their squares alone reach the threshold.
    Otherwise its energy is summed, and it is voiced as soon as the energy of its first
    samples is enough (the sum of squares only grows)."""
    count = len(pcm) // 2
    if not count:
        return threshold_rms <= 0.0
    high = pcm[1 : 2 * count : 2]
    quiet = _quiet_high_bytes(threshold_rms)
    if quiet is not None and not high.translate(None, quiet):
        return False
    loud = _loud_high_bytes(threshold_rms)
    if loud is not None:
        small, level = loud
        if _rms(len(high.translate(None, small)) * level * level, count) >= threshold_rms:
            return True
    samples = _samples(pcm)
    total = 0
    for start in range(0, count, _VOICED_STRIDE):
        part = samples[start : start + _VOICED_STRIDE]
        total += sum(map(operator.mul, part, part))
        if _rms(total, count) >= threshold_rms:
            return True
    return False


def near_silent_audio(part: Any) -> bool:
    """Whether a model's ``Part`` is audio that is all near silence (not :func:`is_voiced`):
    what an answer of near silence, a stall's ``quiet_audio`` shape, is made of."""
    blob = getattr(part, "inline_data", None)
    if blob is None or not blob.data or not str(blob.mime_type or "").startswith("audio"):
        return False
    return not is_voiced(blob.data)


@dataclass
class UserActivity:
    """Tracks whether the user is speaking and whether their utterance was answered."""

    threshold_rms: float = DEFAULT_THRESHOLD_RMS
    hangover_ms: float = DEFAULT_HANGOVER_MS
    #: True between ``activityStart`` and ``activityEnd`` sent by the client.
    manual_activity: bool = False
    #: True between the server's ``speechState`` ``SPEECH`` and ``NON_SPEECH``.
    server_speech: bool = False
    #: Voiced audio seen and fewer than ``hangover_ms`` of unvoiced audio since.
    _voiced_recently: bool = False
    _quiet_ms: float = 0.0
    #: An utterance began and no answer followed it yet.
    unanswered: bool = False
    #: Utterances seen (for statistics and tests).
    utterances: int = 0
    #: Model output began in the current turn, and whether voiced audio followed it.
    _output_in_turn: bool = False
    _voiced_after_output: bool = False
    #: An utterance began after the current turn's output began: that turn does not answer it.
    _begun_after_output: bool = False
    #: Audio of any kind was sent since the current turn's output began.
    _audio_after_output: bool = False
    #: When the last audio chunk was sent (``clock``), or None before the first.
    _last_audio_at: float | None = None
    #: Seconds, monotonic: only to tell a microphone that stopped from one still streaming.
    clock: Callable[[], float] = field(default=time.monotonic, repr=False, compare=False)

    @property
    def speaking(self) -> bool:
        """Whether the user is speaking now (see the module's guarantees)."""
        return self.manual_activity or self._voiced_recently or self.server_speech

    def on_audio(self, pcm: bytes, duration_ms: float) -> bool:
        """A chunk of user audio is being sent; return whether it is voiced."""
        voiced = is_voiced(pcm, self.threshold_rms)
        self._audio_after_output = True
        self._last_audio_at = self.clock()
        if voiced:
            self._voiced_after_output = True
            self._begin()
            self._voiced_recently = True
            self._quiet_ms = 0.0
        elif self._voiced_recently:
            self._quiet_ms += duration_ms
            if self._quiet_ms >= self.hangover_ms:
                self._voiced_recently = False
        return voiced

    def on_activity_start(self) -> None:
        self._begin()
        self.manual_activity = True

    def on_activity_end(self) -> None:
        self.manual_activity = False
        self._voiced_recently = False

    def on_audio_stream_end(self) -> None:
        self.on_activity_end()

    def on_speech_state(self, state: str) -> None:
        """The server's ``speechState``: ``SPEECH`` (it hears the user: an utterance is on,
        whatever the audio's energy said; the unanswered one, where there is one: the server
        says so a quarter second after our own check, or later where audio is sent faster
        than real time) or ``NON_SPEECH`` (it heard the utterance end); another value is
        ignored."""
        if state == "SPEECH":
            if not self.unanswered:  # (else it is the utterance our own check began)
                self._begin()
            self.server_speech = True
        elif state == "NON_SPEECH":
            self.server_speech = False

    def on_new_connection(self) -> None:
        """A new connection serves the run: its server has not heard the user yet."""
        self.server_speech = False

    def on_input_transcription(self) -> None:
        """The server heard user speech (it may know before our energy check does)."""
        if not self.speaking:
            self.unanswered = True

    def on_model_output(self) -> None:
        """The model said something (text, audio, a tool call)."""
        if not self._output_in_turn:
            self._output_in_turn = True
            self._voiced_after_output = False
            self._audio_after_output = False

    def on_turn_complete(self) -> None:
        """The model finished a turn: with no voice since its output began, the user is quiet
        and the turn answered them; voice after its output began (an utterance the user went
        on with or began) is not answered by it: the server began the turn before it heard
        that voice (an answer to something else), or the user spoke over the answer. A turn
        that came and completed between two chunks of a stream still flowing, the user in
        the middle of a word, answered nothing of it either."""
        if (
            self._output_in_turn
            and not self.manual_activity
            and not self.server_speech
            and not self._voiced_after_output
            and not self._mid_speech_in_a_flowing_stream()
        ):
            self._voiced_recently = False
            if not self._begun_after_output:
                self.unanswered = False
        self._output_in_turn = False
        self._begun_after_output = False

    def _mid_speech_in_a_flowing_stream(self) -> bool:
        """No audio came since the turn's output began, the last chunk found the user in the
        middle of saying something, and it was sent less than ``hangover_ms`` ago: the next
        chunk is due, not a microphone that stopped (whose last sound the server may have
        answered after its own silence timeout)."""
        return (
            not self._audio_after_output
            and self._voiced_recently
            and self._quiet_ms < MID_SPEECH_QUIET_MS
            and self._last_audio_at is not None
            and (self.clock() - self._last_audio_at) * 1000.0 < self.hangover_ms
        )

    def on_generation_cut(self) -> None:
        """The generation in progress was cut off, by the server (``interrupted``, without a
        ``turnComplete``) or with its connection: it answered nothing, and the next output
        begins a new turn."""
        self._output_in_turn = False
        self._begun_after_output = False

    def _begin(self) -> None:
        if not self.speaking:
            self.utterances += 1
            if self._output_in_turn:
                self._begun_after_output = True
        self.unanswered = True
