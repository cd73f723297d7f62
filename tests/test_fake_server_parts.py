"""The fake server's pure parts: synthetic speech, the scripted model, wire helpers, faults."""

from __future__ import annotations

import base64
import random
from pathlib import Path

import pytest

from adk_live_resume.testing import FakeLiveServer, Fault, decode_speech, speech_pcm, tone_pcm
from adk_live_resume.testing.model import CallTool, Reply, ScriptedModel, Turn, split_chunks
from adk_live_resume.testing.protocol import b64decode_any, format_time_left, pick
from adk_live_resume.testing.records import ConnectionRecord
from adk_live_resume.testing.speech import UtteranceDetector, decode_utterance

pytestmark = pytest.mark.timeout(10)


def test_speech_survives_any_chunking() -> None:
    stream = speech_pcm("héllo wörld") + tone_pcm(0.05) + speech_pcm("two", seconds=0.5)
    assert decode_speech(stream) == ["héllo wörld", "two"]
    rng = random.Random(7)
    for _ in range(20):
        detector, utterances, offset = UtteranceDetector(), [], 0
        while offset < len(stream):
            size = rng.randint(1, 61)
            utterances += detector.feed(stream[offset : offset + size])
            offset += size
        assert [decode_utterance(u) for u in utterances] == ["héllo wörld", "two"]
        assert detector.pending == 0
    assert decode_speech(tone_pcm(1.0)) == []
    assert len(speech_pcm("x", seconds=2.0)) == 2 * 16000 * 2


def test_scripted_model_syntax() -> None:
    model = ScriptedModel(["get_weather"])
    memory = [Turn("user", "a"), Turn("model", "echo: a"), Turn("user", "b")]
    assert model.respond("hi", []) == Reply("echo: hi")
    assert model.respond("  What did I say FIRST?  ", memory) == Reply("you first said: a")
    assert model.respond("recall.", memory) == Reply("you said: a | b")
    assert model.respond("how many turns", memory) == Reply("2")
    assert model.respond('call get_weather {"city": "Paris"}', []) == CallTool(
        "get_weather", {"city": "Paris"}
    )
    assert model.respond("call get_weather", []) == CallTool("get_weather", {})
    assert model.respond("call nope {}", []) == Reply("unknown tool nope")
    assert model.after_tool("f", {"b": 1, "a": [1]}) == Reply('f returned {"a":[1],"b":1}')
    for text in ["echo: hello there", "abc", "x" * 100]:
        chunks = split_chunks(text)
        assert "".join(chunks) == text and len(chunks) >= 3 and all(chunks)
    assert split_chunks("7") == ["7"]


def test_wire_helpers_read_both_casings_and_both_base64_alphabets() -> None:
    assert pick({"turn_complete": True}, "turnComplete") is True
    assert pick({"turnComplete": True}, "turn_complete") is True
    assert pick({"x": 1}, "turnComplete", "d") == "d"
    data = bytes(range(256))
    assert b64decode_any(base64.urlsafe_b64encode(data).decode().rstrip("=")) == data
    assert b64decode_any(base64.b64encode(data).decode()) == data
    assert format_time_left(60.0) == "60s" and format_time_left(0.6) == "0.600s"


def test_fault_constructors_check_their_trigger() -> None:
    with pytest.raises(ValueError):
        Fault.close(1011)
    with pytest.raises(ValueError):
        Fault.abort(after_setup=True, mid_turn=True)
    assert Fault.close(1000, after_client_messages=2).is_drop
    assert not Fault.setup_delay(1).is_drop


def test_records_never_show_whole_handles() -> None:
    handle = "h" * 32
    record = ConnectionRecord(index=1, resume_handle=handle)
    assert handle not in repr(record)


async def test_server_lifecycle_and_loopback_only() -> None:
    with pytest.raises(ValueError):
        FakeLiveServer(host="0.0.0.0")
    server = FakeLiveServer()
    async with server:
        assert server.url == f"wss://127.0.0.1:{server.port}"
        cert = Path(server.cert_path)
        assert _is_pem(cert)
    assert not _is_pem(cert), "the temporary certificate is deleted"


def _is_pem(path: Path) -> bool:
    return path.exists() and path.read_bytes().startswith(b"-----BEGIN CERTIFICATE-----")
