"""Does a typed turn or a function response still wait for the model's answer?

A planned move to a new connection (goAway) must not happen while the model owes an answer:
the old connection would start answering, be retired mid-answer, and the turn would be sent
again on the new one (the user sees a partial answer, then the whole answer again). A
resumption handle does not tell: it may arrive just after the user's next turn was sent,
from a state that does not hold that turn. :class:`UnansweredTurns` answers from what was sent
and what the server said since:

* a typed turn (``clientContent`` or ``realtimeInput.text`` with user text) or a function
  response makes a turn *unanswered*;
* it is answered when model output (text, a transcription piece, a tool call) that began
  after it is followed by the end of that generation (``turnComplete``); a tool call ends
  the output before the responses, so what the model says after them begins a generation;
* output already streaming when the turn was sent belongs to an earlier turn: its end
  (``turnComplete`` or ``interrupted``) does not answer the new turn;
* a ``turnComplete`` whose ``interactionStatus`` says the model's work goes on ends the
  generation and answers nothing: the output after it (the answer the work brings) answers
  the turns sent before it.

Guarantee: :attr:`UnansweredTurns.unanswered` is never false while a turn sent on this session has
not been followed by a whole generation that began after it. (It may stay true longer than
needed, for a turn the model chose not to answer: a planned move then waits for its
deadline instead.)

Pure: no I/O, no clock.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass
class UnansweredTurns:
    """Whether a sent turn waits for its answer (see the module docstring)."""

    #: A turn was sent and no whole generation begun after it has ended yet.
    unanswered: bool = False
    #: Model output of the generation in progress has been seen.
    _generating: bool = False
    #: The generation in progress began before the unanswered turn was sent.
    _earlier_generation: bool = False
    #: Output that began after the unanswered turn was sent has been seen.
    _answer_begun: bool = False

    def on_turn_sent(self) -> None:
        """A typed turn or function response was sent (or recorded to be sent)."""
        self.unanswered = True
        self._answer_begun = False
        self._earlier_generation = self._generating

    def on_model_output(self) -> None:
        """Model output arrived (text, a transcription piece, a tool call)."""
        self._generating = True
        if not self._earlier_generation:
            self._answer_begun = True

    def on_tool_call(self) -> None:
        """A tool call arrived: model output, after which the model waits for the responses.
        What it says after them begins a new generation, which may answer them, also where
        no ``turnComplete`` ends the turn first (Gemini 2.5 native audio, Gemini 3.x Live:
        the fake's families, from the protocol notes)."""
        self.on_model_output()
        self._generating = False

    def on_generation_end(self) -> None:
        """``turnComplete`` or ``interrupted``: the generation in progress ended."""
        if self._earlier_generation:
            self._earlier_generation = False
        elif self._answer_begun:
            self.unanswered = False
        self._generating = False
        self._answer_begun = False

    def on_generation_paused(self) -> None:
        """A ``turnComplete`` that does not finish the model's turn (its ``interactionStatus``
        says the work goes on, :mod:`adk_live_resume.conversation.model_work`): the generation in
        progress ended and answered nothing; output after it begins a new generation, which
        may answer the turn sent meanwhile."""
        self._earlier_generation = False
        self._generating = False
        self._answer_begun = False

    def on_new_connection(self) -> None:
        """A new connection started: nothing is being generated on it yet. An unanswered turn
        stays unanswered (it is replayed, or its answer comes from a fresh session's history)."""
        self._generating = False
        self._earlier_generation = False
        self._answer_begun = False
