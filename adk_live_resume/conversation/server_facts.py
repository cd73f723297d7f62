"""The server facts the outbox keeps beside the client messages, for replay.

A :class:`ServerFact` is what the outbox (:mod:`~.outbox`) needs to know of a
server message to tell what a handle covers and what a replay sends: model output (text,
audio, near-silent audio), input transcription, tool calls, turn completions,
``interrupted``. One is kept per transcription piece, and one stands for a run of model
audio.

Pure: values only.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

__all__ = [
    "AUDIO_FACTS",
    "MODEL_AUDIO",
    "MODEL_AUDIO_STARTS",
    "MODEL_OUTPUT",
    "QUIET_AUDIO",
    "QUIET_AUDIO_STARTS",
    "ServerFact",
]


@dataclass(frozen=True, slots=True)
class ServerFact:
    """A server fact kept for replay (one per transcription piece: no ``__dict__``)."""

    kind: Literal[
        "model_text", "model_audio", "input_text", "tool_call", "turn_complete", "interrupted"
    ]
    text: str = ""
    ids: tuple[str, ...] = ()
    #: Model output that begins a generation (none was in progress on this connection).
    starts: bool = False
    #: Model audio that is all near silence (below the speech threshold): output for what a
    #: handle covers (the server took the input in), no answer to a turn.
    quiet: bool = False


#: Model output without text (audio, a thought): one fact stands for a run of them.
MODEL_AUDIO = ServerFact("model_audio")
MODEL_AUDIO_STARTS = ServerFact("model_audio", starts=True)
#: A run of near-silent model audio (see :attr:`ServerFact.quiet`).
QUIET_AUDIO = ServerFact("model_audio", quiet=True)
QUIET_AUDIO_STARTS = ServerFact("model_audio", starts=True, quiet=True)
#: Facts that are model output, whatever its form: the server took in what came before.
MODEL_OUTPUT = frozenset({"model_text", "model_audio", "tool_call"})
#: Per ``voiced``: the fact that stands for a run of model audio, and the one that begins
#: a generation with it.
AUDIO_FACTS = {
    True: (MODEL_AUDIO, MODEL_AUDIO_STARTS),
    False: (QUIET_AUDIO, QUIET_AUDIO_STARTS),
}
