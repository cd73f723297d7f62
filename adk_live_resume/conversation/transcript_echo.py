"""Input transcription that a replay would show the user a second time.

After a drop, the live loop replays the audio of the utterance the model has not answered,
from its start; the new connection's server transcribes it again, and ADK would yield those
``inputTranscription`` pieces as events once more: the user would read the words they saw
while speaking a second time. :class:`TranscriptEcho` keeps what the user was shown of the
unanswered utterance and, on a connection that replays that utterance from its start, tells
which part of each new piece repeats it.

Guarantees:

* On a connection armed with :meth:`TranscriptEcho.replaying`, the new transcription's
  leading text that equals what the user was shown of the utterance (compared without white
  space and case: pieces carry their own spacing) is held back, piece by piece, and a piece
  that goes past it passes from there on. After that, every piece passes whole.
* Text the user was not shown is never held back: when a piece disagrees with what was
  shown, it and every later piece of the connection pass whole.
* A connection that is not armed (a resume that replays nothing, or the utterance without
  its start, as after Vertex AI's ``lastConsumedClientMessageIndex`` says the audio was
  consumed) passes every piece whole.
* What was shown is kept until a piece of another utterance arrives (a new utterance, or
  none: it was answered), across any number of connections: a second drop during the
  replay arms the next connection with everything shown so far.

Pure: no I/O.
"""

from __future__ import annotations


def squeeze(text: str) -> str:
    """``text`` without white space, lower case: transcription pieces carry odd spacing."""
    return "".join(text.split()).lower()


def _after(text: str, squeezed: int) -> str:
    """What follows the first ``squeezed`` characters of :func:`squeeze` (``text``) in
    ``text``, with its own spacing."""
    seen = 0
    for position, character in enumerate(text):
        if seen >= squeezed:
            return text[position:]
        if not character.isspace():
            seen += len(character.lower())
    return ""


class TranscriptEcho:
    """What the user was shown of the unanswered utterance, and a replay's repeat of it."""

    def __init__(self) -> None:
        #: Number of the utterance :attr:`_shown` belongs to (0: none).
        self._utterance = 0
        #: Squeezed text of the utterance passed on to be shown, over every connection.
        self._shown = ""
        #: Squeezed shown text this connection has not transcribed again yet (None: pass all).
        self._expected: str | None = None
        #: A connection replays the utterance: the next piece belongs to it, whatever its
        #: number (the replayed audio may count as a new utterance), on this connection or,
        #: if it drops first, on a later one.
        self._adopt = False

    def new_connection(self) -> None:
        """A connection begins: it repeats nothing unless :meth:`replaying` says so."""
        self._expected = None

    def replaying(self, utterance: int) -> None:
        """The new connection replays ``utterance`` from its start: its transcription
        begins with what the user was shown of it."""
        if utterance and (utterance == self._utterance or self._adopt) and self._shown:
            self._expected = self._shown
            self._adopt = True

    def piece(self, utterance: int, text: str) -> str:
        """An ``inputTranscription`` piece of ``utterance`` (0: none) arrived: return what of
        it to show ("" for nothing); the rest repeats what the user was shown."""
        if self._adopt:
            self._adopt = False
            self._utterance = utterance
        elif utterance != self._utterance:
            self._utterance, self._shown, self._expected = utterance, "", None
        shown = self._new_part(text)
        if utterance:
            self._shown += squeeze(shown)
        return shown

    def _new_part(self, text: str) -> str:
        expected = self._expected
        if expected is None:
            return text
        squeezed = squeeze(text)
        if expected.startswith(squeezed):  # all of it repeats (white space only, too)
            self._expected = expected[len(squeezed) :] or None
            return ""
        self._expected = None
        if squeezed.startswith(expected):  # it ends the repeat and goes on
            return _after(text, len(expected))
        return text  # it disagrees with what was shown: show all from here on
