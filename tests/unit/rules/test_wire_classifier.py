"""The wire classifier (pure): what a raw server frame is, read once, never raising."""

from __future__ import annotations

import json

from hypothesis import given
from hypothesis import strategies as st

from adk_live_resume.rules.wire_classifier import (
    FULL_PARSE_MAX,
    MAX_KIND_CHARS,
    MAX_NAMED_KINDS,
    Frame,
    SkippedMessages,
    classify_frame,
)

#: The keys google-genai 2.34 parses (``LiveServerMessage``'s camelCase aliases).
KNOWN = frozenset(
    {
        "setupComplete",
        "serverContent",
        "toolCall",
        "toolCallCancellation",
        "usageMetadata",
        "goAway",
        "sessionResumptionUpdate",
        "voiceActivity",
        "voiceActivityDetectionSignal",
    }
)


def _frame(message: object) -> Frame:
    return classify_frame(json.dumps(message).encode(), KNOWN)


def test_go_away_carries_its_time_left_as_sent() -> None:
    assert _frame({"goAway": {"timeLeft": "57s"}}) == Frame("go_away", ("goAway",), "57s")
    assert _frame({"go_away": {"time_left": "3s"}}).time_left == "3s"
    assert _frame({"goAway": {}}) == Frame("go_away", ("goAway",), None)


def test_resumption_updates_and_content_are_told_apart() -> None:
    update = {"sessionResumptionUpdate": {"newHandle": "h", "resumable": True}}
    assert _frame(update).kind == "resumption_update"
    assert _frame({"serverContent": {"turnComplete": True}, "usageMetadata": {}}).kind == "content"
    assert _frame({"toolCall": {"functionCalls": []}}).kind == "content"
    assert _frame({"setupComplete": {}}).kind == "content"


def test_a_kind_the_sdk_does_not_know_is_unknown_and_named() -> None:
    frame = _frame({"someFutureMessage": {"x": 1}})
    assert frame == Frame("unknown", ("someFutureMessage",), unknown_keys=("someFutureMessage",))


def test_a_known_key_beside_an_unknown_one_is_content() -> None:
    """google-genai parses the known part and ignores the rest: nothing to skip."""
    frame = _frame({"someFutureMessage": {}, "serverContent": {"turnComplete": True}})
    assert frame.kind == "content" and frame.unknown_keys == ()


def test_an_error_message_is_left_for_the_sdk_to_raise() -> None:
    assert _frame({"code": 503}).kind == "error"
    assert _frame({"error": {"code": 429, "message": "quota"}}).kind == "error"


def test_what_is_not_a_json_object_is_unparsed() -> None:
    for payload in (b"", b"not json", b"[1, 2]", b"{}", b'"text"', b"\xff\xfe{"):
        assert classify_frame(payload, KNOWN).kind == "unparsed", payload


def test_str_and_bytearray_payloads_read_as_bytes() -> None:
    text = json.dumps({"goAway": {"timeLeft": "1s"}})
    assert classify_frame(text, KNOWN) == classify_frame(bytearray(text.encode()), KNOWN)


def test_a_long_frame_with_a_known_first_key_is_not_parsed_whole() -> None:
    """Model audio is kilobytes: its first key decides (the rest here is not even JSON)."""
    payload = b'{"serverContent": {"modelTurn": ' + b"x" * (FULL_PARSE_MAX + 10)
    assert classify_frame(payload, KNOWN) == Frame("content", ("serverContent",))


def test_a_short_content_frame_is_read_by_its_first_key_alone() -> None:
    """The text of a turn and its ``turnComplete`` are not parsed twice (the rest of this
    payload is not even JSON): read by its first key, as a long frame is."""
    payload = b'{"serverContent": {"modelTurn": {"parts": [{"text": "hi"}]}}, xx'
    assert classify_frame(payload, KNOWN) == Frame("content", ("serverContent",))
    status = b'{"serverContent": {"turnComplete": true, "interactionStatus": "IDLE"}, xx'
    assert classify_frame(status, KNOWN).interaction_status == "IDLE"


def test_a_short_frame_naming_a_key_the_loop_reads_is_parsed_whole() -> None:
    """A goAway, a resumption update or a cancellation after the first key still counts."""
    go_away = {"serverContent": {"turnComplete": True}, "goAway": {"timeLeft": "9s"}}
    assert _frame(go_away) == Frame("go_away", ("serverContent", "goAway"), "9s")
    update = {"usageMetadata": {}, "sessionResumptionUpdate": {"newHandle": "h"}}
    assert _frame(update).kind == "resumption_update"
    cancelled = {"serverContent": {}, "toolCallCancellation": {"ids": ["fc_1"]}}
    assert _frame(cancelled).cancelled_ids == ("fc_1",)
    # the key's name as a value is no key: read whole all the same (slower, still right)
    assert _frame({"serverContent": {"modelTurn": {"parts": [{"text": "goAway"}]}}}) == Frame(
        "content", ("serverContent",)
    )


def test_a_long_frame_of_an_unknown_kind_is_parsed_whole() -> None:
    message = {"someFutureMessage": {"blob": "x" * (FULL_PARSE_MAX + 10)}}
    assert _frame(message).kind == "unknown"
    mixed = {"someFutureMessage": {"blob": "x" * FULL_PARSE_MAX}, "serverContent": {}}
    assert _frame(mixed).kind == "content"


def test_a_long_go_away_is_still_a_go_away() -> None:
    message = {"goAway": {"timeLeft": "5s"}, "padding": "x" * (FULL_PARSE_MAX + 10)}
    assert _frame(message).kind == "go_away"


def test_skipped_messages_are_counted_and_each_kind_named_once() -> None:
    skipped = SkippedMessages()
    first = Frame("unknown", ("a",), unknown_keys=("a",))
    both = Frame("unknown", ("a", "b"), unknown_keys=("a", "b"))
    assert skipped.note(first) == ("a",)
    assert skipped.note(first) == ()
    assert skipped.note(both) == ("b",)
    assert skipped.count == 3


_KEYS = st.one_of(st.sampled_from(sorted(KNOWN)), st.text(min_size=1, max_size=12))
_VALUES = st.one_of(st.none(), st.integers(), st.text(max_size=5), st.just({}))


@given(st.binary(max_size=300))
def test_any_payload_gives_a_frame(payload: bytes) -> None:
    assert isinstance(classify_frame(payload, KNOWN), Frame)


@given(st.dictionaries(_KEYS, _VALUES, min_size=1, max_size=4), st.booleans())
def test_a_message_with_a_known_key_is_never_unknown(message: dict[str, object], pad: bool) -> None:
    if pad:
        message = {**message, "zz": "x" * FULL_PARSE_MAX}
    frame = _frame(message)
    if any(key in KNOWN for key in message):
        assert frame.kind != "unknown"
    elif not ({"code", "error", "go_away"} & set(message)):
        assert frame.kind == "unknown" and set(frame.unknown_keys) == set(message)


def test_a_cancellation_names_the_calls_it_cancels() -> None:
    frame = _frame({"toolCallCancellation": {"ids": ["fc_1", "fc_2"]}})
    assert frame.kind == "content" and frame.cancelled_ids == ("fc_1", "fc_2")
    assert _frame({"toolCallCancellation": {}}).cancelled_ids == ()
    assert _frame({"toolCall": {"functionCalls": [{"id": "fc_1"}]}}).cancelled_ids == ()


def test_content_carries_its_interaction_status() -> None:
    status = {"serverContent": {"turnComplete": True, "interactionStatus": "IN_PROGRESS"}}
    assert _frame(status).interaction_status == "IN_PROGRESS"
    snake = {"serverContent": {"turn_complete": True, "interaction_status": "IDLE"}}
    assert _frame(snake).interaction_status == "IDLE"
    assert _frame({"serverContent": {"turnComplete": True}}).interaction_status is None
    assert _frame({"serverContent": {"interactionStatus": 3}}).interaction_status is None
    assert _frame({"toolCall": {"functionCalls": []}}).interaction_status is None


def test_a_long_frame_is_searched_for_its_interaction_status_without_being_parsed() -> None:
    audio = "A" * (FULL_PARSE_MAX * 4)
    parts = [{"inlineData": {"mimeType": "audio/pcm", "data": audio}}]
    long_status = {"serverContent": {"modelTurn": {"parts": parts}, "interactionStatus": "IDLE"}}
    frame = _frame(long_status)
    assert frame.kind == "content" and frame.keys == ("serverContent",)
    assert frame.interaction_status == "IDLE"
    # the key inside a string (escaped quotes) is not the field
    text = '"interactionStatus": "IDLE" ' * (FULL_PARSE_MAX // 10)
    quoted = {"serverContent": {"modelTurn": {"parts": [{"text": text}]}}}
    assert _frame(quoted).interaction_status is None


@given(
    st.sampled_from(["IDLE", "IN_PROGRESS", "REQUIRES_ACTION", "INTERACTION_STATUS_UNSPECIFIED"]),
    st.integers(min_value=0, max_value=3 * FULL_PARSE_MAX),
    st.booleans(),
)
def test_the_status_reads_the_same_in_a_short_and_a_long_frame(
    status: str, padding: int, first: bool
) -> None:
    content: dict[str, object] = {"modelTurn": {"parts": [{"text": "x" * padding}]}}
    content = (
        {"interactionStatus": status, **content}
        if first
        else {**content, "interactionStatus": status}
    )
    frame = _frame({"serverContent": content, "usageMetadata": {"totalTokenCount": 3}})
    assert frame.kind == "content" and frame.interaction_status == status


def test_a_flood_of_unknown_kinds_is_counted_and_what_is_kept_is_bounded() -> None:
    """20 messages of 2,000 new 100-character keys: 32 kinds named, each cut, the rest
    counted; what is kept and what is logged stay a few kilobytes."""
    skipped = SkippedMessages()
    named: list[str] = []
    for message in range(20):
        keys = tuple(f"k{message:02d}-{n:04d}-" + "x" * 89 for n in range(2000))
        named.extend(skipped.note(Frame("unknown", keys, unknown_keys=keys)))
    assert skipped.count == 20
    assert len(named) == MAX_NAMED_KINDS == 32
    assert all(len(name) <= MAX_KIND_CHARS == 64 for name in named)
    assert named[0].endswith("…") and named[0].startswith("k00-0000-")
    assert skipped.unnamed == 20 * 2000 - 32
    assert sum(len(name) for name in skipped._named) <= 32 * 64
    assert skipped.note(Frame("unknown", (named[0],), unknown_keys=(named[0],))) == ()


def test_a_long_key_is_named_cut_and_only_once() -> None:
    skipped = SkippedMessages()
    long_key = "y" * 100
    assert skipped.note(Frame("unknown", (long_key,), unknown_keys=(long_key,))) == (
        "y" * 63 + "…",
    )
    assert skipped.note(Frame("unknown", (long_key,), unknown_keys=(long_key,))) == ()
    assert skipped.unnamed == 0


def test_content_carries_its_speech_state() -> None:
    # (serverContent.speechState: no google-genai release parses it)
    assert _frame({"serverContent": {"speechState": "SPEECH"}}).speech_state == "SPEECH"
    ending = {"serverContent": {"inputTranscription": {"text": "hi"}, "speech_state": "NON_SPEECH"}}
    assert _frame(ending).speech_state == "NON_SPEECH"
    assert _frame({"serverContent": {"turnComplete": True}}).speech_state is None
    parts = [{"inlineData": {"data": "A" * 4000}}]
    long_frame = {"serverContent": {"modelTurn": {"parts": parts}, "speechState": "SPEECH"}}
    assert _frame(long_frame).speech_state == "SPEECH"
