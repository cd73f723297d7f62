"""Pointing google-genai and google-adk at a :class:`FakeLiveServer`, three ways.

* :func:`environment`: environment variables, for code that builds its own clients. They are
  read when a ``genai.Client`` is built, and ADK caches its clients per ``Gemini`` instance, so
  build agents inside the block.
* :func:`genai_client`: a bare ``google.genai.Client`` configured through ``http_options``
  (``base_url`` plus an SSL context in ``async_client_args``); no environment needed.
* :func:`fake_gemini`: an ADK ``Gemini`` model whose ``api_client`` and ``_live_api_client``
  are built for the server. Works on google-adk 1.27 (which ignores ``Gemini.base_url`` for
  live) and 2.x, without environment variables. Each instance is bound to one server, so clients
  never leak from one server (or test) to the next.

google-adk is imported only when :func:`fake_gemini` is first called.
"""

from __future__ import annotations

import contextlib
import functools
import os
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from google.adk.models import Gemini
    from google.genai import Client

__all__ = ["FAKE_API_KEY", "environment", "environment_variables", "fake_gemini", "genai_client"]

FAKE_API_KEY = "fake-gemini-live-key"
"""The placeholder API key clients pointed at the fake present (never a real key)."""

_REMOVED = (
    "GEMINI_API_KEY",
    "GOOGLE_CLOUD_PROJECT",
    "GOOGLE_CLOUD_LOCATION",
    "GOOGLE_GENAI_API_VERSION",
    "GOOGLE_VERTEX_BASE_URL",
    "GOOGLE_GEMINI_BASE_URL",
)


class _ServerAddress(Protocol):
    @property
    def base_url(self) -> str: ...

    @property
    def cert_path(self) -> str: ...


def environment_variables(server: _ServerAddress, *, vertex: bool = False) -> dict[str, str]:
    """The variables :func:`environment` sets (it also removes the others it knows of).

    Gemini API by default; ``vertex=True`` selects the Vertex AI dialect in express mode
    (``GOOGLE_GENAI_USE_ENTERPRISE`` / ``GOOGLE_GENAI_USE_VERTEXAI`` true, an API key and no
    project), where ``transparent`` session resumption is allowed.

    Both ``GOOGLE_GEMINI_BASE_URL`` and ``GOOGLE_VERTEX_BASE_URL`` name the server in either
    dialect: google-genai picks the base URL variable from the ``vertexai`` *argument*, not from
    the environment, so a bare ``genai.Client()`` (ADK's) reads ``GOOGLE_GEMINI_BASE_URL``
    even when ``GOOGLE_GENAI_USE_VERTEXAI`` makes it speak Vertex AI, and a
    ``genai.Client(vertexai=True)`` reads ``GOOGLE_VERTEX_BASE_URL``. Every client built under
    these variables, Live and REST alike, talks to the server only.
    """
    no_proxy = "127.0.0.1,localhost"
    flag = "true" if vertex else "false"
    return {
        "GOOGLE_API_KEY": FAKE_API_KEY,
        "GOOGLE_GENAI_USE_VERTEXAI": flag,
        "GOOGLE_GENAI_USE_ENTERPRISE": flag,
        "GOOGLE_GEMINI_BASE_URL": server.base_url,
        "GOOGLE_VERTEX_BASE_URL": server.base_url,
        "SSL_CERT_FILE": server.cert_path,
        "NO_PROXY": no_proxy,
        "no_proxy": no_proxy,
    }


@contextlib.contextmanager
def environment(server: _ServerAddress, *, vertex: bool = False) -> Iterator[dict[str, str]]:
    """Set the variables for ``server`` for the duration of the block; restore all exactly.

    A variable unset before is unset again afterwards; one set before gets its old value back,
    even if code inside the block changed or removed it. ``vertex=True``: the Vertex AI
    dialect (see :func:`environment_variables`).
    """
    wanted = environment_variables(server, vertex=vertex)
    with environ_set(wanted, removed=_REMOVED):
        yield dict(wanted)


@contextlib.contextmanager
def environ_set(wanted: dict[str, str], *, removed: tuple[str, ...] = ()) -> Iterator[None]:
    """``os.environ`` with ``wanted`` set and ``removed`` unset for the block; every one of
    them restored exactly afterwards (unset again, or its old value back)."""
    saved = {name: os.environ.get(name) for name in [*wanted, *removed]}
    try:
        for name in removed:
            os.environ.pop(name, None)
        os.environ.update(wanted)
        yield
    finally:
        for name, value in saved.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value


def _client(
    server: _ServerAddress,
    *,
    api_version: str | None,
    headers: dict[str, str],
    vertex: bool = False,
    keepalive: dict[str, float] | None = None,
) -> Client:
    import ssl

    from google import genai
    from google.genai import types

    # Trust the fake's certificate in every transport google-genai may pick: "ssl" for
    # aiohttp and the Live websocket, "verify" for httpx (sync, and async without aiohttp);
    # the SDK drops the key a transport does not take. It hands the keys of
    # async_client_args that websockets' connect() takes (ping_interval, ping_timeout) to it.
    trust = ssl.create_default_context(cafile=server.cert_path)
    options: dict[str, Any] = {
        "base_url": server.base_url,
        "client_args": {"verify": trust},
        "async_client_args": {"ssl": trust, "verify": trust, **(keepalive or {})},
    }
    if api_version is not None:
        options["api_version"] = api_version
    if headers:
        options["headers"] = headers
    # Vertex AI "express mode" (an API key, no project) needs no Google credentials.
    return genai.Client(
        vertexai=vertex, api_key=FAKE_API_KEY, http_options=types.HttpOptions(**options)
    )


def genai_client(
    server: _ServerAddress, *, api_version: str | None = None, vertex: bool = False
) -> Client:
    """A ``google.genai.Client`` for ``server``; ``api_version`` None keeps the SDK default.

    ``vertex=True`` speaks the Vertex AI dialect (express mode), where session resumption
    may be ``transparent``.
    """
    return _client(server, api_version=api_version, headers={}, vertex=vertex)


@functools.cache
def _fake_gemini_class() -> type[Gemini]:
    from functools import cached_property

    from google.adk.models import Gemini

    class FakeLiveGemini(Gemini):
        """ADK ``Gemini`` whose clients talk to one fake server (``fake_base_url``)."""

        fake_base_url: str
        fake_cert_path: str
        fake_vertex: bool = False
        fake_keepalive: dict[str, float] | None = None

        @cached_property
        def api_client(self) -> Client:
            return _client(
                self._fake_address(),
                api_version=None,
                headers=self._headers(),
                vertex=self.fake_vertex,
            )

        @cached_property
        def _live_api_client(self) -> Client:
            return _client(
                self._fake_address(),
                api_version=self._live_api_version,
                headers=self._headers(),
                vertex=self.fake_vertex,
                keepalive=self.fake_keepalive,
            )

        def _headers(self) -> dict[str, str]:
            try:
                return dict(self._tracking_headers())
            except Exception:  # tracking headers are a nicety, never a failure
                return {}

        def _fake_address(self) -> _ServerAddress:
            return _Address(self.fake_base_url, self.fake_cert_path)

    return FakeLiveGemini


class _Address:
    def __init__(self, base_url: str, cert_path: str) -> None:
        self._base_url = base_url
        self._cert_path = cert_path

    @property
    def base_url(self) -> str:
        return self._base_url

    @property
    def cert_path(self) -> str:
        return self._cert_path


def fake_gemini(
    server: _ServerAddress,
    *,
    model: str = "gemini-live-fake",
    vertex: bool = False,
    ping_interval: float | None = None,
    ping_timeout: float | None = None,
) -> Gemini:
    """An ADK ``Gemini`` bound to ``server``: ``LlmAgent(model=fake_gemini(server), ...)``.

    Its live client keeps ADK's live API version (``v1alpha`` on the Gemini API) and ADK's
    tracking headers. ``vertex=True`` makes it a Vertex AI model (express mode).
    ``ping_interval`` / ``ping_timeout``: the live websocket's keepalive, in real seconds
    (None keeps websockets' defaults, 20 s each).
    """
    keepalive = {
        name: value
        for name, value in (("ping_interval", ping_interval), ("ping_timeout", ping_timeout))
        if value is not None
    }
    cls: Any = _fake_gemini_class()
    gemini: Gemini = cls(
        model=model,
        fake_base_url=server.base_url,
        fake_cert_path=server.cert_path,
        fake_vertex=vertex,
        fake_keepalive=keepalive or None,
    )
    return gemini
