"""The rule objects that outlive a connection of a live run, behind one object its connections ask.

:class:`RunRules` holds one run's handles, outbox, tool-call bookkeeping, deferred results,
handle keeper, queue guard and background calls. A run creates it once; each connection's
watch and :func:`~.serve_connection.serve` reach the rules through it (one
member of their view of the run) and ask it the questions that need more than one rule
(:meth:`RunRules.at_safe_point`, :meth:`RunRules.user_busy`).

Guarantees: no I/O and no clock of its own; the handles, the keeper and the queue guard a
run starts with are set once, by :meth:`RunRules.started`, before its first connection; the
other rule objects live as long as the run.
"""

from __future__ import annotations

from typing import Any

from ..conversation.deferred_results import DeferredResults
from ..conversation.outbox import Outbox
from ..conversation.tool_calls import ToolCallBook
from ..resumption.handle_store import HandleKeeper
from ..resumption.handles import ResumptionState
from ..rules.policy import ResumePolicy
from .background_calls import BackgroundCalls
from .queue_guard import QueueGuard


class RunRules:
    """One run's rule objects, and the questions asked of several of them at once."""

    def __init__(self, policy: ResumePolicy, ctx: Any) -> None:
        #: The newest handle and whether it may be resumed now.
        self.handles = ResumptionState()
        #: The client sends the newest handle may not hold, kept to be sent again.
        self.outbox = Outbox(
            policy.replay_audio_seconds * 1000.0,
            max_utterance_ms=policy.max_utterance_seconds * 1000.0,
            max_frames=policy.replay_frames,
        )
        self.tool_calls = ToolCallBook()
        #: Background results held back while the user speaks.
        self.deferred_results = DeferredResults()
        #: Tools ADK runs in the background, watched while a repeat of their call waits.
        self.background = BackgroundCalls(ctx, self.tool_calls)
        #: Publishes and stores handles (see handle_store); inert until the run starts.
        self.keeper = HandleKeeper(None, ttl=policy.handle_ttl, store=None)
        #: Guards ADK's request queue (``None`` until the run starts).
        self.queue_guard: QueueGuard | None = None

    def started(self, *, handles: ResumptionState, keeper: HandleKeeper, guard: QueueGuard) -> None:
        """The run starts with ``handles`` (a stored or asked-for handle, or none), the
        ``keeper`` that stores its handles and the ``guard`` around ADK's queue."""
        self.handles = handles
        self.keeper = keeper
        self.queue_guard = guard

    def user_busy(self) -> bool:
        """The user speaks, or has an utterance the model has not answered yet."""
        activity = self.outbox.activity
        return activity.speaking or activity.unanswered

    def at_safe_point(self) -> bool:
        """The newest handle holds everything: no turn in flight or waiting for its answer
        (a handle may cross the user's next turn), no request in ADK's hand, the user is not
        speaking and has no utterance waiting for its answer."""
        guard = self.queue_guard
        return bool(
            self.handles.handle
            and self.handles.resumable_now
            and not self.outbox.turns.unanswered
            and not (guard is not None and guard.in_hand)
            and not self.user_busy()
        )
