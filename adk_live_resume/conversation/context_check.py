"""Whether a resumed session kept its context, read from its first prompt count, told once.

A resumed (or ephemeral-token) session can come back without its context: the model has
forgotten the conversation (forum threads 98979 and 118577, ``gemini-live-protocol.md``,
"Field facts of 2026-11-29"). The only outside sign is the size of the context the service
counts: each ``usageMetadata``'s ``promptTokenCount`` counts the whole context again, so the
resumed session's first prompt count falls far below the last one before the reconnect
(:func:`~.token_usage.context_survived`: below half).

:class:`ContextCheck` is one connection's check: it holds the report of the reconnect that
made the connection until the answer is known, tells it once, and logs a lost context once
as a WARNING with what to do. Told with ``None`` (no usage to tell) at once for a fresh
session or when the run saw no prompt count before, after two turns that ended without
usage (the service sends none in that mode), or when the connection ends first; and told
with ``None`` (not known yet) :data:`REPORT_WAIT` seconds after the reconnect at the latest
(:meth:`ContextCheck.waited`), so that an app hears of a reconnect promptly even when the
user says nothing: the first prompt count is still judged when it comes (the WARNING, the
verdict and the fresh start the policy may ask).

No I/O but the log line and the report it tells; no clock.
"""

from __future__ import annotations

import logging
from collections.abc import Callable

from .token_usage import context_survived

logger = logging.getLogger("adk_live_resume.loop")

#: Turns ended without usage after which a reconnect's report waits no longer.
TURNS_WITHOUT_USAGE = 2
#: Seconds after a resume after which its report waits no longer for the first prompt count
#: (which comes only at the end of the resumed session's first answer).
REPORT_WAIT = 5.0

Tell = Callable[[bool | None], None]


class ContextCheck:
    """One connection's check of its context (see the module)."""

    def __init__(self, number: int, before: int | None, *, fresh_start: bool) -> None:
        """``before``: the run's latest prompt count before connection ``number``;
        ``fresh_start``: a lost context starts a fresh session
        (``ResumePolicy.fresh_start_when_context_lost``)."""
        self._number = number
        self._before = before
        self._fresh_start = fresh_start
        self._tell: Tell | None = None
        #: The first prompt count is still to be judged (a resume, with a count before).
        self._judging = False
        #: The connection's first prompt count, once it came.
        self.after: int | None = None
        #: What was told: whether the session kept its context (``None``: not known).
        self.verdict: bool | None = None

    def waits(self, tell: Tell, *, resumed: bool) -> None:
        """The reconnect that made the connection (``resumed``: with a handle) is reported
        by ``tell`` once its context is known (see the module)."""
        if not resumed or self._before is None:
            tell(None)
            return
        self._tell = tell
        self._judging = True
        if self.after is not None:  # (an answer came during the restoration)
            self._judge(self.after)

    def prompt(self, tokens: int) -> bool:
        """A prompt count arrived; return whether to start a fresh session now (the first
        count showed the context lost, and the policy says so)."""
        if self.after is not None:
            return False
        self.after = tokens
        if not self._judging:
            return False  # (nothing to check: a fresh session, or given up on)
        survived = self._judge(tokens)
        return survived is False and self._fresh_start

    def turn_ended(self, turns_since_usage: int) -> None:
        """A turn ended (``turns_since_usage`` of them since the last usage)."""
        if turns_since_usage >= TURNS_WITHOUT_USAGE:
            self._judging = False
            self._told(None)

    def waited(self) -> None:
        """:data:`REPORT_WAIT` seconds passed since the reconnect: a report still waiting is
        told now, as not known yet; the first prompt count is still judged when it comes."""
        self._told(None)

    def ended(self) -> None:
        """The connection is over: a report still waiting is told it cannot be known."""
        self._judging = False
        self._told(None)

    def _told(self, survived: bool | None) -> None:
        tell, self._tell = self._tell, None
        if tell is not None:
            tell(survived)

    def _judge(self, tokens: int) -> bool | None:
        """Judge the first prompt count: the verdict, the report if it still waits, and a
        lost context's WARNING."""
        self._judging = False
        assert self._before is not None
        survived = context_survived(self._before, tokens)
        self.verdict = survived
        self._told(survived)
        if survived is not False:
            return survived
        logger.warning(
            "live session on connection %d came back without its context after a resume:"
            " its prompt fell from %s to %s tokens, so the model no longer knows the"
            " conversation; %s",
            self._number,
            self._before,
            self.after,
            "starting a fresh session from the history at the next safe point"
            if self._fresh_start
            else "set ResumePolicy(fresh_start_when_context_lost=True) to start a fresh"
            " session from the history when this happens",
        )
        return survived
