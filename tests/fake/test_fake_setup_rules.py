"""The fake's Gemini 3.8 setup rules (pure), and a refused setup on the wire (real google-genai
over TLS): closed with 1007, the rule kept in the record, off behind ``setup_rules=False``."""

from __future__ import annotations

from typing import Any

import pytest
from google.genai import errors, types

from adk_live_resume.testing.families import family_for
from adk_live_resume.testing.setup_rules import broken_rule
from tests.fake.test_fake_server import live_session

pytestmark = pytest.mark.timeout(30)

EXTENDED = "gemini-3.8-live-extended-thinking"


def _setup(model: str, thinking: Any = None, **declaration: Any) -> dict[str, Any]:
    setup: dict[str, Any] = {"model": f"models/{model}", "generationConfig": {}}
    if thinking is not None:
        setup["generationConfig"]["thinkingConfig"] = thinking
    if declaration:
        setup["tools"] = [{"functionDeclarations": [{"name": "f", **declaration}]}]
    return setup


def _broken(setup: dict[str, Any]) -> str | None:
    return broken_rule(setup, family_for(setup["model"].rpartition("/")[2]))


def test_plain_3_8_refuses_a_thinking_config_and_takes_json_schema_functions() -> None:
    assert _broken(_setup("gemini-3.8-live", {"thinkingLevel": "low"})) == (
        "gemini-3.8-live takes no generationConfig.thinkingConfig"
    )
    assert _broken(_setup("gemini-3.8-live", parameters_json_schema={})) is None
    assert _broken(_setup("gemini-3.8-live")) is None


def test_extended_thinking_takes_low_medium_high_and_openapi_parameters_only() -> None:
    for level in ("low", "MEDIUM", "high"):
        assert _broken(_setup(EXTENDED, {"thinking_level": level})) is None
    assert _broken(_setup(EXTENDED)) is None, "no thinkingConfig: the default level"
    assert "not 'minimal'" in str(_broken(_setup(EXTENDED, {"thinkingLevel": "minimal"})))
    budget = _broken(_setup(EXTENDED, {"thinkingLevel": "low", "thinkingBudget": 0}))
    assert budget == f"{EXTENDED} takes no thinkingConfig.thinkingBudget"
    assert "parametersJsonSchema (function 'f')" in str(
        _broken(_setup(EXTENDED, parameters_json_schema={"type": "object"}))
    )
    assert _broken(_setup(EXTENDED, parameters={"type": "OBJECT"}, behavior="BLOCKING")) is None


@pytest.mark.parametrize("model", ["gemini-live-fake", "gemini-3.1-flash-live-preview"])
def test_other_families_take_any_of_it(model: str) -> None:
    assert _broken(_setup(model, {"thinkingBudget": 0}, parameters_json_schema={})) is None


@pytest.mark.parametrize("rules", [True, False], ids=["rules", "no-rules"])
async def test_a_setup_breaking_a_rule_is_closed_with_1007_unless_the_rules_are_off(
    fake_live_server_factory: Any, rules: bool
) -> None:
    server = await fake_live_server_factory(setup_rules=rules)
    if "thinking_config" not in types.LiveConnectConfig.model_fields:
        pytest.skip("this google-genai sends no thinking_config on a live setup")
    thinking = types.ThinkingConfig(thinking_budget=256)
    try:
        async with live_session(server, "gemini-3.8-live", thinking_config=thinking) as live:
            await live.send_realtime_input(text="hi")
        refused = None
    except errors.APIError as error:
        refused = error
    record = (await server.wait_for_connections(1, finished=True))[0]
    if rules:
        assert refused is not None and refused.code == 1007
        assert record.ended_by == "refused" and record.close_code == 1007
        assert record.setup_refused == "gemini-3.8-live takes no generationConfig.thinkingConfig"
    else:
        assert refused is None and record.setup_refused is None
