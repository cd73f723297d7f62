"""Where the conformance suite runs: the fake server always, the real service when asked.

The ``target`` fixture is the fake (in this process, real TLS on 127.0.0.1) and, when
``GOOGLE_API_KEY`` is set (Gemini API) or ``GOOGLE_GENAI_USE_VERTEXAI=true`` with
``GOOGLE_CLOUD_PROJECT`` (Vertex AI, application default credentials), the real service too;
otherwise that parameter is skipped with a one-line reason. Never in CI: with ``CI`` set the
real service is skipped even with a key. Models are chosen per family and can be overridden
with ``ADK_LIVE_RESUME_CONFORMANCE_<FAMILY>_MODEL`` (families: TEXT, NATIVE_AUDIO, GEMINI_3_1,
GEMINI_3_8, GEMINI_3_8_EXTENDED_THINKING). Tests that wait for the service's own clocks (the
10-minute connection, the 15-minute audio session) run on the real service only with
``ADK_LIVE_RESUME_CONFORMANCE_SLOW=1``.
"""

from __future__ import annotations

import os
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field
from typing import Any

import pytest

from adk_live_resume.testing import FakeLiveServer

SLOW_ENV = "ADK_LIVE_RESUME_CONFORMANCE_SLOW"

#: Default model per family on the real service: (Gemini API, Vertex AI); None: no model of
#: that family is served on that backend (the test is skipped there). From
#: ``gemini-live-protocol.md``, newest section first: ``gemini-3.8-live`` and
#: ``gemini-3.8-live-extended-thinking`` are GA on both since 2026-09-15;
#: ``gemini-3.1-flash-live-preview`` is served on the Gemini API only and labelled legacy;
#: the Gemini API serves no model of the TEXT family any more (``gemini-live-2.5-flash-preview``
#: was shut down on 2025-12-09, the Gemini API changelog); the other 2.5 names come from
#: recordings and older docs, and whether each is still served is not confirmed: override
#: with ``ADK_LIVE_RESUME_CONFORMANCE_<FAMILY>_MODEL`` when the service refuses one. Each
#: case records the model it ran against (the junit property ``model``, which the
#: ``--report`` shows per row).
REAL_MODELS: dict[str, tuple[str | None, str | None]] = {
    # (gemini-live-2.5-flash-preview, the Gemini API's only Live model of this family, was
    # shut down on 2025-12-09: Gemini API changelog, notes "Field facts of 2026-11-29")
    "TEXT": (None, "gemini-live-2.5-flash"),
    "NATIVE_AUDIO": (
        "gemini-2.5-flash-native-audio-preview-09-2025",
        "gemini-live-2.5-flash-native-audio",
    ),
    "GEMINI_3_1": ("gemini-3.1-flash-live-preview", None),
    "GEMINI_3_8": ("gemini-3.8-live", "gemini-3.8-live"),
    "GEMINI_3_8_EXTENDED_THINKING": (
        "gemini-3.8-live-extended-thinking",
        "gemini-3.8-live-extended-thinking",
    ),
}
#: Why a family has no default on a backend, where a reason is known (else: not served).
NOT_SERVED = {
    ("TEXT", False): "gemini-live-2.5-flash-preview, the Gemini API's last Gemini 2.x Live"
    " model, was shut down on 2025-12-09 (Gemini API changelog)",
}
#: The same families on the fake: it recognises them by name.
FAKE_MODELS = {
    "TEXT": "gemini-live-fake",
    "NATIVE_AUDIO": "gemini-2.5-flash-native-audio-preview-09-2025",
    "GEMINI_3_1": "gemini-3.1-flash-live-preview",
    "GEMINI_3_8": "gemini-3.8-live",
    "GEMINI_3_8_EXTENDED_THINKING": "gemini-3.8-live-extended-thinking",
}


@dataclass
class Target:
    """One place the suite runs against."""

    name: str
    vertex: bool
    server: FakeLiveServer | None = None
    #: Records a property of the case in the junit XML (pytest's ``record_property``).
    record: Callable[[str, object], None] = lambda name, value: None
    #: The models this case asked for, in order (recorded as its ``model`` property).
    models: list[str] = field(default_factory=list)

    @property
    def is_fake(self) -> bool:
        return self.server is not None

    def client(self) -> Any:
        if self.server is not None:
            return self.server.genai_client(vertex=self.vertex)
        from google import genai

        return genai.Client()  # the user's own environment: key or Vertex credentials

    def model(self, family: str = "TEXT") -> str:
        """The model of ``family`` on this target (skips the case where none is served);
        recorded for the report."""
        if self.server is not None:
            return self._used(FAKE_MODELS[family])
        chosen = os.environ.get(f"ADK_LIVE_RESUME_CONFORMANCE_{family}_MODEL")
        served = chosen or REAL_MODELS[family][1 if self.vertex else 0]
        if served is None:
            backend = "Vertex AI" if self.vertex else "the Gemini API"
            why = NOT_SERVED.get((family, self.vertex), "")
            pytest.skip(
                f"no {family} model is served on {backend}"
                + (f": {why}" if why else "")
                + f"; set ADK_LIVE_RESUME_CONFORMANCE_{family}_MODEL to name one"
            )
        return self._used(served)

    def _used(self, model: str) -> str:
        if model not in self.models:
            self.models.append(model)
            self.record("model", ", ".join(self.models))
        return model

    def needs_the_clock(self) -> None:
        """Skip on the real service unless slow tests were asked for."""
        if not self.is_fake and os.environ.get(SLOW_ENV) != "1":
            pytest.skip(f"waits for the service's own clock; set {SLOW_ENV}=1 to run it")

    def needs_vertex(self) -> None:
        if not self.vertex:
            pytest.skip("a Vertex AI only feature; this target speaks the Gemini API")


def _real_target() -> tuple[str, bool] | str:
    """("real-...", vertex) when credentials are set; else the reason to skip."""
    if os.environ.get("CI"):
        return "CI is set: the real service is never tried in CI"
    vertex = os.environ.get("GOOGLE_GENAI_USE_VERTEXAI", "").lower() in {"1", "true"}
    if vertex and os.environ.get("GOOGLE_CLOUD_PROJECT"):
        return ("real-vertex", True)
    if not vertex and os.environ.get("GOOGLE_API_KEY"):
        return ("real-gemini-api", False)
    return "no GOOGLE_API_KEY (or Vertex credentials) set: the real service is not tried"


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    if "target" in metafunc.fixturenames:
        real = _real_target()
        params: list[Any] = ["fake", "fake-vertex"]
        if isinstance(real, str):
            params.append(pytest.param("real", marks=pytest.mark.skip(reason=real)))
        else:
            params.append(real[0])
        metafunc.parametrize("target", params, indirect=True)


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        if "tests/service/" in str(item.path).replace(os.sep, "/"):
            item.add_marker(pytest.mark.service)


@pytest.fixture
async def target(
    request: pytest.FixtureRequest, record_property: Callable[[str, object], None]
) -> AsyncIterator[Target]:
    name: str = request.param
    if name.startswith("real"):
        yield Target(name, vertex=name == "real-vertex", record=record_property)
        return
    # 600 s connections last 6 s; goAway 0.6 s before; the 15-minute audio session in 9 s.
    server = FakeLiveServer(time_scale=0.01, chunk_delay=0.01, refuse_resume_while_open=True)
    async with server:
        yield Target(name, vertex=name == "fake-vertex", server=server, record=record_property)
