"""withheld: user turns ADK's screening blocked never go back to the model as history."""

from __future__ import annotations

from adk_live_resume import withheld

from .helpers import content


def test_each_withheld_turn_leaves_the_history_once_and_nothing_else_does() -> None:
    history = [
        content("user", "hi"),
        content("model", "echo: hi"),
        content("user", "a forbidden thing"),
        content("model", "not allowed"),
        content("user", "a forbidden thing"),  # sent again later and answered: it stays
        content("model", "echo: a forbidden thing"),
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
        withheld.note("s1", content("user", f"t{n}"))
    withheld.note("s1", content("user", ""))  # nothing to keep out
    assert withheld.texts("s1")[0] == "t5" and len(withheld.texts("s1")) == withheld.MAX_TURNS
    assert withheld.texts("s2") == []
    withheld.forget("s1")
