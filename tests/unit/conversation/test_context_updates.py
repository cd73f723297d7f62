"""Context updates (pure): what a fresh session's setup carries, which unknown sends a new
session may lack; the fake's reading of ``contextUpdate``; late results as content."""

from __future__ import annotations

from typing import Any

from google.adk.models.llm_request import LlmRequest
from google.genai import types
from hypothesis import given
from hypothesis import strategies as st

from adk_live_resume.conversation.context_updates import ContextUpdates
from adk_live_resume.conversation.late_results import as_content
from adk_live_resume.conversation.tool_calls import LateResult
from adk_live_resume.testing.context_update import NO_UPDATE, read_context_update
from adk_live_resume.testing.families import GEMINI_2_LIVE, GEMINI_3_8_LIVE
from adk_live_resume.testing.setup_choices import read_setup

WEATHER = types.Tool(
    function_declarations=[types.FunctionDeclaration(name="get_weather", description="w")]
)


def _request() -> LlmRequest:
    return LlmRequest(
        model="m",
        config=types.GenerateContentConfig(system_instruction="Be kind.", tools=[WEATHER]),
        live_connect_config=types.LiveConnectConfig(tools=[WEATHER]),
    )


def test_no_update_leaves_the_request_as_it_is() -> None:
    request = _request()
    assert ContextUpdates().applied_to(request) is request


def test_the_newest_update_of_each_field_goes_in_a_copy_of_the_request() -> None:
    context = ContextUpdates()
    context.on_update({"system_instruction": "First."})
    context.on_update({"tools": []})
    context.on_update({"system_instruction": types.Content(parts=[types.Part(text="Second.")])})
    request = _request()
    fresh = context.applied_to(request)
    assert fresh.config.system_instruction == "Second."
    assert fresh.config.tools is None and fresh.live_connect_config.tools is None
    assert request.config.system_instruction == "Be kind.", "the caller's request untouched"
    assert request.config.tools == [WEATHER] and request.live_connect_config.tools == [WEATHER]


def test_tools_set_alone_keep_the_setup_instruction() -> None:
    context = ContextUpdates()
    context.on_update({"tools": [WEATHER]})
    fresh = context.applied_to(
        LlmRequest(model="m", config=types.GenerateContentConfig(system_instruction="Hi."))
    )
    assert fresh.config.system_instruction == "Hi." and fresh.config.tools == [WEATHER]
    assert not context.untranslatable_tools()
    context.on_update({"tools": [lambda city: city]})
    assert context.untranslatable_tools()


@given(
    st.lists(st.tuples(st.sampled_from(["send_a", "send_b", "handle"]), st.booleans()), max_size=12)
)
def test_unknown_sends_are_named_since_the_handle_on_resume_and_ever_on_a_fresh_start(
    steps: list[tuple[str, bool]],
) -> None:
    context = ContextUpdates()
    since: dict[str, None] = {}
    ever: dict[str, None] = {}
    for step, ask in steps:
        if step == "handle":
            context.on_handle()
            since.clear()
        else:
            context.on_unknown(step)
            since[step] = ever[step] = None
        if ask:
            fresh = step == "send_b"
            assert context.unaccounted(fresh=fresh) == tuple(ever if fresh else since)
            since.clear()  # named once per resume or fresh start


def test_the_fake_reads_what_an_update_sets_and_only_that() -> None:
    tools = {"tools": [{"functionDeclarations": [{"name": "a"}, {"name": "b"}]}]}
    update = read_context_update(tools, GEMINI_3_8_LIVE)
    assert update.functions == {"a", "b"} and update.non_blocking == {"a", "b"}
    assert update.system_instruction is None
    cleared = read_context_update({"tools": {"tools": []}}, GEMINI_2_LIVE)
    assert cleared.functions == frozenset()
    said = read_context_update({"systemInstruction": {"parts": [{"text": "Hi"}]}}, GEMINI_2_LIVE)
    assert said.functions is None and said.system_instruction == "Hi"
    context = NO_UPDATE.updated(update).updated(said)
    assert context.functions == {"a", "b"} and context.system_instruction == "Hi"
    choices = read_setup({"model": "models/gemini-live-fake", "tools": []})
    assert context.choices(choices).functions == {"a", "b"}
    assert NO_UPDATE.choices(choices) is choices


def test_late_results_go_as_a_call_and_its_response() -> None:
    late = [
        LateResult("fc_1", "job", {"name": "mail"}, {"ok": True}),
        LateResult("fc_2", "job", None, {"ok": False}),
    ]
    method, kwargs = as_content(late)
    assert method == "send_client_content" and kwargs["turn_complete"] is True
    model, user = kwargs["turns"]
    calls: list[Any] = [p.function_call for p in model.parts]
    responses: list[Any] = [p.function_response for p in user.parts]
    assert (model.role, user.role) == ("model", "user")
    assert [(c.id, c.name, c.args) for c in calls] == [
        ("fc_1", "job", {"name": "mail"}),
        ("fc_2", "job", {}),
    ]
    assert [(r.id, r.name, r.response) for r in responses] == [
        ("fc_1", "job", {"ok": True}),
        ("fc_2", "job", {"ok": False}),
    ]
