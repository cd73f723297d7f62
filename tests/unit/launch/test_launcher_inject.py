"""``adk-live-resume --inject SPEC``: a fault proxy in front of the endpoint the app uses.

End to end with the fake server as the upstream (in this process, real TLS on 127.0.0.1):
a child ``python`` app whose real ``Runner.run_live`` lives through scheduled goAways, and
``adk api_server`` on ``/run_live`` through scheduled drops. Plus the pure parts: which
endpoint the environment selects, and a bad SPEC's error.
"""

from __future__ import annotations

import asyncio
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from adk_live_resume.launch import launcher
from adk_live_resume.launch.inject_launch import GEMINI_API, Upstream, upstream_from_environment
from adk_live_resume.testing import FakeLiveServer
from adk_live_resume.testing.workers import child_environment

APP = textwrap.dedent(
    """
    import asyncio, os

    from google.adk.agents import LlmAgent

    from adk_live_resume.testing.driver import LiveDriver


    async def main() -> None:
        print("base", os.environ["GOOGLE_GEMINI_BASE_URL"])
        agent = LlmAgent(name="assistant", model="gemini-live-fake")
        async with await LiveDriver.start(agent) as live:
            print(await live.say("one"))
            await asyncio.sleep(3.0)  # the proxy's goAway (after 1.5 s) and its deadline
            print(await live.say("two"))
            print(await live.say("recall"))
            print("ended", await live.close())


    asyncio.run(main())
    """
)


def _launcher(spec: str, *command: str) -> list[str]:
    """``adk-live-resume --inject SPEC COMMAND...`` as this interpreter runs it."""
    return [sys.executable, "-W", "ignore", "-m", "adk_live_resume", "--inject", spec, *command]


def test_the_environment_selects_the_upstream() -> None:
    assert upstream_from_environment({}) == Upstream(GEMINI_API, "GOOGLE_GEMINI_BASE_URL", False)
    assert upstream_from_environment({"GOOGLE_GEMINI_BASE_URL": "https://127.0.0.1:9"}).url == (
        "https://127.0.0.1:9"
    )
    vertex = {"GOOGLE_GENAI_USE_VERTEXAI": "True", "GOOGLE_CLOUD_LOCATION": "europe-west4"}
    assert upstream_from_environment(vertex) == Upstream(
        "https://europe-west4-aiplatform.googleapis.com", "GOOGLE_VERTEX_BASE_URL", True
    )
    vertex["GOOGLE_CLOUD_LOCATION"] = "global"
    assert upstream_from_environment(vertex).url == "https://aiplatform.googleapis.com"
    vertex["GOOGLE_VERTEX_BASE_URL"] = "https://127.0.0.1:8"
    assert upstream_from_environment(vertex).url == "https://127.0.0.1:8"


def test_a_bad_spec_is_a_usage_error_that_says_the_form(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert launcher.main(["--inject", "goaway=60", "python", "app.py"]) == 2
    err = capsys.readouterr().err
    assert "unknown key 'goaway'" in err
    assert "goaway-every=60,drop-every=90" in err
    with pytest.raises(launcher.LauncherError, match="comes after the command"):
        launcher.split_argv(["adk", "web", "--inject", "drop-every=9"])


@pytest.mark.e2e
@pytest.mark.timeout(150)
async def test_a_child_app_lives_through_scheduled_go_aways(tmp_path: Path) -> None:
    (tmp_path / "app.py").write_text(APP)
    async with FakeLiveServer() as server:
        process = await asyncio.create_subprocess_exec(
            *_launcher("goaway-every=1.5,goaway-time-left=1", "python", "app.py"),
            cwd=tmp_path,
            env=child_environment(server),
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
        )
        try:
            out, err = await asyncio.wait_for(process.communicate(), 120)
        finally:
            if process.returncode is None:
                process.kill()
                await process.wait()
        text, errors = out.decode(), err.decode()
        assert process.returncode == 0, f"stdout:\n{text}\nstderr:\n{errors[-3000:]}"
        lines = text.splitlines()
        assert lines[0].startswith("base https://127.0.0.1:")
        assert lines[0] != f"base {server.base_url}"  # the app was pointed at the proxy
        assert lines[1:] == ["echo: one", "echo: two", "you said: one | two", "ended None"]
        assert "fault proxy" in errors and "goAway every 1.5s" in errors
        assert len(server.connections) >= 2
        # Every connection after a handle was issued resumes it (on a loaded machine the
        # first goAway can come before the first handle: that move starts fresh, as it must).
        first = next(i for i, c in enumerate(server.connections) if c.handles_issued)
        assert all(c.resumed for c in server.connections[first + 1 :])
        assert server.history_sends() == 0


AGENT = textwrap.dedent(
    """
    from google.adk.agents import LlmAgent

    root_agent = LlmAgent(name="voice", model="gemini-live-fake")
    """
)


@pytest.mark.e2e
@pytest.mark.timeout(150)
async def test_adk_api_server_lives_through_scheduled_drops(tmp_path: Path) -> None:
    from adk_live_resume.testing.workers import RunLiveClient, http_json, start_adk, wait_ready
    from tests.e2e.test_workers_deployment import APP as APP_NAME
    from tests.e2e.test_workers_deployment import USER

    agents = tmp_path / "agents" / APP_NAME
    agents.mkdir(parents=True)
    (agents / "__init__.py").write_text("from . import agent\n")
    (agents / "agent.py").write_text(AGENT)
    async with FakeLiveServer() as server:
        worker = start_adk(
            "api_server",
            cwd=tmp_path,
            agents_dir=tmp_path / "agents",
            server=server,
            launcher_args=("--inject", "drop-every=2"),
        )
        try:
            await wait_ready(worker)
            session = await http_json(
                "POST", f"{worker.http}/apps/{APP_NAME}/users/{USER}/sessions", {}
            )
            async with asyncio.timeout(100):
                client = await RunLiveClient.connect(
                    worker, app=APP_NAME, user=USER, session_id=session["id"]
                )
                async with client.websocket:
                    assert await client.say("one") == "echo: one"
                    await server.wait_for_connections(2)  # dropped after 2 s, resumed
                    assert await client.say("two") == "echo: two"
                    assert await client.say("recall") == "you said: one | two"
            assert server.connections[1].resumed, worker.tail()
            assert server.history_sends() == 0
            assert "fault proxy" in worker.log.read_text(errors="replace"), worker.tail()
        finally:
            worker.kill()
