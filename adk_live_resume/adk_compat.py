"""What the installed google-adk release provides, found by feature, not by version string.

This is the only module that knows ADK's private names. The live loop calls ADK's own
per-connection steps through :class:`AdkSurface`:

* the send step (queue -> model) and the receive step (model -> events, tool calls,
  callbacks, transcription), which are ``BaseLlmFlow._send_to_model`` /
  ``_receive_from_model`` methods up to 2.6 and ``send_to_model`` / ``receive_from_model``
  module functions from 2.9 (``flows/llm_flows/_live_llm_flow.py``, later ``live/``);
* request preprocessing (``_preprocess_async``, with ``live=True`` where accepted);
* model resolution (``await flow._get_llm(ctx)`` from 2.9, the name-mangled sync
  ``_BaseLlmFlow__get_llm`` before);
* optional helpers that only some releases have (background tool shutdown, the internal
  reconnect sentinel of 2.x, transfer and task-completion delays).

The version string is used for one thing only: the supported-range check of ``install()``.
"""

from __future__ import annotations

import functools
import importlib
import inspect
from collections.abc import AsyncGenerator, Awaitable, Callable, Coroutine
from dataclasses import dataclass
from types import ModuleType
from typing import Any, Literal

from .errors import UnsupportedAdkVersionError

#: The google-adk releases this package is tested with (keep in step with pyproject.toml).
SUPPORTED_ADK_MIN = (1, 27, 0)
SUPPORTED_ADK_BELOW = (2, 14, 0)
SUPPORTED_ADK_TEXT = ">=1.27.0,<2.14"

SendStep = Callable[[Any, Any, Any, Any], Coroutine[Any, Any, None]]
ReceiveStep = Callable[[Any, Any, Any, Any, str], AsyncGenerator[Any, None]]

_LIVE_FLOW_MODULES = (
    "google.adk.live._live_llm_flow",  # 2.11+
    "google.adk.flows.llm_flows._live_llm_flow",  # 2.9 - 2.10
)
_HELPER_MODULES = (
    "google.adk.live._flow_utils",  # 2.11+
    *_LIVE_FLOW_MODULES,
    "google.adk.flows.llm_flows.base_llm_flow",  # every release
)


def adk_version() -> str:
    """The installed google-adk version string."""
    from google.adk import version

    return str(version.__version__)


def parse_version(text: str) -> tuple[int, int, int]:
    """``"2.13.0"`` -> ``(2, 13, 0)``; suffixes such as ``rc1`` are ignored."""
    parts: list[int] = []
    for piece in text.split(".")[:3]:
        digits = "".join(ch for ch in piece if ch.isdigit()) or "0"
        parts.append(int(digits))
    while len(parts) < 3:
        parts.append(0)
    return parts[0], parts[1], parts[2]


def check_supported_version(version: str | None = None) -> None:
    """Raise :class:`UnsupportedAdkVersionError` if ``version`` is outside the tested range."""
    version = version or adk_version()
    if not (SUPPORTED_ADK_MIN <= parse_version(version) < SUPPORTED_ADK_BELOW):
        raise UnsupportedAdkVersionError(
            f"adk-live-resume supports google-adk {SUPPORTED_ADK_TEXT}, but {version} is "
            "installed. Install a supported release (pip install 'google-adk"
            f"{SUPPORTED_ADK_TEXT}'), or call install(strict=False) to try anyway."
        )


def _try_import(name: str) -> ModuleType | None:
    try:
        return importlib.import_module(name)
    except ImportError:
        return None


def _find(name: str) -> Any:
    for module_name in _HELPER_MODULES:
        module = _try_import(module_name)
        if module is not None and hasattr(module, name):
            return getattr(module, name)
    return None


@dataclass(frozen=True)
class AdkSurface:
    """The ADK functions the live loop calls, bound the way the installed release wants."""

    version: str
    send_step: SendStep
    receive_step: ReceiveStep
    preprocess_takes_live: bool
    get_llm_is_async: bool
    stop_background_tools: Callable[[Any], Awaitable[None]] | None
    reconnect_sentinel: type | None
    transfer_delay: float
    task_completion_delay: float
    #: How the loop was found, for diagnostics: "module functions" or "flow methods".
    shape: Literal["module functions", "flow methods"]

    def preprocess(self, flow: Any, ctx: Any, request: Any) -> AsyncGenerator[Any, None]:
        """ADK's request preprocessing for a live request."""
        if self.preprocess_takes_live:
            return flow._preprocess_async(ctx, request, live=True)  # type: ignore[no-any-return]
        return flow._preprocess_async(ctx, request)  # type: ignore[no-any-return]

    async def get_llm(self, flow: Any, ctx: Any) -> Any:
        """The model the agent goes live with."""
        if self.get_llm_is_async:
            return await flow._get_llm(ctx)
        return flow._BaseLlmFlow__get_llm(ctx)

    def sentinel_mode(self, event: Any) -> str | None:
        """``"resume"``/``"restart"`` if ``event`` is ADK's internal reconnect sentinel."""
        if self.reconnect_sentinel is None or not isinstance(event, self.reconnect_sentinel):
            return None
        mode = getattr(event, "mode", None)
        return str(getattr(mode, "value", mode) or "resume")


def _detect() -> AdkSurface:
    from google.adk.flows.llm_flows.base_llm_flow import BaseLlmFlow

    version = adk_version()
    send_step: SendStep
    receive_step: ReceiveStep
    shape: Literal["module functions", "flow methods"]
    module = next(
        (
            m
            for name in _LIVE_FLOW_MODULES
            if (m := _try_import(name)) is not None
            and callable(getattr(m, "send_to_model", None))
            and callable(getattr(m, "receive_from_model", None))
        ),
        None,
    )
    if module is not None:
        send_fn = module.send_to_model
        receive_fn = module.receive_from_model

        def send_step(flow: Any, conn: Any, ctx: Any, req: Any) -> Coroutine[Any, Any, None]:
            return send_fn(flow, conn, ctx, req)  # type: ignore[no-any-return]

        def receive_step(
            flow: Any, conn: Any, ctx: Any, req: Any, event_id: str
        ) -> AsyncGenerator[Any, None]:
            return receive_fn(flow, conn, ctx, req)  # type: ignore[no-any-return]

        shape = "module functions"
    elif hasattr(BaseLlmFlow, "_send_to_model") and hasattr(BaseLlmFlow, "_receive_from_model"):
        send_params = list(inspect.signature(BaseLlmFlow._send_to_model).parameters)

        def send_step(flow: Any, conn: Any, ctx: Any, req: Any) -> Coroutine[Any, Any, None]:
            if "llm_request" in send_params:
                return flow._send_to_model(conn, ctx, req)  # type: ignore[no-any-return]
            return flow._send_to_model(conn, ctx)  # type: ignore[no-any-return]

        def receive_step(
            flow: Any, conn: Any, ctx: Any, req: Any, event_id: str
        ) -> AsyncGenerator[Any, None]:
            return flow._receive_from_model(conn, event_id, ctx, req)  # type: ignore[no-any-return]

        shape = "flow methods"
    else:
        raise UnsupportedAdkVersionError(
            f"google-adk {version} has neither live send/receive module functions nor "
            "BaseLlmFlow._send_to_model/_receive_from_model; adk-live-resume supports "
            f"google-adk {SUPPORTED_ADK_TEXT}."
        )

    preprocess_params = inspect.signature(BaseLlmFlow._preprocess_async).parameters
    get_llm = getattr(BaseLlmFlow, "_get_llm", None)
    if get_llm is None and not hasattr(BaseLlmFlow, "_BaseLlmFlow__get_llm"):
        raise UnsupportedAdkVersionError(
            f"google-adk {version}: cannot find how a flow resolves its model."
        )
    return AdkSurface(
        version=version,
        send_step=send_step,
        receive_step=receive_step,
        preprocess_takes_live="live" in preprocess_params,
        get_llm_is_async=get_llm is not None and inspect.iscoroutinefunction(get_llm),
        stop_background_tools=_find("stop_background_tool_tasks"),
        reconnect_sentinel=_find("_ReconnectSentinel"),
        transfer_delay=float(_find("DEFAULT_TRANSFER_AGENT_DELAY") or 1.0),
        task_completion_delay=float(_find("DEFAULT_TASK_COMPLETION_DELAY") or 1.0),
        shape=shape,
    )


@functools.cache
def surface() -> AdkSurface:
    """The :class:`AdkSurface` of the installed release (detected once)."""
    return _detect()


def is_gemini(llm: Any) -> bool:
    """Whether ``llm`` is ADK's ``Gemini`` model (a google-genai live session underneath)."""
    from google.adk.models.google_llm import Gemini

    return isinstance(llm, Gemini)


def is_vertex(llm: Any) -> bool:
    """Whether a ``Gemini`` model talks to Vertex AI (where ``transparent`` is allowed)."""
    from google.adk.utils.variant_utils import GoogleLLMVariant

    return bool(getattr(llm, "_api_backend", None) == GoogleLLMVariant.VERTEX_AI)


def genai_session(connection: Any) -> Any:
    """The google-genai ``AsyncSession`` under an ADK ``GeminiLlmConnection``."""
    return connection._gemini_session


def set_genai_session(connection: Any, session: Any) -> None:
    """Replace the ``AsyncSession`` under an ADK ``GeminiLlmConnection`` (to tap it)."""
    connection._gemini_session = session


def websocket_of(session: Any) -> Any:
    """The ``websockets`` connection under a google-genai ``AsyncSession``, if reachable."""
    return getattr(session, "_ws", None)


def agent_to_run(flow: Any, ctx: Any, agent_name: str) -> Any:
    """The agent a ``transfer_to_agent`` names (ADK's own lookup)."""
    return flow._get_agent_to_run(ctx, agent_name)


def live_model_name(agent: Any) -> str | None:
    """The model name for live mode where the release distinguishes one (2.x)."""
    live_model = getattr(agent, "canonical_live_model", None)
    name = getattr(live_model, "model", None)
    return name if isinstance(name, str) else None


#: ADK loggers that print resumption handles whole (redacted by :mod:`adk_live_resume.patch`).
HANDLE_LOGGING_LOGGERS = (
    "google_adk.google.adk.live._live_llm_flow",
    "google_adk.google.adk.flows.llm_flows._live_llm_flow",
    "google_adk.google.adk.flows.llm_flows.base_llm_flow",
    "google_adk.google.adk.models.gemini_llm_connection",
)
