"""Microphone chunks sent as google-genai's own encoding of them (``chunk_encoding``).

Against the real SDK: the learnt text equals what ``AsyncSession.send_realtime_input`` sends,
byte for byte, on both dialects; what cannot be encoded that way is left to the SDK. End to
end: the real ``Runner.run_live``, patched and stock, sends the same audio, and the fake
server receives the same realtime input from both.
"""

from __future__ import annotations

import asyncio
import base64
import functools
import random
from typing import Any

import pytest
from google import genai
from google.adk.agents import LlmAgent
from google.adk.agents.run_config import RunConfig
from google.genai import live, types

import adk_live_resume
from adk_live_resume.compat import chunk_encoding
from adk_live_resume.compat.chunk_encoding import ChunkEncoder, learn, sdk_text
from adk_live_resume.observe.callbacks import RunStats
from adk_live_resume.testing import FakeLiveServer, silence_pcm, speech_pcm
from adk_live_resume.testing.driver import LiveDriver

from ...helpers import genai_session

MIME_TYPES = ("audio/pcm;rate=16000", "audio/pcm;rate=24000", "audio/pcm")


def _send(key: str, data: bytes, mime_type: str) -> dict[str, Any]:
    return {key: types.Blob(data=data, mime_type=mime_type)}


@pytest.mark.parametrize("vertex", [False, True], ids=["gemini-api", "vertex"])
@pytest.mark.parametrize("key", ["media", "audio"])
def test_encoded_chunks_are_what_the_sdk_sends_byte_for_byte(vertex: bool, key: str) -> None:
    session = genai_session(vertex=vertex)
    encoder = ChunkEncoder()
    chance = random.Random(7)
    sizes = [1, 2, 3, 4, 5, 639, 640, 641, 642, 3200]
    for mime_type in MIME_TYPES:
        for size in sizes:
            data = chance.randbytes(size)
            text = encoder.encode(session, "send_realtime_input", _send(key, data, mime_type))
            assert text == sdk_text(session, key, data, mime_type), (mime_type, size)
    assert encoder.encoded == len(MIME_TYPES) * len(sizes)


def test_the_sdk_alphabet_is_told_apart_from_the_other() -> None:
    """google-genai sends URL-safe base64: a template in the standard alphabet would differ
    for every chunk whose base64 holds ``-`` or ``_``."""
    session = genai_session(vertex=False)
    template = learn(session, "audio", "audio/pcm;rate=16000")
    assert template is not None
    data = b"\xfb\xff\xbf"
    assert template.text(data) == sdk_text(session, "audio", data, "audio/pcm;rate=16000")
    assert "-_-_" in template.text(data)


@pytest.mark.parametrize(
    ("method", "arguments"),
    [
        ("send_client_content", {"turns": [types.Content(role="user", parts=[])]}),
        ("send_realtime_input", {"text": "hello"}),
        ("send_realtime_input", {"activity_start": types.ActivityStart()}),
        ("send_realtime_input", {"video": types.Blob(data=b"\x00\x01", mime_type="image/jpeg")}),
        ("send_realtime_input", {"audio": types.Blob(data=b"", mime_type="audio/pcm")}),
        ("send_realtime_input", {"audio": types.Blob(data=b"\x00\x01")}),
        (
            "send_realtime_input",
            {"audio": types.Blob(data=b"\x00\x01", mime_type="audio/pcm", display_name="mic")},
        ),
        (
            "send_realtime_input",
            {
                "audio": types.Blob(data=b"\x00\x01", mime_type="audio/pcm"),
                "media": types.Blob(data=b"\x00\x01", mime_type="audio/pcm"),
            },
        ),
        ("send_realtime_input", {"audio": {"data": b"\x00\x01", "mime_type": "audio/pcm"}}),
    ],
    ids=[
        "client-content",
        "text",
        "activity",
        "video",
        "empty",
        "no-mime",
        "other-field",
        "two-arguments",
        "dict-not-blob",
    ],
)
def test_other_sends_are_left_to_the_sdk(method: str, arguments: dict[str, Any]) -> None:
    encoder = ChunkEncoder()
    assert encoder.encode(genai_session(vertex=False), method, arguments) is None
    assert encoder.encoded == 0


class _BinarySession(live.AsyncSession):
    """An SDK whose encoding is not base64 inside a fixed text (here: binary frames)."""

    async def send_realtime_input(self, **kwargs: Any) -> None:
        blob = next(iter(kwargs.values()))
        await self._ws.send(bytes(blob.data))


def test_an_sdk_that_does_not_send_base64_in_a_fixed_text_cannot_be_learnt() -> None:
    client = genai.Client(api_key="k")
    session = _BinarySession(api_client=client._api_client, websocket=None)
    assert learn(session, "audio", "audio/pcm;rate=16000") is None


class _TracedSession(live.AsyncSession):
    """``send_realtime_input`` wrapped by someone (tracing, say): it must see every chunk."""

    calls = 0

    async def send_realtime_input(self, **kwargs: Any) -> None:
        type(self).calls += 1
        await super().send_realtime_input(**kwargs)


def test_a_wrapped_send_realtime_input_sees_every_chunk() -> None:
    client = genai.Client(api_key="k")
    session = _TracedSession(api_client=client._api_client, websocket=None)
    encoder = ChunkEncoder()
    chunk = _send("audio", b"\x01\x02" * 320, "audio/pcm;rate=16000")
    for _ in range(3):
        assert encoder.encode(session, "send_realtime_input", chunk) is None
    assert _TracedSession.calls == 0, "not even called to learn from"
    assert encoder.encoded == 0


def test_a_wrapper_put_in_place_after_learning_gets_the_chunks_from_then_on(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    session = genai_session(vertex=False)
    encoder = ChunkEncoder()
    chunk = _send("audio", b"\x01\x02" * 320, "audio/pcm;rate=16000")
    assert encoder.encode(session, "send_realtime_input", chunk) is not None  # learnt
    original = live.AsyncSession.send_realtime_input
    calls: list[Any] = []

    @functools.wraps(original)
    async def traced(self: Any, **kwargs: Any) -> Any:
        calls.append(kwargs)
        return await original(self, **kwargs)

    monkeypatch.setattr(live.AsyncSession, "send_realtime_input", traced)
    assert encoder.encode(session, "send_realtime_input", chunk) is None
    monkeypatch.setattr(session, "send_realtime_input", traced.__get__(session), raising=False)
    monkeypatch.setattr(live.AsyncSession, "send_realtime_input", original)
    assert encoder.encode(session, "send_realtime_input", chunk) is None  # set on the session
    monkeypatch.delattr(session, "send_realtime_input")
    assert encoder.encode(session, "send_realtime_input", chunk) is not None  # the SDK's again
    assert encoder.encoded == 2 and calls == []


def test_a_shape_whose_learning_failed_is_not_tried_again(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    tries: list[str] = []

    def failing_learn(session: Any, key: str, mime_type: str) -> None:
        tries.append(mime_type)

    monkeypatch.setattr("adk_live_resume.compat.chunk_encoding.learn", failing_learn)
    encoder = ChunkEncoder()
    session = genai_session(vertex=False)
    for mime_type in ("audio/pcm;rate=16000", "audio/pcm;rate=16000", "audio/pcm;rate=24000"):
        chunk = _send("audio", b"\x01\x02" * 320, mime_type)
        assert encoder.encode(session, "send_realtime_input", chunk) is None
    assert tries == ["audio/pcm;rate=16000", "audio/pcm;rate=24000"]


# -- end to end ---------------------------------------------------------------------------


def _realtime_inputs(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [m for m in messages if "realtimeInput" in m or "realtime_input" in m]


async def _spoken_turn(
    server: FakeLiveServer, chunks: list[bytes], *, vertex: bool
) -> BaseException | None:
    """One spoken turn; the error ``run_live`` ended with (stock 1.27 turns a close into
    ``APIError``)."""
    agent = LlmAgent(name="voice", model=server.gemini(vertex=vertex))
    config = RunConfig(response_modalities=[types.Modality.TEXT])
    async with await LiveDriver.start(agent, run_config=config) as live_run:
        mark = len(live_run.events)
        for chunk in chunks:
            live_run.send_audio(chunk)
        assert await live_run.answer_after(mark) == "echo: good morning"
        return await live_run.close()


@pytest.mark.e2e
@pytest.mark.timeout(60)
@pytest.mark.parametrize("vertex", [False, True], ids=["gemini-api", "vertex"])
async def test_patched_and_stock_adk_put_the_same_audio_on_the_wire(
    fake_live_server_factory: Any, vertex: bool
) -> None:
    server: FakeLiveServer = await fake_live_server_factory(chunk_delay=0.0)
    pcm = silence_pcm(0.2, noise=40) + speech_pcm("good morning", seconds=0.6) + silence_pcm(0.7)
    chunks = [pcm[start : start + 640] for start in range(0, len(pcm), 640)]
    await _spoken_turn(server, chunks, vertex=vertex)  # stock
    stats: list[RunStats] = []
    remove = adk_live_resume.on_run_end(stats.append)
    adk_live_resume.install()
    try:
        assert await _spoken_turn(server, chunks, vertex=vertex) is None  # patched
    finally:
        adk_live_resume.uninstall()
        remove()
    stock, patched = await server.wait_for_connections(2, finished=True)
    sent_by_stock = _realtime_inputs(stock.client_messages)
    assert len(sent_by_stock) == len(chunks)
    assert _realtime_inputs(patched.client_messages) == sent_by_stock
    assert any("-" in str(m) or "_" in str(m) for m in sent_by_stock), "URL-safe bytes sent"
    assert [s.chunks_encoded for s in stats] == [len(chunks)]


def _realtime_audio(messages: list[dict[str, Any]]) -> list[bytes]:
    """The audio bytes of every realtime input the server received, in order."""
    found: list[bytes] = []

    def walk(value: Any) -> None:
        if isinstance(value, dict):
            data, mime = value.get("data"), value.get("mimeType") or value.get("mime_type")
            if isinstance(data, str) and str(mime).startswith("audio/"):
                found.append(base64.urlsafe_b64decode(data + "=" * (-len(data) % 4)))
                return
            for item in value.values():
                walk(item)
        elif isinstance(value, list):
            for item in value:
                walk(item)

    for message in _realtime_inputs(messages):
        walk(message)
    return found


@pytest.mark.e2e
@pytest.mark.timeout(60)
async def test_a_functools_wraps_tracer_sees_every_real_chunk_once_and_no_probe(
    fake_live_server_factory: Any, make_agent: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A tracing wrapper made with ``functools.wraps`` (it copies ``__module__``,
    ``__qualname__`` and ``__doc__``) on google-genai's own ``send_realtime_input``."""
    server: FakeLiveServer = await fake_live_server_factory(chunk_delay=0.0)
    traced: list[bytes] = []
    original = live.AsyncSession.send_realtime_input

    @functools.wraps(original)
    async def send_realtime_input(self: Any, **kwargs: Any) -> Any:
        traced.extend(v.data for v in kwargs.values() if isinstance(v, types.Blob) and v.data)
        return await original(self, **kwargs)

    monkeypatch.setattr(live.AsyncSession, "send_realtime_input", send_realtime_input)
    assert send_realtime_input.__module__ == "google.genai.live"  # what fooled the old check
    pcm = silence_pcm(0.2, noise=40) + speech_pcm("good morning", seconds=0.6) + silence_pcm(0.7)
    chunks = [pcm[start : start + 640] for start in range(0, len(pcm), 640)]
    stats: list[RunStats] = []
    remove = adk_live_resume.on_run_end(stats.append)
    try:
        agent = make_agent(server)
        config = RunConfig(response_modalities=[types.Modality.TEXT])
        async with asyncio.timeout(30), await LiveDriver.start(agent, run_config=config) as run:
            mark = len(run.events)
            for chunk in chunks:
                run.send_audio(chunk)
            assert await run.answer_after(mark) == "echo: good morning"
            assert await run.close() is None
    finally:
        remove()
    assert not any(data in chunk_encoding._PROBES for data in traced), "a probe was traced"
    assert traced == chunks, "each real chunk once, in order"
    (connection,) = await server.wait_for_connections(1, finished=True)
    assert _realtime_audio(connection.client_messages) == chunks
    assert [s.chunks_encoded for s in stats] == [0]
