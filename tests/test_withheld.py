"""withheld: user turns ADK's screening blocked never go back to the model as history."""

from __future__ import annotations

from google.genai import types

from adk_live_resume import withheld


def _turn(role: str, text: str) -> types.Content:
    return types.Content(role=role, parts=[types.Part(text=text)])


def test_each_withheld_turn_leaves_the_history_once_and_nothing_else_does() -> None:
    history = [
        _turn("user", "hi"),
        _turn("model", "echo: hi"),
        _turn("user", "a forbidden thing"),
        _turn("model", "not allowed"),
        _turn("user", "a forbidden thing"),  # sent again later and answered: it stays
        _turn("model", "echo: a forbidden thing"),
    ]
    kept = withheld.without_withheld(history, ["a forbidden thing"])
    assert [withheld.content_text(c) for c in kept] == [
        "hi",
        "echo: hi",
        "not allowed",
        "a forbidden thing",
        "echo: a forbidden thing",
    ]
    assert len(history) == 6, "the session's contents are not changed"
    assert withheld.without_withheld(history, ["echo: hi"]) == history, "model turns stay"


def test_the_record_is_per_session_and_bounded() -> None:
    withheld.forget("s1")
    withheld.forget("s2")
    for n in range(withheld.MAX_TURNS + 5):
        withheld.note("s1", _turn("user", f"t{n}"))
    withheld.note("s1", _turn("user", ""))  # nothing to keep out
    assert withheld.texts("s1")[0] == "t5" and len(withheld.texts("s1")) == withheld.MAX_TURNS
    assert withheld.texts("s2") == []
    withheld.forget("s1")
