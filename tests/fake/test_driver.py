"""How the test driver reads an answer out of the events ``run_live`` yielded (ADK's shapes)."""

from __future__ import annotations

from typing import Any

import pytest
from google.adk.events.event import Event
from google.genai import types

from adk_live_resume.testing.driver import LiveDriver

pytestmark = pytest.mark.timeout(10)


def text(words: str, *, partial: bool = False, interrupted: bool | None = None) -> Event:
    return Event(
        author="agent",
        partial=partial,
        interrupted=interrupted,
        content=types.Content(role="model", parts=[types.Part(text=words)]),
    )


def streamed(words: str) -> list[Event]:
    """An answer as ADK passes it on: its pieces as partial text, then the whole, then the
    turn's end."""
    half = len(words) // 2
    return [
        text(words[:half], partial=True),
        text(words[half:], partial=True),
        text(words),
        Event(author="agent", turn_complete=True),
    ]


def call(name: str) -> list[Event]:
    return [
        Event(
            author="agent",
            content=types.Content(
                role="model", parts=[types.Part(function_call=types.FunctionCall(name=name))]
            ),
        ),
        Event(
            author="agent",
            content=types.Content(
                role="user",
                parts=[
                    types.Part(
                        function_response=types.FunctionResponse(name=name, response={"ok": 1})
                    )
                ],
            ),
        ),
    ]


async def answer(events: list[Any]) -> str:
    driver = LiveDriver(runner=None, session=None, queue=None, run_config=None)
    driver.events = events
    return await driver.answer_after(0, timeout=1)


async def test_an_answer_cut_off_and_passed_on_whole_is_not_part_of_the_next() -> None:
    """ADK 1.x passes a cut answer's text on whole, without its ``interrupted`` mark."""
    cut = [text("echo: For conte", partial=True), text("echo: For conte")]
    assert await answer(cut + streamed("echo: tmbpg")) == "echo: tmbpg"


async def test_an_answer_cut_off_with_its_interrupted_mark_is_not_part_of_the_next() -> None:
    cut = [text("echo: For conte", partial=True), text("echo: For conte", interrupted=True)]
    assert await answer(cut + streamed("echo: tmbpg")) == "echo: tmbpg"


async def test_text_before_a_tool_call_stays_part_of_the_answer() -> None:
    before = [text("let me look", partial=True), text("let me look"), *call("lookup")]
    assert await answer(before + streamed(" found it")) == "let me look found it"
