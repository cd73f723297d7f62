"""The outbox's short way for plain microphone chunks gives what its general walk gives."""

from __future__ import annotations

from typing import Any

import pytest
from google.genai import types

from adk_live_resume.conversation.activity import is_voiced
from adk_live_resume.conversation.client_sends import audio_pcm, describe, plain_audio
from adk_live_resume.conversation.outbox import Outbox
from adk_live_resume.testing import silence_pcm, speech_pcm

PCM = speech_pcm("hi", seconds=0.02)


@pytest.mark.parametrize(
    "kwargs",
    [
        {"audio": types.Blob(data=PCM, mime_type="audio/pcm;rate=16000")},
        {"audio": types.Blob(data=PCM, mime_type="audio/pcm;rate=24000")},
        {"audio": types.Blob(data=PCM, mime_type="audio/pcm")},
        {"audio": types.Blob(data=PCM, mime_type="audio/pcm; rate=8000")},
        {"audio": types.Blob(data=silence_pcm(0.02), mime_type="audio/pcm;rate=16000")},
        {"audio": types.Blob(data=b"", mime_type="audio/pcm;rate=16000")},
        {"audio": types.Blob(data=PCM, mime_type="image/jpeg")},
        {"audio": types.Blob(data=PCM)},
        {"audio": {"data": PCM, "mime_type": "audio/pcm;rate=16000"}},
        {"audio": types.Blob(data=PCM, mime_type="audio/pcm"), "text": "and words"},
        {"media": types.Blob(data=PCM, mime_type="audio/pcm;rate=16000")},
        {"media": types.Blob(data=PCM, mime_type="image/png")},
        {"video": types.Blob(data=PCM, mime_type="audio/pcm;rate=16000")},
    ],
)
def test_plain_chunks_are_described_as_the_general_walk_describes_them(
    kwargs: dict[str, Any],
) -> None:
    chunk = plain_audio("send_realtime_input", kwargs)
    ms, text, ids = describe("send_realtime_input", kwargs)
    pcm = audio_pcm("send_realtime_input", kwargs)
    if chunk is not None:
        assert chunk == (pcm, ms) and (text, ids) == (None, ())
    recorded = Outbox().record("send_realtime_input", kwargs)
    assert (recorded.audio_ms, recorded.user_text, recorded.response_ids) == (ms, text, ids)
    assert recorded.voiced == (ms > 0 and bool(pcm) and is_voiced(pcm))


@pytest.mark.parametrize("key", ["media", "audio"])
def test_what_adk_sends_for_a_microphone_chunk_takes_the_short_way(key: str) -> None:
    blob = types.Blob(data=PCM, mime_type="audio/pcm;rate=16000")
    assert plain_audio("send_realtime_input", {key: blob}) == (PCM, 20.0)
