"""The send plan: how an outgoing send is kept, and how its tool results are rewritten or held.

No sockets: :func:`plan_results` over a :class:`ResultsView`, and the book's view itself. End
to end, the watch carries the plan out (``tests/e2e/test_late_results_e2e.py``,
``tests/e2e/test_tool_calls_e2e.py`` and the soaks).
"""

from __future__ import annotations

from google.genai import types

from adk_live_resume.conversation.send_plan import Placement, ResultsPlan, plan_results, send_way
from adk_live_resume.conversation.tool_calls import ResultsView, ToolCallBook

from ...helpers import audio_input, tool_response, typed_turn


def _responses(*ids: str) -> dict[str, object]:
    return {
        "function_responses": [
            types.FunctionResponse(id=i, name="f", response={"n": n}) for n, i in enumerate(ids)
        ]
    }


def _ids(plan: ResultsPlan) -> list[str]:
    assert plan.send is not None
    return [str(r.id) for r in plan.send[1]["function_responses"]]


def test_how_a_send_is_kept() -> None:
    assert send_way("send_tool_response", history_going=False) == "recorded"
    assert send_way("send_client_content", history_going=True) == "history"
    assert send_way("send_something_new", history_going=False) == "unknown"
    assert send_way("send_something_new", history_going=True) == "unknown"


def test_a_send_without_results_goes_as_it_is() -> None:
    kwargs = audio_input(b"\0\0" * 160)
    assert plan_results("send_realtime_input", kwargs, ResultsView()).send == (
        "send_realtime_input",
        kwargs,
    )
    turn = typed_turn("hello")
    assert plan_results("send_client_content", turn, ResultsView()) == ResultsPlan(
        send=("send_client_content", turn)
    )


def test_a_result_for_a_held_repeat_goes_to_the_repeat_under_its_id_and_name() -> None:
    view = ResultsView(repeats={"c1": ("c2", "send_mail")})
    kwargs = _responses("c1")

    plan = plan_results("send_tool_response", kwargs, view)

    assert plan.readdress == {"c1": ("c2", "send_mail")}
    assert plan.results == (("c1", {"n": 0}), ("c2", {"n": 0}))
    (response,) = plan.send[1]["function_responses"] if plan.send else ()
    assert (response.id, response.name) == ("c2", "send_mail")
    assert kwargs == _responses("c1"), "the caller's kwargs are left as they were"


def test_a_result_the_session_never_saw_is_taken_out_and_told_as_content_where_due() -> None:
    view = ResultsView(unknown=frozenset({"c1", "c3"}), as_turn=frozenset({"c3"}))

    plan = plan_results("send_tool_response", _responses("c1", "c2", "c3"), view)

    assert _ids(plan) == ["c2"]
    assert plan.unknown == ("c1", "c3") and plan.as_turn == ("c3",)


def test_a_send_of_unknown_results_alone_is_not_made() -> None:
    view = ResultsView(unknown=frozenset({"c1"}))
    assert plan_results("send_tool_response", tool_response("c1"), view).send is None


def test_the_content_telling_late_results_goes_now_only_alone_and_while_the_user_is_quiet() -> None:
    turn = ("send_client_content", {"turns": [], "turn_complete": True})
    rest = ("send_tool_response", _responses("c2"))
    alone = ResultsPlan(unknown=("c1",), as_turn=("c1",))
    beside = ResultsPlan(unknown=("c1",), as_turn=("c1",), send=rest)

    assert alone.place(turn, user_busy=False) == Placement(turn)
    assert alone.place(turn, user_busy=True) == Placement(None, held=turn)
    assert beside.place(turn, user_busy=False) == Placement(rest, held=turn)
    assert beside.place(None, user_busy=False) == Placement(rest)
    assert alone.place(None, user_busy=False) == Placement(None)


def test_the_books_view_answers_as_the_book_does() -> None:
    book = ToolCallBook()
    book.on_calls([("c1", "send_mail", {"to": "a"})])
    book.on_resumed()  # the handle predates c1, which ADK still runs
    book.on_calls([("c2", "send_mail", {"to": "a"})], running=lambda i, _: i == "c1")

    view = book.results_view(["c1", "c9"])

    assert view.repeats == {"c1": ("c2", "send_mail")}
    assert view.unknown == frozenset({"c1"})  # (c2 is the resumed session's own)
    assert book.take_repeat("c1") == ("c2", "send_mail")
    assert book.results_view(["c1"]).repeats == {}, "a repeat is answered once"


async def test_the_traffic_carrying_a_plan_out_hands_each_repeat_over_once() -> None:
    from types import SimpleNamespace

    from adk_live_resume.rules.policy import ResumePolicy
    from adk_live_resume.shell.run_rules import RunRules
    from adk_live_resume.shell.tool_traffic import ToolTraffic

    rules = RunRules(ResumePolicy(), SimpleNamespace())
    book = rules.tool_calls
    book.on_calls([("c1", "send_mail", {"to": "a"})])
    book.on_resumed()  # the handle predates c1, which ADK still runs
    book.on_calls([("c2", "send_mail", {"to": "a"})], running=lambda i, _: i == "c1")
    traffic = ToolTraffic(rules, way=lambda count: "content", to_fresh_session=lambda why: None)

    first = traffic.rewrite("send_tool_response", _responses("c1"))
    again = traffic.rewrite("send_tool_response", _responses("c1"))

    assert first is not None and [r.id for r in first[1]["function_responses"]] == ["c2"]
    assert again is None, "c1 is the old connection's: its result went to the repeat once"
    assert book.reused == 1
