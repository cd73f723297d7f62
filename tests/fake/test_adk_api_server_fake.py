"""``adk api_server`` under our launcher reaches the fake only, in both dialects.

The environment is :func:`~adk_live_resume.testing.environment_variables` (``vertex=True``:
Vertex AI express mode) and nothing else: ADK builds its own ``genai.Client()``. A typed turn
on ``/run_sse`` (REST ``streamGenerateContent``) and a live turn on ``/run_live`` both succeed,
and the fake recorded both, in the expected dialect. Every proxy variable names a dead port on
127.0.0.1, so a request to any other host would fail instead of leaving the machine.
"""

from __future__ import annotations

import asyncio
import textwrap
from pathlib import Path

import pytest

from adk_live_resume.testing import FakeLiveServer
from adk_live_resume.testing.workers import RunLiveClient, http_json, start_adk, wait_ready

from ..adk_processes import DEAD_PROXY, sse_texts

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(150)]

APP = "typed"
USER = "person"

AGENT = textwrap.dedent(
    """
    from google.adk.agents import LlmAgent

    root_agent = LlmAgent(name="typed", model="gemini-2.5-flash", instruction="Be brief.")
    """
)

PROXIES = {
    name: DEAD_PROXY
    for name in ("HTTPS_PROXY", "https_proxy", "HTTP_PROXY", "http_proxy", "ALL_PROXY")
}


@pytest.mark.parametrize("vertex", [False, True], ids=["gemini", "vertex"])
async def test_run_sse_and_run_live_reach_the_fake_only(tmp_path: Path, vertex: bool) -> None:
    (tmp_path / "agents" / APP).mkdir(parents=True)
    (tmp_path / "agents" / APP / "__init__.py").write_text("from . import agent\n")
    (tmp_path / "agents" / APP / "agent.py").write_text(AGENT)
    async with FakeLiveServer(chunk_delay=0.001) as server:
        api = start_adk(
            "api",
            cwd=tmp_path,
            agents_dir=tmp_path / "agents",
            server=server,
            vertex=vertex,
            extra_env=PROXIES,
        )
        try:
            await wait_ready(api)
            session = await http_json("POST", f"{api.http}/apps/{APP}/users/{USER}/sessions", {})
            body = {
                "app_name": APP,
                "user_id": USER,
                "session_id": session["id"],
                "new_message": {"role": "user", "parts": [{"text": "typed hello"}]},
                "streaming": True,
            }
            stream = await asyncio.wait_for(http_json("POST", f"{api.http}/run_sse", body), 60)
            assert sse_texts(stream)[-1:] == ["echo: typed hello"], (stream, api.tail())
            async with asyncio.timeout(60):
                client = await RunLiveClient.connect(
                    api, app=APP, user=USER, session_id=session["id"]
                )
                async with client.websocket:
                    answer = await client.say("spoken hello", timeout=40)
            assert answer == "echo: spoken hello", api.tail()
        finally:
            api.kill()
        dialect = "vertex" if vertex else "gemini"
        (rest,) = server.rest_calls()
        assert rest.route is not None and rest.route.dialect == dialect
        assert rest.route.stream and rest.user_text == "typed hello"
        live = server.connections[0]
        assert ("v1beta1" in live.path) is vertex, live.path
        assert "spoken hello" in server.user_turns_answered()
