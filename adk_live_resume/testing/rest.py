"""The fake's REST ``generateContent`` and ``streamGenerateContent``: what they answer, pure.

ADK's web UI sends a typed message through ``/run_sse``, which reaches the model with the REST
``generateContent`` (or ``streamGenerateContent?alt=sse``), not the Live API. The fake serves
both on its one port, in both dialects google-genai builds:

* Gemini API: ``/{version}/models/{model}:{method}``;
* Vertex AI: ``/{version}/projects/{p}/locations/{l}/publishers/google/models/{model}:{method}``
  and, in express mode (an API key, no project), ``/{version}/publishers/google/models/...``.

Guarantees:

* the answer is the live fake's (:class:`~adk_live_resume.testing.ScriptedModel`): the newest
  user turn with text is answered with the turns before it as memory, so ``echo: T``,
  ``recall`` and ``call <tool> {...}`` work alike over REST and Live. Function calls are
  answered with ``functionCall`` parts (each step of ``then`` in turn, as the responses
  arrive), then ``<tool> returned <json>``. NON_BLOCKING has no meaning over REST;
* every request is recorded as a :class:`RestCall` (the request body, the answer, the status)
  before it is answered; a request the fake cannot serve gets a Google-style JSON error with
  a message that says what it expected, never a dropped connection;
* nothing here does I/O: :mod:`~adk_live_resume.testing.http_front` reads and writes.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any, Literal

from .model import CallTools, Reply, ScriptedModel, Turn, split_chunks
from .protocol import JsonDict, pick, pick_list

__all__ = ["RestCall", "RestRoute", "answer_rest", "error_body", "parse_route", "sse_event"]

Dialect = Literal["gemini", "vertex"]

_METHODS = ("generateContent", "streamGenerateContent")
_ROUTE = re.compile(
    r"^/(?P<version>v[0-9a-z]+)/"
    r"(?:projects/[^/]+/locations/[^/]+/)?(?P<publisher>publishers/[^/]+/)?"
    r"(?:models|tunedModels)/(?P<model>[^/:]+):(?P<method>[A-Za-z]+)$"
)


@dataclass(frozen=True)
class RestRoute:
    """Where a REST request went: dialect, API version, model and method."""

    dialect: Dialect
    version: str
    model: str
    method: str
    stream: bool
    sse: bool


@dataclass
class RestCall:
    """One REST request the fake received, with what it answered.

    ``status`` is the HTTP status sent (200, or the error's); ``answer`` joins the text parts
    of the answer ("" for an error or a function call); ``function_calls`` names the calls the
    answer made.
    """

    http_method: str
    path: str
    route: RestRoute | None
    body: JsonDict | None
    status: int = 0
    answer: str = ""
    function_calls: list[str] = field(default_factory=list)
    error: str = ""

    def failed(self, status: int, error: str) -> None:
        """The call is answered with HTTP ``status`` and ``error``."""
        self.status, self.error = status, error

    def read(self, body: JsonDict) -> None:
        """The request's JSON ``body`` was read."""
        self.body = body

    @property
    def user_text(self) -> str:
        """The text of the newest user turn of the request ("" if none)."""
        turns = _turns(pick_list(self.body, "contents"))
        users = [turn.text for turn in turns if turn.role == "user" and turn.text]
        return users[-1] if users else ""


def parse_route(target: str) -> RestRoute | None:
    """The route of a request target (path and query), or None if it is no model method."""
    path, _, query = target.partition("?")
    match = _ROUTE.match(path)
    if match is None or match.group("method") not in _METHODS:
        return None
    method = match.group("method")
    return RestRoute(
        dialect="vertex" if match.group("publisher") else "gemini",
        version=match.group("version"),
        model=match.group("model"),
        method=method,
        stream=method == "streamGenerateContent",
        sse="alt=sse" in query.split("&"),
    )


def error_body(status: int, message: str) -> JsonDict:
    """A Google API error body, as both dialects send it."""
    names = {400: "INVALID_ARGUMENT", 404: "NOT_FOUND", 411: "INVALID_ARGUMENT", 500: "INTERNAL"}
    return {"error": {"code": status, "message": message, "status": names.get(status, "UNKNOWN")}}


def _text_of(content: Any) -> str:
    return "".join(str(pick(p, "text") or "") for p in pick_list(content, "parts"))


def _turns(contents: list[Any]) -> list[Turn]:
    return [Turn("model" if pick(c, "role") == "model" else "user", _text_of(c)) for c in contents]


def _declared_tools(body: JsonDict) -> list[str]:
    return [
        str(pick(declaration, "name"))
        for tool in pick_list(body, "tools")
        for declaration in pick_list(tool, "functionDeclarations")
    ]


def _decide(body: JsonDict) -> list[JsonDict]:
    """The answer's parts: text, or the function calls of the next step not yet answered."""
    contents = pick_list(body, "contents")
    turns = _turns(contents)
    asked = [i for i, turn in enumerate(turns) if turn.role == "user" and turn.text]
    if not asked:
        return [{"text": "you said nothing"}]
    last = asked[-1]
    decision = ScriptedModel(_declared_tools(body)).respond(turns[last].text, turns[:last])
    if isinstance(decision, Reply):
        return [{"text": decision.text}]
    assert isinstance(decision, CallTools)
    results = [
        (str(pick(response, "name")), pick(response, "response"))
        for content in contents[last + 1 :]
        for part in pick_list(content, "parts")
        if (response := pick(part, "functionResponse")) is not None
    ]
    answered = 0
    for step in decision.steps:
        if answered + len(step) > len(results):
            return [{"functionCall": {"name": c.name, "args": c.args}} for c in step]
        answered += len(step)
    return [{"text": ScriptedModel.after_tools(results).text}]


def _response(parts: list[JsonDict], route: RestRoute, finished: bool, prompt: int) -> JsonDict:
    answer_tokens = sum(len(str(p.get("text", "")).split()) for p in parts)
    response: JsonDict = {
        "candidates": [{"content": {"role": "model", "parts": parts}, "index": 0}],
        "modelVersion": route.model,
    }
    if finished:
        response["candidates"][0]["finishReason"] = "STOP"
        response["usageMetadata"] = {
            "promptTokenCount": prompt,
            "candidatesTokenCount": answer_tokens,
            "totalTokenCount": prompt + answer_tokens,
        }
    return response


def answer_rest(call: RestCall) -> list[JsonDict]:
    """The response bodies for ``call`` (one for ``generateContent``, the stream's chunks
    otherwise: text in at least three pieces, the last with ``finishReason`` and usage), and
    ``call`` completed with the answer. ``call.route`` and ``call.body`` must be set."""
    if call.route is None or call.body is None:
        raise ValueError("answer_rest needs a routed call with a JSON body")
    parts = _decide(call.body)
    prompt = sum(len(turn.text.split()) for turn in _turns(pick_list(call.body, "contents")))
    call.status = 200
    call.answer = "".join(str(p.get("text", "")) for p in parts)
    call.function_calls = [p["functionCall"]["name"] for p in parts if "functionCall" in p]
    if not call.route.stream or call.function_calls:
        return [_response(parts, call.route, True, prompt)]
    pieces = split_chunks(call.answer)
    return [
        _response([{"text": piece}], call.route, i == len(pieces) - 1, prompt)
        for i, piece in enumerate(pieces)
    ]


def sse_event(body: JsonDict) -> bytes:
    """One server-sent event carrying ``body``, as ``?alt=sse`` streams send them."""
    return b"data: " + json.dumps(body, separators=(",", ":")).encode() + b"\r\n\r\n"
