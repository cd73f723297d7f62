"""The restoration plan: what a resumed or fresh session is sent, as a value (no sockets).

End to end, ``serve`` carries the plan out: ``tests/e2e/test_resume_e2e.py`` and the soaks.
"""

from __future__ import annotations

import pytest
from google.genai import types

from adk_live_resume.conversation.fresh_history import HistoryFacts
from adk_live_resume.conversation.outbox import Outbox, Replay
from adk_live_resume.resumption.handle_coverage import CatchUp
from adk_live_resume.resumption.restoration import plan_fresh_start, plan_restoration

from ...helpers import content, tool_response, typed_turn


def _outbox_with_an_exchange_and_a_waiting_turn() -> Outbox:
    outbox = Outbox()
    outbox.record("send_client_content", typed_turn("hello"))
    outbox.model_text("hi there")
    outbox.turn_complete()
    outbox.record("send_client_content", typed_turn("and the weather?"))
    return outbox


def test_a_resume_sends_the_finished_exchange_as_context_first_then_the_waiting_turn() -> None:
    plan = plan_restoration(
        _outbox_with_an_exchange_and_a_waiting_turn().take_replay(), resumed=True
    )

    assert plan.resumed and plan.history == ()
    (context_method, context), (method, kwargs) = plan.sends
    assert context_method == "send_client_content" and context["turn_complete"] is False
    assert [(turn.role, turn.parts[0].text) for turn in context["turns"]] == [
        ("user", "hello"),
        ("model", "hi there"),
    ]
    assert (method, kwargs) == ("send_client_content", typed_turn("and the weather?"))
    assert plan.context_turns == 2
    assert plan.replayed == 1 and plan.replayed_messages == 2
    assert plan.described == ("send_client_content('and the weather?')",)


def test_a_resume_puts_a_stored_handles_catch_up_before_the_replay() -> None:
    replay = _outbox_with_an_exchange_and_a_waiting_turn().take_replay()
    catch_up = CatchUp(context=[("user", "earlier"), ("model", "noted")], unanswered=["late"])

    plan = plan_restoration(replay, resumed=True, catch_up=catch_up)

    context = plan.sends[0][1]["turns"]
    assert [turn.parts[0].text for turn in context] == ["earlier", "noted", "hello", "hi there"]
    assert plan.described == (
        "send_client_content('late')",
        "send_client_content('and the weather?')",
    )
    assert plan.sends[1][1]["turn_complete"] is True


def test_the_bookkeeping_of_a_resume_is_in_the_plan() -> None:
    outbox = Outbox()
    outbox.tool_call(["c1"])
    outbox.record("send_tool_response", tool_response("c1"))
    outbox.model_text("done")
    outbox.turn_complete()
    outbox.tool_call(["c2"])
    outbox.record("send_tool_response", tool_response("c2"))

    plan = plan_restoration(outbox.take_replay(unknown_call_ids={"c2"}), resumed=True)

    assert plan.context_calls == ("c1",)
    assert plan.dropped_responses == ("c2",)
    assert plan.described == ()  # (the response was all the send carried)


def test_a_fresh_start_sends_its_history_and_no_context() -> None:
    history = (content("user", "hello"), content("model", "hi"))

    plan = plan_restoration(Replay(), resumed=False, history=history)

    assert not plan.resumed and plan.history == history
    assert plan.sends == () and plan.context_turns == 0


def test_a_resume_with_a_history_and_a_fresh_start_with_a_catch_up_are_refused() -> None:
    with pytest.raises(ValueError, match="resumed session gets no history"):
        plan_restoration(Replay(), resumed=True, history=(content("user", "x"),))
    with pytest.raises(ValueError, match="holds the catch-up"):
        plan_restoration(Replay(), resumed=False, catch_up=CatchUp(unanswered=["x"]))


def test_a_fresh_start_plans_its_history_from_the_outbox_facts() -> None:
    response = types.Content(
        role="user",
        parts=[types.Part(function_response=types.FunctionResponse(id="c1", name="f"))],
    )
    contents = [content("user", "what time is it"), response, content("user", "tell me")]
    facts = HistoryFacts(transcript="tell me", speaking=False)

    start = plan_fresh_start(contents, contents, facts)

    assert start.answered_in_history == frozenset({"c1"})
    assert start.utterance_in_history  # (the user finished: the history answers it)
    assert start.waiting_in_history == ("what time is it", "tell me")
    assert start.history[-1].parts[0].text == "tell me"


def test_a_fresh_start_leaves_the_utterance_the_user_still_speaks_to_the_audio() -> None:
    contents = [content("user", "tell me")]

    start = plan_fresh_start(contents, contents, HistoryFacts(transcript="tell me", speaking=True))

    assert not start.utterance_in_history
    assert start.history == ()


def test_the_outbox_facts_are_the_queries_read_at_once() -> None:
    outbox = _outbox_with_an_exchange_and_a_waiting_turn()

    facts = outbox.history_facts()
    outbox.model_text("sunny")

    assert facts == HistoryFacts(
        outbox.utterance_transcript(),
        speaking=outbox.activity.speaking,
        fragments=(),
        stored="",
        cut=(),
        unanswered=("and the weather?",),
        answered_last=False,
        responses_sent_last=frozenset(),
    )
    assert outbox.typed_turns_unanswered() == []  # (later records leave the value alone)
