"""A Gemini 3.8 setup the service refuses (1007) ends the run with an error that names the
likely cause, end to end.

The fake follows the field's 3.8 setup rules (:mod:`adk_live_resume.testing.setup_rules`):
``gemini-3.8-live`` refuses any ``thinkingConfig``; extended thinking refuses functions
declared with ``parametersJsonSchema`` (google-adk's ``FunctionTool`` declares Python
functions that way) and a ``thinkingLevel`` other than low, medium or high. A 1007 carries
only "Request contains an invalid argument.": the run's
:class:`~adk_live_resume.SessionNotResumableError` names what in the request breaks the rule.
Real ``Runner.run_live``, real google-genai, real TLS websockets on 127.0.0.1, both entry
points (``make_agent``).
"""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from google.genai import types

from adk_live_resume import SessionNotResumableError
from adk_live_resume.testing import FakeLiveServer
from adk_live_resume.testing.driver import LiveDriver

from ..conftest import AgentFactory

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(60)]


def get_weather(city: str) -> dict[str, str]:
    """The weather in a city."""
    return {"city": city, "sky": "clear"}


async def _refused(agent: Any) -> BaseException | None:
    """Start a run of ``agent`` and return how it ended; ``None`` if it is still going after
    a few seconds (the setup was taken: a refusal comes at once)."""
    async with asyncio.timeout(30):
        live = await LiveDriver.start(agent)
        async with live:
            live.send_text("hello")
            try:
                return await live.wait_ended(timeout=5)
            except TimeoutError:
                await live.close()
                return None


async def test_a_thinking_config_on_gemini_3_8_live_is_named_as_the_likely_cause(
    make_agent: AgentFactory,
) -> None:
    thinking = types.GenerateContentConfig(
        thinking_config=types.ThinkingConfig(thinking_budget=1024)
    )
    async with FakeLiveServer() as server:
        agent = make_agent(server, model="gemini-3.8-live", generate_content_config=thinking)
        error = await _refused(agent)
    setup = server.connections[0].setup or {}
    if "thinkingConfig" not in str(setup):
        pytest.skip("this google-adk sends no thinking_config to a live model")
    assert isinstance(error, SessionNotResumableError) and error.code == 1007, error
    assert "gemini-3.8-live refuses any thinkingConfig" in str(error)
    assert "remove thinking_config" in str(error)
    assert (
        server.connections[0].setup_refused
        == "gemini-3.8-live takes no generationConfig.thinkingConfig"
    )
    assert len(server.connections) == 1, "a refused setup is not retried"


async def test_python_functions_on_extended_thinking_are_named_as_the_likely_cause(
    make_agent: AgentFactory,
) -> None:
    model = "gemini-3.8-live-extended-thinking"
    async with FakeLiveServer() as server:
        agent = make_agent(server, model=model, tools=[get_weather])
        error = await _refused(agent)
    record = server.connections[0]
    if "parametersJsonSchema" not in str(record.setup) and "parameters_json_schema" not in str(
        record.setup
    ):
        pytest.skip("this google-adk declares Python functions with OpenAPI parameters")
    assert isinstance(error, SessionNotResumableError) and error.code == 1007, error
    assert "not parameters_json_schema" in str(error) and "(get_weather)" in str(error)
    assert record.setup_refused is not None and "parametersJsonSchema" in record.setup_refused
    assert len(server.connections) == 1


async def test_without_rules_broken_the_same_agents_talk(make_agent: AgentFactory) -> None:
    async with FakeLiveServer() as server:
        agent = make_agent(server, model="gemini-3.8-live")
        async with asyncio.timeout(30), await LiveDriver.start(agent) as live:
            assert await live.say("hello") == "echo: hello"
            await live.close()
    assert server.connections[0].setup_refused is None
