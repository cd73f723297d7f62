"""The rule that keeps a replay from showing the user a transcription twice (no sockets)."""

from __future__ import annotations

from adk_live_resume.conversation.outbox import Outbox
from adk_live_resume.conversation.transcript_echo import TranscriptEcho, squeeze

from ...helpers import audio_input

RATE = 16000
SPEECH = b"\xe8\x03" * (RATE // 50)  # 20 ms at amplitude 1000: voiced
SILENCE = b"\x00\x00" * (RATE // 50)


def _shown(echo: TranscriptEcho, utterance: int, pieces: list[str]) -> list[str]:
    return [echo.piece(utterance, piece) for piece in pieces]


def test_a_replayed_utterance_shows_only_what_was_not_shown_before() -> None:
    echo = TranscriptEcho()
    assert _shown(echo, 1, ["fh", "t"]) == ["fh", "t"]
    echo.new_connection()
    echo.replaying(1)
    assert _shown(echo, 1, ["f", "ht", "gv", "x"]) == ["", "", "gv", "x"]


def test_a_piece_that_goes_past_what_was_shown_passes_from_there_with_its_spacing() -> None:
    echo = TranscriptEcho()
    assert _shown(echo, 1, ["Hello", " wor"]) == ["Hello", " wor"]
    echo.new_connection()
    echo.replaying(1)
    assert _shown(echo, 1, ["hello  W", "or", "ld today"]) == ["", "", "ld today"]


def test_a_transcription_that_disagrees_is_shown_whole_from_the_disagreement() -> None:
    echo = TranscriptEcho()
    _shown(echo, 1, ["fht"])
    echo.new_connection()
    echo.replaying(1)
    assert _shown(echo, 1, ["fh", "x", "t"]) == ["", "x", "t"]


def test_a_connection_that_replays_nothing_shows_everything() -> None:
    """A resume whose handle holds the utterance (or Vertex AI consumed its audio): the
    server goes on transcribing; nothing it says repeats what was shown."""
    echo = TranscriptEcho()
    _shown(echo, 1, ["fht"])
    echo.new_connection()
    assert _shown(echo, 1, ["fht", "gv"]) == ["fht", "gv"]


def test_another_utterance_forgets_what_was_shown() -> None:
    echo = TranscriptEcho()
    _shown(echo, 1, ["yes"])
    assert _shown(echo, 2, ["yes"]) == ["yes"]
    echo.new_connection()
    echo.replaying(1)  # not the utterance shown last
    assert _shown(echo, 2, ["yes"]) == ["yes"]


def test_a_second_drop_during_the_replay_arms_the_next_connection_with_all_shown() -> None:
    """The replayed audio may count as a new utterance; the shown text follows it, and a
    connection that drops before or after its transcription got past the shown text leaves
    the next one to hold back everything shown so far."""
    echo = TranscriptEcho()
    _shown(echo, 1, ["one", " two"])
    echo.new_connection()
    echo.replaying(1)
    echo.new_connection()  # dropped before any piece came
    echo.replaying(1)
    assert _shown(echo, 2, ["one", " two", " three"]) == ["", "", " three"]
    echo.new_connection()  # dropped again
    echo.replaying(2)
    assert _shown(echo, 2, ["onetwo", "three", " four"]) == ["", "", " four"]


def test_white_space_while_repeating_is_held_back_and_case_is_ignored() -> None:
    echo = TranscriptEcho()
    _shown(echo, 1, ["Fh T"])
    echo.new_connection()
    echo.replaying(1)
    assert _shown(echo, 1, [" ", "fHt", " gv"]) == ["", "", " gv"]
    assert squeeze(" Fh\tT ") == "fht"


def test_the_outbox_arms_the_echo_when_a_replay_sends_the_utterance_from_its_start() -> None:
    outbox = Outbox()
    for _ in range(10):
        outbox.record("send_realtime_input", audio_input(SPEECH))
    assert [outbox.input_text(p) for p in ("fh", "t")] == ["fh", "t"]
    outbox.begin_connection()
    replay = outbox.take_replay()
    assert replay.messages[0].starts_utterance
    for message in replay.messages:  # sent again on the new connection
        outbox.record(message.method, message.kwargs)
    assert [outbox.input_text(p) for p in ("fh", "t", "gv")] == ["", "", "gv"]
    assert outbox.utterance_transcript() == "fhtgv", "the outbox keeps what the server heard"


def test_the_outbox_does_not_arm_the_echo_when_the_utterance_start_is_not_replayed() -> None:
    """Vertex AI's ``lastConsumedClientMessageIndex`` says the audio was consumed: nothing of
    it is replayed, and the new transcription goes on from where it was."""
    outbox = Outbox()
    for _ in range(10):
        outbox.record("send_realtime_input", audio_input(SPEECH))
    outbox.input_text("fht")
    outbox.covered(10)
    outbox.begin_connection()
    assert outbox.take_replay().messages == []
    assert outbox.input_text("fht") == "fht"


def test_the_echo_follows_an_utterance_whose_replay_counts_as_a_new_one() -> None:
    """The answer was cut by a drop after the user went quiet: the replayed audio starts a
    new utterance in the outbox's count, and the repeat of its transcription is still held
    back, on the next connection and on one after a second drop."""
    outbox = Outbox()
    for _ in range(10):
        outbox.record("send_realtime_input", audio_input(SPEECH))
    for _ in range(30):
        outbox.record("send_realtime_input", audio_input(SILENCE))
    assert outbox.input_text("tell me") == "tell me"
    outbox.model_text("echo: ")  # the answer began, and the drop cut it
    first = outbox.activity.utterances
    for _ in range(2):
        outbox.begin_connection()
        replay = outbox.take_replay()
        for message in replay.messages:
            outbox.record(message.method, message.kwargs)
        assert outbox.activity.utterances > first, "the replay counts as a new utterance"
        assert outbox.input_text("tell") == ""
    assert [outbox.input_text(p) for p in (" me", " a story")] == ["", " a story"]


def test_a_replay_dropped_before_its_transcription_came_leaves_the_echo_armed() -> None:
    """The replayed audio counts as a new utterance, and the connection that replayed it
    drops before the server sent any transcription: the next replay still holds back what
    the user was shown, under the utterance's new number."""
    outbox = Outbox()
    for _ in range(10):
        outbox.record("send_realtime_input", audio_input(SPEECH))
    for _ in range(30):
        outbox.record("send_realtime_input", audio_input(SILENCE))
    assert outbox.input_text("tell me") == "tell me"
    outbox.model_text("echo: ")  # the answer began, and the drop cut it
    first = outbox.activity.utterances
    for _ in range(2):  # the first replay's connection drops before any piece came
        outbox.begin_connection()
        for message in outbox.take_replay().messages:
            outbox.record(message.method, message.kwargs)
    assert outbox.activity.utterances == first + 2, "each replay counts as a new utterance"
    assert [outbox.input_text(p) for p in ("tell", " me", " more")] == ["", "", " more"]
