"""Wire helpers: read client JSON in either key casing, build server JSON in camelCase.

Reading goes through :mod:`adk_live_resume.fault_proxy.wire_json` (either key casing, either
base64 alphabet), which the fault proxy shares; its names are importable from here too.

The SDK turns an unknown top-level server key into a ``TypeError``, so server messages are built
only by the functions here, each with one of the documented top-level keys.
"""

from __future__ import annotations

import base64
import json
from typing import Any

from ..fault_proxy.wire_json import (
    JsonDict,
    b64decode_any,
    camel,
    format_time_left,
    has,
    pick,
    pick_dict,
    pick_list,
    snake,
)

__all__ = [
    "JsonDict",
    "b64decode_any",
    "b64encode",
    "camel",
    "dumps",
    "format_time_left",
    "has",
    "pick",
    "pick_dict",
    "pick_list",
    "snake",
]


def b64encode(data: bytes) -> str:
    """Standard-alphabet base64, as the real server sends it."""
    return base64.b64encode(data).decode("ascii")


def dumps(message: JsonDict) -> str:
    """Serialize a server message compactly."""
    return json.dumps(message, separators=(",", ":"), ensure_ascii=False)


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
