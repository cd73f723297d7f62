"""What the installed google-adk release provides, found by feature, not by version string.

This is the only module that knows ADK's private names (google-genai's are in
:mod:`adk_live_resume.compat.genai_compat`, websockets' in
:mod:`adk_live_resume.compat.websockets_compat`). The live loop calls ADK's own per-connection steps
through :class:`AdkSurface`. What differs across 1.27 - 2.13 (read from each release's wheel; see
docs/supported-releases.md):

* **send/receive steps** (queue -> model; model -> events, tool calls, callbacks,
  transcription): ``BaseLlmFlow._send_to_model`` / ``_receive_from_model`` methods up to 2.8;
  module functions ``send_to_model(flow, conn, ctx, req)`` / ``receive_from_model(flow, conn,
  ctx, req)`` in ``flows/llm_flows/_live_llm_flow.py`` (2.9 - 2.10), then in
  ``live/_live_llm_flow.py`` (2.11+; the methods are gone in 2.13). The method signatures
  differ too: ``_send_to_model`` takes the request from 2.8 on, ``_receive_from_model`` drops
  ``event_id`` from 2.9 on. Methods are bound by parameter name.
* **request preprocessing**: ``_preprocess_async(ctx, req)``; ``live=True`` from 2.13.
* **model resolution**: the name-mangled sync ``_BaseLlmFlow__get_llm`` up to 2.8,
  ``await flow._get_llm(ctx)`` from 2.9.
* **background tool shutdown**: none up to 2.7 (except 1.39); the flow method
  ``_stop_background_tool_tasks(ctx)`` in 1.39 and 2.8 - 2.10; a module function taking
  ``(flow, ctx)`` in 2.9 - 2.10 and ``(ctx)`` from 2.11.
* **ADK's internal reconnect sentinel** (``_ReconnectSentinel``, yielded by the receive step
  on goAway): in ``base_llm_flow`` in 1.36 - 1.39 and 2.4 - 2.8 (no ``mode``), next to the
  module functions from 2.9 (with ``mode`` resume/restart). Taken from the namespace of the
  receive step actually used, so it is the class that step yields.
* ``LlmResponse.go_away`` from 1.29; ``LiveRequestQueue.closed`` from 2.9.
* **a history answered on Gemini 3.x Live**: newer releases follow the history
  ``send_history`` sends with a placeholder realtime text (the model answers only at the
  next user input); 1.39 and 2.6 speak the 3.x dialect without it. See
  :func:`history_answer_trigger`.
* **NON_BLOCKING tools** (run in a background task; the response goes out through the
  ``LiveRequestQueue`` when the tool ends): none up to 1.36 and 2.0 - 2.4; the
  ``InvocationContext.active_non_blocking_tool_tasks`` field keyed ``f"{tool}_{call id}"``
  in 1.37 - 1.39 and 2.5 - 2.12; the private registry
  ``InvocationContext._active_background_tools`` keyed by call id from 2.13 (the field is a
  deprecated view of it there). See :func:`running_tool_task`.

The version string is used for one thing only: the supported-range check of ``install()``.
"""

from __future__ import annotations

import asyncio
import functools
import importlib
import inspect
import logging
from collections.abc import AsyncGenerator, Awaitable, Callable, Coroutine
from dataclasses import dataclass, field
from types import ModuleType
from typing import Any, Literal

from ..rules.errors import UnsupportedAdkVersionError
from ..rules.model_families import is_gemini_3_live

#: The oldest google-adk release the patch works with (keep in step with pyproject.toml's
#: lower bound). Older releases are refused unless ``install(strict=False)``.
SUPPORTED_ADK_MIN = (1, 27, 0)
#: The first release above the tested range. Newer releases are not refused (pyproject has no
#: upper cap): ``install()`` warns once and relies on feature detection (:func:`surface`).
TESTED_ADK_BELOW = (2, 14, 0)
TESTED_ADK_TEXT = ">=1.27.0,<2.14"
SendStep = Callable[[Any, Any, Any, Any], Coroutine[Any, Any, None]]
ReceiveStep = Callable[[Any, Any, Any, Any, str], AsyncGenerator[Any, None]]
StopBackground = Callable[[Any, Any], Awaitable[None]]

_LIVE_FLOW_MODULES = (
    "google.adk.live._live_llm_flow",  # 2.11+
    "google.adk.flows.llm_flows._live_llm_flow",  # 2.9 - 2.10
)
_BASE_FLOW_MODULE = "google.adk.flows.llm_flows.base_llm_flow"
_HELPER_MODULES = (
    "google.adk.live._flow_utils",  # 2.10+
    *_LIVE_FLOW_MODULES,
    _BASE_FLOW_MODULE,  # every release
)

#: How background tool tasks are stopped when a live run ends (see the module docstring).
StopKind = Literal["function(ctx)", "function(flow, ctx)", "flow method", "none"]


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


VersionStatus = Literal["tested", "newer"]


def check_supported_version(version: str | None = None) -> VersionStatus:
    """Classify the installed (or given) google-adk release against the tested range.

    Returns ``"tested"`` inside it and ``"newer"`` above it (the caller warns and relies on
    feature detection). Raises :class:`UnsupportedAdkVersionError` below
    :data:`SUPPORTED_ADK_MIN`, which lacks what the patch needs.
    """
    version = version or adk_version()
    parsed = parse_version(version)
    if parsed < SUPPORTED_ADK_MIN:
        minimum = ".".join(map(str, SUPPORTED_ADK_MIN))
        raise UnsupportedAdkVersionError(
            f"adk-live-resume needs google-adk >= {minimum}, but {version} is installed. "
            f"Upgrade it (pip install -U 'google-adk>={minimum}'), or call "
            "install(strict=False) to try anyway."
        )
    return "tested" if parsed < TESTED_ADK_BELOW else "newer"


def unsupported(missing: str) -> UnsupportedAdkVersionError:
    """The error for an installed google-adk that lacks something the patch cannot do
    without (``missing``, in words): what to do first, within 120 bytes, then what is
    missing."""
    return UnsupportedAdkVersionError(
        f"google-adk {adk_version()} lacks what adk-live-resume needs: install a tested release"
        f" (google-adk{TESTED_ADK_TEXT}) or a newer adk-live-resume. Missing: {missing}."
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


def _parameters(function: Any) -> list[str]:
    """Parameter names of ``function`` (``self`` included for plain functions on a class)."""
    return list(inspect.signature(function).parameters)


async def _no_background_tools(flow: Any, ctx: Any) -> None:
    return None


@dataclass(frozen=True)
class AdkSurface:
    """The ADK functions the live loop calls, bound the way the installed release wants."""

    version: str
    send_step: SendStep
    receive_step: ReceiveStep
    preprocess_takes_live: bool
    get_llm_is_async: bool
    reconnect_sentinel: type | None
    transfer_delay: float
    task_completion_delay: float
    #: How the loop was found, for diagnostics: "module functions" or "flow methods".
    shape: Literal["module functions", "flow methods"]
    #: Module that holds the send/receive steps (diagnostics).
    live_module: str = _BASE_FLOW_MODULE
    #: How background tools are stopped on this release (diagnostics).
    stop_kind: StopKind = "none"
    #: ``LlmResponse.go_away`` exists: ADK surfaces goAway (1.29+).
    has_go_away_field: bool = False
    #: ``LiveRequestQueue.closed`` exists (2.9+).
    queue_has_closed: bool = False
    #: ADK's reconnect sentinel (``reconnect_sentinel``, which the receive step yields on
    #: goAway in 1.36 - 1.39 and 2.4+) carries a resume/restart ``mode`` (2.9+).
    sentinel_has_mode: bool = False
    _stop: StopBackground = field(default=_no_background_tools, repr=False)

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

    async def stop_background(self, flow: Any, ctx: Any) -> None:
        """Cancel the background tool tasks (streaming, non-blocking) this live run started.

        A no-op on releases that do not track them.
        """
        await self._stop(flow, ctx)

    def sentinel_mode(self, event: Any) -> str | None:
        """``"resume"``/``"restart"`` if ``event`` is ADK's internal reconnect sentinel."""
        if self.reconnect_sentinel is None or not isinstance(event, self.reconnect_sentinel):
            return None
        mode = getattr(event, "mode", None)
        return str(getattr(mode, "value", mode) or "resume")


def _live_flow_module() -> ModuleType | None:
    """The module with ``send_to_model``/``receive_from_model`` functions (2.9+), if any."""
    for name in _LIVE_FLOW_MODULES:
        module = _try_import(name)
        if (
            module is not None
            and callable(getattr(module, "send_to_model", None))
            and callable(getattr(module, "receive_from_model", None))
        ):
            return module
    return None


def _module_steps(module: ModuleType) -> tuple[SendStep, ReceiveStep]:
    send_fn = module.send_to_model
    receive_fn = module.receive_from_model
    if _parameters(send_fn)[:1] != ["flow"] or _parameters(receive_fn)[:1] != ["flow"]:
        raise unsupported(
            f"{module.__name__}.send_to_model/receive_from_model do not take the flow first"
        )

    def send_step(flow: Any, conn: Any, ctx: Any, req: Any) -> Coroutine[Any, Any, None]:
        return send_fn(flow, conn, ctx, req)  # type: ignore[no-any-return]

    def receive_step(
        flow: Any, conn: Any, ctx: Any, req: Any, event_id: str
    ) -> AsyncGenerator[Any, None]:
        return receive_fn(flow, conn, ctx, req)  # type: ignore[no-any-return]

    return send_step, receive_step


def _method_steps(flow_class: type) -> tuple[SendStep, ReceiveStep]:
    send_params = _parameters(flow_class._send_to_model)  # type: ignore[attr-defined]
    receive_params = _parameters(flow_class._receive_from_model)  # type: ignore[attr-defined]
    send_takes_request = "llm_request" in send_params  # 2.8+
    receive_takes_event_id = "event_id" in receive_params  # up to 2.8

    def send_step(flow: Any, conn: Any, ctx: Any, req: Any) -> Coroutine[Any, Any, None]:
        if send_takes_request:
            return flow._send_to_model(conn, ctx, req)  # type: ignore[no-any-return]
        return flow._send_to_model(conn, ctx)  # type: ignore[no-any-return]

    def receive_step(
        flow: Any, conn: Any, ctx: Any, req: Any, event_id: str
    ) -> AsyncGenerator[Any, None]:
        if receive_takes_event_id:
            return flow._receive_from_model(conn, event_id, ctx, req)  # type: ignore[no-any-return]
        return flow._receive_from_model(conn, ctx, req)  # type: ignore[no-any-return]

    return send_step, receive_step


def _background_stopper(flow_class: type) -> tuple[StopKind, StopBackground]:
    function = _find("stop_background_tool_tasks")
    if callable(function):
        params = _parameters(function)
        if len(params) == 1:  # 2.11+

            async def stop_ctx(flow: Any, ctx: Any) -> None:
                await function(ctx)

            return "function(ctx)", stop_ctx
        if len(params) == 2:  # 2.9 - 2.10: (flow, invocation_context)

            async def stop_flow_ctx(flow: Any, ctx: Any) -> None:
                await function(flow, ctx)

            return "function(flow, ctx)", stop_flow_ctx
    if callable(getattr(flow_class, "_stop_background_tool_tasks", None)):  # 1.39, 2.8

        async def stop_method(flow: Any, ctx: Any) -> None:
            await flow._stop_background_tool_tasks(ctx)

        return "flow method", stop_method
    return "none", _no_background_tools


def _detect() -> AdkSurface:
    from google.adk.agents.live_request_queue import LiveRequestQueue
    from google.adk.flows.llm_flows.base_llm_flow import BaseLlmFlow
    from google.adk.models.llm_response import LlmResponse

    version = adk_version()
    send_step: SendStep
    receive_step: ReceiveStep
    shape: Literal["module functions", "flow methods"]
    module = _live_flow_module()
    if module is not None:
        send_step, receive_step = _module_steps(module)
        shape = "module functions"
        receive_module: ModuleType = module
    elif hasattr(BaseLlmFlow, "_send_to_model") and hasattr(BaseLlmFlow, "_receive_from_model"):
        send_step, receive_step = _method_steps(BaseLlmFlow)
        shape = "flow methods"
        receive_module = importlib.import_module(_BASE_FLOW_MODULE)
    else:
        raise unsupported(
            "neither live send/receive module functions nor"
            " BaseLlmFlow._send_to_model/_receive_from_model"
        )

    preprocess_params = inspect.signature(BaseLlmFlow._preprocess_async).parameters
    get_llm = getattr(BaseLlmFlow, "_get_llm", None)
    if get_llm is None and not hasattr(BaseLlmFlow, "_BaseLlmFlow__get_llm"):
        raise unsupported("how a flow resolves its model (BaseLlmFlow._get_llm)")
    get_llm_is_async = get_llm is not None and inspect.iscoroutinefunction(get_llm)
    if get_llm is not None and not get_llm_is_async:
        raise unsupported("BaseLlmFlow._get_llm as a coroutine function")
    # The sentinel the receive step yields is the one its own module refers to.
    sentinel = getattr(receive_module, "_ReconnectSentinel", None)
    if not isinstance(sentinel, type):
        sentinel = None
    stop_kind, stop = _background_stopper(BaseLlmFlow)
    fields = getattr(sentinel, "model_fields", {}) if sentinel is not None else {}
    return AdkSurface(
        version=version,
        send_step=send_step,
        receive_step=receive_step,
        preprocess_takes_live="live" in preprocess_params,
        get_llm_is_async=get_llm_is_async,
        reconnect_sentinel=sentinel,
        transfer_delay=float(_find("DEFAULT_TRANSFER_AGENT_DELAY") or 1.0),
        task_completion_delay=float(_find("DEFAULT_TASK_COMPLETION_DELAY") or 1.0),
        shape=shape,
        live_module=receive_module.__name__,
        stop_kind=stop_kind,
        has_go_away_field="go_away" in LlmResponse.model_fields,
        queue_has_closed=isinstance(
            inspect.getattr_static(LiveRequestQueue, "closed", None), property
        ),
        sentinel_has_mode="mode" in fields,
        _stop=stop,
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


# ---- ADK internals the patch hooks (checked once: adk_live_resume.compat.hooks)
# ----------------------

#: ``GeminiLlmConnection``'s google-genai session (essential: without it nothing resumes).
ADK_GENAI_SESSION = "_gemini_session"
#: ADK's CLI logging set-up (``adk web``, ``adk api_server``, ``adk run``...): the module and
#: the functions it calls before serving (every release from 1.27 to 2.13).
ADK_CLI_LOGS_MODULE = "google.adk.cli.utils.logs"
ADK_CLI_LOGGING_SETUPS = ("setup_adk_logger", "log_to_tmp_folder")


class _Marker:
    """Stands for a value handed to a constructor, to see where it is kept."""


def probe_internals() -> dict[str, bool]:
    """Whether each ADK internal the patch hooks is where it looks for it, by its qualified
    name. Constructs a ``GeminiLlmConnection`` (no I/O) to find an attribute set in
    ``__init__``."""
    from google.adk.models.gemini_llm_connection import GeminiLlmConnection

    found: dict[str, bool] = {}
    marker = _Marker()
    try:
        found[f"GeminiLlmConnection.{ADK_GENAI_SESSION}"] = (
            getattr(GeminiLlmConnection(marker), ADK_GENAI_SESSION, None) is marker  # type: ignore[arg-type]
        )
    except Exception:
        found[f"GeminiLlmConnection.{ADK_GENAI_SESSION}"] = False
    return found


_cli_logging_hooked = False


def after_adk_cli_logging_setup(then: Callable[[], None]) -> None:
    """Call ``then()`` right after each time ADK's CLI sets logging up (``adk web``, ``adk
    api_server``, ``adk run``...: it configures the root logger before serving), from the
    moment its logs module is imported; nothing is imported here. The first call hooks it;
    later calls do nothing. On a release without those functions nothing is called."""
    global _cli_logging_hooked
    if _cli_logging_hooked:
        return
    _cli_logging_hooked = True

    def hook(module: ModuleType) -> None:
        for name in ADK_CLI_LOGGING_SETUPS:
            original = getattr(module, name, None)
            if callable(original):
                setattr(module, name, _then_after(original, then))

    from . import import_hook

    import_hook.after_import(ADK_CLI_LOGS_MODULE, hook)


def _then_after(original: Callable[..., Any], then: Callable[[], None]) -> Callable[..., Any]:
    @functools.wraps(original)
    def setup(*args: Any, **kwargs: Any) -> Any:
        result = original(*args, **kwargs)
        try:
            then()
        except Exception:  # never break ADK's CLI
            logging.getLogger("adk_live_resume").debug("after ADK's logging set-up", exc_info=True)
        return result

    return setup


def genai_session(connection: Any) -> Any:
    """The google-genai ``AsyncSession`` under an ADK ``GeminiLlmConnection``."""
    return getattr(connection, ADK_GENAI_SESSION)


def set_genai_session(connection: Any, session: Any) -> None:
    """Replace the ``AsyncSession`` under an ADK ``GeminiLlmConnection`` (to tap it)."""
    setattr(connection, ADK_GENAI_SESSION, session)


def unfinished_input_transcription(connection: Any) -> str:
    """The input transcription an ADK ``GeminiLlmConnection`` yielded as pieces and has not
    yet yielded as a finished transcription (it does at the next ``turnComplete``,
    ``generationComplete``, ``interrupted`` or ``finished``); "" if none. Every supported
    release keeps it in ``_input_transcription_text`` (Gemini 3.x Live on 2.x: always "")."""
    text = getattr(connection, "_input_transcription_text", "")
    return text if isinstance(text, str) else ""


def continue_input_transcription(connection: Any, text: str) -> None:
    """Make ``text`` the start of the unfinished input transcription of a new ADK connection
    (see :func:`unfinished_input_transcription`), so that its finished transcription holds
    the utterance whole."""
    current = getattr(connection, "_input_transcription_text", None)
    if text and isinstance(current, str):
        connection._input_transcription_text = text + current


def speaks_gemini_3_live(model_name: str | None) -> bool:
    """Whether this ADK release talks to ``model_name`` in the Gemini 3.x Live dialect.

    That family takes text as ``realtimeInput.text`` and rejects ``clientContent`` after the
    session started, so context cannot be replayed on it as client content. Releases that
    do not know the family (1.x) talk to every model the same way.
    """
    utils = _try_import("google.adk.utils.model_name_utils")
    check = getattr(utils, "_is_gemini_3_x_live", None)
    return bool(check(model_name)) if check is not None and model_name else False


@functools.cache
def holds_tool_calls_until_turn_complete() -> bool:
    """ADK's live connection holds a ``toolCall`` until the next ``turnComplete`` (1.28 and
    later, for every model but Gemini 3.x Live) instead of passing it on at once (1.27).

    Found by feature: the receive step of the installed ``GeminiLlmConnection`` collects
    ``tool_call_parts`` (its source is read, never run). False when the source is not
    readable (a frozen install): then by release, as every release from 1.28 on does.
    """
    from google.adk.models.gemini_llm_connection import GeminiLlmConnection

    try:
        source = inspect.getsource(GeminiLlmConnection.receive)
    except (OSError, TypeError):
        return parse_version(adk_version()) >= (1, 28, 0)
    return "tool_call_parts" in source


#: The realtime text that asks a Gemini 3.x Live model to answer the history it was given
#: (ADK 2.13's ``_RESPONSE_TRIGGER_TEXT``).
HISTORY_ANSWER_TRIGGER = "."


@functools.cache
def sends_history_answer_trigger() -> bool:
    """ADK's ``send_history`` asks a Gemini 3.x Live model to answer a history that ends with
    a user turn: after ``turnComplete`` such a model starts generating only at the next user
    input, so ADK follows the history with a placeholder realtime text (2.13's comment in
    ``GeminiLlmConnection.send_history``). Releases that speak the 3.x dialect without it
    (1.39, 2.6) leave the model waiting.

    Found by feature: ``send_history`` sends realtime input (its source is read, never run).
    True when the source is not readable (a frozen install): nothing is added then.
    """
    from google.adk.models.gemini_llm_connection import GeminiLlmConnection

    try:
        source = inspect.getsource(GeminiLlmConnection.send_history)
    except (OSError, TypeError):
        return True
    return "send_realtime_input" in source


def history_answer_trigger(
    connection: Any, contents: list[Any], model: str | None = None
) -> dict[str, Any] | None:
    """The ``send_realtime_input`` arguments to send after ADK's ``send_history(contents)``
    on ``connection`` (to ``model``) so that the model answers the history, where ADK does
    not send them itself (:func:`sends_history_answer_trigger`); ``None`` where nothing is
    owed: the history ends with the model's turn (it waits for the user), or the model is
    no Gemini 3.x Live model (it answers the history's ``turnComplete``). A release that
    does not speak the 3.x dialect (no ``_is_gemini_3_x_live`` on its connection: 1.27)
    never sends them: the model's name says whether it is owed."""
    if not contents or getattr(contents[-1], "role", None) != "user":
        return None
    dialect = getattr(connection, "_is_gemini_3_x_live", None)
    if dialect is None:
        return {"text": HISTORY_ANSWER_TRIGGER} if is_gemini_3_live(model) else None
    if dialect is not True:
        return None
    if sends_history_answer_trigger():
        return None
    return {"text": HISTORY_ANSWER_TRIGGER}


def runs_tools_in_background() -> bool:
    """The installed ADK runs NON_BLOCKING tools in the background (see the module docstring)."""
    from google.adk.agents.invocation_context import InvocationContext

    private = getattr(InvocationContext, "__private_attributes__", {})
    return "_active_background_tools" in private or (
        "active_non_blocking_tool_tasks" in InvocationContext.model_fields
    )


def running_tool_task(ctx: Any, call_id: str, name: str | None) -> asyncio.Task[Any] | None:
    """The task in which ADK runs call ``call_id`` of the NON_BLOCKING tool ``name``, while it
    runs; ``None`` otherwise (not started, ended, a blocking or streaming tool, or a release
    without NON_BLOCKING tools)."""
    task: Any = None
    registry = getattr(ctx, "_active_background_tools", None)  # 2.13+
    if isinstance(registry, dict):
        entry = registry.get(call_id)
        if entry is not None and not getattr(entry, "is_generator", False):
            task = getattr(entry, "task", None)
    elif "active_non_blocking_tool_tasks" in type(ctx).model_fields:  # 1.37 - 1.39, 2.5 - 2.12
        task = (ctx.active_non_blocking_tool_tasks or {}).get(f"{name}_{call_id}")
    if isinstance(task, asyncio.Task) and not task.done():
        return task
    return None


def agent_to_run(flow: Any, ctx: Any, agent_name: str) -> Any:
    """The agent a ``transfer_to_agent`` names (ADK's own lookup)."""
    return flow._get_agent_to_run(ctx, agent_name)


def live_model_name(agent: Any) -> str | None:
    """The model name for live mode where the release distinguishes one (2.x)."""
    live_model = getattr(agent, "canonical_live_model", None)
    name = getattr(live_model, "model", None)
    return name if isinstance(name, str) else None


#: ADK loggers that print resumption handles whole (redacted by
#: :mod:`adk_live_resume.launch.patch`).
HANDLE_LOGGING_LOGGERS = (
    "google_adk.google.adk.live._live_llm_flow",
    "google_adk.google.adk.flows.llm_flows._live_llm_flow",
    "google_adk.google.adk.flows.llm_flows.base_llm_flow",
    "google_adk.google.adk.models.gemini_llm_connection",
)
