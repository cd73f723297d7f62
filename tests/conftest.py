"""Shared fixtures: the two entry points (monkeypatch and subclass) as one parameter."""

from __future__ import annotations

import asyncio
import os
import sys
from collections.abc import Callable, Iterator, Sequence
from typing import Any, Protocol

import pytest
from google.adk.agents import LlmAgent
from hypothesis import HealthCheck, settings

import adk_live_resume
from adk_live_resume import ResumableLlmAgent, ResumePolicy

# Property tests (tests/test_properties_*.py): a fast profile in the suite, a long one for a
# soak of the pure rules (``HYPOTHESIS_PROFILE=long``, docs/development.md).
settings.register_profile(
    "fast", max_examples=200, deadline=None, derandomize=False, print_blob=True
)
settings.register_profile(
    "long",
    # HYPOTHESIS_MAX_EXAMPLES=5000 for a shorter soak of one test
    max_examples=int(os.environ.get("HYPOTHESIS_MAX_EXAMPLES", "100000")),
    # Shorter runs of the state machines, so that 100,000 of them take minutes, not an hour.
    stateful_step_count=25,
    deadline=None,
    derandomize=False,
    print_blob=True,
    suppress_health_check=list(HealthCheck),
)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "fast"))


class AgentFactory(Protocol):
    entry: str

    def __call__(
        self,
        server: Any,
        *,
        name: str = ...,
        tools: Sequence[Callable[..., Any]] = ...,
        sub_agents: Sequence[Any] = ...,
        policy: ResumePolicy | None = ...,
        instruction: str = ...,
        model: str = ...,
        **extra: Any,
    ) -> Any: ...


@pytest.fixture(autouse=True)
def _no_backoff_waits() -> Iterator[None]:
    """Backoff sleeps off by default (stamina-style testing switch); caps stay in force."""
    with adk_live_resume.testing_backoff():
        yield


@pytest.fixture(autouse=True)
def _always_uninstall() -> Iterator[None]:
    """No test leaks the global patch into the next."""
    yield
    adk_live_resume.uninstall()


@pytest.fixture(params=["install", "subclass"])
def make_agent(request: pytest.FixtureRequest) -> AgentFactory:
    """Build a live agent bound to a fake server, resumable through the chosen entry point;
    ``extra`` keyword arguments go to the agent as they are (other ADK options)."""
    entry: str = request.param

    def factory(
        server: Any,
        *,
        name: str = "assistant",
        tools: Sequence[Callable[..., Any]] = (),
        sub_agents: Sequence[Any] = (),
        policy: ResumePolicy | None = None,
        instruction: str = "You are a helpful assistant.",
        model: str = "gemini-live-fake",
        **extra: Any,
    ) -> Any:
        kwargs: dict[str, Any] = dict(
            name=name,
            model=server.gemini(model),
            instruction=instruction,
            tools=list(tools),
            sub_agents=list(sub_agents),
            **extra,
        )
        if entry == "install":
            adk_live_resume.install(policy)
            return LlmAgent(**kwargs)
        return ResumableLlmAgent(resume_policy=policy, **kwargs)

    factory.entry = entry  # type: ignore[attr-defined]
    return factory  # type: ignore[return-value]


def our_tasks() -> list[asyncio.Task[object]]:
    """Tasks this package started (the send task is named ``adk_live_resume send #N``)."""
    return [t for t in asyncio.all_tasks() if t.get_name().startswith("adk_live_resume")]


async def end_cleanly(live: Any, server: Any, ending: str) -> None:
    """End a live run by closing its queue (``ending`` "close": the run returns) or by
    cancelling its consumer ("cancel": within 1 s); then no task of ours is left and the fake
    has no open connection."""
    async with asyncio.timeout(5):
        if ending == "close":
            assert await live.close(timeout=2) is None
        else:
            assert await live.cancel() < 1.0
    await asyncio.sleep(0)
    assert our_tasks() == []
    await server.wait_for(lambda: server.open_connections() == 0, 5, what="all closed")


@pytest.fixture
def launcher_sandbox(monkeypatch: pytest.MonkeyPatch) -> None:
    """Let a test call ``launcher.main`` in this process: the launcher's environment
    variables, ``sys.argv`` and ``sys.path`` are restored after the test."""
    from adk_live_resume.launch import launcher

    for key in ("PYTHONPATH", launcher.BOOTSTRAP_POLICY_ENV, launcher.STRICT_ENV):
        monkeypatch.setenv(key, "")
    monkeypatch.setattr(sys, "argv", list(sys.argv))
    monkeypatch.setattr(sys, "path", list(sys.path))


def adk_screens_live_content() -> bool:
    """Whether this google-adk release screens typed live content with
    ``before_model_callback`` in its send step (2.x): a blocked turn never reaches the model."""
    import importlib

    from adk_live_resume.compat import adk_compat

    module = importlib.import_module(adk_compat.surface().live_module)
    return callable(getattr(module, "screen_live_user_content", None))


#: 20 ms of 16-bit mono PCM at 16 kHz, the chunk a microphone sends.
MIC_CHUNK = 16000 * 2 // 50


def mic_chunks(pcm: bytes) -> list[bytes]:
    """``pcm`` cut into the 20 ms chunks a microphone sends."""
    return [pcm[start : start + MIC_CHUNK] for start in range(0, len(pcm), MIC_CHUNK)]


async def stream_pcm(live: Any, pcm: bytes, *, pace: float = 1.0) -> None:
    """Send ``pcm`` as a microphone would: 20 ms chunks, ``pace`` x real time."""
    for chunk in mic_chunks(pcm):
        live.send_audio(chunk)
        await asyncio.sleep(0.02 / pace)


def non_blocking(function: Callable[..., Any]) -> Any:
    """An ADK ``FunctionTool`` that runs NON_BLOCKING in live mode (in the background)."""
    from google.adk.tools.function_tool import FunctionTool
    from google.genai import types

    tool = FunctionTool(function)
    if hasattr(tool, "behavior"):
        tool.behavior = types.Behavior.NON_BLOCKING
    else:  # 1.37 - 2.12: a response scheduling makes a tool NON_BLOCKING
        tool.response_scheduling = types.FunctionResponseScheduling.WHEN_IDLE
    return tool


def blocking(function: Callable[..., Any]) -> Any:
    """An ADK ``FunctionTool`` whose declaration says ``behavior: BLOCKING``: the model waits
    for its response (Gemini 3.8 Live calls functions NON_BLOCKING unless declared so). Set
    on the declaration, so that releases without ``FunctionTool.behavior`` (1.27) send it."""
    from google.adk.tools.function_tool import FunctionTool
    from google.genai import types

    class Blocking(FunctionTool):  # type: ignore[misc]
        def _get_declaration(self) -> Any:
            declaration = super()._get_declaration()
            if declaration is not None:
                declaration.behavior = types.Behavior.BLOCKING
            return declaration

    return Blocking(function)


@pytest.fixture
def handle_key(monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    """A fresh sealing key in ``ADK_LIVE_RESUME_HANDLE_KEY`` (``store_handle_in_session``)."""
    from cryptography.fernet import Fernet

    from adk_live_resume.resumption.stored_handle import HANDLE_KEY_ENV

    key = Fernet.generate_key().decode()
    monkeypatch.setenv(HANDLE_KEY_ENV, key)
    yield key


@pytest.fixture(scope="session")
def postgres() -> Iterator[Any]:
    """A throwaway PostgreSQL cluster on 127.0.0.1 (skipped, saying why, where none runs)."""
    from adk_live_resume.testing.postgres import PostgresUnavailable, ThrowawayPostgres

    pytest.importorskip("asyncpg", reason="the PostgreSQL cases need asyncpg (the test extra)")
    server = ThrowawayPostgres()
    try:
        server.start()
    except PostgresUnavailable as error:
        pytest.skip(f"no PostgreSQL server for the PostgreSQL cases: {error}")
    try:
        yield server
    finally:
        server.stop()
