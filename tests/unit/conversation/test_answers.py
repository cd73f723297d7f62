"""UnansweredTurns: does a sent turn still wait for its answer? (pure, no sockets)"""

from __future__ import annotations

from adk_live_resume.conversation.answers import UnansweredTurns
from adk_live_resume.conversation.outbox import Outbox


def test_a_turn_waits_until_output_begun_after_it_is_followed_by_the_turn_end() -> None:
    turns = UnansweredTurns()
    assert not turns.unanswered
    turns.on_turn_sent()
    assert turns.unanswered
    turns.on_generation_end()  # a turn end with no output: nothing answered
    assert turns.unanswered
    turns.on_model_output()
    assert turns.unanswered, "answering, not answered"
    turns.on_generation_end()
    assert not turns.unanswered


def test_the_end_of_an_answer_already_streaming_does_not_answer_a_new_turn() -> None:
    turns = UnansweredTurns()
    turns.on_turn_sent()
    turns.on_model_output()  # the answer to the first turn streams
    turns.on_turn_sent()  # the user types the next turn meanwhile
    turns.on_model_output()  # more of the first answer
    turns.on_generation_end()  # the first answer ends
    assert turns.unanswered, "the second turn has no answer yet"
    turns.on_model_output()
    turns.on_generation_end()
    assert not turns.unanswered


def test_an_interrupted_earlier_answer_leaves_the_new_turn_unanswered() -> None:
    turns = UnansweredTurns()
    turns.on_model_output()  # the model speaks (a greeting, say)
    turns.on_turn_sent()
    turns.on_generation_end()  # interrupted by the new turn
    assert turns.unanswered
    turns.on_model_output()
    turns.on_generation_end()
    assert not turns.unanswered


def test_a_new_connection_keeps_the_turn_unanswered_and_forgets_the_generation() -> None:
    turns = UnansweredTurns()
    turns.on_turn_sent()
    turns.on_model_output()  # the answer began, then the connection dropped
    turns.on_new_connection()
    turns.on_generation_end()  # (nothing of the old generation counts)
    assert turns.unanswered
    turns.on_model_output()
    turns.on_generation_end()
    assert not turns.unanswered


def test_the_outbox_feeds_it_from_what_is_sent_and_what_the_server_says() -> None:
    outbox = Outbox()
    outbox.record("send_client_content", {"turns": [{"role": "user", "parts": [{"text": "hi"}]}]})
    assert outbox.turns.unanswered
    outbox.model_audio()  # an answer in audio only counts as output too
    outbox.turn_complete()
    assert not outbox.turns.unanswered
    outbox.record("send_realtime_input", {"text": "next"})
    outbox.tool_call(["c1"])  # the model answers with a tool call
    outbox.turn_complete()
    assert not outbox.turns.unanswered
    outbox.record(
        "send_tool_response", {"function_responses": [{"id": "c1", "name": "f", "response": {}}]}
    )
    assert outbox.turns.unanswered, "a function response waits for its answer too"
    outbox.model_text("f returned")
    outbox.interrupted()
    assert not outbox.turns.unanswered


def test_an_utterance_ended_while_the_work_goes_on_answers_nothing_and_ends_it() -> None:
    turns = UnansweredTurns()
    turns.on_turn_sent()  # the user asks; the model calls a tool and says the call started
    turns.on_model_output()
    turns.on_generation_paused()  # turnComplete, interactionStatus IN_PROGRESS
    assert turns.unanswered
    turns.on_turn_sent()  # the tool's response, after that utterance ended
    turns.on_model_output()  # the model tells the result
    turns.on_generation_end()  # turnComplete, IDLE
    assert not turns.unanswered, "the telling began after the response: it answers it"


def test_the_outbox_counts_a_response_sent_after_a_working_utterance_as_covered() -> None:
    # Gemini API: what the model says after a response shows the server took it in, when that
    # output began a generation after the response was sent.
    outbox = Outbox()
    outbox.record("send_client_content", {"turns": [{"role": "user", "parts": [{"text": "x"}]}]})
    outbox.tool_call(["fc_1"])
    outbox.model_text("x started")
    outbox.work_goes_on()
    outbox.record(
        "send_tool_response",
        {"function_responses": [{"id": "fc_1", "name": "x", "response": {"ok": True}}]},
    )
    outbox.model_text("x returned")
    outbox.turn_complete()
    outbox.covered(None)
    assert len(outbox) == 0


def test_what_the_model_says_after_its_tool_calls_responses_answers_them() -> None:
    """Gemini 2.5 native audio and 3.x Live send no ``turnComplete`` between a ``toolCall``
    and the telling of its result: the responses, sent after the call, are answered by the
    telling's end all the same."""
    turns = UnansweredTurns()
    turns.on_turn_sent()  # "call f"
    turns.on_tool_call()
    turns.on_turn_sent()  # the function response
    turns.on_model_output()  # the result told
    assert turns.unanswered, "telling, not told"
    turns.on_generation_end()
    assert not turns.unanswered
