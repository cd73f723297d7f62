"""Recordings as a tool (fault_proxy.recording, testing.recording_check): a session recorded
through the fault proxy in front of the fake, redacted, then compared with what a fake says
for the same client messages; the comparison's rules are pure and tested on their own."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest
from google.genai import types
from hypothesis import given
from hypothesis import strategies as st

from adk_live_resume.fault_proxy.proxy import FaultProxy
from adk_live_resume.fault_proxy.recording import RecordedLine, read_recording, redact_frame
from adk_live_resume.testing import FAKE_API_KEY, FakeLiveServer, WireShapes
from adk_live_resume.testing.recording_check import (
    compare_with_fake,
    differences,
    kinds,
    segments,
)
from tests.fake.test_fake_server import WEATHER, turn

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(60)]

GEMINI_3_1 = "gemini-3.1-flash-live-preview"


def _config(handle: str | None = None) -> types.LiveConnectConfig:
    return types.LiveConnectConfig(
        response_modalities=[types.Modality.TEXT],
        session_resumption=types.SessionResumptionConfig(handle=handle),
        tools=[WEATHER],
    )


async def _record_a_session(server: FakeLiveServer, path: Path) -> list[str]:
    """Through a recording proxy: a typed turn, a tool round, some audio, then a resume.
    Returns the handles the fake issued."""
    async with FaultProxy(server, record=path) as proxy:
        client = proxy.genai_client()
        async with client.aio.live.connect(model=GEMINI_3_1, config=_config()) as live:
            await live.send_realtime_input(text="hello")
            await turn(live)
            await live.send_realtime_input(text="call get_weather {}")
            call = None
            while call is None:
                async for message in live.receive():
                    if message.tool_call:
                        call = (message.tool_call.function_calls or [])[0]
                        break
            await live.send_tool_response(
                function_responses=[
                    types.FunctionResponse(id=call.id, name=call.name, response={"sky": "blue"})
                ]
            )
            await turn(live)
            await live.send_realtime_input(
                audio=types.Blob(data=bytes(3200), mime_type="audio/pcm;rate=16000")
            )
            await asyncio.sleep(1.5)  # the empty updates of the recorded shapes come meanwhile
        handle = server.handles_issued()[-1]
        async with client.aio.live.connect(model=GEMINI_3_1, config=_config(handle)) as live:
            await live.send_realtime_input(text="recall")
            await turn(live)
        await server.wait_for_connections(2, finished=True)
    return server.handles_issued()


async def test_a_recording_holds_every_frame_both_ways_with_secrets_and_audio_redacted(
    tmp_path: Path,
) -> None:
    path = tmp_path / "session.jsonl"
    async with FakeLiveServer(chunk_delay=0.001) as server:
        handles = await _record_a_session(server, path)
        sent = [m for c in server.connections for m in c.server_messages]
    text = path.read_text()
    assert handles and not any(handle in text for handle in handles)
    assert FAKE_API_KEY not in text
    assert '"data":"<3200 bytes>"' in text and "AAAA" not in text
    lines = read_recording(path)
    assert [line.kind for line in lines if line.kind in ("open", "end")] == [
        "open",
        "end",
        "open",
        "end",
    ]
    assert len([line for line in lines if line.kind == "server"]) == len(sent)
    resumed = next(
        line.message
        for line in lines
        if line.kind == "client" and line.connection == 2 and "setup" in line.message
    )
    label = resumed["setup"]["sessionResumption"]["handle"]
    assert (label.startswith("<handle ") and label != "<handle 1>") or len(handles) == 1


async def test_a_recording_made_against_the_fake_matches_a_fresh_fake(tmp_path: Path) -> None:
    path = tmp_path / "session.jsonl"
    async with FakeLiveServer(chunk_delay=0.001) as server:
        await _record_a_session(server, path)
    async with FakeLiveServer(chunk_delay=0.001) as fresh:
        assert [d.describe() for d in await compare_with_fake(path, fresh, settle=0.3)] == []
        assert fresh.connections[1].resumed, "the redacted handle was mapped to the fake's"
        assert (
            fresh.tool_responses_received() and not fresh.connections[0].unknown_tool_response_ids
        )


async def test_a_fake_with_other_shapes_is_reported_where_it_differs(tmp_path: Path) -> None:
    path = tmp_path / "session.jsonl"
    async with FakeLiveServer(chunk_delay=0.001) as server:
        await _record_a_session(server, path)
    async with FakeLiveServer(
        chunk_delay=0.001, wire_shapes=WireShapes.before_recordings()
    ) as older:
        found = [d.describe() for d in await compare_with_fake(path, older, settle=0.3)]
    assert any("toolCall" in d and "serverContent{}" in d for d in found), found
    assert any("the whole connection" in d for d in found), found


# ---- the rules, pure -------------------------------------------------------------------------


def test_kinds_name_what_a_message_is() -> None:
    assert kinds({"serverContent": {}}) == ["serverContent{}"]
    assert kinds({"serverContent": {"turnComplete": True}, "usageMetadata": {}}) == [
        "serverContent.turnComplete",
        "usageMetadata",
    ]
    assert kinds({"sessionResumptionUpdate": {"newHandle": "<handle 1>", "resumable": True}}) == [
        "sessionResumptionUpdate.newHandle"
    ]
    assert kinds({"sessionResumptionUpdate": {"resumable": False}}) == [
        "sessionResumptionUpdate.resumable=false"
    ]
    assert kinds({"sessionResumptionUpdate": {}}) == ["sessionResumptionUpdate{}"]


def _line(kind: str, message: Any) -> RecordedLine:
    return RecordedLine(0.0, 1, kind, message=message)


def test_chunks_collapse_and_empty_updates_count_once_per_connection() -> None:
    chunk = {"serverContent": {"modelTurn": {"parts": [{"text": "a"}]}}}
    recorded = segments(
        [
            _line("client", {"setup": {}}),
            _line("server", {"setupComplete": {}}),
            _line("client", {"realtimeInput": {"text": "hi"}}),
            _line("server", chunk),
            _line("server", {"sessionResumptionUpdate": {}}),
            _line("server", chunk),
            _line("server", {"serverContent": {"turnComplete": True}}),
        ]
    )
    assert [s.kinds for s in recorded[1].segments] == [
        ("setupComplete",),
        ("serverContent.modelTurn", "serverContent.turnComplete"),
    ]
    assert recorded[1].segments[1].after == "client message 1 (realtimeInput.text)"
    fake = segments(
        [
            _line("client", {"setup": {}}),
            _line("server", {"setupComplete": {}}),
            _line("client", {"realtimeInput": {"text": "hi"}}),
            _line("server", chunk),
        ]
    )
    found = [d.describe() for d in differences(recorded, fake)]
    assert found == [
        "connection 1, after client message 1 (realtimeInput.text): recorded "
        "[serverContent.modelTurn, serverContent.turnComplete], the fake "
        "[serverContent.modelTurn]",
    ]
    recorded[1].empty_updates = 2
    assert differences(recorded, fake)[-1].describe() == (
        "connection 1, after the whole connection: recorded [sessionResumptionUpdate{} x2], "
        "the fake [sessionResumptionUpdate{} x0]"
    )


def test_redaction_numbers_handles_and_hides_keys_and_blobs() -> None:
    frame = json.dumps(
        {
            "setup": {"sessionResumption": {"handle": "secret-handle"}, "key": "AIzaSECRET"},
            "realtimeInput": {"audio": {"mimeType": "audio/pcm", "data": "AAAAAA=="}},
        }
    )
    line = redact_frame(frame)["message"]
    assert line["setup"]["sessionResumption"]["handle"] == "<handle 1>"
    assert line["setup"]["key"] == "<redacted>"
    assert line["realtimeInput"]["audio"]["data"] == "<4 bytes>"
    assert redact_frame(b"\x00\x01") == {"text": "<2 bytes>"}


_SECRET = "S3CRETvalue"
_leaves = st.one_of(st.integers(), st.booleans(), st.text(max_size=5), st.none())
_messages = st.recursive(
    _leaves,
    lambda inner: st.one_of(
        st.lists(inner, max_size=3),
        st.dictionaries(
            st.sampled_from(["a", "b", "newHandle", "handle", "key", "data", "mimeType"]),
            st.one_of(inner, st.just(_SECRET)),
            max_size=4,
        ),
    ),
    max_leaves=12,
)


@given(_messages)
def test_no_handle_key_or_blob_value_survives_redaction(message: Any) -> None:
    """Wherever a handle, a key or a blob's data sits, its value is never written."""
    text = json.dumps(redact_frame(json.dumps(message)))

    def exposed(value: Any) -> bool:
        if isinstance(value, dict):
            blob = "mimeType" in value and isinstance(value.get("data"), str)
            for k, v in value.items():
                secret_place = k in ("newHandle", "handle", "key") or (blob and k == "data")
                if secret_place and v == _SECRET:
                    return True
                if exposed(v):
                    return True
        if isinstance(value, list):
            return any(exposed(v) for v in value)
        return False

    if exposed(message) and _SECRET not in json.dumps(_strip_secret_places(message)):
        assert _SECRET not in text


def _strip_secret_places(value: Any) -> Any:
    """``value`` without the values at the places redaction hides (what may still show)."""
    if isinstance(value, dict):
        blob = "mimeType" in value and isinstance(value.get("data"), str)
        return {
            k: _strip_secret_places(v)
            for k, v in value.items()
            if not (
                isinstance(v, str)
                and v
                and (k in ("newHandle", "handle", "key") or (blob and k == "data"))
            )
        }
    if isinstance(value, list):
        return [_strip_secret_places(v) for v in value]
    return value
