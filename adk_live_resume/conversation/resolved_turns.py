"""Where a replay splits what the outbox holds: finished exchanges, and what still asks.

On resume the outbox (:mod:`~.outbox`) gives back what the newest handle may not hold. The
exchanges the model finished go back as context (said once, never answered again); what
still asks the model for an answer goes again as it was sent (answered once). This module
draws that line, over the outbox's items (client messages and :class:`~.server_facts.
ServerFact`), in order:

* a turn is *resolved* at a ``turnComplete`` when the model said something after the latest
  typed turn or tool response and no tool call waits for its response
  (:func:`resolved_position`);
* a message that asks for an answer (:func:`asks_answer`: a typed turn, a function response,
  client content telling tool results) *waits* until a generation of its own begins: the
  server reads client messages in the order sent and answers each ask in a generation of its
  own, so each generation that begins answers the oldest ask waiting, and an interruption
  (which shows the server took in what was sent before it) answers them all
  (:func:`waiting_asks`). What followed an ask may be the rest of an answer already streaming
  when it went out, or the answer to an ask sent before it: the server may have sent either
  before it had the message;
* among the items up to the resolved turn, an ask still waiting is *open* (:func:`split`):
  content telling a result sent while an answer streams carries no text, and given back as
  context it would be lost.

:func:`split` gives both parts. Guarantees: every client message is in exactly one part,
each part keeps the order recorded, and an open ask is never in the finished part.

Pure: no I/O.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Sequence
from typing import TypeAlias

from .client_message import ClientMessage
from .client_sends import tells_results
from .server_facts import ServerFact

#: What the outbox holds, in order: client messages and server facts.
Item: TypeAlias = ClientMessage | ServerFact

__all__ = ["asks_answer", "resolved_position", "split", "waiting_asks"]


def asks_answer(item: ClientMessage) -> bool:
    """Whether ``item`` asks the model for an answer: a typed turn, a function response, or
    client content telling tool results (:func:`~.client_sends.tells_results`)."""
    return bool(item.user_text or item.response_ids) or (
        item.method == "send_client_content" and tells_results(item.method, item.kwargs)
    )


def resolved_position(items: Sequence[Item]) -> int:
    """Position of the last resolved turn's ``turnComplete`` (see the module), or -1. Raw
    audio chunks are not a turn by themselves; the server's input transcription is."""
    resolved, pending, answered = -1, set[str](), True
    for position, item in enumerate(items):
        if not isinstance(item, ServerFact):
            pending.difference_update(item.response_ids)
            if item.user_text or item.response_ids:
                answered = False
        elif item.kind == "tool_call":
            pending.update(item.ids)
        elif item.kind == "input_text":
            answered = False
        elif item.kind in ("model_text", "model_audio") and not item.quiet:
            answered = True  # (near silence said nothing: the turn is still open)
        elif item.kind == "turn_complete" and not pending and answered:
            resolved = position
    return resolved


def waiting_asks(items: Sequence[Item]) -> list[int]:
    """Positions of the messages in ``items`` that ask for an answer (:func:`asks_answer`)
    and still wait for a generation of their own: each generation that begins answers the
    oldest ask waiting; an interruption answers them all."""
    waiting: deque[int] = deque()
    for position, item in enumerate(items):
        if not isinstance(item, ServerFact):
            if asks_answer(item):
                waiting.append(position)
        elif item.kind == "interrupted":
            waiting.clear()
        elif item.starts and waiting:
            waiting.popleft()
    return list(waiting)


def split(items: Sequence[Item]) -> tuple[list[Item], list[Item]]:
    """``(finished, asking)``: the items up to the last resolved turn but its open asks
    (given back as context), and those open asks followed by every item after that turn
    (sent again as they were), each in the order recorded."""
    resolved = resolved_position(items)
    still_open = set(waiting_asks(items[: resolved + 1]))  # (the open asks)
    finished = [item for p, item in enumerate(items[: resolved + 1]) if p not in still_open]
    asking = [items[p] for p in sorted(still_open)] + list(items[resolved + 1 :])
    return finished, asking
