"""How long the start of one live run took, phase by phase, told once at DEBUG and as a span event.

A run that takes a conversation over (a worker taking a session another worker served, a
browser reconnecting) goes through these phases before the user hears anything; the
:class:`RunTimeline` of the run marks the end of each, the first time it is reached:

* ``request``: ADK's request rebuild (its request processors build the ``LlmRequest``:
  instructions, tools and the history from the ADK session's events);
* ``handle``: the stored handle loaded and opened, and the catch-up computed from the
  session's events after it (:mod:`adk_live_resume.resumption.handle_store`; nothing when the run
  does not store handles);
* ``connect``: the first connection dialed and set up (google-genai's ``connect``, the
  server's setup answer);
* ``restore``: what the new connection is sent before ADK's send step takes over (the
  catch-up or the replay on a resume, the history on a fresh start);
* ``answer``: until the first model turn is complete (it includes the wait for the user's
  first turn: a client that asks at once, as a moved session does, measures the model's
  first answer).

Each phase's duration is from the end of the one before (the first from the run's start, when
``run_live`` was called). Once the first answer is complete, or when the run ends before it,
one line is logged at DEBUG on the ``adk_live_resume.timeline`` logger (the run's start in
wall-clock seconds, so that it can be set beside other processes' clocks, and each phase
reached in ms) and the span event ``adk_live_resume.run_started`` carries the same figures
(:func:`adk_live_resume.observe.telemetry.record_run_started`).

Pure but for the clocks, which are passed in (``time.time`` and ``time.monotonic`` by
default), and the one log line and span event.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable

from . import telemetry

logger = logging.getLogger("adk_live_resume.timeline")

#: The phases of a run's start, in the order they end.
PHASES = ("request", "handle", "connect", "restore", "answer")


class RunTimeline:
    """The phases of one run's start (see the module); told once (:meth:`tell`)."""

    def __init__(
        self,
        session_id: str,
        *,
        wall_clock: Callable[[], float] = time.time,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._session_id = session_id
        self._clock = clock
        #: When the run started, wall-clock seconds (``time.time()``).
        self.started_at = wall_clock()
        self._start = clock()
        self._ends: dict[str, float] = {}
        self._told = False

    def mark(self, phase: str) -> None:
        """``phase`` ended now (only its first end counts); the first answer tells the
        timeline."""
        if phase not in PHASES:
            raise ValueError(f"unknown phase {phase!r}; one of {', '.join(PHASES)}")
        if phase in self._ends:
            return
        self._ends[phase] = self._clock()
        if phase == "answer":
            self.tell()

    def durations_ms(self) -> dict[str, float]:
        """Each phase reached, in order, in ms from the end of the one before it."""
        durations: dict[str, float] = {}
        last = self._start
        for phase in PHASES:
            end = self._ends.get(phase)
            if end is None:
                break
            durations[phase] = (end - last) * 1000.0
            last = end
        return durations

    def tell(self) -> None:
        """Log the phases reached (once: later calls do nothing)."""
        if self._told:
            return
        self._told = True
        durations = self.durations_ms()
        if logger.isEnabledFor(logging.DEBUG):
            logger.debug(
                "session %s: run started at %.3f; %s",
                self._session_id,
                self.started_at,
                ", ".join(f"{phase} {ms:.1f} ms" for phase, ms in durations.items()) or "-",
            )
        telemetry.record_run_started(
            {f"adk_live_resume.{phase}_ms": ms for phase, ms in durations.items()}
        )
