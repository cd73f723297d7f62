"""The fake's REST ``generateContent`` / ``streamGenerateContent``, on the Live port.

The real google-genai SDK (httpx, or aiohttp where installed) and the real ADK
``Runner.run_async`` (what ``/run_sse`` runs) talk to it over TLS on 127.0.0.1, in the Gemini
API and the Vertex AI dialect; the pure routing and answering rules are tested without sockets.
"""

from __future__ import annotations

import asyncio
import json
from typing import Any

import httpx
import pytest
from google import genai
from google.adk.agents import LlmAgent
from google.adk.agents.run_config import RunConfig, StreamingMode
from google.adk.runners import InMemoryRunner
from google.genai import types

from adk_live_resume.fault_proxy.client_config import environment
from adk_live_resume.testing import FakeLiveServer
from adk_live_resume.testing.rest import RestCall, answer_rest, parse_route

pytestmark = [pytest.mark.timeout(60)]

MODEL = "gemini-2.5-flash"


# ---- pure rules --------------------------------------------------------------------------


def test_routes_of_both_dialects() -> None:
    gemini = parse_route("/v1beta/models/gemini-2.5-flash:generateContent")
    assert gemini is not None
    assert (gemini.dialect, gemini.model, gemini.stream) == ("gemini", "gemini-2.5-flash", False)
    vertex = parse_route(
        "/v1beta1/projects/p/locations/us-central1/publishers/google/models/m:"
        "streamGenerateContent?alt=sse"
    )
    assert vertex is not None
    assert (vertex.dialect, vertex.version, vertex.stream, vertex.sse) == (
        "vertex",
        "v1beta1",
        True,
        True,
    )
    express = parse_route("/v1beta1/publishers/google/models/m:generateContent")
    assert express is not None and express.dialect == "vertex"
    assert parse_route("/v1beta/models/m:countTokens") is None
    assert parse_route("/ws/google.ai.generativelanguage.v1beta.BidiGenerateContent") is None


def _call(contents: list[dict[str, Any]], *, stream: bool = False, tools: Any = ()) -> RestCall:
    method = "streamGenerateContent?alt=sse" if stream else "generateContent"
    body: dict[str, Any] = {"contents": contents}
    if tools:
        body["tools"] = [{"functionDeclarations": [{"name": name} for name in tools]}]
    return RestCall("POST", "/", parse_route(f"/v1beta/models/m:{method}"), body)


def _user(text: str) -> dict[str, Any]:
    return {"role": "user", "parts": [{"text": text}]}


def _results(*pairs: tuple[str, Any]) -> dict[str, Any]:
    parts = [{"functionResponse": {"name": n, "response": r}} for n, r in pairs]
    return {"role": "user", "parts": parts}


def test_answers_follow_the_scripted_model_with_the_request_as_memory() -> None:
    call = _call([_user("first"), {"role": "model", "parts": [{"text": "x"}]}, _user("recall")])
    (body,) = answer_rest(call)
    assert call.answer == "you said: first" and call.status == 200
    assert body["candidates"][0]["finishReason"] == "STOP"
    streamed = _call([_user("a longer sentence to stream")], stream=True)
    chunks = answer_rest(streamed)
    assert len(chunks) >= 3
    pieces = [c["candidates"][0]["content"]["parts"][0]["text"] for c in chunks]
    assert "".join(pieces) == "echo: a longer sentence to stream"
    assert [("finishReason" in c["candidates"][0]) for c in chunks][-1]
    assert not any("finishReason" in c["candidates"][0] for c in chunks[:-1])


def test_function_calls_step_by_step_then_the_answer() -> None:
    ask = _user('call a {"x": 1} then call b {}')
    first = _call([ask], tools=["a", "b"])
    answer_rest(first)
    assert first.function_calls == ["a"] and first.answer == ""
    call_a = {"role": "model", "parts": [{"functionCall": {"name": "a", "args": {"x": 1}}}]}
    second = _call([ask, call_a, _results(("a", {"r": 1}))], tools=["a", "b"])
    answer_rest(second)
    assert second.function_calls == ["b"]
    call_b = {"role": "model", "parts": [{"functionCall": {"name": "b", "args": {}}}]}
    third = _call(
        [ask, call_a, _results(("a", {"r": 1})), call_b, _results(("b", 2))], tools=["a", "b"]
    )
    answer_rest(third)
    assert third.answer == 'a returned {"r":1}; b returned 2'
    assert _call([_user("call nope {}")]).user_text == "call nope {}"


# ---- over TLS, with the real SDK ---------------------------------------------------------


@pytest.mark.parametrize("vertex", [False, True], ids=["gemini", "vertex"])
async def test_the_sdk_gets_answers_and_streams_in_both_dialects(
    fake_live_server_factory: Any, vertex: bool
) -> None:
    server: FakeLiveServer = await fake_live_server_factory(chunk_delay=0.001)
    client = server.genai_client(vertex=vertex)
    async with asyncio.timeout(30):
        answer = await client.aio.models.generate_content(model=MODEL, contents="hello")
        chunks = [
            chunk.text or ""
            async for chunk in await client.aio.models.generate_content_stream(
                model=MODEL, contents="stream this please"
            )
        ]
        blocking = await asyncio.to_thread(
            client.models.generate_content, model=MODEL, contents="sync"
        )
    assert answer.text == "echo: hello"
    assert len(chunks) >= 3 and "".join(chunks) == "echo: stream this please"
    assert blocking.text == "echo: sync"
    calls = server.rest_calls()
    assert [c.user_text for c in calls] == ["hello", "stream this please", "sync"]
    assert all(
        c.route is not None and c.route.dialect == ("vertex" if vertex else "gemini") for c in calls
    )
    assert all(c.route.model == MODEL for c in calls if c.route)
    assert [c.route.sse for c in calls if c.route] == [False, True, False]


async def test_the_environment_sends_a_bare_vertex_client_to_the_fake(
    fake_live_server_factory: Any,
) -> None:
    """``genai.Client()`` reads ``GOOGLE_GEMINI_BASE_URL`` even when it speaks Vertex AI."""
    server: FakeLiveServer = await fake_live_server_factory(chunk_delay=0.001)
    with environment(server, vertex=True):
        bare = genai.Client()
        explicit = genai.Client(vertexai=True)
    async with asyncio.timeout(30):
        for client in (bare, explicit):
            assert client.vertexai
            answer = await client.aio.models.generate_content(model=MODEL, contents="env")
            assert answer.text == "echo: env"
        config = types.LiveConnectConfig(response_modalities=[types.Modality.TEXT])
        async with bare.aio.live.connect(model="gemini-live-fake", config=config) as live:
            await live.send_client_content(turns=_content("live via env"))
            async for message in live.receive():
                if message.server_content and message.server_content.turn_complete:
                    break
    assert [c.route.dialect for c in server.rest_calls() if c.route] == ["vertex", "vertex"]
    (record,) = await server.wait_for_connections(1)
    assert server.user_turns_answered() == ["live via env"]
    assert "LlmBidiService" in record.path or "v1beta1" in record.path


def _content(text: str) -> types.Content:
    return types.Content(role="user", parts=[types.Part(text=text)])


async def test_requests_it_cannot_serve_get_a_clear_error_not_a_dropped_connection(
    fake_live_server_factory: Any,
) -> None:
    server: FakeLiveServer = await fake_live_server_factory()
    trust = server.client_ssl_context()
    async with httpx.AsyncClient(base_url=server.base_url, verify=trust, timeout=10) as http:
        unknown = await http.post("/v1beta/models/m:countTokens", json={})
        not_json = await http.post("/v1beta/models/m:generateContent", content=b"{nope")
        get = await http.get("/v1beta/models/m:generateContent")
    assert unknown.status_code == 404
    assert "generateContent" in unknown.json()["error"]["message"]
    assert not_json.status_code == 400 and "not JSON" in not_json.json()["error"]["message"]
    assert get.status_code == 404 and "takes POST" in get.json()["error"]["message"]
    assert [c.status for c in server.rest_calls()] == [404, 400, 404]
    assert json.loads(unknown.text)["error"]["status"] == "NOT_FOUND"


async def test_a_stream_without_alt_sse_is_one_json_array(fake_live_server_factory: Any) -> None:
    server: FakeLiveServer = await fake_live_server_factory()
    trust = server.client_ssl_context()
    body = {"contents": [{"role": "user", "parts": [{"text": "as an array"}]}]}
    async with httpx.AsyncClient(base_url=server.base_url, verify=trust, timeout=10) as http:
        response = await http.post("/v1beta/models/m:streamGenerateContent", json=body)
    chunks = response.json()
    assert isinstance(chunks, list) and len(chunks) >= 3
    texts = [c["candidates"][0]["content"]["parts"][0]["text"] for c in chunks]
    assert "".join(texts) == "echo: as an array"


# ---- the real ADK Runner.run_async (what /run_sse runs) ----------------------------------


def add(a: int, b: int) -> dict[str, int]:
    """Add two numbers."""
    return {"sum": a + b}


@pytest.mark.e2e
@pytest.mark.parametrize("streaming", [StreamingMode.NONE, StreamingMode.SSE], ids=["plain", "sse"])
async def test_adk_run_async_gets_text_and_tool_answers(
    fake_live_server_factory: Any, streaming: StreamingMode
) -> None:
    server: FakeLiveServer = await fake_live_server_factory(chunk_delay=0.001)
    agent = LlmAgent(name="typed", model=server.gemini(MODEL), tools=[add])
    runner = InMemoryRunner(agent=agent, app_name="typed")
    session = await runner.session_service.create_session(app_name="typed", user_id="u")

    async def ask(text: str) -> str:
        final = ""
        async with asyncio.timeout(30):
            async for event in runner.run_async(
                user_id="u",
                session_id=session.id,
                new_message=_content(text),
                run_config=RunConfig(streaming_mode=streaming),
            ):
                parts = event.content.parts if event.content else None
                text_now = "".join(p.text or "" for p in parts or [])
                if text_now and not event.partial:
                    final = text_now
        return final

    assert await ask("hello typed") == "echo: hello typed"
    assert await ask('call add {"a": 2, "b": 3}') == 'add returned {"sum":5}'
    assert await ask("recall") == 'you said: hello typed | call add {"a": 2, "b": 3}'
    assert [c.function_calls for c in server.rest_calls()] == [[], ["add"], [], []]
    assert all(c.status == 200 for c in server.rest_calls())


async def test_a_failing_answer_is_a_500_and_a_chunked_body_a_411(
    fake_live_server_factory: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    from adk_live_resume.testing import http_front

    def broken(call: RestCall) -> list[dict[str, Any]]:
        raise RuntimeError("scripted model broke")

    server: FakeLiveServer = await fake_live_server_factory()
    trust = server.client_ssl_context()

    async def chunks() -> Any:
        yield b'{"contents": []}'

    async with httpx.AsyncClient(base_url=server.base_url, verify=trust, timeout=10) as http:
        chunked = await http.post("/v1beta/models/m:generateContent", content=chunks())
        monkeypatch.setattr(http_front, "answer_rest", broken)
        failed = await http.post("/v1beta/models/m:generateContent", json={"contents": []})
    assert chunked.status_code == 411 and "Content-Length" in chunked.json()["error"]["message"]
    assert failed.status_code == 500 and "scripted model broke" in failed.json()["error"]["message"]
    assert [c.status for c in server.rest_calls()] == [411, 500]
