"""Stalls made by the fault proxy out of a healthy upstream: the filter without sockets, the
``--inject`` keys, and the loop recovering through the proxy from each shape."""

from __future__ import annotations

import base64
import json

import pytest
from google.adk.agents import LlmAgent

import adk_live_resume
from adk_live_resume import ReconnectInfo, ResumePolicy
from adk_live_resume.fault_proxy.inject_spec import InjectSpecError, parse_inject_spec
from adk_live_resume.fault_proxy.proxy import FaultProxy
from adk_live_resume.fault_proxy.stall_filter import StallFilter
from adk_live_resume.testing import FakeLiveServer, LiveDriver, silence_pcm, speech_pcm

from ..conftest import stream_pcm


def message(value: dict[str, object]) -> str:
    return json.dumps(value)


TURN = message({"clientContent": {"turns": [], "turnComplete": True}})
AUDIO = base64.b64encode(b"\x00\x10" * 100).decode()
CHUNK = message(
    {
        "serverContent": {
            "modelTurn": {"parts": [{"inlineData": {"mimeType": "audio/pcm", "data": AUDIO}}]}
        }
    }
)
TEXT = message({"serverContent": {"modelTurn": {"parts": [{"text": "hi"}]}}})
DONE = message({"serverContent": {"turnComplete": True}})
HANDLE = message({"sessionResumptionUpdate": {"newHandle": "h", "resumable": True}})
GO_AWAY = message({"goAway": {"timeLeft": "5s"}})


def test_nothing_changes_before_the_next_user_turn() -> None:
    stall = StallFilter("silent", session=False)
    assert [stall.down(m) for m in (TEXT, DONE, HANDLE)] == [TEXT, DONE, HANDLE]
    stall.up(message({"realtimeInput": {"audio": {"data": AUDIO}}}))  # audio: no turn yet
    assert stall.down(HANDLE) == HANDLE and not stall.stalling
    stall.up(TURN)
    assert [stall.down(m) for m in (TEXT, DONE, HANDLE)] == [None, None, None]
    assert stall.down(GO_AWAY) == GO_AWAY


HEARD = message({"serverContent": {"inputTranscription": {"text": "hel"}}})
SPEECH_STATE = message({"serverContent": {"speechState": "NON_SPEECH"}})


@pytest.mark.parametrize("word", [HEARD, SPEECH_STATE], ids=["transcription", "speech-state"])
def test_a_voice_turn_the_server_hears_begins_the_stall_and_still_goes_through(
    word: str,
) -> None:
    """A call with the server's voice detection sends no turn of its own: what the server says
    of the user's speech begins the stall, and still reaches the client."""
    stall = StallFilter("silent", session=False)
    assert stall.down(DONE) == DONE  # (an answer under way when armed ends first)
    assert stall.down(word) == {"serverContent": json.loads(word)["serverContent"]}
    assert stall.stalling
    assert [stall.down(m) for m in (TEXT, DONE)] == [None, None]


def test_the_start_of_an_answer_begins_the_stall_and_is_withheld() -> None:
    stall = StallFilter("empty", session=False)
    assert [stall.down(m) for m in (TEXT, TEXT, DONE)] == [TEXT, TEXT, DONE]  # under way
    assert not stall.stalling
    assert stall.down(CHUNK) is None and stall.stalling
    assert stall.down(DONE) == {"serverContent": {"turnComplete": True}}


def test_the_users_words_go_through_every_shape() -> None:
    stall = StallFilter("rejected", session=False, armed=False)
    both = message({"serverContent": {"inputTranscription": {"text": "hi"}, "turnComplete": True}})
    assert stall.down(both) == {
        "serverContent": {
            "inputTranscription": {"text": "hi"},
            "turnComplete": True,
            "turnCompleteReason": "RESPONSE_REJECTED",
        }
    }


@pytest.mark.parametrize(
    ("shape", "expected"),
    [
        ("empty", [None, None, {"serverContent": {"turnComplete": True}}]),
        (
            "rejected",
            [
                None,
                None,
                {
                    "serverContent": {
                        "turnComplete": True,
                        "turnCompleteReason": "RESPONSE_REJECTED",
                    }
                },
            ],
        ),
    ],
)
def test_emptied_shapes(shape: str, expected: list[object]) -> None:
    stall = StallFilter(shape, session=False, armed=False)
    assert [stall.down(m) for m in (TEXT, HANDLE, DONE)] == expected


def test_quiet_audio_keeps_the_length_and_drops_the_voice_and_the_text() -> None:
    stall = StallFilter("quiet_audio", session=False, armed=False)
    out = stall.down(CHUNK)
    assert isinstance(out, dict)
    (part,) = out["serverContent"]["modelTurn"]["parts"]
    quiet = base64.b64decode(part["inlineData"]["data"])
    assert len(quiet) == 200 and max(abs(b - 256 if b > 127 else b) for b in quiet[::2]) <= 20
    assert stall.down(TEXT) is None
    assert stall.down(DONE) == {"serverContent": {"turnComplete": True}}


def test_inject_keys() -> None:
    schedule = parse_inject_spec("stall-after=2,stall-shape=rejected,stall-session=1")
    assert (schedule.stall_after, schedule.stall_shape, schedule.stall_session) == (
        2.0,
        "rejected",
        True,
    )
    assert "stall (rejected, for the session) after 2s" in schedule.describe()
    for bad in ("stall-shape=loud", "stall-session=2", "stall-after=x"):
        with pytest.raises(InjectSpecError):
            parse_inject_spec(bad)


@pytest.mark.e2e
@pytest.mark.timeout(60)
@pytest.mark.parametrize("shape", ["silent", "empty", "rejected"])
@pytest.mark.parametrize("vertex", [False, True], ids=["gemini-api", "vertex"])
async def test_the_loop_recovers_from_a_stall_the_proxy_makes(shape: str, vertex: bool) -> None:
    seen: list[ReconnectInfo] = []
    remove = adk_live_resume.on_reconnect(seen.append)
    adk_live_resume.install(ResumePolicy(stall_timeout=1.0, degenerate_turns=1))
    try:
        async with FakeLiveServer() as server, FaultProxy(server) as proxy:
            agent = LlmAgent(name="assistant", model=proxy.gemini(vertex=vertex))
            async with await LiveDriver.start(agent) as live:
                assert await live.say("one") == "echo: one"
                await server.wait_for(lambda: bool(server.handles_issued()), 5, what="a handle")
                proxy.stall(shape)  # type: ignore[arg-type]
                assert await live.say("two", timeout=20) == "echo: two"
                assert await live.say("three") == "echo: three"
                assert await live.close() is None
            assert proxy.connections[0].faults == [f"stall {shape}"]
            # (silence resumes; a turn answered with nothing is asked a fresh session)
            assert proxy.connections[1].resumed is (shape == "silent")
    finally:
        remove()
    assert [(r.reason, r.state_restored) for r in seen] == [("stall", shape == "silent")]


@pytest.mark.e2e
@pytest.mark.timeout(60)
async def test_a_session_stall_through_the_proxy_ends_in_a_fresh_session() -> None:
    seen: list[ReconnectInfo] = []
    remove = adk_live_resume.on_reconnect(seen.append)
    adk_live_resume.install(ResumePolicy(stall_timeout=1.0))
    try:
        async with FakeLiveServer() as server, FaultProxy(server) as proxy:
            agent = LlmAgent(name="assistant", model=proxy.gemini())
            async with await LiveDriver.start(agent) as live:
                assert await live.say("one") == "echo: one"
                await server.wait_for(lambda: bool(server.handles_issued()), 5, what="a handle")
                proxy.stall(session=True)
                assert await live.say("two", timeout=20) == "echo: two"
                assert await live.close() is None
            second, third = proxy.connections[1:3]
            assert second.resumed and second.faults == ["stall silent (session)"]
            assert not third.resumed and third.faults == []
    finally:
        remove()
    assert [(r.reason, r.state_restored) for r in seen] == [("stall", True), ("stall", False)]


@pytest.mark.e2e
@pytest.mark.timeout(60)
async def test_an_injected_stall_stalls_a_voice_call() -> None:
    """``--inject stall-after=S``: a call with the server's voice detection (no typed turn,
    no ``activityEnd``) stalls from its next utterance, and the loop recovers."""
    seen: list[ReconnectInfo] = []
    remove = adk_live_resume.on_reconnect(seen.append)
    adk_live_resume.install(ResumePolicy(stall_timeout=1.0))
    schedule = parse_inject_spec("stall-after=0.5")
    try:
        async with FakeLiveServer() as server, FaultProxy(server, schedule=schedule) as proxy:
            agent = LlmAgent(name="assistant", model=proxy.gemini())
            async with await LiveDriver.start(agent) as live:
                await server.wait_for(lambda: any(c.faults for c in proxy.connections), 10)
                await stream_pcm(live, speech_pcm("hello there", seconds=0.6) + silence_pcm(1.0))
                await server.wait_for(lambda: seen != [], 10, what="a stall's recovery")
                assert await live.close() is None
            assert proxy.connections[0].faults == ["stall silent"]
            assert server.connections[0].user_turns == ["hello there"]
    finally:
        remove()
    assert seen[0].reason == "stall" and "utterance the server transcribed" in seen[0].stall
