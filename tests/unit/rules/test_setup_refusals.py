"""The likely causes a 1007 at setup is explained with (pure): the Gemini 3.8 setup rules."""

from __future__ import annotations

from google.genai import types

from adk_live_resume.rules.errors import SessionLimitError, SessionNotResumableError
from adk_live_resume.rules.setup_refusals import explained, likely_causes

EXTENDED = "gemini-3.8-live-extended-thinking"


def _tool(**declaration: object) -> list[types.Tool]:
    return [types.Tool(function_declarations=[types.FunctionDeclaration(name="f", **declaration)])]


def test_plain_3_8_refuses_any_thinking_config() -> None:
    thinking = types.ThinkingConfig(thinking_level=types.ThinkingLevel.LOW)
    (cause,) = likely_causes("models/gemini-3.8-live", thinking, None)
    assert "refuses any thinkingConfig" in cause
    assert likely_causes("gemini-3.8-live", None, _tool(parameters_json_schema={})) == []


def test_extended_thinking_takes_low_medium_or_high_and_openapi_parameters() -> None:
    non_blocking = {"behavior": types.Behavior.NON_BLOCKING}
    fine = _tool(parameters=types.Schema(type=types.Type.OBJECT), **non_blocking)
    for level in ("LOW", "MEDIUM", "HIGH"):
        assert likely_causes(EXTENDED, types.ThinkingConfig(thinking_level=level), fine) == []
    assert likely_causes(EXTENDED, None, fine) == []
    (budget,) = likely_causes(EXTENDED, types.ThinkingConfig(thinking_budget=512), fine)
    assert "thinking_level low, medium or high" in budget
    (minimal,) = likely_causes(EXTENDED, types.ThinkingConfig(thinking_level="MINIMAL"), fine)
    assert "no minimal" in minimal
    (schema,) = likely_causes(EXTENDED, None, _tool(parameters_json_schema={}, **non_blocking))
    assert "not parameters_json_schema" in schema and "(f)" in schema
    (blocking,) = likely_causes(EXTENDED, None, _tool(parameters=types.Schema(type="OBJECT")))
    assert "NON_BLOCKING" in blocking


def test_other_families_have_no_such_rules() -> None:
    thinking = types.ThinkingConfig(thinking_budget=0)
    for model in ("gemini-live-fake", "gemini-3.1-flash-live-preview", "gemini-2.5-flash"):
        assert likely_causes(model, thinking, _tool(parameters_json_schema={})) == []


class _Request:
    model = "gemini-3.8-live"
    config = types.GenerateContentConfig(thinking_config=types.ThinkingConfig(thinking_budget=0))
    live_connect_config = types.LiveConnectConfig()


def test_only_a_1007_at_connect_is_explained_and_the_cause_is_kept() -> None:
    cause = RuntimeError("closed 1007")
    error = SessionNotResumableError("the live server ended the session with 1007.", code=1007)
    error.__cause__ = cause
    named = explained(error, _Request(), at_connect=True)
    assert named is not error and named.code == 1007 and named.__cause__ is cause
    assert str(named).startswith(str(error)) and "refuses any thinkingConfig" in str(named)
    assert explained(error, _Request(), at_connect=False) is error
    other = SessionNotResumableError("1008", code=1008)
    assert explained(other, _Request(), at_connect=True) is other
    limit = SessionLimitError("15 minutes", code=1007)
    assert explained(limit, _Request(), at_connect=True) is limit
    assert explained(error, object(), at_connect=True) is error
