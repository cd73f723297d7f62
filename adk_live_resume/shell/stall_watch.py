"""One connection's stall watch: the stall rule fed from what the tap sees, and its timer.

:class:`StallWatch` translates the connection's traffic into the events of the pure
:class:`~adk_live_resume.rules.stall_rule.StallRule` (user turns sent, answering server messages,
finished turns and how empty they were, tool calls open) and runs the one timer that asks
the rule when a silence may be due. When the rule sees a stall, ``on_stall`` is called
once; the connection's watch then ends the connection as stalled
(:meth:`~adk_live_resume.rules.connection_state.ConnectionState.stalled`) and the loop recovers.

"The model works" is an input: the connection's reading of it (``model_working``, the
watch's :attr:`ModelWork.working <adk_live_resume.conversation.model_work.ModelWork.working>`:
output streams, or the last ``interactionStatus`` said the work goes on), read from each
message once by the watch; this watch reads no status of its own.

Guarantees: never calls ``on_stall`` more than once, nor after :meth:`StallWatch.stop`;
leaves no timer behind once stopped; a function response starts the wait for an answer only
when it answers a call the model waits for (not a NON_BLOCKING one, which the model may
answer silently); handles and keys are never logged.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Mapping
from typing import Any

from google.genai import types

from ..conversation.activity import near_silent_audio
from ..conversation.client_message import ClientMessage
from ..conversation.client_sends import describe, signals
from ..rules.stall_rule import RESPONSE_REJECTED, Excuses, Stall, StallRule, degenerate

logger = logging.getLogger("adk_live_resume.loop")

#: What :meth:`StallWatch._check` gives the rule while no turn waits (it reads none then).
_NO_EXCUSES = Excuses()


def _value(item: object) -> str:
    return str(getattr(item, "value", item) or "")


def _asked_again(asked: str, before: str) -> bool:
    """Whether the user turn ``asked`` may be the turn ``before`` said again: the same
    words, or one ends with the other. A spoken turn is what the server transcribed since the
    last answer ended, so a second utterance transcribed before the first one's answer ended
    reads as both ("lights on" + "lights on"), answered as the first was."""
    now, then = " ".join(asked.lower().split()), " ".join(before.lower().split())
    return now.endswith(then) or then.endswith(now)


def non_blocking_names(request: Any) -> frozenset[str]:
    """The functions the request declares NON_BLOCKING (their results may go unanswered)."""
    names: set[str] = set()
    config = getattr(request, "config", None)
    for tool in getattr(config, "tools", None) or []:
        for declaration in getattr(tool, "function_declarations", None) or []:
            if _value(getattr(declaration, "behavior", None)) == "NON_BLOCKING":
                names.add(str(declaration.name))
    return frozenset(names)


class StallWatch:
    """The stall rule of one connection, fed and timed (see the module)."""

    def __init__(
        self,
        stall_timeout: float,
        degenerate_turns: int,
        *,
        on_stall: Callable[[Stall], None],
        user_speaking: Callable[[], bool],
        model_working: Callable[[], bool] = lambda: False,
        reader_behind: Callable[[], bool] = lambda: False,
        non_blocking: frozenset[str] = frozenset(),
    ) -> None:
        self.rule = StallRule(stall_timeout, degenerate_turns)
        self._on_stall = on_stall
        self._user_speaking = user_speaking
        self._model_working = model_working
        self._reader_behind = reader_behind
        self._non_blocking = non_blocking
        self._timer: asyncio.TimerHandle | None = None
        self._stopped = False
        #: Calls issued and not answered yet (a tool runs), by id: whether the model waits
        #: for each (False: NON_BLOCKING).
        self._open_calls: dict[str, bool] = {}
        #: A user turn was sent since the last finished turn: the next one answers it.
        self._owed = False
        self._content = self._voiced = self._quiet = False
        #: Whether the user was speaking at the last client send.
        self._speaking = False
        #: Turns that answered a user turn with content on this connection.
        self.answers = 0
        #: The words of the turn in progress, and of the last finished turn that answered a
        #: user turn with the text of that user turn (``None``: not known, as for speech
        #: without transcription): a canned answer repeats the words to another turn.
        self._words: list[str] = []
        self._asked: str | None = None
        self._last: tuple[str, str | None] | None = None

    @property
    def enabled(self) -> bool:
        return bool(self.rule.stall_timeout or self.rule.degenerate_turns)

    # -- inputs ---------------------------------------------------------------------------

    def start(self) -> None:
        """The connection's setup completed: the rule applies from now on."""
        self.rule.setup_completed(self._now())
        self._schedule()

    def nudged(self) -> None:
        """The silence this watch reported was answered with a nudge on the connection: the
        watch runs again, waiting for an answer to the nudge."""
        self._stopped = False
        self.rule.nudged(self._now())
        self._owed = True
        self._schedule()

    def utterance_ended(self) -> None:
        """The server heard the user's utterance end (``speechState: NON_SPEECH``): the
        wait for its answer begins, unless an older turn already waits."""
        if self._stopped:
            return
        self.rule.user_turn("an utterance whose end the server heard", self._now())
        self._owed = True
        self._check()

    def server_message(self, message: types.LiveServerMessage) -> None:
        """A server message was read."""
        if self._stopped:
            return
        content = message.server_content
        answering = bool(message.tool_call or message.tool_call_cancellation)
        if message.tool_call:
            self._content = True
            for call in message.tool_call.function_calls or []:
                if call.id:
                    self._open_calls[str(call.id)] = call.name not in self._non_blocking
        if message.tool_call_cancellation:
            for call_id in message.tool_call_cancellation.ids or []:
                self._open_calls.pop(str(call_id), None)
        if content is not None:
            answering = self._note_content(content) or answering
            if content.input_transcription and content.input_transcription.text:
                self.rule.user_turn("an utterance the server transcribed", self._now())
                self._owed = True
                self._asked = (self._asked or "") + content.input_transcription.text
        if answering:
            self.rule.answered()
        self._check()

    def _note_content(self, content: types.LiveServerContent) -> bool:
        """Note the turn's content; return whether the message answers. An ``interrupted``
        answers nothing: it is the server taking new input in, and a model that never answers
        after a barge-in sends it all the same (cookbook issue 1228); what it cut was output
        (which answered what came before it) or nothing, and then it tells the rule the
        server took the turn (:meth:`StallRule.cut_before_output`); after output, a user turn
        sent before that output was read is what the server took
        (:meth:`StallRule.cut_after_output`)."""
        answering = bool(content.turn_complete or content.generation_complete)
        if content.interrupted:
            if self._content or self._voiced or self._quiet:
                self.rule.cut_after_output(self._now())
            else:
                self.rule.cut_before_output()
        for part in (content.model_turn.parts or []) if content.model_turn else []:
            answering = True
            blob = part.inline_data
            if part.text or part.function_call or part.thought:
                self._content = True
                if part.text and not part.thought:
                    self._words.append(part.text)
            elif near_silent_audio(part):
                self._quiet = True
            elif blob is not None and blob.data and str(blob.mime_type or "").startswith("audio"):
                self._voiced = True
            else:
                self._content = True
        if content.output_transcription and content.output_transcription.text:
            answering = self._content = True
            self._words.append(content.output_transcription.text)
        if content.interrupted:
            self._content = self._voiced = self._quiet = False
            self._words.clear()
        if content.turn_complete:
            if self._owed:
                rejected = _value(getattr(content, "turn_complete_reason", None))
                why = degenerate(
                    rejected=rejected == RESPONSE_REJECTED,
                    content=self._content,
                    voiced_audio=self._voiced,
                    quiet_audio=self._quiet,
                    repeated=self._repeats_the_turn_before(),
                )
                self.rule.turn_ended(why)
                self.answers += 0 if why else 1
                self._owed = False
            self._content = self._voiced = self._quiet = False
            self._words.clear()
        return answering

    def _repeats_the_turn_before(self) -> bool:
        """The finished turn's words are those of the turn before, and the user turns each
        answered are known and differ (the same words typed or said again answered alike are
        no stall, :func:`_asked_again`); remembers this turn for the next."""
        words = "".join(self._words).strip()
        last, self._last = self._last, (words, self._asked)
        self._asked = None
        if not words or last is None or self._last[1] is None or last[1] is None:
            return False
        return words == last[0] and not _asked_again(self._last[1], last[1])

    def history_sent(self, method: str, kwargs: Mapping[str, Any]) -> None:
        """A fresh session's history went: one that ends with a complete user turn (ADK sets
        ``turn_complete`` exactly then) asks for an answer as a typed turn does."""
        if self._stopped:
            return
        _, text, _ = describe(method, kwargs)  # (user text only for a complete turn)
        if text:
            self.rule.user_turn("the user turn ending the rebuilt history", self._now())
            self._owed = True
            self._schedule()

    def client_send(self, message: ClientMessage, method: str, kwargs: Mapping[str, Any]) -> None:
        """A client message was recorded for sending (``message``: what it carries)."""
        if self._stopped:
            return
        speaking = self._user_speaking()
        if speaking != self._speaking and self.rule.waiting:
            self._speaking = speaking
            self._check()  # (the excuse begins or ends now, not at the next look)
        self._speaking = speaking
        what: str | None = None
        if message.user_text:
            what = "a typed turn"
            self._asked = message.user_text
        if message.response_ids:
            waited = [self._open_calls.pop(i, False) for i in message.response_ids]
            if any(waited):
                what = what or "a function response"
        if message.audio_ms == 0 and "activity_end" in signals(method, kwargs):
            what = what or "activityEnd"
        if what is not None:
            self.rule.user_turn(what, self._now())
            self._owed = True
            self._schedule()

    # -- the timer ------------------------------------------------------------------------

    def stop(self) -> None:
        """The connection is over (or moving): no stall is reported from now on."""
        self._stopped = True
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None

    def _now(self) -> float:
        return asyncio.get_running_loop().time()

    def _excuses(self) -> Excuses:
        return Excuses(
            tool_running=bool(self._open_calls),
            model_working=self._model_working(),
            user_speaking=self._user_speaking(),
            reader_behind=self._reader_behind(),
        )

    def _schedule(self) -> None:
        """Arm the timer for the rule's next look. A timer already armed to fire no later
        stays (this runs on almost every message of a voice session, and a cancelled timer
        stays in the loop's heap until its time): firing early, it looks, finds nothing yet
        and arms again, as a message would."""
        if self._stopped or not self.enabled:
            return
        loop = asyncio.get_running_loop()
        now = loop.time()
        delay = self.rule.next_check(now)
        timer = self._timer
        if delay is None:
            if timer is not None:
                timer.cancel()
                self._timer = None
            return
        when = now + delay
        if timer is not None:
            if timer.when() <= when:
                return
            timer.cancel()
        self._timer = loop.call_at(when, self._tick)

    def _tick(self) -> None:
        self._timer = None
        self._check()

    def _check(self) -> None:
        if self._stopped or not self.enabled:
            return
        rule = self.rule
        if rule.idle:  # (every message of an answer: nothing waits, no timer is needed)
            if self._timer is not None:
                self._timer.cancel()
                self._timer = None
            return
        # (the excuses matter only while a turn waits: asked of the run only then)
        excuses = self._excuses() if rule.waiting else _NO_EXCUSES
        stall = rule.check(self._now(), excuses)
        if stall is None:
            self._schedule()
            return
        self.stop()
        self._on_stall(stall)
