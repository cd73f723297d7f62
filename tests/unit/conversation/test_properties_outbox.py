"""Property: the outbox keeps what the newest handle may not hold, and only that, once.

Two state machines play random sessions against :class:`Outbox`, as the live loop drives it
(``connection_watch`` records each send and server message; ``serve_connection`` takes the
replay on a resume and sends it again through the tap, which records it again):

* the Gemini API, where a handle says nothing of what it holds: typed turns, microphone
  audio voiced and quiet, activity signals, tool calls and their responses, model output as
  text, audio or a tool call, input transcriptions, ``turnComplete``, ``interrupted``,
  working utterances (a ``turnComplete`` whose status says the model's work goes on: the
  handles issued until its work ends cover nothing), handles, drops. The reference is
  docs/guarantees.md ("Nothing lost, nothing said twice") and the module's docstring: a
  handle covers the input model output (or an interrupted generation) followed; on a resume
  every typed turn the handle does not cover reaches the new connection once: as context
  when a resolved turn (``turnComplete`` after model output that followed the latest input,
  no tool call waiting) came after it, else replayed as it was sent. A turn is never lost
  and never both;
* Vertex AI, where a handle names ``lastConsumedClientMessageIndex`` i: it drops exactly the
  messages up to i; every later one stays (audio aside, which leaves only past its bound
  and is then counted).

Both check the memory bound: the audio held never exceeds 1.25 x (``audio_window_ms`` +
``max_utterance_ms``) plus one message, and audio that leaves without a handle covering it or
a replay sending it is counted as dropped (voiced apart from silence), never silently. The
same for video and image frames (a camera beside the microphone): at most the frame window's
bound held, a resume sends at most its newest ``max_frames`` in order, and a frame that leaves
uncovered and unsent is counted (:mod:`adk_live_resume.conversation.frame_window`).
"""

from __future__ import annotations

import functools
import itertools
import math
from typing import Any

from google.genai import types
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, precondition, rule

from adk_live_resume.conversation.client_message import ClientMessage
from adk_live_resume.conversation.outbox import Outbox

from ...helpers import RATE, audio_input, tool_response, typed_turn

WINDOW_MS = 1000.0
MAX_UTTERANCE_MS = 3000.0
MAX_FRAMES = 4
CHUNK_MS = st.sampled_from([20, 100, 250, 500])


@functools.cache
def _pcm(ms: int, voiced: bool) -> bytes:
    samples = RATE * ms // 1000
    level = 3000 if voiced else 0
    return b"".join(
        int(level * math.sin(2 * math.pi * 440 * n / RATE)).to_bytes(2, "little", signed=True)
        for n in range(samples)
    )


def _labels_in(message: ClientMessage) -> list[str]:
    """The typed turns (their labels) a message carries: its user text, or the user turns of
    a context message (``turn_complete=False``) a replay sent."""
    if message.user_text:
        return _labels(message.user_text)
    if message.method == "send_client_content" and not message.kwargs.get("turn_complete"):
        return [
            word
            for turn in message.kwargs.get("turns") or []
            if turn.role == "user"
            for part in turn.parts or []
            for word in _labels(part.text or "")
        ]
    return []


def _labels(text: str) -> list[str]:
    """The typed turns' labels ("t1", "t2", ...) in a text (transcriptions left out)."""
    return [word for word in text.split() if word[:1] == "t" and word[1:].isdigit()]


def _resolved(items: list[tuple[str, Any]]) -> int:
    """Position of the last resolved turn: a ``turnComplete`` after model output that followed
    the latest user input or tool response, with no tool call waiting (-1 for none)."""
    resolved, waiting, said = -1, set[str](), True
    for i, (kind, value) in enumerate(items):
        if kind in ("turn", "input_text"):
            said = False
        elif kind == "response":
            waiting.difference_update(value)
            said = False
        elif kind == "tool_call":
            waiting.add(value)
        elif kind == "output":
            said = True
        elif kind == "turn_complete" and said and not waiting:
            resolved = i
    return resolved


def _waiting(items: list[tuple[str, Any]]) -> set[int]:
    """Positions of the typed turns and responses in ``items`` still waiting for their answer:
    each generation that begins ("begins") answers the oldest one waiting; an interruption
    answers them all."""
    waiting: list[int] = []
    for i, (kind, _) in enumerate(items):
        if kind in ("turn", "response"):
            waiting.append(i)
        elif kind == "interrupted":
            waiting.clear()
        elif kind == "begins" and waiting:
            waiting.pop(0)
    return set(waiting)


def _kind(message: ClientMessage) -> tuple[str, Any]:
    if message.user_text:
        return ("turn", message.user_text)
    if labels := _labels_in(message):
        return ("context", tuple(labels))
    if message.response_ids:
        return ("response", message.response_ids)
    return ("other", message)


class _Audit:
    """Audio accounting: what came in, and every way it left."""

    def __init__(self, outbox: Outbox) -> None:
        self.outbox = outbox
        self.recorded = 0.0
        self.covered = 0.0
        self.replayed = 0.0

    def check(self) -> None:
        o = self.outbox
        left = self.covered + self.replayed + o.dropped_audio_ms_total + o.dropped_silence_ms_total
        assert math.isclose(self.recorded, o.audio_ms + left, abs_tol=1e-6), (
            f"audio recorded {self.recorded} ms != held {o.audio_ms} + covered {self.covered}"
            f" + replayed {self.replayed} + dropped {o.dropped_audio_ms_total}"
            f" + silence {o.dropped_silence_ms_total}: some left silently"
        )
        bound = 1.25 * (o.audio_window_ms + o.max_utterance_ms) + 500
        assert o.audio_ms <= bound, f"{o.audio_ms} ms held > bound {bound}"


def _frame(number: int) -> dict[str, Any]:
    """One camera frame (its number in the bytes, to follow it through a replay)."""
    return {"video": types.Blob(data=number.to_bytes(4, "big"), mime_type="image/jpeg")}


def _frames_held(outbox: Outbox) -> list[ClientMessage]:
    return [m for m in outbox._items if isinstance(m, ClientMessage) and m.frame]


class _FrameAudit:
    """Frame accounting: what came in, and every way it left."""

    def __init__(self, outbox: Outbox) -> None:
        self.outbox = outbox
        self.recorded = 0
        self.covered = 0
        self.replayed = 0

    def check(self) -> None:
        o = self.outbox
        held = len(_frames_held(o))
        assert held == o.frames.held, f"{held} frames held, the window counts {o.frames.held}"
        assert held <= o.frames.bound(), f"{held} frames held > bound {o.frames.bound()}"
        left = self.covered + self.replayed + o.frames.dropped_total
        assert self.recorded == held + left, (
            f"frames recorded {self.recorded} != held {held} + covered {self.covered}"
            f" + replayed {self.replayed} + dropped {o.frames.dropped_total}: some left silently"
        )


class _Sends(RuleBasedStateMachine):
    """Client sends and server messages common to both dialects."""

    def __init__(self) -> None:
        super().__init__()
        self.outbox = Outbox(WINDOW_MS, max_utterance_ms=MAX_UTTERANCE_MS, max_frames=MAX_FRAMES)
        self.outbox.begin_connection()
        self.audit = _Audit(self.outbox)
        self.frame_audit = _FrameAudit(self.outbox)
        self.frame_numbers = itertools.count(1)
        self.labels = itertools.count(1)
        self.calls = itertools.count(1)
        #: Tool calls the model issued whose response was not sent yet.
        self.open_calls: list[str] = []
        #: The model's last turnComplete said its work goes on (a working utterance).
        self.working = False

    def record(self, method: str, kwargs: dict[str, Any]) -> ClientMessage:
        message = self.outbox.record(method, kwargs)
        self.audit.recorded += message.audio_ms
        self.frame_audit.recorded += message.frame
        self.on_record(message)
        return message

    def on_record(self, message: ClientMessage) -> None:
        """The reference's part."""

    @rule()
    def typed_turn(self) -> None:
        self.record("send_client_content", typed_turn(f"t{next(self.labels)}"))

    @rule(ms=CHUNK_MS, voiced=st.booleans())
    def audio_chunk(self, ms: int, voiced: bool) -> None:
        self.record("send_realtime_input", audio_input(_pcm(ms, voiced)))

    @rule()
    def video_frame(self) -> None:
        self.record("send_realtime_input", _frame(next(self.frame_numbers)))

    @rule(signal=st.sampled_from(["activity_start", "activity_end", "audio_stream_end"]))
    def activity_signal(self, signal: str) -> None:
        value: Any = {
            "activity_start": types.ActivityStart(),
            "activity_end": types.ActivityEnd(),
            "audio_stream_end": True,
        }[signal]
        self.record("send_realtime_input", {signal: value})

    @precondition(lambda self: self.open_calls)
    @rule(data=st.data())
    def tool_response(self, data: st.DataObject) -> None:
        call_id = data.draw(st.sampled_from(self.open_calls))
        self.open_calls.remove(call_id)
        self.record("send_tool_response", tool_response(call_id, "tool"))

    @rule(kind=st.sampled_from(["text", "audio"]))
    def model_output(self, kind: str) -> None:
        if kind == "text":
            self.outbox.model_text("answer ")
        else:
            self.outbox.model_audio()
        self.on_fact("output")

    @rule()
    def input_transcription(self) -> None:
        self.outbox.input_text("heard ")
        self.on_fact("input_text")

    @rule()
    def tool_call(self) -> None:
        call_id = f"c{next(self.calls)}"
        self.open_calls.append(call_id)
        self.outbox.tool_call([call_id])
        self.on_fact("tool_call", call_id)

    @rule()
    def turn_complete(self) -> None:
        self.outbox.turn_complete()
        self.working = False
        self.on_fact("turn_complete")

    @rule()
    def interrupted(self) -> None:
        self.outbox.interrupted()
        self.on_fact("interrupted")

    @rule()
    def working_utterance(self) -> None:
        """A model that works in the background ends an utterance with ``turnComplete`` and
        ``interactionStatus: IN_PROGRESS``: its work goes on (no turn's end); until a
        ``turnComplete`` that finishes it, a handle covers nothing on the Gemini API."""
        self.outbox.work_goes_on()
        self.working = True
        self.on_fact("work_goes_on")

    def on_fact(self, kind: str, call_id: str = "") -> None:
        """The reference's part."""

    def handle(self, index: int | None) -> None:
        before, frames_before = self.outbox.audio_ms, len(_frames_held(self.outbox))
        self.outbox.covered(index)
        self.audit.covered += before - self.outbox.audio_ms
        self.frame_audit.covered += frames_before - len(_frames_held(self.outbox))

    def resume(self, history: list[str] | None = None) -> list[ClientMessage]:
        """Drop and resume: the replay is taken and sent again, each message recorded again on
        the new connection (the context first, as one message that asks for no answer). With
        ``history`` (the user texts of ADK's history), a fresh session instead."""
        self.outbox.begin_connection()
        o = self.outbox
        held, dropped = o.audio_ms, o.dropped_audio_ms_total + o.dropped_silence_ms_total
        frames = [m.kwargs["video"].data for m in _frames_held(o)]
        if history is None:
            replay = o.take_replay()
        else:
            replay = o.take_audio(utterance_in_history=False, waiting_in_history=history)
        # All of it leaves: what the trim drops is counted; the rest the replay takes (sent
        # again, or part of a finished exchange given back as context).
        self.audit.replayed += held - (
            o.dropped_audio_ms_total + o.dropped_silence_ms_total - dropped
        )
        resent = [m.kwargs["video"].data for m in replay.messages if m.frame]
        assert len(resent) <= o.frames.limit, f"{len(resent)} frames resent > the window"
        assert resent == frames[len(frames) - len(resent) :], "not the newest frames, in order"
        self.frame_audit.replayed += len(resent)
        self.after_replay(replay.context, replay.messages)
        sent: list[ClientMessage] = []
        if replay.context:
            context = {"turns": replay.context_contents(), "turn_complete": False}
            sent.append(self.record("send_client_content", context))
        for message in replay.messages:
            sent.append(self.record(message.method, dict(message.kwargs)))
        return sent

    def after_replay(self, context: list[tuple[str, str]], messages: list[ClientMessage]) -> None:
        """The reference's part."""

    @invariant()
    def audio_is_bounded_and_never_leaves_silently(self) -> None:
        self.audit.check()

    @invariant()
    def frames_are_bounded_and_never_leave_silently(self) -> None:
        self.frame_audit.check()


class _InOrder(_Sends):
    """A reference that keeps client messages and server facts in order (``items``, read
    against the contract by each dialect's reference), marking the model output that begins a
    generation ("begins"): what a message asking for an answer needs after it."""

    def __init__(self) -> None:
        super().__init__()
        self.items: list[tuple[str, Any]] = []
        #: Model output of a generation was seen on this connection, and no end of it.
        self.generating = False

    def on_fact(self, kind: str, call_id: str = "") -> None:
        if kind in ("output", "tool_call"):
            if not self.generating:
                self.items.append(("begins", None))  # output that begins a generation
            # (the model waits for a tool call's responses: what it says next begins anew)
            self.generating = kind == "output"
        elif kind in ("turn_complete", "interrupted", "work_goes_on"):
            self.generating = False
        self.items.append((kind, call_id))


class GeminiOutbox(_InOrder):
    """The Gemini API: the reference tracks typed turns (labels) against the contract."""

    def __init__(self) -> None:
        super().__init__()
        # (``items``: what the outbox should hold, as the contract reads it: ("turn", label),
        # ("context", labels), ("response", ids) client messages and server facts)
        #: Every typed turn the user sent (ADK wrote each to its session once).
        self.typed: list[str] = []

    def on_record(self, message: ClientMessage) -> None:
        kind = _kind(message)
        if kind[0] != "other":
            self.items.append(kind)
        if kind[0] == "turn" and kind[1] not in self.typed:
            self.typed.append(kind[1])

    @precondition(lambda self: self.working)
    @rule()
    def handle_while_working(self) -> None:
        """A handle issued while the model says its work goes on covers nothing (the loop
        does not ask the outbox): the request and what was sent meanwhile stay."""

    @precondition(lambda self: not self.working)
    @rule()
    def resumable_handle(self) -> None:
        """Covers what model output (or an interrupted generation) followed; a typed turn or
        a function response only once answered: a generation of its own began after it
        (each one answers the oldest ask waiting), or an interruption."""
        followed = max(
            (
                i
                for i, (kind, _) in enumerate(self.items)
                if kind in ("output", "tool_call", "interrupted")
            ),
            default=-1,
        )
        waiting = _waiting(self.items)
        self.items = [
            item
            for i, item in enumerate(self.items)
            if item[0] in ("turn", "context", "response") and (i > followed or i in waiting)
        ]
        self.handle(None)

    @rule()
    def drop_and_resume(self) -> None:
        self.expected = self._expected()
        self.generating = self.working = False  # (a new connection: no status yet)
        self.resume()

    @rule(data=st.data())
    def fresh_start(self, data: st.DataObject) -> None:
        """The handle is dead: a fresh session gets ADK's history, which holds the typed turns
        (some left out, as ADK does before a late background result); a turn not answered
        that the history lacks goes after it, once."""
        history = [label for label in self.typed if data.draw(st.booleans())]
        _, replayed = self._expected(typed_only=True)
        self.expected = ([], [label for label in replayed if label not in history])
        self.generating = self.working = False
        self.resume(history)

    def _expected(self, *, typed_only: bool = False) -> tuple[list[str], list[str]]:
        """``(as context, replayed)``: the labels of the typed turns a resume must send (only
        the typed turns' own, not those of a context a replay sent, with ``typed_only``)."""
        resolved = _resolved(self.items)
        # A typed turn or response up to there still waiting for its answer (no generation
        # of its own began after it, nor an interruption) is still open: the rest of an answer
        # already streaming, or an earlier ask's answer, resolved the turn, not it. It goes
        # again, ahead of what follows the resolved turn.
        still_open = _waiting(self.items[: resolved + 1])
        context: list[str] = []
        replayed: list[str] = []
        reopened: list[str] = []
        for i, (kind, value) in enumerate(self.items):
            labels = [value] if kind == "turn" else list(value) if kind == "context" else []
            if typed_only and kind != "turn":
                labels = []
            if i in still_open:
                reopened.extend(labels)
            else:
                (context if i <= resolved else replayed).extend(labels)
        self.items = []
        return context, reopened + replayed

    def after_replay(self, context: list[tuple[str, str]], messages: list[ClientMessage]) -> None:
        as_context, replayed = self.expected
        got_context = [w for role, text in context if role == "user" for w in _labels(text)]
        got_replayed = [w for m in messages for w in _labels_in(m)]
        assert got_context == as_context, (
            f"context holds turns {got_context}, the contract {as_context}"
        )
        assert got_replayed == replayed, f"replayed turns {got_replayed}, the contract {replayed}"


class VertexOutbox(_InOrder):
    """Vertex AI: a handle names the last client message the server consumed."""

    def __init__(self) -> None:
        super().__init__()
        #: Messages recorded on this connection and not covered, by index.
        self.uncovered: dict[int, ClientMessage] = {}
        self.consumed = 0
        # (``items``: the messages not covered and the server facts since the newest handle)

    def on_record(self, message: ClientMessage) -> None:
        self.uncovered[message.index] = message
        self.items.append(("message", message))
        self.items.append(_kind(message))

    @rule(data=st.data())
    def resumable_handle(self, data: st.DataObject) -> None:
        last = max(self.uncovered, default=self.consumed)
        index = data.draw(st.integers(self.consumed, max(self.consumed, last)))
        self.consumed = index
        self.uncovered = {i: m for i, m in self.uncovered.items() if i > index}
        kept = {id(m) for m in self.uncovered.values()}
        self.items = [
            item
            for position, item in enumerate(self.items)
            if (item[0] == "message" and id(item[1]) in kept)
            or (
                position
                and self.items[position - 1][0] == "message"
                and id(self.items[position - 1][1]) in kept
            )
        ]
        self.handle(index)

    @rule()
    def drop_and_resume(self) -> None:
        self.consumed = 0
        # What a finished exchange holds goes as context: the rest is replayed, and so is a
        # typed turn or response before it still waiting for its answer (an open ask).
        facts = [item for item in self.items if item[0] != "message"]
        resolved = _resolved(facts)
        waiting = _waiting(facts[: resolved + 1])
        seen = -1
        still_open: list[ClientMessage] = []
        after: list[ClientMessage] = []
        for kind, value in self.items:
            if kind == "message":
                if seen >= resolved:
                    after.append(value)
                elif seen + 1 in waiting:  # (its kind is the fact that follows it)
                    still_open.append(value)
            else:
                seen += 1
        self.expected = still_open + after
        self.generating = False  # (a new connection: no generation yet)
        self.uncovered = {}
        self.items = []
        self.resume()

    def after_replay(self, context: list[tuple[str, str]], messages: list[ClientMessage]) -> None:
        # Vertex replays what was not consumed as it was sent (a finished exchange aside,
        # which goes as context): each uncovered message once, in order.
        # Audio may have left past its bound (the audit checks it was counted).
        got = [m.index for m in messages]
        # Frames beyond the window too (the frame audit checks they were counted).
        expected = [
            m.index for m in self.expected if (m.audio_ms <= 0 and not m.frame) or m.index in got
        ]
        assert got == expected, f"replayed indexes {got}, the uncovered ones {expected}"

    @invariant()
    def a_handle_drops_exactly_the_messages_it_covers(self) -> None:
        held = [item for item in self.outbox._items if isinstance(item, ClientMessage)]
        assert all(m.index > self.consumed for m in held), "a covered message is kept"
        held_ids = {id(m) for m in held}
        lost = [
            m.index
            for m in self.uncovered.values()
            if m.audio_ms <= 0 and not m.frame and id(m) not in held_ids
        ]  # (audio and frames leave past their bounds: their audits check they are counted)
        assert not lost, f"uncovered messages {lost} left the outbox"


TestEveryTypedTurnReachesAResumedSessionOnceAsContextOrReplayed = GeminiOutbox.TestCase
TestAHandleCoveringMessageIDropsExactlyTheMessagesUpToI = VertexOutbox.TestCase
