"""The fake server's deterministic scripted model and its memory.

What the model answers to a user turn with text ``T`` (matching ignores case, surrounding
blanks and a trailing ``?`` or ``.``):

===============================  ===============================================================
user turn                        answer
===============================  ===============================================================
``call <tool> <json object>``    a ``toolCall`` for ``<tool>`` with those args, if the setup
                                 declared it, then ``turnComplete`` (as Gemini 2.x Live models
                                 do; a Gemini 3.x Live setup model gets none until the answer).
                                 After the matching ``toolResponse``, a new model turn:
                                 ``<tool> returned <compact json of the response>``.
                                 Undeclared tool: ``unknown tool <tool>``. Args that are not a
                                 JSON object: ``invalid arguments for <tool>``. The args may be
                                 omitted (``{}``).
``call a {..} and call b {..}``  parallel: one ``toolCall`` message with both calls; the
                                 answer waits for both responses.
``call a {..} then call b {..}`` sequential: the ``toolCall`` for ``a``; once its response
                                 arrived, the ``toolCall`` for ``b``; then the answer. ``and``
                                 binds tighter: ``call a {} and call b {} then call c {}``.
                                 With several calls the answer names every result, in call
                                 order: ``a returned {..}; b returned {..}``.
``call <tool> ..`` (NON_BLOCKING) a function declared with ``behavior: NON_BLOCKING`` (either
                                 casing) does not make the model wait: after its ``toolCall``
                                 the answer names it ``<tool> started`` (``; ``-joined with
                                 the other calls' results, in call order) and the turn ends.
                                 The call stays open in the session (a handle issued now
                                 covers it: a session resumed from that handle accepts its
                                 response). When its response arrives the model reacts per
                                 the response's ``scheduling``: ``INTERRUPT`` cuts the answer
                                 in progress (``interrupted``) and answers
                                 ``<tool> returned <json>`` at once; ``WHEN_IDLE`` (the
                                 default) gives the same answer once the answer in progress
                                 is complete and no utterance is in progress (until then the
                                 call stays open in handles); ``SILENT`` answers nothing (the
                                 result is recorded only). These answers answer no user turn.
a ``clientContent`` user turn     told as the result of a NON_BLOCKING call is, per its
with only function responses     ``scheduling``: ``<tool> returned <json>``. A history
                                 ending with NON_BLOCKING calls' results is told so too
                                 (answering no user turn), and so is a late result as
                                 content: a model turn of function calls, then a user
                                 turn of their responses.
``what did I say first?``        ``you first said: <first user turn in memory>``
``recall``                       ``you said: <t1> | <t2> | ...``: every user turn in memory, in
                                 order, duplicates included
``how many turns?``              ``<N>``, the number alone (e.g. ``3``)
anything else                    ``echo: T``
===============================  ===============================================================

Every answer is streamed in at least three chunks, except answers shorter than three
characters (one chunk per character). Memory questions look at the memory *before* the
question: the question itself is neither listed nor counted. With an empty memory ``what did I
say first?`` answers ``you said nothing yet`` and ``recall`` answers ``you said nothing``.

Memory is the ordered list of turns the session holds: user turns (text typed, spoken, or
delivered as history) and the model's completed answers. A fresh session starts empty; a
resumed session starts from the exact snapshot its handle was issued with.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from .protocol import compact_json

__all__ = [
    "STARTED",
    "CallTool",
    "CallTools",
    "Reply",
    "ScriptedModel",
    "Started",
    "Turn",
    "parse_calls",
    "split_chunks",
    "thought_part",
    "turns_overlap",
]

_CALL = re.compile(r"call\s+([^\s{]+)\s*", re.IGNORECASE)
_JOIN = re.compile(r"\s*\b(and|then)\b\s*", re.IGNORECASE)
_DECODER = json.JSONDecoder()


@dataclass(frozen=True)
class Turn:
    """One turn in the session's memory. ``text`` joins the turn's text parts ("" if none)."""

    role: Literal["user", "model"]
    text: str


@dataclass(frozen=True)
class Reply:
    """The model answers with ``text``."""

    text: str


@dataclass(frozen=True)
class CallTool:
    """The model calls the declared function ``name`` with ``args``."""

    name: str
    args: dict[str, Any]


@dataclass(frozen=True)
class CallTools:
    """The model calls functions: ``steps`` run in order, the calls of a step in parallel."""

    steps: tuple[tuple[CallTool, ...], ...]

    @property
    def calls(self) -> tuple[CallTool, ...]:
        """Every call, in order."""
        return tuple(call for step in self.steps for call in step)


@dataclass(frozen=True)
class Started:
    """The result of a NON_BLOCKING call in the answer of its turn: it runs in the background."""


#: The one :class:`Started` value.
STARTED = Started()


def parse_calls(text: str) -> list[list[tuple[str, Any]]] | None:
    """Parse ``call a {..} and call b {..} then call c {..}`` into steps of (name, args).

    Returns None when ``text`` does not start with ``call``. Args that are missing parse as
    ``{}``; args that are not JSON parse as the raw text (the model then refuses them).
    """
    steps: list[list[tuple[str, Any]]] = [[]]
    position = 0
    text = text.strip()
    while True:
        match = _CALL.match(text, position)
        if match is None:
            return None if position == 0 else [s for s in steps if s]
        name, position = match.group(1), match.end()
        args: Any = {}
        if text.startswith("{", position):
            try:
                args, position = _DECODER.raw_decode(text, position)
            except json.JSONDecodeError:
                args, position = text[position:], len(text)
        elif position < len(text) and not _JOIN.match(text, position):
            joint = _JOIN.search(text, position)
            end = joint.start() if joint else len(text)
            args, position = text[position:end], end
        steps[-1].append((name, args))
        joint = _JOIN.match(text, position)
        if joint is None:
            if text[position:].strip():
                steps[-1][-1] = (name, text[match.end() :])
            return [s for s in steps if s]
        if joint.group(1).lower() == "then":
            steps.append([])
        position = joint.end()


def _normalize(text: str) -> str:
    return re.sub(r"\s+", " ", text.strip().lower()).rstrip("?.").strip()


class ScriptedModel:
    """Decides every answer of the fake server; deterministic, no randomness, no I/O.

    Syntax (see the module docstring for the full table): ``call <tool> <json object>`` calls a
    tool declared in the setup (``and`` for calls in parallel, ``then`` for calls in sequence),
    ``what did I say first?``, ``recall`` and ``how many turns?``
    ask about memory, anything else is echoed as ``echo: <text>``.
    """

    def __init__(self, declared_tools: Iterable[str] = ()) -> None:
        self.declared_tools = frozenset(declared_tools)

    def respond(self, text: str, previous: Sequence[Turn]) -> Reply | CallTools:
        """Answer the user turn ``text`` given the memory ``previous`` (which excludes it)."""
        users = [turn.text for turn in previous if turn.role == "user" and turn.text]
        key = _normalize(text)
        if key == "what did i say first":
            return Reply(f"you first said: {users[0]}" if users else "you said nothing yet")
        if key == "recall":
            return Reply("you said: " + " | ".join(users) if users else "you said nothing")
        if key == "how many turns":
            return Reply(str(len(users)))
        steps = parse_calls(text)
        if steps:
            for name, args in (call for step in steps for call in step):
                if name not in self.declared_tools:
                    return Reply(f"unknown tool {name}")
                if not isinstance(args, dict):
                    return Reply(f"invalid arguments for {name}")
            return CallTools(tuple(tuple(CallTool(n, a) for n, a in step) for step in steps))
        return Reply(f"echo: {text}")

    @staticmethod
    def after_tool(name: str, response: Any) -> Reply:
        """The answer once the function response for ``name`` arrived."""
        return Reply(f"{name} returned {compact_json(response)}")

    @staticmethod
    def after_tools(results: Sequence[tuple[str, Any]]) -> Reply:
        """The answer once every call's response arrived: each result named, in call order
        (a NON_BLOCKING call, whose result is :data:`STARTED`, as ``<name> started``)."""
        return Reply(
            "; ".join(
                f"{name} started"
                if isinstance(r, Started)
                else f"{name} returned {compact_json(r)}"
                for name, r in results
            )
        )


def turns_overlap(memory: Sequence[Turn], turns: Sequence[Turn]) -> bool:
    """True when ``turns`` begins with turns that memory already holds, in the same order.

    That is, some run of consecutive turns in memory equals the first ``min(2, len(turns))``
    or more turns of ``turns`` (a replayed history followed by new turns still counts), and
    that run begins memory (a history sent again) or ends it (an exchange the session took
    in, sent again as context). A run in between is an exchange said again word for word
    later in the conversation: a new exchange, whose replay is no resend.
    """
    need = min(2, len(turns))
    if not need:
        return False
    for start in range(len(memory)):
        matched = 0
        while (
            matched < len(turns)
            and start + matched < len(memory)
            and memory[start + matched] == turns[matched]
        ):
            matched += 1
        if matched >= need and (start == 0 or start + matched == len(memory)):
            return True
    return False


def thought_part(reply: Reply) -> dict[str, Any]:
    """The thought summary a thinking model opens ``reply`` with: a text part marked
    ``thought: true`` (never part of the answer's text)."""
    return {"text": f"Planning the answer: {reply.text}", "thought": True}


def split_chunks(text: str, *, minimum: int = 3, size: int = 16) -> list[str]:
    """Split ``text`` into at least ``minimum`` non-empty pieces (fewer only if it is shorter).

    The pieces are consecutive and join back to ``text`` exactly.
    """
    count = max(minimum, -(-len(text) // size))
    count = max(1, min(count, len(text)))
    bounds = [round(i * len(text) / count) for i in range(count + 1)]
    return [text[bounds[i] : bounds[i + 1]] for i in range(count)]
