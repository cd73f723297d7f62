"""pytest plugin (entry point ``adk_live_resume``): fixtures for the fake Gemini Live server.

Fixtures (function scope, async, work in pytest-asyncio's strict and auto modes):

``fake_live_server``
    A started :class:`~adk_live_resume.testing.FakeLiveServer` with default settings, with
    :meth:`~adk_live_resume.testing.FakeLiveServer.environment` applied for the whole test;
    stopped (and the environment restored) at teardown.

``fake_live_server_factory``
    An async callable: ``server = await fake_live_server_factory(time_scale=0.01, ...)`` returns
    a started server built with those keyword arguments. It does not touch the environment.
    Every server it made is stopped at teardown.

``live_resume_patch``
    Synchronous: installs adk_live_resume with the default :class:`~adk_live_resume.ResumePolicy`
    and backoff waits off for the test, yields the policy, and puts the previous state back
    at teardown (:func:`~adk_live_resume.testing.patch_installed`; use that directly for
    another policy).

The async fixtures need pytest-asyncio. Without it this plugin still loads (pytest keeps
working), and using either of them fails with a message saying what to install.

Hook: SIGTERM (a CI job's timeout) ends a run as Ctrl-C does (``KeyboardInterrupt``), so
fixture finalisers run and reap the children they started (a SIGTERM handler installed
before the plugin is left alone; a second SIGTERM ends the process at once), and a
pytest-xdist worker is sent SIGTERM when its controller ends, even by SIGKILL (Linux).
Children started with :func:`adk_live_resume.testing.children.spawn` go however a run ends.

Loading this plugin is cheap (pytest loads it in every run of a project that installed the
``testing`` extra): the fake server, google-adk, google-genai and cryptography are imported
only when a test uses one of these fixtures.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from typing import TYPE_CHECKING, Any

import pytest

if TYPE_CHECKING:
    from ..rules.policy import ResumePolicy
    from .server import FakeLiveServer

__all__ = ["fake_live_server", "fake_live_server_factory", "live_resume_patch"]

ServerFactory = Callable[..., Awaitable["FakeLiveServer"]]

_RESTORE_SIGTERM = pytest.StashKey[Callable[[], None]]()

try:
    import pytest_asyncio

    _HAVE_PYTEST_ASYNCIO = True
except ImportError:  # pragma: no cover - exercised only without pytest-asyncio
    _HAVE_PYTEST_ASYNCIO = False


@pytest.fixture
def live_resume_patch() -> Iterator[ResumePolicy]:
    """adk_live_resume installed (default policy, no backoff waits) for this test only."""
    from .patching import patch_installed

    with patch_installed() as policy:
        yield policy


if _HAVE_PYTEST_ASYNCIO:

    @pytest_asyncio.fixture
    async def fake_live_server() -> AsyncIterator[FakeLiveServer]:
        """A started fake server, with its environment applied for the test's duration."""
        from .server import FakeLiveServer

        async with FakeLiveServer() as server:
            with server.environment():
                yield server

    @pytest_asyncio.fixture
    async def fake_live_server_factory() -> AsyncIterator[ServerFactory]:
        """``await fake_live_server_factory(**kwargs)`` -> a started server; all stopped after."""
        from .server import FakeLiveServer

        servers: list[FakeLiveServer] = []

        async def make(**kwargs: Any) -> FakeLiveServer:
            server = FakeLiveServer(**kwargs)
            await server.start()
            servers.append(server)
            return server

        try:
            yield make
        finally:
            for server in reversed(servers):
                await server.stop()

else:  # pragma: no cover
    _MISSING = "the fake_live_server fixtures need pytest-asyncio: pip install pytest-asyncio"

    @pytest.fixture
    def fake_live_server() -> Iterator[FakeLiveServer]:
        """Unavailable: pytest-asyncio is not installed."""
        pytest.fail(_MISSING)
        yield

    @pytest.fixture
    def fake_live_server_factory() -> Iterator[ServerFactory]:
        """Unavailable: pytest-asyncio is not installed."""
        pytest.fail(_MISSING)
        yield


def pytest_configure(config: pytest.Config) -> None:
    """SIGTERM ends the run as Ctrl-C does (see :func:`~.children.exit_on_sigterm`); a
    pytest-xdist worker is sent SIGTERM when its controller ends (Linux)."""
    import signal

    from .children import die_with_parent, exit_on_sigterm

    config.stash[_RESTORE_SIGTERM] = exit_on_sigterm()
    if hasattr(config, "workerinput"):  # a pytest-xdist worker
        die_with_parent(signal.SIGTERM)


def pytest_unconfigure(config: pytest.Config) -> None:
    """Put back the SIGTERM handler that was there before :func:`pytest_configure`."""
    config.stash.get(_RESTORE_SIGTERM, lambda: None)()
