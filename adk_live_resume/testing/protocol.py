"""Wire helpers: read client JSON in either key casing, build server JSON in camelCase.

The google-genai SDK sends a mix of ``camelCase`` and ``snake_case`` keys that differs between
releases (``turnComplete`` vs ``turn_complete``, ``mimeType`` vs ``mime_type``), so every read
goes through :func:`pick`, which accepts both spellings of a protocol key. User data inside
messages (function call arguments, function responses) is never renamed.

The SDK turns an unknown top-level server key into a ``TypeError``, so server messages are built
only by the functions here, each with one of the documented top-level keys.
"""

from __future__ import annotations

import base64
import binascii
import json
import re
from collections.abc import Mapping
from typing import Any

__all__ = [
    "JsonDict",
    "b64decode_any",
    "b64encode",
    "camel",
    "dumps",
    "format_time_left",
    "pick",
    "pick_dict",
    "pick_list",
    "snake",
]

JsonDict = dict[str, Any]

_CAMEL_BOUNDARY = re.compile(r"(?<!^)(?=[A-Z])")


def snake(name: str) -> str:
    """``turnComplete`` -> ``turn_complete`` (already snake names are unchanged)."""
    return _CAMEL_BOUNDARY.sub("_", name).lower()


def camel(name: str) -> str:
    """``turn_complete`` -> ``turnComplete`` (already camel names are unchanged)."""
    head, *rest = name.split("_")
    return head + "".join(part[:1].upper() + part[1:] for part in rest)


def pick(obj: Any, name: str, default: Any = None) -> Any:
    """Return ``obj[name]`` looked up under its snake_case or camelCase spelling.

    ``name`` may be given in either casing. Returns ``default`` when ``obj`` is not a mapping
    or holds neither spelling.
    """
    if not isinstance(obj, Mapping):
        return default
    for key in (name, snake(name), camel(name)):
        if key in obj:
            return obj[key]
    return default


def pick_dict(obj: Any, name: str) -> JsonDict | None:
    """Like :func:`pick` but return the value only if it is a dict."""
    value = pick(obj, name)
    return value if isinstance(value, dict) else None


def pick_list(obj: Any, name: str) -> list[Any]:
    """Like :func:`pick` but always return a list (empty when absent or not a list)."""
    value = pick(obj, name)
    return value if isinstance(value, list) else []


def has(obj: Any, name: str) -> bool:
    """True when ``obj`` holds ``name`` under either spelling (even with a falsy value)."""
    return isinstance(obj, Mapping) and any(key in obj for key in (name, snake(name), camel(name)))


def b64decode_any(data: str) -> bytes:
    """Decode base64 in the standard or the URL-safe alphabet, padded or not."""
    text = data.strip().replace("-", "+").replace("_", "/")
    text += "=" * (-len(text) % 4)
    try:
        return base64.b64decode(text, validate=False)
    except (binascii.Error, ValueError):
        return b""


def b64encode(data: bytes) -> str:
    """Standard-alphabet base64, as the real server sends it."""
    return base64.b64encode(data).decode("ascii")


def dumps(message: JsonDict) -> str:
    """Serialize a server message compactly."""
    return json.dumps(message, separators=(",", ":"), ensure_ascii=False)


def format_time_left(seconds: float) -> str:
    """Format a duration the way the service does: ``"57s"``, or ``"0.600s"`` when fractional."""
    seconds = max(0.0, seconds)
    if abs(seconds - round(seconds)) < 1e-9:
        return f"{round(seconds)}s"
    return f"{seconds:.3f}s"


def compact_json(value: Any) -> str:
    """Stable, compact JSON for answers: ``{"a":1}`` with sorted keys."""
    return json.dumps(value, separators=(",", ":"), sort_keys=True, ensure_ascii=False)


# ---- server messages (top-level keys are exactly the documented camelCase ones) ----


def setup_complete() -> JsonDict:
    return {"setupComplete": {}}


def server_content(**fields: Any) -> JsonDict:
    """``{"serverContent": {...}}`` with ``fields`` given in snake_case, sent in camelCase."""
    return {"serverContent": {camel(k): v for k, v in fields.items()}}


def text_part(text: str) -> JsonDict:
    return {"text": text}


def audio_part(pcm: bytes, sample_rate: int = 24000) -> JsonDict:
    return {"inlineData": {"mimeType": f"audio/pcm;rate={sample_rate}", "data": b64encode(pcm)}}


def tool_call(calls: list[JsonDict]) -> JsonDict:
    return {"toolCall": {"functionCalls": calls}}


def tool_call_cancellation(ids: list[str]) -> JsonDict:
    return {"toolCallCancellation": {"ids": ids}}


def go_away(time_left: str) -> JsonDict:
    return {"goAway": {"timeLeft": time_left}}


def resumption_update(
    *, new_handle: str | None, resumable: bool, last_consumed_index: int | None
) -> JsonDict:
    body: JsonDict = {}
    if new_handle is not None:
        body["newHandle"] = new_handle
    body["resumable"] = resumable
    if last_consumed_index is not None:
        body["lastConsumedClientMessageIndex"] = str(last_consumed_index)
    return {"sessionResumptionUpdate": body}


def usage(
    prompt_tokens: int,
    response_tokens: int,
    *,
    response_modality: str = "TEXT",
    thoughts_tokens: int = 0,
) -> JsonDict:
    """One turn's ``usageMetadata``: the prompt (the whole context, counted again each turn),
    the answer and the model's thinking, with the per-modality details the recordings show."""
    body: JsonDict = {
        "promptTokenCount": prompt_tokens,
        "responseTokenCount": response_tokens,
        "totalTokenCount": prompt_tokens + response_tokens + thoughts_tokens,
        "promptTokensDetails": [{"modality": "TEXT", "tokenCount": prompt_tokens}],
        "responseTokensDetails": [{"modality": response_modality, "tokenCount": response_tokens}],
    }
    if thoughts_tokens:
        body["thoughtsTokenCount"] = thoughts_tokens
    return body
