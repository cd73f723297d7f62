"""Connect parameters worked out once per run: no proxy lookup per connect while no proxy is
configured, and a configured proxy still looked up (and used) as before.

The rule is checked on its own, then end to end: real ``Runner.run_live`` sessions, patched,
against the fake server over TLS, with websockets' own lookup (``get_proxy``) counted.
"""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from adk_live_resume.shell import connect_params
from adk_live_resume.testing import FakeLiveServer
from adk_live_resume.testing.driver import LiveDriver

from ...conftest import AgentFactory

PROXY_VARIABLES = ("http_proxy", "https_proxy", "all_proxy", "no_proxy", "wss_proxy", "ws_proxy")


@pytest.fixture
def no_proxy_env(monkeypatch: pytest.MonkeyPatch) -> pytest.MonkeyPatch:
    for name in PROXY_VARIABLES:
        monkeypatch.delenv(name, raising=False)
        monkeypatch.delenv(name.upper(), raising=False)
    return monkeypatch


def takes_proxy(uri: str, *, proxy: Any = True, ssl: Any = None) -> None: ...


def takes_no_proxy(uri: str, *, ssl: Any = None) -> None: ...


def test_no_proxy_configured_means_direct(no_proxy_env: pytest.MonkeyPatch) -> None:
    assert connect_params.direct()
    no_proxy_env.setenv("HTTPS_PROXY", "http://127.0.0.1:9")
    assert not connect_params.direct()
    no_proxy_env.delenv("HTTPS_PROXY")
    no_proxy_env.setenv("wss_proxy", "http://127.0.0.1:9")  # any *_proxy variable counts
    assert not connect_params.direct()


def test_proxy_none_is_added_only_when_direct_unset_and_accepted() -> None:
    kwargs = {"additional_headers": {"x": "1"}, "ssl": object()}
    added = connect_params.connect_kwargs(takes_proxy, kwargs, no_proxy=True)
    assert added == {**kwargs, "proxy": None} and "proxy" not in kwargs  # a copy
    assert connect_params.connect_kwargs(takes_proxy, kwargs, no_proxy=False) is kwargs
    mine = {**kwargs, "proxy": "http://proxy.example:3128"}  # the caller's own: kept
    assert connect_params.connect_kwargs(takes_proxy, mine, no_proxy=True) is mine
    # an older websockets whose connect takes no proxy: nothing added
    assert connect_params.connect_kwargs(takes_no_proxy, kwargs, no_proxy=True) is kwargs


async def _resume_once(agent: Any, server: FakeLiveServer) -> None:
    async with await LiveDriver.start(agent) as live:
        assert await live.say("first") == "echo: first"
        await server.close_open(1011)
        await server.wait_for_connections(2)
        assert await live.say("second") == "echo: second"
        assert await live.close() is None


@pytest.mark.e2e
@pytest.mark.timeout(60)
async def test_no_proxy_lookup_on_a_runs_connects_while_none_is_configured(
    make_agent: AgentFactory, no_proxy_env: pytest.MonkeyPatch
) -> None:
    from websockets.asyncio import client

    lookups: list[object] = []
    real = client.get_proxy
    no_proxy_env.setattr(client, "get_proxy", lambda uri: lookups.append(uri) or real(uri))
    async with asyncio.timeout(50), FakeLiveServer() as server:
        await _resume_once(make_agent(server), server)
        assert len(server.connections) == 2
    assert lookups == []


@pytest.mark.e2e
@pytest.mark.timeout(60)
async def test_a_configured_proxy_is_still_looked_up_per_connect(
    make_agent: AgentFactory, no_proxy_env: pytest.MonkeyPatch
) -> None:
    """A proxy in the environment (bypassed for 127.0.0.1 by ``NO_PROXY``, so the session
    still reaches the fake): websockets looks it up on every connect, as without the patch."""
    from websockets.asyncio import client

    lookups: list[object] = []
    real = client.get_proxy
    no_proxy_env.setattr(client, "get_proxy", lambda uri: lookups.append(uri) or real(uri))
    no_proxy_env.setenv("HTTPS_PROXY", "http://127.0.0.1:9")
    no_proxy_env.setenv("NO_PROXY", "127.0.0.1")
    async with asyncio.timeout(50), FakeLiveServer() as server:
        await _resume_once(make_agent(server), server)
        assert len(server.connections) == 2
    assert len(lookups) == 2
