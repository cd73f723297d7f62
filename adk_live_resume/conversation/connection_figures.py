"""What one connection counted of its conversation: tokens, answers, function calls.

Tokens, how fast and long each answer was, and the function calls the model asked for.

:class:`ConnectionFigures` is fed by the connection's watch (:mod:`..shell.connection_watch`) with
what it already sees: each ``usageMetadata`` (:mod:`.token_usage`), each user turn sent (a
typed turn, or voiced microphone audio: a spoken turn ends with its last voiced chunk), each
piece of model output, each end of an answer (``turnComplete``, ``interrupted``) and each
tool call (its function calls counted as the model asked for them). Its
:meth:`~ConnectionFigures.figures` is the frozen :class:`Figures` the connection's outcome
carries to the run's report (:mod:`..observe.callbacks`): a figure added here reaches
:class:`~adk_live_resume.observe.callbacks.RunStats` and OpenTelemetry without the loop knowing it.

An answer's *first output* is the time from the user turn it answers (the latest one sent
before its first output) to that output: model text, audio, a transcription of it, or a
tool call (LiveKit's time to first token). Its *duration* runs from that output to its end.
Output with no user turn before it (a greeting, a told background result) is no answer.

Pure: no I/O, no clock (times are ``loop.time()`` values passed in). Cheap: a few attribute
updates per call, nothing per microphone chunk but one comparison.

:func:`off` makes new connections count nothing, for measuring what the counting costs
(``bench steady_state --accounting``).
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from .token_usage import TokenUsage


@dataclass(frozen=True)
class Answer:
    """One answer to a user turn on a connection."""

    #: Milliseconds from the user turn to the answer's first output.
    first_output_ms: float
    #: Milliseconds from that output to the answer's end.
    duration_ms: float
    #: Characters of its text, or of the transcription of its audio (0 for audio alone).
    characters: int
    #: ``loop.time()`` of its end.
    ended_at: float
    #: It was cut off (``interrupted``) rather than finished.
    interrupted: bool = False


@dataclass(frozen=True)
class Figures:
    """What one connection counted (see the module)."""

    #: The sum of its ``usageMetadata`` (``None``: the service sent none on it).
    usage: TokenUsage | None = None
    #: Its first and its latest ``promptTokenCount`` (the context's size then).
    first_prompt_tokens: int | None = None
    last_prompt_tokens: int | None = None
    answers: tuple[Answer, ...] = ()
    #: The function calls the model asked for on it (a call asked again on a later
    #: connection counts there again).
    tool_calls: int = 0


class ConnectionFigures:
    """The figures of one connection, as they come (see the module)."""

    def __init__(self) -> None:
        self._usage: TokenUsage | None = None
        self._first_prompt: int | None = None
        self._last_prompt: int | None = None
        self._answers: list[Answer] = []
        #: ``loop.time()`` of the latest user turn not answered yet.
        self._turn_at: float | None = None
        #: ``(first output at, latency ms)`` of the answer in progress.
        self._answering: tuple[float, float] | None = None
        self._characters = 0
        #: Turns ended (``turnComplete``) since the last ``usageMetadata`` (or the start).
        self.turns_since_usage = 0
        self._tool_calls = 0

    def usage(self, metadata: Any) -> TokenUsage:
        """A ``usageMetadata`` arrived: added to the connection's sum; returns its counts."""
        counted = TokenUsage.of(metadata)
        self._usage = counted if self._usage is None else self._usage + counted
        if counted.prompt_tokens:
            if self._first_prompt is None:
                self._first_prompt = counted.prompt_tokens
            self._last_prompt = counted.prompt_tokens
        self.turns_since_usage = 0
        return counted

    @property
    def first_prompt_tokens(self) -> int | None:
        return self._first_prompt

    def user_turn(self, now: float) -> None:
        """A user turn was sent (a typed turn, voiced microphone audio) at ``now``."""
        self._turn_at = now

    def output(self, now: float, characters: int = 0) -> None:
        """Model output arrived at ``now`` (``characters`` of text or transcription)."""
        if self._answering is None:
            turn = self._turn_at
            if turn is None:
                return  # (output nobody asked for: no answer to time)
            self._turn_at = None
            self._answering = (now, (now - turn) * 1000.0)
            self._characters = 0
        self._characters += characters

    def answer_ended(self, now: float, *, interrupted: bool = False) -> None:
        """The answer in progress ended at ``now`` (``turnComplete``, or cut off)."""
        answering, self._answering = self._answering, None
        if not interrupted:
            self.turns_since_usage += 1
        if answering is None:
            return
        began, latency = answering
        self._answers.append(
            Answer(latency, (now - began) * 1000.0, self._characters, now, interrupted)
        )

    def tool_call(self, calls: int) -> None:
        """The model asked for ``calls`` function calls in one tool call."""
        self._tool_calls += calls

    def figures(self) -> Figures:
        return Figures(
            self._usage,
            self._first_prompt,
            self._last_prompt,
            tuple(self._answers),
            tool_calls=self._tool_calls,
        )


class _Off(ConnectionFigures):
    """Counts nothing (see :func:`off`)."""

    def usage(self, metadata: Any) -> TokenUsage:
        return TokenUsage()

    def user_turn(self, now: float) -> None:
        pass

    def output(self, now: float, characters: int = 0) -> None:
        pass

    def answer_ended(self, now: float, *, interrupted: bool = False) -> None:
        pass

    def tool_call(self, calls: int) -> None:
        pass


_counting = True


def new() -> ConnectionFigures:
    """A collector for a new connection (one that counts nothing under :func:`off`)."""
    return ConnectionFigures() if _counting else _Off()


@contextlib.contextmanager
def off() -> Iterator[None]:
    """Connections opened inside count nothing: for measuring what counting costs (the
    benchmark's switch; nothing else turns it off)."""
    global _counting
    before, _counting = _counting, False
    try:
        yield
    finally:
        _counting = before
