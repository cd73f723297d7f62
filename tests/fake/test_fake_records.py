"""The fake's records are written through their methods: what each method promises."""

from __future__ import annotations

from adk_live_resume.testing.faults import Flap
from adk_live_resume.testing.handles import HandleStore
from adk_live_resume.testing.model import Turn, turns_overlap
from adk_live_resume.testing.records import ConnectionRecord, ToolCallRecord
from adk_live_resume.testing.rest import RestCall
from adk_live_resume.testing.settings import SharedState


def test_a_record_keeps_the_first_send_time_and_moves_the_latest() -> None:
    record = ConnectionRecord(index=1)
    record.sent_at(2.0)
    record.sent_at(3.5)
    assert (record.first_sent_at, record.last_sent_at) == (2.0, 3.5)


def test_a_record_counts_history_sends_and_the_duplicates_among_them() -> None:
    record = ConnectionRecord(index=1)
    record.history_sent(duplicate=False)
    record.history_sent(duplicate=True)
    assert (record.history_sends, record.duplicate_history_sends) == (2, 1)


def test_a_record_holds_the_setup_the_resumption_asked_for_and_its_end() -> None:
    record = ConnectionRecord(index=3)
    record.accepted("/ws/x", 1.0)
    record.set_up({"model": "m"})
    record.resumption_asked("handle-abc", transparent=True)
    record.restored()
    record.joined("session-1")
    record.handled(4)
    record.go_away_went()
    record.generation_interrupted()
    record.generation_interrupted()
    record.audio_ignored(120)
    record.ended("fault", 9.0, code=1011, reason="boom")
    assert not record.finished
    record.finish()
    assert (record.path, record.accepted_at, record.setup) == ("/ws/x", 1.0, {"model": "m"})
    assert (record.resumption_enabled, record.resume_handle, record.transparent) == (
        True,
        "handle-abc",
        True,
    )
    assert (record.resumed, record.session_id, record.handled_messages) == (True, "session-1", 4)
    assert (record.go_away_sent, record.interrupted, record.ignored_audio_ms) == (True, 2, 120)
    assert (record.ended_by, record.ended_at, record.close_code, record.close_reason) == (
        "fault",
        9.0,
        1011,
        "boom",
    )
    assert record.finished


def test_a_cancelled_call_a_failed_rest_call_and_flapping() -> None:
    call = ToolCallRecord(id="c1", name="f", args={}, connection=1)
    call.cancel()
    assert call.cancelled
    rest = RestCall(http_method="GET", path="/x", route=None, body=None)
    rest.failed(404, "no route")
    rest.read({"contents": []})
    assert (rest.status, rest.error, rest.body) == (404, "no route", {"contents": []})
    shared = SharedState(HandleStore(60.0))
    shared.flapping(Flap(1011))
    assert shared.flap == Flap(1011)
    shared.flapping(None)
    assert shared.flap is None


def _exchange(text: str) -> list[Turn]:
    return [Turn("user", text), Turn("model", f"echo: {text}")]


def test_a_history_sent_again_overlaps_the_memory_it_began() -> None:
    memory = _exchange("alpha") + _exchange("bravo")
    assert turns_overlap(memory, _exchange("alpha") + _exchange("bravo") + _exchange("cedar"))


def test_an_exchange_sent_again_as_context_overlaps_the_end_of_memory() -> None:
    memory = _exchange("alpha") + _exchange("bravo")
    assert turns_overlap(memory, _exchange("bravo"))


def test_an_exchange_said_again_word_for_word_later_is_no_resend() -> None:
    """The same words said twice are two exchanges: the second, replayed as context to a
    session that lacks it, matches the first only in the middle of memory."""
    memory = _exchange("zulu") + _exchange("alpha") + _exchange("bravo")
    assert not turns_overlap(memory, _exchange("alpha"))
