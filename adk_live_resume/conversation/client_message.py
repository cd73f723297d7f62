"""One client message as the outbox keeps it (:class:`ClientMessage`).

Pure: values only.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from google.genai import types

__all__ = ["ClientMessage", "PackedAudio"]


#: A :func:`~.client_sends.plain_blob` chunk kept: (argument, bytes, MIME type).
PackedAudio = tuple[str, bytes, str]


@dataclass(slots=True)
class ClientMessage:
    """One client message as sent: the session method and its keyword arguments.

    Never changed once recorded (a new one is made instead). Not frozen: one is made for
    every microphone chunk, and a frozen dataclass costs three times as much to make. A
    chunk is kept packed (:data:`PackedAudio`, which the garbage collector stops tracking:
    its dict and ``Blob`` were three more tracked objects per chunk held, for every
    session); :attr:`kwargs` makes its ``Blob`` again for a replay."""

    index: int  #: 1-based on the connection it was sent on (the setup is 0)
    method: str
    sent: Mapping[str, Any] | PackedAudio  #: the keyword arguments, or a chunk packed
    audio_ms: float = 0.0
    user_text: str | None = None
    response_ids: tuple[str, ...] = ()
    #: Audio loud enough to be speech (see :mod:`adk_live_resume.conversation.activity`).
    voiced: bool = False
    #: Number of the unanswered utterance it belonged to when recorded (0: none).
    utterance: int = 0
    #: The first message of its utterance.
    starts_utterance: bool = False
    #: A video or image frame (:func:`~.client_sends.is_frame`).
    frame: bool = False

    @property
    def kwargs(self) -> Mapping[str, Any]:
        """The send's keyword arguments (a packed chunk's ``Blob`` anew, equal to the one sent)."""
        sent = self.sent
        if isinstance(sent, tuple):
            key, data, mime = sent
            return {key: types.Blob(data=data, mime_type=mime)}
        return sent
