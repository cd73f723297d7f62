"""Live API JSON as both ends write it: keys in either casing, base64 in either alphabet.

The google-genai SDK sends a mix of ``camelCase`` and ``snake_case`` keys that differs between
releases (``turnComplete`` vs ``turn_complete``, ``mimeType`` vs ``mime_type``), so every read
goes through :func:`pick`, which accepts both spellings of a protocol key. User data inside
messages (function call arguments, function responses) is never renamed. A ``goAway``'s
``timeLeft`` is written as the service writes it (:func:`format_time_left`). The fault proxy
and the fake server (:mod:`adk_live_resume.testing.protocol`, which builds the server's
messages) both read the wire through these.
"""

from __future__ import annotations

import base64
import binascii
import re
from collections.abc import Mapping
from typing import Any

__all__ = [
    "JsonDict",
    "b64decode_any",
    "camel",
    "format_time_left",
    "has",
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


def format_time_left(seconds: float) -> str:
    """Format a duration the way the service does: ``"57s"``, or ``"0.600s"`` when fractional."""
    seconds = max(0.0, seconds)
    if abs(seconds - round(seconds)) < 1e-9:
        return f"{round(seconds)}s"
    return f"{seconds:.3f}s"
