"""The energy check that runs on every chunk sent: its early decisions agree with the RMS."""

from __future__ import annotations

import array
import random

import pytest

from adk_live_resume.conversation.activity import DEFAULT_THRESHOLD_RMS, is_voiced, pcm_rms
from adk_live_resume.testing import silence_pcm, speech_pcm, tone_pcm


def _samples_pcm(samples: list[int]) -> bytes:
    return array.array("h", samples).tobytes()


def _chunks() -> list[bytes]:
    rng = random.Random(7)
    chunks = [
        b"",
        b"\x01",
        b"\0\0" * 320,
        speech_pcm("hello", seconds=0.02),
        tone_pcm(0.02),
        silence_pcm(0.02, noise=40),
        _samples_pcm([-32768] * 320),
        _samples_pcm([32767] + [0] * 319),  # one loud sample: the peak says maybe, the sum says no
        _samples_pcm([330] * 320),  # exactly at the threshold
        _samples_pcm([329] * 320),
        _samples_pcm([0] * 319 + [5904]),  # loud only at the very end
        _samples_pcm([-256] * 320),  # high byte 0xFF, magnitude 256
        _samples_pcm([-257, 255] * 160),
    ]
    for amplitude in (100, 255, 256, 257, 300, 330, 331, 400, 511, 512, 513, 1000, 20000):
        for _ in range(20):
            chunks.append(_samples_pcm([rng.randint(-amplitude, amplitude) for _ in range(320)]))
    return chunks


@pytest.mark.parametrize(
    "threshold", [DEFAULT_THRESHOLD_RMS, 0.0, 1.0, 200.5, 256.0, 257.0, 513.0, 600.0, 5000.0]
)
def test_is_voiced_is_exactly_the_rms_against_the_threshold(threshold: float) -> None:
    for chunk in _chunks():
        assert is_voiced(chunk, threshold) == (pcm_rms(chunk) >= threshold), chunk[:16]


def test_rms_is_the_exact_root_mean_square() -> None:
    assert pcm_rms(_samples_pcm([3, -4])) == pytest.approx((12.5) ** 0.5)
    assert pcm_rms(_samples_pcm([-32768] * 4)) == 32768.0


@pytest.mark.parametrize("threshold", [DEFAULT_THRESHOLD_RMS, 100.0, 1000.0])
def test_a_chunk_decided_by_its_loud_samples_alone_agrees_with_the_rms(threshold: float) -> None:
    """Chunks around the loud bound: a few samples just at, above and below its level."""
    level = 256 * max(1, -(-4 * threshold // 256))
    needed = int(320 * threshold * threshold // (level * level)) + 1
    for loud in (needed - 1, needed, needed + 1):
        for value in (int(level) - 1, int(level), -int(level), -int(level) - 1):
            chunk = _samples_pcm([value] * loud + [0] * (320 - loud))
            assert is_voiced(chunk, threshold) == (pcm_rms(chunk) >= threshold), (loud, value)
