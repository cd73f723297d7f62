"""PendingTurns: does a sent turn still wait for its answer? (pure, no sockets)"""

from __future__ import annotations

from adk_live_resume.answers import PendingTurns
from adk_live_resume.outbox import Outbox


def test_a_turn_waits_until_output_begun_after_it_is_followed_by_the_turn_end() -> None:
    turns = PendingTurns()
    assert not turns.waiting
    turns.on_turn_sent()
    assert turns.waiting
    turns.on_generation_end()  # a turn end with no output: nothing answered
    assert turns.waiting
    turns.on_model_output()
    assert turns.waiting, "answering, not answered"
    turns.on_generation_end()
    assert not turns.waiting


def test_the_end_of_an_answer_already_streaming_does_not_answer_a_new_turn() -> None:
    turns = PendingTurns()
    turns.on_turn_sent()
    turns.on_model_output()  # the answer to the first turn streams
    turns.on_turn_sent()  # the user types the next turn meanwhile
    turns.on_model_output()  # more of the first answer
    turns.on_generation_end()  # the first answer ends
    assert turns.waiting, "the second turn has no answer yet"
    turns.on_model_output()
    turns.on_generation_end()
    assert not turns.waiting


def test_an_interrupted_earlier_answer_leaves_the_new_turn_waiting() -> None:
    turns = PendingTurns()
    turns.on_model_output()  # the model speaks (a greeting, say)
    turns.on_turn_sent()
    turns.on_generation_end()  # interrupted by the new turn
    assert turns.waiting
    turns.on_model_output()
    turns.on_generation_end()
    assert not turns.waiting


def test_a_new_connection_keeps_the_turn_waiting_and_forgets_the_generation() -> None:
    turns = PendingTurns()
    turns.on_turn_sent()
    turns.on_model_output()  # the answer began, then the connection dropped
    turns.on_new_connection()
    turns.on_generation_end()  # (nothing of the old generation counts)
    assert turns.waiting
    turns.on_model_output()
    turns.on_generation_end()
    assert not turns.waiting


def test_the_outbox_feeds_it_from_what_is_sent_and_what_the_server_says() -> None:
    outbox = Outbox()
    outbox.record("send_client_content", {"turns": [{"role": "user", "parts": [{"text": "hi"}]}]})
    assert outbox.turns.waiting
    outbox.model_audio()  # an answer in audio only counts as output too
    outbox.turn_complete()
    assert not outbox.turns.waiting
    outbox.record("send_realtime_input", {"text": "next"})
    outbox.tool_call(["c1"])  # the model answers with a tool call
    outbox.turn_complete()
    assert not outbox.turns.waiting
    outbox.record(
        "send_tool_response", {"function_responses": [{"id": "c1", "name": "f", "response": {}}]}
    )
    assert outbox.turns.waiting, "a function response waits for its answer too"
    outbox.model_text("f returned")
    outbox.interrupted()
    assert not outbox.turns.waiting
