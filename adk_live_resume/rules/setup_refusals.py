"""Why the service may have refused a setup with 1007: the model family rules a request breaks.

A 1007 carries only "Request contains an invalid argument.", so a run that ends on one at
connect names what in its own request the model family refuses, when it finds something:
the Gemini 3.8 setup rules (``gemini-live-protocol.md``, "Field facts of 2026-11-29":
ProfSynapse/nexus PR 389 with a real-socket smoke test, google-gemini/cookbook PR 1379,
promptfoo PR 10956):

* ``gemini-3.8-live`` (without extended thinking) refuses any ``thinkingConfig``;
* ``gemini-3.8-live-extended-thinking`` takes a ``thinkingConfig`` only with
  ``thinkingLevel`` low, medium or high (not ``minimal``, not ``thinkingBudget``), and
  functions declared with OpenAPI ``parameters``, not ``parametersJsonSchema`` (which
  google-adk's ``FunctionTool`` uses for Python functions), NON_BLOCKING.

Guarantees: :func:`likely_causes` reads the request only (duck-typed: google-genai's
``LiveConnectConfig`` / ``GenerateContentConfig`` and ADK's ``LlmRequest`` have these
fields), never raises on a shape it does not know, and names nothing for other models;
:func:`explained` returns the error unchanged unless it is a 1007 at connect and a cause is
found. Pure: no I/O.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Any

from .errors import SessionNotResumableError

__all__ = ["THINKING_LEVELS", "explained", "likely_causes"]

#: The ``thinkingLevel`` values extended thinking takes.
THINKING_LEVELS = frozenset({"low", "medium", "high"})

_GEMINI_3_MINOR = re.compile(r"^gemini-3\.(\d+)-live")


def _value(item: object) -> str:
    return str(getattr(item, "value", item) or "").lower()


def _declarations(tools: object) -> Iterable[Any]:
    for tool in tools if isinstance(tools, (list, tuple)) else ():
        yield from getattr(tool, "function_declarations", None) or ()


def likely_causes(model: str | None, thinking: object, tools: object) -> list[str]:
    """What in a request for ``model`` its family refuses at setup: its ``thinking``
    config (``None``: none) and its ``tools`` (google-genai ``Tool`` objects)."""
    bare = (model or "").rpartition("/")[2]
    match = _GEMINI_3_MINOR.match(bare)
    if match is None or int(match.group(1)) < 8:
        return []
    causes: list[str] = []
    if "extended-thinking" not in bare:
        if thinking is not None:
            causes.append(
                f"{bare} refuses any thinkingConfig: remove thinking_config from the"
                " agent's generate_content_config (or its planner)"
            )
        return causes
    if thinking is not None:
        level = _value(getattr(thinking, "thinking_level", None))
        if getattr(thinking, "thinking_budget", None) is not None or level not in THINKING_LEVELS:
            causes.append(
                f"{bare} takes thinking_config only as thinking_level low, medium or high"
                " (no thinking_budget, no minimal)"
            )
    json_schema = [
        str(getattr(d, "name", "?"))
        for d in _declarations(tools)
        if getattr(d, "parameters_json_schema", None) is not None
    ]
    if json_schema:
        causes.append(
            f"{bare} needs function parameters as an OpenAPI schema (parameters), not"
            f" parameters_json_schema, which google-adk uses for Python functions"
            f" ({', '.join(json_schema[:5])}): declare them with types.Schema"
        )
    blocking = [
        str(getattr(d, "name", "?"))
        for d in _declarations(tools)
        if _value(getattr(d, "behavior", None)) != "non_blocking"
    ]
    if blocking:
        causes.append(
            f"{bare} is reported to need NON_BLOCKING functions ({', '.join(blocking[:5])})"
        )
    return causes


def request_causes(request: Any) -> list[str]:
    """:func:`likely_causes` for ADK's ``LlmRequest`` (its live config, then its config)."""
    live = getattr(request, "live_connect_config", None)
    config = getattr(request, "config", None)
    thinking = getattr(live, "thinking_config", None) or getattr(config, "thinking_config", None)
    tools = getattr(live, "tools", None) or getattr(config, "tools", None)
    return likely_causes(getattr(request, "model", None), thinking, tools)


def explained(
    error: SessionNotResumableError, request: Any, *, at_connect: bool
) -> SessionNotResumableError:
    """``error`` with the likely causes in ``request`` named, where it is a 1007 at connect
    and some are found; else ``error`` itself."""
    if error.code != 1007 or not at_connect or type(error) is not SessionNotResumableError:
        return error
    try:
        causes = request_causes(request)
    except Exception:  # (a request of a shape we do not know: the error as it was)
        return error
    if not causes:
        return error
    named = SessionNotResumableError(
        f"{error} Likely cause{'s' if len(causes) > 1 else ''} in this request: "
        + "; ".join(causes)
        + ".",
        code=error.code,
    )
    named.__cause__ = error.__cause__
    return named
