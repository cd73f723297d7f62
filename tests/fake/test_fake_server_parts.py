"""The fake server's pure parts: synthetic speech, the scripted model, wire helpers, faults."""

from __future__ import annotations

import base64
import random
from pathlib import Path

import pytest

from adk_live_resume.testing import (
    FakeLiveServer,
    Fault,
    decode_speech,
    silence_pcm,
    speech_pcm,
    tone_pcm,
)
from adk_live_resume.testing.model import (
    CallTool,
    CallTools,
    Reply,
    ScriptedModel,
    Turn,
    parse_calls,
    split_chunks,
)
from adk_live_resume.testing.protocol import b64decode_any, format_time_left, pick
from adk_live_resume.testing.records import ConnectionRecord
from adk_live_resume.testing.vad import SpeechTracker, Transcribed, Utterance, VadConfig

pytestmark = pytest.mark.timeout(10)


def _feed(tracker: SpeechTracker, stream: bytes, rng: random.Random) -> list[object]:
    events: list[object] = []
    offset, message = 0, 0
    while offset < len(stream):
        size = rng.randint(1, 4001)  # odd sizes: chunks never align with samples or frames
        message += 1
        events += tracker.audio(stream[offset : offset + size], message=message, sample_rate=16000)
        offset += size
    return events


def test_speech_survives_any_chunking() -> None:
    stream = (
        silence_pcm(0.3)
        + speech_pcm("héllo wörld")
        + silence_pcm(0.6)
        + speech_pcm("two", seconds=0.5)
        + silence_pcm(0.6)
    )
    assert decode_speech(stream) == ["héllo wörld", "two"]
    rng = random.Random(7)
    for _ in range(20):
        tracker = SpeechTracker(VadConfig())
        events = _feed(tracker, stream, rng)
        assert [e.text for e in events if isinstance(e, Utterance)] == ["héllo wörld", "two"]
        heard = "".join(e.text for e in events if isinstance(e, Transcribed))
        assert heard == "héllo wörldtwo"
        assert tracker.held_since is None and not tracker.speaking
    assert decode_speech(tone_pcm(1.0)) == []
    assert decode_speech(silence_pcm(1.0, noise=100)) == []
    assert len(speech_pcm("x", seconds=2.0)) == 2 * 16000 * 2


def test_a_fragment_of_speech_decodes_to_the_matching_fragment_of_text() -> None:
    text = "hello world, how are you"
    clip = speech_pcm(text, seconds=2.4)
    cut = int(len(clip) * 0.4) // 2 * 2  # the first 40 % of the audio is lost
    assert decode_speech(clip[cut:]) == ["ld, how are you"]
    assert decode_speech(clip[: len(clip) // 2]) == ["hello world,"]
    assert decode_speech(speech_pcm("hello") + speech_pcm("loop")) == ["helloloop"]
    with pytest.raises(ValueError, match="seconds"):
        speech_pcm("too long for the clip", seconds=0.0001)
    with pytest.raises(ValueError, match="tone_pcm"):
        speech_pcm("")


def test_speech_ends_after_the_configured_silence_only() -> None:
    short = SpeechTracker(VadConfig(silence_duration_ms=200))
    events = short.audio(speech_pcm("hi") + silence_pcm(0.3), message=1, sample_rate=16000)
    assert [e.text for e in events if isinstance(e, Utterance)] == ["hi"]
    default = SpeechTracker(VadConfig())
    events = default.audio(speech_pcm("hi") + silence_pcm(0.3), message=1, sample_rate=16000)
    assert not any(isinstance(e, Utterance) for e in events)
    assert default.speaking and default.held_since == 1
    end = default.stream_end(message=2)
    assert [(e.text, e.ended_by) for e in end if isinstance(e, Utterance)] == [("hi", "stream_end")]


def test_manual_activity_detection_ignores_audio_outside_an_activity() -> None:
    tracker = SpeechTracker(VadConfig(disabled=True))
    assert tracker.audio(speech_pcm("lost", seconds=0.5), message=1, sample_rate=16000) == []
    assert tracker.ignored_audio_ms == 500 and tracker.held_since is None
    tracker.activity_start(message=2)
    tracker.audio(speech_pcm("kept") + silence_pcm(1.0), message=3, sample_rate=16000)
    assert tracker.speaking and tracker.held_since == 2  # silence does not end it
    events = tracker.activity_end(message=4)
    assert [(e.text, e.first_message) for e in events if isinstance(e, Utterance)] == [("kept", 2)]


def test_held_since_names_the_message_with_the_first_loud_sample() -> None:
    tracker = SpeechTracker(VadConfig())
    tracker.audio(silence_pcm(0.5), message=1, sample_rate=16000)
    tracker.audio(silence_pcm(0.005), message=2, sample_rate=16000)  # a partial frame
    assert tracker.held_since is None  # silence is never held
    tracker.audio(speech_pcm("x", seconds=0.003), message=3, sample_rate=16000)
    assert tracker.held_since == 3
    events = tracker.audio(speech_pcm("yz"), message=4, sample_rate=16000)
    assert [e.message for e in events if hasattr(e, "message")] == [3]


def test_scripted_model_syntax() -> None:
    model = ScriptedModel(["get_weather"])
    memory = [Turn("user", "a"), Turn("model", "echo: a"), Turn("user", "b")]
    assert model.respond("hi", []) == Reply("echo: hi")
    assert model.respond("  What did I say FIRST?  ", memory) == Reply("you first said: a")
    assert model.respond("recall.", memory) == Reply("you said: a | b")
    assert model.respond("how many turns", memory) == Reply("2")
    assert model.respond('call get_weather {"city": "Paris"}', []) == CallTools(
        ((CallTool("get_weather", {"city": "Paris"}),),)
    )
    assert model.respond("call get_weather", []) == CallTools(((CallTool("get_weather", {}),),))
    assert model.respond("call nope {}", []) == Reply("unknown tool nope")
    assert model.respond("call get_weather [1]", []) == Reply("invalid arguments for get_weather")
    assert model.respond("call get_weather {bad", []) == Reply("invalid arguments for get_weather")
    assert model.after_tool("f", {"b": 1, "a": [1]}) == Reply('f returned {"a":[1],"b":1}')
    assert model.after_tools([("f", 1), ("g", {})]) == Reply("f returned 1; g returned {}")


def test_tool_call_syntax_parallel_and_sequential() -> None:
    assert parse_calls('call a {"x": "p and q"} and call b {} then call c') == [
        [("a", {"x": "p and q"}), ("b", {})],
        [("c", {})],
    ]
    assert parse_calls("call a then call b and call c {}") == [[("a", {})], [("b", {}), ("c", {})]]
    assert parse_calls("hello") is None
    model = ScriptedModel(["a", "b"])
    plan = model.respond('call a {"x":1} then call b {}', [])
    assert isinstance(plan, CallTools)
    assert plan.steps == ((CallTool("a", {"x": 1}),), (CallTool("b", {}),))
    assert model.respond("call a {} and call zz {}", []) == Reply("unknown tool zz")
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
