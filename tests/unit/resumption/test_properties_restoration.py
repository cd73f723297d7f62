"""Property: the restoration plan sends what the outbox took, once, in order, and changes nothing.

Random sessions (typed turns, function responses, model text, tool calls, input
transcriptions, turn ends, interruptions) are recorded in an :class:`Outbox`, as the live
loop records them; a resume takes the replay, a fresh start the audio and turns the history
lacks. The reference is :mod:`adk_live_resume.resumption.restoration`'s contract:

* a resume sends the replay's context first, as one turn that asks for no answer, then every
  replayed message once, as it was sent and in order, and no history; a stored handle's
  catch-up goes before both (its context before the replay's, its unanswered turns first);
* a fresh start sends its history and no context turn;
* the counts the logs and the report read match the sends, and the bookkeeping the tool-call
  book is told is the replay's;
* planning is pure: the replay and the contents are as they were, and the same input plans
  the same value.
"""

from __future__ import annotations

import copy

from hypothesis import given
from hypothesis import strategies as st

from adk_live_resume.conversation.fresh_history import HistoryFacts, response_ids, user_texts
from adk_live_resume.conversation.outbox import Outbox
from adk_live_resume.resumption.handle_coverage import CatchUp
from adk_live_resume.resumption.restoration import plan_fresh_start, plan_restoration

from ...helpers import content, tool_response, typed_turn

WORDS = st.sampled_from(["hello", "weather", "yes", "no", "later", "thanks"])
CALLS = st.sampled_from(["c1", "c2", "c3"])
STEP = st.one_of(
    st.tuples(st.just("typed"), WORDS),
    st.tuples(st.just("response"), CALLS),
    st.tuples(st.just("model_text"), WORDS),
    st.tuples(st.just("tool_call"), CALLS),
    st.tuples(st.just("input_text"), WORDS),
    st.tuples(st.sampled_from(["turn_complete", "interrupted"]), st.just("")),
)
SESSIONS = st.lists(STEP, max_size=20)
CATCH_UPS = st.one_of(
    st.none(),
    st.builds(
        CatchUp,
        context=st.lists(st.tuples(st.sampled_from(["user", "model"]), WORDS), max_size=3),
        unanswered=st.lists(WORDS, max_size=2),
    ),
)


def _played(session: list[tuple[str, str]]) -> Outbox:
    outbox = Outbox()
    for kind, value in session:
        if kind == "typed":
            outbox.record("send_client_content", typed_turn(value))
        elif kind == "response":
            outbox.record("send_tool_response", tool_response(value))
        elif kind == "model_text":
            outbox.model_text(value)
        elif kind == "tool_call":
            outbox.tool_call([value])
        elif kind == "input_text":
            outbox.input_text(value)
        elif kind == "turn_complete":
            outbox.turn_complete()
        else:
            outbox.interrupted()
    return outbox


@given(SESSIONS, st.sets(CALLS), CATCH_UPS)
def test_a_resume_sends_the_context_then_each_message_once_in_order(
    session: list[tuple[str, str]], unknown: set[str], catch_up: CatchUp | None
) -> None:
    replay = _played(session).take_replay(unknown)
    before = copy.deepcopy(replay)

    plan = plan_restoration(replay, resumed=True, catch_up=catch_up)

    assert replay == before  # (pure: the replay taken is left as it was)
    assert plan == plan_restoration(replay, resumed=True, catch_up=catch_up)
    assert plan.history == ()
    caught = catch_up or CatchUp()
    context = [*caught.context, *replay.context]
    messages = [(m.method, dict(m.kwargs)) for m in replay.messages]
    sends = list(plan.sends)
    if context:
        method, kwargs = sends.pop(0)
        assert method == "send_client_content" and kwargs["turn_complete"] is False
        assert [(t.role, t.parts[0].text) for t in kwargs["turns"]] == context
    if caught.unanswered:
        method, kwargs = sends.pop(0)
        assert [t.parts[0].text for t in kwargs["turns"]] == caught.unanswered
        assert kwargs["turn_complete"] is True
    assert sends == messages
    assert plan.context_turns == len(context)
    assert plan.replayed == len(messages) + bool(caught.unanswered)
    assert plan.replayed_messages == len(plan.sends)
    assert plan.context_calls == tuple(replay.context_calls)
    assert plan.dropped_responses == tuple(replay.dropped_responses)
    assert set(plan.dropped_responses) <= unknown
    assert (plan.dropped_audio_ms, plan.dropped_silence_ms, plan.dropped_frames) == (
        replay.dropped_audio_ms,
        replay.dropped_silence_ms,
        replay.dropped_frames,
    )


@given(SESSIONS, st.lists(st.tuples(st.sampled_from(["user", "model"]), WORDS), max_size=6))
def test_a_fresh_start_sends_its_history_then_what_it_lacks_and_no_context(
    session: list[tuple[str, str]], turns: list[tuple[str, str]]
) -> None:
    outbox = _played(session)
    contents = [content(role, text) for role, text in turns]
    kept = copy.deepcopy(contents)
    facts = outbox.history_facts()

    start = plan_fresh_start(contents, contents, facts)

    assert contents == kept  # (pure: ADK's session is not changed in place)
    assert start == plan_fresh_start(contents, contents, facts)
    assert start.answered_in_history == frozenset(response_ids(contents))
    assert list(start.waiting_in_history) == user_texts(list(start.history))
    audio = outbox.take_audio(
        utterance_in_history=start.utterance_in_history,
        waiting_in_history=start.waiting_in_history,
    )
    plan = plan_restoration(audio, resumed=False, history=start.history)
    assert plan.history == start.history
    assert plan.context_turns == 0
    assert list(plan.sends) == [(m.method, dict(m.kwargs)) for m in audio.messages]


def test_facts_default_to_an_empty_outbox() -> None:
    assert Outbox().history_facts() == HistoryFacts(responses_sent_last=frozenset())
