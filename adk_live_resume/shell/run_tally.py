"""What a live run counts: its own tallies, and the report of each connection it set up.

:class:`RunTally` adds up what each connection's outcome says it did (history sent, messages
replayed) and keeps each set-up connection's
:class:`~adk_live_resume.observe.connection_end.ConnectionReport` in order; with the counters the
run's rule objects keep, it makes the typed :class:`~adk_live_resume.observe.callbacks.RunCounters`
the run's end is reported from (:func:`~adk_live_resume.observe.callbacks.run_ended`). A figure a
connection's report carries reaches :class:`~adk_live_resume.observe.callbacks.RunStats` from there,
without this module knowing it.

No I/O, no clock.
"""

from __future__ import annotations

from typing import Any

from ..observe.callbacks import RunCounters
from ..observe.connection_end import ConnectionReport, Outcome
from ..rules.wire_classifier import SkippedMessages
from .reconnects import Reconnects
from .run_rules import RunRules


class RunTally:
    """One run's tallies and connection reports (see the module)."""

    def __init__(self) -> None:
        #: Connections set up (1 = never reconnected).
        self.connections = 0
        #: The report of each, in order.
        self.reports: list[ConnectionReport] = []
        self.go_aways = 0
        self.fresh_starts = 0
        self.history_sends = 0
        self.replayed_messages = 0

    def went_away(self) -> None:
        """A connection got a ``goAway``."""
        self.go_aways += 1

    def started_fresh(self) -> None:
        """The next connection starts a fresh session."""
        self.fresh_starts += 1

    def served(self, outcome: Outcome, report: ConnectionReport) -> bool:
        """Add what serving a connection did (``outcome``) and learnt (``report``); return
        whether it was set up (else it failed at its connect, and is no connection)."""
        self.history_sends += outcome.history_sent
        self.replayed_messages += outcome.replayed_messages
        if outcome.at_connect:
            return False
        self.connections += 1
        self.reports.append(report)
        return True

    def context_size(self) -> int | None:
        """The latest ``promptTokenCount`` of the run (the size of the context then)."""
        for report in reversed(self.reports):
            if report.figures.last_prompt_tokens is not None:
                return report.figures.last_prompt_tokens
        return None

    def counters(
        self,
        *,
        ids: tuple[str, str, str],
        rules: RunRules,
        reconnects: Reconnects,
        skipped: SkippedMessages,
        chunks_encoded: int,
        messages_decoded: int,
        dialer: Any,
    ) -> RunCounters:
        """The run's counters: ``ids`` are the agent's name, the invocation's and the
        session's id; ``dialer`` the run's early dialer (``None``: none)."""
        guard, outbox = rules.queue_guard, rules.outbox
        agent_name, invocation_id, session_id = ids
        return RunCounters(
            agent_name=agent_name,
            invocation_id=invocation_id,
            session_id=session_id,
            go_aways=self.go_aways,
            fresh_starts=self.fresh_starts,
            history_sends=self.history_sends,
            replayed_messages=self.replayed_messages,
            requests_recovered=guard.recovered if guard is not None else 0,
            tool_calls_reused=rules.tool_calls.reused,
            dropped_audio_ms=outbox.dropped_audio_ms_total,
            dropped_silence_ms=outbox.dropped_silence_ms_total,
            peak_replay_audio_ms=outbox.peak_audio_ms,
            peak_replay_messages=outbox.peak_messages,
            dropped_frames=outbox.frames.dropped_total,
            peak_replay_frames=outbox.frames.peak,
            chunks_encoded=chunks_encoded,
            messages_decoded=messages_decoded,
            sockets_dialed_early=dialer.dialed if dialer is not None else 0,
            early_sockets_used=dialer.used if dialer is not None else 0,
            unknown_messages_skipped=skipped.count,
            unknown_kinds_unnamed=skipped.unnamed,
            stalls=reconnects.stalls,
            stall_fresh_starts=reconnects.stall_fresh_starts,
            last_cause=reconnects.last_cause,
            connections=tuple(self.reports),
        )
