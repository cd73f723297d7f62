"""Token usage read as the service sends it (token_usage, connection_figures, context_check).

Pure: no sockets, no clock. The service's ``usageMetadata`` is per turn, not cumulative: its
``promptTokenCount`` counts the whole context again each turn (the field's figures are used
as they were measured: 3.1 Live 143, 181, 224; 2.5 native audio 373, 413, 452).
"""

from __future__ import annotations

import logging

import pytest
from google.genai import types

from adk_live_resume.conversation import connection_figures
from adk_live_resume.conversation.connection_figures import Answer, ConnectionFigures
from adk_live_resume.conversation.context_check import ContextCheck
from adk_live_resume.conversation.token_usage import (
    UNSPECIFIED,
    TokenUsage,
    context_survived,
    total,
)


def metadata(prompt: int, response: int = 10, **more: object) -> types.UsageMetadata:
    return types.UsageMetadata(
        prompt_token_count=prompt,
        response_token_count=response,
        total_token_count=prompt + response,
        **more,  # type: ignore[arg-type]
    )


def test_a_message_is_read_with_its_modalities() -> None:
    usage = TokenUsage.of(
        metadata(
            143,
            40,
            cached_content_token_count=100,
            thoughts_token_count=7,
            tool_use_prompt_token_count=3,
            prompt_tokens_details=[
                types.ModalityTokenCount(modality=types.MediaModality.TEXT, token_count=43),
                types.ModalityTokenCount(modality=types.MediaModality.AUDIO, token_count=100),
            ],
            response_tokens_details=[
                types.ModalityTokenCount(modality=types.MediaModality.AUDIO, token_count=40)
            ],
        )
    )
    assert (usage.prompt_tokens, usage.response_tokens, usage.total_tokens) == (143, 40, 183)
    assert (usage.cached_tokens, usage.thoughts_tokens, usage.tool_use_prompt_tokens) == (
        100,
        7,
        3,
    )
    assert usage.prompt_by_modality == (("AUDIO", 100), ("TEXT", 43))
    assert usage.response_by_modality == (("AUDIO", 40),)
    assert usage.reports == 1
    # each kind adds up to its total; what the service did not break down is unspecified
    assert usage.by_modality() == {
        "prompt": {"AUDIO": 100, "TEXT": 43},
        "response": {"AUDIO": 40},
        "cached": {UNSPECIFIED: 100},
        "thoughts": {UNSPECIFIED: 7},
        "tool_use_prompt": {UNSPECIFIED: 3},
    }


def test_turns_are_summed_as_sent_never_taken_as_cumulative() -> None:
    turns = [TokenUsage.of(metadata(prompt)) for prompt in (143, 181, 224)]
    summed = total(turns)
    assert summed is not None
    # 548 prompt tokens billed over three turns (a cumulative reading would say 224)
    assert summed.prompt_tokens == 548 and summed.response_tokens == 30
    assert summed.total_tokens == 578 and summed.reports == 3
    assert total([None, None]) is None and total([]) is None
    assert total([None, turns[0]]) == turns[0]


def test_an_empty_message_counts_nothing() -> None:
    usage = TokenUsage.of(types.UsageMetadata())
    assert usage == TokenUsage(reports=1)
    assert usage.by_modality() == {}


@pytest.mark.parametrize(
    ("before", "after", "survived"),
    [
        (452, 491, True),  # 2.5 native audio, the context kept and grown
        (224, 112, True),  # exactly half: not below it
        (224, 111, False),  # below half: lost
        (224, 30, False),
        (None, 30, None),  # no count before the reconnect: nothing to tell
        (224, None, None),
        (0, 30, None),
    ],
)
def test_the_context_survived_unless_the_prompt_fell_below_half(
    before: int | None, after: int | None, survived: bool | None
) -> None:
    assert context_survived(before, after) is survived


def test_an_answer_is_timed_from_the_user_turn_to_its_first_output() -> None:
    figures = ConnectionFigures()
    figures.output(0.5, 3)  # (output nobody asked for: a greeting, no answer)
    figures.answer_ended(0.6)
    figures.user_turn(1.0)  # a typed turn
    figures.output(1.25, 5)
    figures.output(1.5, 7)
    figures.answer_ended(2.0)
    figures.user_turn(3.0)  # voiced audio: the turn ends with its last voiced chunk
    figures.user_turn(3.5)
    figures.output(3.6)  # a tool call
    figures.answer_ended(3.7, interrupted=True)
    answers = figures.figures().answers
    assert answers == (
        Answer(250.0, 750.0, 12, 2.0),
        Answer(pytest.approx(100.0), pytest.approx(100.0), 0, 3.7, interrupted=True),
    )


def test_usage_keeps_the_first_and_the_latest_prompt_and_counts_turns_without_it() -> None:
    figures = ConnectionFigures()
    assert figures.figures().usage is None
    figures.answer_ended(1.0)
    assert figures.turns_since_usage == 1
    figures.usage(metadata(373))
    figures.usage(metadata(413))
    figures.usage(metadata(452))
    assert figures.turns_since_usage == 0
    counted = figures.figures()
    assert (counted.first_prompt_tokens, counted.last_prompt_tokens) == (373, 452)
    assert counted.usage is not None and counted.usage.prompt_tokens == 1238


def test_the_function_calls_of_each_tool_call_add_up() -> None:
    figures = ConnectionFigures()
    assert figures.figures().tool_calls == 0
    figures.tool_call(1)
    figures.tool_call(2)  # (parallel calls in one tool call)
    assert figures.figures().tool_calls == 3


def test_counting_can_be_switched_off_to_measure_its_cost() -> None:
    with connection_figures.off():
        figures = connection_figures.new()
        figures.user_turn(1.0)
        figures.output(1.1, 4)
        figures.answer_ended(1.2)
        figures.usage(metadata(10))
        figures.tool_call(2)
        assert figures.figures() == connection_figures.Figures()
    assert type(connection_figures.new()) is ConnectionFigures


def test_a_resumed_session_that_lost_its_context_is_told_and_warned_once(
    caplog: pytest.LogCaptureFixture,
) -> None:
    told: list[bool | None] = []
    check = ContextCheck(2, 224, fresh_start=False)
    check.waits(told.append, resumed=True)
    assert told == []  # waits for the first prompt count
    with caplog.at_level(logging.WARNING, logger="adk_live_resume.loop"):
        assert check.prompt(30) is False  # (the policy starts no fresh session)
        check.prompt(60)
        check.ended()
    assert told == [False] and check.verdict is False
    warnings = [r for r in caplog.records if r.levelno == logging.WARNING]
    assert len(warnings) == 1
    assert "fell from 224 to 30 tokens" in warnings[0].getMessage()
    assert "fresh_start_when_context_lost=True" in warnings[0].getMessage()


def test_the_policy_asks_a_fresh_session_for_a_lost_context() -> None:
    told: list[bool | None] = []
    check = ContextCheck(2, 224, fresh_start=True)
    check.waits(told.append, resumed=True)
    assert check.prompt(30) is True and told == [False]


def test_a_kept_context_is_told_true_and_nothing_is_asked() -> None:
    told: list[bool | None] = []
    check = ContextCheck(2, 224, fresh_start=True)
    check.waits(told.append, resumed=True)
    assert check.prompt(260) is False and told == [True]


@pytest.mark.parametrize("why", ["fresh session", "no count before", "ended", "two turns"])
def test_what_cannot_be_known_is_told_none(why: str) -> None:
    told: list[bool | None] = []
    check = ContextCheck(2, None if why == "no count before" else 224, fresh_start=True)
    check.waits(told.append, resumed=why != "fresh session")
    if why == "ended":
        check.ended()
    if why == "two turns":
        check.turn_ended(1)
        assert told == []
        check.turn_ended(2)
    assert told == [None]
    # a fresh session's prompt is not compared (nothing waits): no fresh start asked
    assert check.prompt(1) is False and told == [None]


def test_a_report_told_before_the_count_still_has_the_count_judged(
    caplog: pytest.LogCaptureFixture,
) -> None:
    told: list[bool | None] = []
    check = ContextCheck(2, 224, fresh_start=True)
    check.waits(told.append, resumed=True)
    check.waited()  # (REPORT_WAIT passed: the report goes, the context not known yet)
    assert told == [None] and check.verdict is None
    with caplog.at_level(logging.WARNING, logger="adk_live_resume.loop"):
        assert check.prompt(30) is True  # still judged: lost, and the policy asks a fresh start
        check.waited()
        check.ended()
    assert told == [None] and check.verdict is False
    assert len([r for r in caplog.records if r.levelno == logging.WARNING]) == 1
