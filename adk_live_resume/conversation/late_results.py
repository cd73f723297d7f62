"""Late tool results as conversation content, for a session that takes no response under their ids.

A late result is one the current session cannot take as a ``toolResponse``: its call
belongs to an earlier connection or session.

Three field reports say the service does not act on a ``toolResponse`` whose id an earlier
connection issued (Pipecat PR 5497 sends such a result as conversation content; Strands
PR 4244 tells it in one turn naming the call, its arguments and its result). So a late
result goes as client content of two turns: the model's call (name, arguments, id) and the
user's function response (name, id, result), ending the turn so the model tells it.

Guarantees: the content names each call, its arguments and its result, in the order given,
and is built from the results alone (the caller decides when it is due, and that it goes
once). Pure: no I/O.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Literal

from google.genai import types

from .tool_calls import LateResult

#: How the model gets tool results that outlived their connection: as content in
#: mid-session, from a fresh session whose rebuilt history holds them, or not now.
LateResultsWay = Literal["content", "fresh_session", "later"]

__all__ = ["as_content"]


def as_content(results: Sequence[LateResult]) -> tuple[str, dict[str, Any]]:
    """``results`` as one ``send_client_content`` call: a model turn holding the calls and
    a user turn holding their responses, the turn complete."""
    calls = [
        types.Part(
            function_call=types.FunctionCall(
                id=late.call_id, name=late.name, args=dict(late.args or {})
            )
        )
        for late in results
    ]
    responses = [
        types.Part(
            function_response=types.FunctionResponse(
                id=late.call_id, name=late.name, response=late.result
            )
        )
        for late in results
    ]
    turns = [
        types.Content(role="model", parts=calls),
        types.Content(role="user", parts=responses),
    ]
    return "send_client_content", {"turns": turns, "turn_complete": True}
