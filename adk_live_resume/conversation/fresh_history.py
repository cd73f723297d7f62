"""The history a fresh session starts with, from the conversation ADK rebuilt from its session.

A fresh session (no handle left to resume) gets ADK's history instead of a replay. What the
user was saying when the connection died must reach it once: as the history's last user turn
when the user had finished speaking, else as replayed audio (see :func:`fresh_history`).
:func:`response_ids` says which function responses a history holds already, and
:func:`user_texts` which typed turns it holds (ADK leaves out of it the turns between a
background call and a result that came after them).

Pure: no I/O. The contents are copied, never changed in place (they are ADK's session).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from google.genai import types

from .transcript_echo import squeeze as _squeeze


@dataclass(frozen=True)
class HistoryFacts:
    """What the outbox knows that a fresh history is built with, read at once
    (:meth:`~.outbox.Outbox.history_facts`): the arguments of
    :func:`fresh_history` after the contents, each named as there (``transcript`` is
    :meth:`~.outbox.Outbox.utterance_transcript`, ``speaking`` whether the user
    is speaking now)."""

    transcript: str = ""
    speaking: bool = False
    fragments: tuple[str, ...] = ()
    stored: str = ""
    cut: tuple[tuple[str, str], ...] = ()
    unanswered: tuple[str, ...] = ()
    answered_last: bool = False
    responses_sent_last: frozenset[str] | None = None


def fresh_history(
    contents: Sequence[Any],
    transcript: str,
    *,
    speaking: bool,
    fragments: Sequence[str] = (),
    stored: str = "",
    cut: Sequence[tuple[str, str]] = (),
    unanswered: Sequence[str] = (),
    answered_last: bool = False,
    responses_sent_last: frozenset[str] | None = None,
    working: Sequence[str] = (),
) -> tuple[list[Any], bool]:
    """The history for a fresh session, and whether it holds the unanswered utterance.

    ``contents`` is the conversation ADK rebuilt from its session, ``transcript`` what the
    server transcribed of the unanswered utterance
    (:meth:`~.outbox.Outbox.utterance_transcript`).
    When the user has finished speaking and the history holds that transcription, the
    history answers it and its audio is not replayed. While the user is still speaking, the
    transcription ADK stored is only the start of the utterance: it is left out of the
    history (as the last user turn) so that the utterance reaches the new session once,
    whole, as its replayed audio followed by the rest of the speech.

    ``fragments`` (:attr:`~.outbox.Outbox.transcript_fragments`) are starts of
    utterances that were replayed whole: ADK joined their transcription pieces with the whole
    utterance's, so a user turn reads "fhtfhtgv" for "fhtgv"; each is taken out once where it
    is followed by itself. The contents are copied, never changed in place (they are ADK's session).

    ``stored`` (:meth:`~.outbox.Outbox.utterance_transcript_stored`) is every
    connection's transcription of the utterance joined: the history holds that when a replay
    from its start was cut before (or while) a connection heard it, so that no doubled
    fragment could be taken out.

    ``cut`` (:meth:`~.outbox.Outbox.cut_by_typed_turns`) holds, per model
    output a typed turn cut off, that turn and the output's text. ADK writes the turn to its
    session when it sends it and the cut output when ``interrupted`` arrives, so its history
    reads turn, then output, though the server had the output first. The output is put back
    before the turn (when only user turns stand between them): the turn is again the one
    the history waits on, as it was on the server, and the fresh session answers it (a
    history ending with a model turn asks for no answer). A model turn after the turn in
    the history that is not that output (the turn's own answer, cut off) stays where it is.

    ``unanswered`` (:meth:`~.outbox.Outbox.typed_turns_unanswered`) are typed
    turns the model had said nothing to yet, oldest first. Model output after one of them in
    the history began before the server had the turn (an answer already streaming when it
    was sent, which ADK writes to its session when it completes): each such turn moves to
    the end of the history, after that output, so that the fresh session answers it once
    (a history ending with a model turn asks for no answer).

    ``answered_last`` (:meth:`~.outbox.Outbox.answered_last`) says the model
    answered the user content sent last. An answer in audio alone (output transcription
    off) leaves no text in ADK's session, and ADK's ``send_history`` leaves audio out, so
    the history would end with that user content and ask the fresh session to answer it a
    second time (``turn_complete=True``, and on Gemini 3.x Live a placeholder turn besides).
    A model turn standing for the spoken answer (:data:`SPOKEN_ANSWER`: its words are not
    known) then ends the history, which asks for no answer. This is chosen over sending the
    history without ``turn_complete`` through a private path of ADK's: the history stays
    ADK's own send (its filtering, its Gemini 3.x rules), and the model still sees that the
    turn was answered. The unanswered utterance the history holds wins: it is answered.
    ``answered_last`` speaks of what the run sent: function responses that end the history
    and are not among ``responses_sent_last`` (:attr:`~.outbox.Outbox.
    responses_sent_last`; ``None``: not checked) were never sent (a tool ended as its
    connection went: ADK's session holds the response, its queue still the send), so
    nothing answered them, and the history ends with them: the fresh session answers them.

    ``working`` (:func:`~.model_work.unfinished_work` of the session's events)
    are the texts of the working utterances the model said for a request it had not answered
    yet (it said them while its work went on, and ADK stores them as model turns). They are
    left out of the history: the request they were said for ends it again, typed or spoken,
    and the fresh session answers it once (the work is not continued: what the model said
    of it is said again).
    """
    history, in_history = _arranged(
        contents, transcript, speaking, fragments, stored, cut, unanswered, working
    )
    last = _last_kept(history)
    if (
        answered_last
        and not in_history
        and last is not None
        and last.role == "user"
        and (responses_sent_last is None or _response_ids(last) <= responses_sent_last)
    ):
        history.append(types.Content(role="model", parts=[types.Part(text=SPOKEN_ANSWER)]))
    return history, in_history


#: The text of the model turn that stands, in a fresh history, for an answer the model
#: gave in audio alone (see :func:`fresh_history`): neutral, short, and not words the model
#: said.
SPOKEN_ANSWER = "(answered aloud)"


def _last_kept(history: Sequence[Any]) -> Any:
    """The last turn ADK's ``send_history`` keeps (one with text, a function call or a
    function response: audio and other media parts are left out), or ``None``."""
    for content in reversed(history):
        if any(
            getattr(part, "text", None)
            or getattr(part, "function_call", None) is not None
            or getattr(part, "function_response", None) is not None
            for part in content.parts or []
        ):
            return content
    return None


def _response_ids(content: Any) -> frozenset[str]:
    """The ids of the function responses ``content`` carries."""
    responses = [getattr(part, "function_response", None) for part in content.parts or []]
    return frozenset(str(r.id) for r in responses if r is not None and r.id)


def _arranged(
    contents: Sequence[Any],
    transcript: str,
    speaking: bool,
    fragments: Sequence[str],
    stored: str,
    cut: Sequence[tuple[str, str]],
    unanswered: Sequence[str],
    working: Sequence[str],
) -> tuple[list[Any], bool]:
    """:func:`fresh_history` before its closing model turn."""
    heard = _squeeze(transcript)
    history = _without_unanswered_calls(_without_fragments(contents, fragments))
    _without_unfinished_work(history, working)
    for turn, output in cut:
        _put_output_before_turn(history, turn, output)
    for turn in unanswered:
        _move_after_model_output(history, turn)
    at = _unanswered_user_turn(history, heard) if heard else None
    joined = _squeeze(stored)
    if at is None and joined and joined != heard:
        at = _unanswered_user_turn(history, joined)
    if at is None:
        return history, False
    if not speaking:
        return history, True
    del history[at]
    return history, False


def _without_unanswered_calls(history: list[Any]) -> list[Any]:
    """``history`` without the function calls no response in it answers (a tool that never
    ended: its worker was lost while it ran), as google-adk 2.x builds its history; 1.x
    keeps them, and a history ending with the model's call asks for no answer: the request
    would never be answered. The model asks for the tool again (a repeat, see
    :mod:`adk_live_resume.conversation.tool_calls`). A content left with no part is left out; calls
    without an id stay (nothing can tell what answers them)."""
    answered = response_ids(history)
    kept: list[Any] = []
    for content in history:
        parts = list(content.parts or [])
        left = [
            part
            for part in parts
            if getattr(part, "function_call", None) is None
            or not part.function_call.id
            or str(part.function_call.id) in answered
        ]
        if len(left) == len(parts):
            kept.append(content)
        elif left:
            kept.append(types.Content(role=content.role, parts=left))
    return kept


def _without_unfinished_work(history: list[Any], working: Sequence[str]) -> None:
    """Take the model turns that are ``working`` utterances out of the end of ``history``:
    those after its last other model turn (an answer, a tool call), each text once."""
    left = [_squeeze(text) for text in working]
    for position in range(len(history) - 1, -1, -1):
        if not left:
            return
        content = history[position]
        if content.role != "model":
            continue
        said = _squeeze(_model_text(content))
        if said not in left or _has_call(content):
            return
        left.remove(said)
        del history[position]


def _unanswered_user_turn(history: Sequence[Any], heard: str) -> int | None:
    """Position of the user turn that is exactly ``heard`` among the user turns after the
    model's last turn (ADK stores a transcription as a user turn of its own), or None.

    Only those count: the same words typed earlier, or inside a longer turn ("story nulvs"
    for the spoken "nulvs"), are another turn, not this utterance."""
    for position in range(len(history) - 1, -1, -1):
        content = history[position]
        if content.role != "user":
            return None
        if _squeeze(_user_text([content])) == heard:
            return position
    return None


def _put_output_before_turn(history: list[Any], turn: str, output: str) -> None:
    """Move the newest model turn that is exactly ``output``, when only user turns stand
    between it and the user turn ``turn`` before it, to just before ``turn``."""
    said, typed = _squeeze(output), _squeeze(turn)
    for position in range(len(history) - 1, 0, -1):
        content = history[position]
        if content.role != "model" or _squeeze(_model_text(content)) != said:
            continue
        before = position - 1
        while before >= 0 and history[before].role == "user":
            if _squeeze(_user_text([history[before]])) == typed:
                history.insert(before, history.pop(position))
                return
            before -= 1
        return


def _move_after_model_output(history: list[Any], turn: str) -> None:
    """Move the newest user turn that is exactly ``turn`` to the end of ``history`` when
    model text comes after it and nothing else does: a function call or response after it
    is the model's answer to it (an earlier connection's, whose record a replay does not
    carry), and the turn stays where it is."""
    typed = _squeeze(turn)
    for position in range(len(history) - 1, -1, -1):
        content = history[position]
        if content.role == "user" and _squeeze(_user_text([content])) == typed:
            later = history[position + 1 :]
            if any(c.role == "model" for c in later) and not any(map(_has_call, later)):
                history.append(history.pop(position))
            return


def _has_call(content: Any) -> bool:
    return any(
        getattr(part, "function_call", None) is not None
        or getattr(part, "function_response", None) is not None
        for part in content.parts or []
    )


def _model_text(content: Any) -> str:
    """The text of a model turn, without thought parts (as the outbox records it)."""
    return "".join(
        getattr(part, "text", None) or ""
        for part in content.parts or []
        if not getattr(part, "thought", None)
    )


def _without_fragments(contents: Sequence[Any], fragments: Sequence[str]) -> list[Any]:
    history = list(contents)
    for fragment in fragments:
        if fragment.strip():
            _take_out_once(history, fragment)
    return history


def _take_out_once(history: list[Any], fragment: str) -> None:
    """Take ``fragment`` out of the first user part where it is followed by itself (a copy
    of that content replaces it in ``history``)."""
    doubled = fragment + fragment
    for position, content in enumerate(history):
        if content.role != "user":
            continue
        parts = list(content.parts or [])
        for number, part in enumerate(parts):
            text = part.text or ""
            at = text.find(doubled)
            if at >= 0:
                parts[number] = types.Part(text=text[:at] + text[at + len(fragment) :])
                history[position] = types.Content(role=content.role, parts=parts)
                return


def _user_text(contents: Sequence[Any]) -> str:
    """The user text of ``contents``, for "does the history hold this?" checks."""
    return " ".join(user_texts(contents))


#: Transcript fragments an outbox remembers (one per utterance replayed whole mid-speech).


def user_texts(contents: Sequence[Any]) -> list[str]:
    """The text of every user turn of ``contents``, in order. A typed turn the send step
    recorded is in a fresh session's history only if it is among them: ADK moves a
    background call's late result next to its call and leaves out what came between (a
    turn typed meanwhile among it)."""
    return [
        part.text
        for content in contents
        if content.role == "user"
        for part in getattr(content, "parts", None) or []
        if getattr(part, "text", None)
    ]


def response_ids(contents: Iterable[Any]) -> set[str]:
    """The ids of the function responses in ``contents`` (a history)."""
    return {
        str(part.function_response.id)
        for content in contents
        for part in getattr(content, "parts", None) or []
        if getattr(part, "function_response", None) is not None and part.function_response.id
    }
