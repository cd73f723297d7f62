"""The launcher's ``--inject SPEC``: a fault proxy in front of the endpoint the app would use.

``adk-live-resume --inject goaway-every=60 adk web ./agents`` starts a
:class:`~adk_live_resume.testing.FaultProxy` on 127.0.0.1 in a thread of the launcher, in
front of the endpoint the app's environment points at (:func:`upstream_from_environment`: the
real service by default, or ``GOOGLE_GEMINI_BASE_URL`` / ``GOOGLE_VERTEX_BASE_URL``), and
points the environment at the proxy: the base URL variable of the dialect in use and
``SSL_CERT_FILE`` (a bundle that trusts the proxy and everything trusted before). The
command then runs as usual, with the faults of SPEC injected into its Live sessions. A command
that would be exec'd runs as a child instead, so that the proxy outlives it.

The proxy relays Live websockets only: with ``--inject``, the app's non-live REST calls to the
same base URL get an HTTP error from the proxy.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import MutableMapping
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ..fault_proxy.inject_spec import InjectSchedule
    from ..fault_proxy.proxy import FaultProxy

__all__ = ["InjectedProxy", "Upstream", "start_injected_proxy", "upstream_from_environment"]

GEMINI_API = "https://generativelanguage.googleapis.com"
_TRUE = frozenset({"1", "true", "yes", "on"})


@dataclass(frozen=True)
class Upstream:
    """Where the app's Live sessions would go, and which variable says so."""

    url: str
    variable: str
    vertex: bool


def upstream_from_environment(environ: MutableMapping[str, str]) -> Upstream:
    """The endpoint google-genai would use under ``environ`` (pure)."""
    vertex = any(
        environ.get(name, "").strip().lower() in _TRUE
        for name in ("GOOGLE_GENAI_USE_VERTEXAI", "GOOGLE_GENAI_USE_ENTERPRISE")
    )
    if not vertex:
        return Upstream(
            environ.get("GOOGLE_GEMINI_BASE_URL") or GEMINI_API, "GOOGLE_GEMINI_BASE_URL", False
        )
    url = environ.get("GOOGLE_VERTEX_BASE_URL")
    if not url:
        location = environ.get("GOOGLE_CLOUD_LOCATION", "").strip() or "us-central1"
        host = "aiplatform.googleapis.com"
        url = f"https://{host}" if location == "global" else f"https://{location}-{host}"
    return Upstream(url, "GOOGLE_VERTEX_BASE_URL", True)


class InjectedProxy:
    """A :class:`FaultProxy` running on an event loop of its own, in a daemon thread."""

    def __init__(self, proxy: FaultProxy) -> None:
        self.proxy = proxy
        self._ready = threading.Event()
        self._error: BaseException | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._stop: asyncio.Event | None = None
        self.bundle = ""
        self._thread = threading.Thread(target=self._run, name="adk-live-resume-proxy", daemon=True)

    def start(self, timeout: float = 30.0) -> None:
        self._thread.start()
        if not self._ready.wait(timeout):
            raise RuntimeError("the fault proxy did not start")
        if self._error is not None:
            raise RuntimeError(f"the fault proxy did not start: {self._error}")

    def stop(self, timeout: float = 10.0) -> None:
        if self._loop is not None and self._stop is not None:
            self._loop.call_soon_threadsafe(self._stop.set)
        self._thread.join(timeout)

    def _run(self) -> None:
        try:
            asyncio.run(self._serve())
        except BaseException as error:  # reported to start(); nothing else waits on it
            self._error = error
            self._ready.set()

    async def _serve(self) -> None:
        self._loop = asyncio.get_running_loop()
        self._stop = asyncio.Event()
        async with self.proxy:
            self.bundle = self.proxy.ca_bundle()
            self._ready.set()
            await self._stop.wait()


def start_injected_proxy(
    schedule: InjectSchedule, environ: MutableMapping[str, str]
) -> InjectedProxy:
    """Start the proxy for ``environ``'s endpoint and point ``environ`` at it."""
    from ..fault_proxy.proxy import FaultProxy

    upstream = upstream_from_environment(environ)
    running = InjectedProxy(
        FaultProxy(upstream.url, upstream_cert=environ.get("SSL_CERT_FILE"), schedule=schedule)
    )
    running.start()
    environ[upstream.variable] = running.proxy.base_url
    environ["SSL_CERT_FILE"] = running.bundle
    for name in ("NO_PROXY", "no_proxy"):
        hosts = [h for h in environ.get(name, "").split(",") if h]
        environ[name] = ",".join([*hosts, *(h for h in ("127.0.0.1",) if h not in hosts)])
    return running
