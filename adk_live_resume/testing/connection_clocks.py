"""The clocks of one fake-server connection: its lifetime, the session's limits, late pongs.

All in service seconds, converted to real seconds by ``time_scale``:

* lifetime: ``goAway`` at ``connection_lifetime - go_away_lead`` after the TCP accept, the
  deadline close (``deadline_close_code``) at ``connection_lifetime``;
  :meth:`ConnectionClocks.go_away_now` does the same at once;
* session length: a session that carried audio (AUDIO responses or audio input) and whose
  current setup has no ``contextWindowCompression`` is closed with 1011 once ``session_limit``
  seconds have passed since its first connection (across resumptions); resuming it afterwards
  is refused with 1007;
* the model family's session age cap closes the session with 1011 whatever the compression
  (resumes refused afterwards);
* idle handles every ``HandleSchedule.idle_interval`` while the connection is resumable;
* pings are answered ``pong_delay`` (or ``Fault.hold_pongs``) late
  (:mod:`~adk_live_resume.testing.keepalive`); :meth:`ConnectionClocks.arm` adds faults to an
  open connection.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence

from . import protocol as wire
from .faults import Fault
from .handle_issuing import HandleIssuing
from .handles import SessionInfo
from .keepalive import hold_pongs

__all__ = ["ConnectionClocks"]


class ConnectionClocks(HandleIssuing):
    """Timers and faults armed later on one connection (a layer of ``LiveConnection``)."""

    def arm(self, faults: Sequence[Fault]) -> None:
        """Add ``faults`` to this connection, already open. Triggers count as for a fault armed
        at the start, with two differences: ``after_setup`` fires at once when the setup was
        answered already, and ``after_seconds`` counts from now. ``after_client_messages=N``
        counts the connection's messages from its start, so ``N`` must not be reached yet
        (``ValueError`` otherwise, before anything is armed)."""
        self._faults.arm(
            faults,
            messages_seen=self._message_index,
            setup_answered=self._setup_answered and not self.ending,
            hold_pongs=self._hold_pongs,
        )

    def _hold_pongs(self, service_seconds: float) -> None:
        hold_pongs(self.ws, self._settings.real(service_seconds), self._spawn)

    async def _idle_handles(self, interval: float) -> None:
        """Issue a handle every ``interval`` real seconds while the model is idle."""
        while True:
            await asyncio.sleep(interval)
            if self._resumable():
                await self._issue_handle(self._idle_point())

    async def _session_clock(self, limit: float) -> None:
        """At ``limit`` real seconds after the session started, enforce the session limit."""
        await asyncio.sleep(max(0.0, self._session.started_at + limit - self._loop.time()))
        self._over_limit = True
        self._enforce_session_limit()

    def _enforce_session_limit(self) -> None:
        if not self._over_limit or not self._session_audio or self._compression:
            return
        self._shared.ended_sessions.add(self._session.id)
        limit = self._settings.session_limit
        self.terminate(
            "session_limit",
            code=1011,
            reason=(
                f"Session limit reached: an audio session without contextWindowCompression "
                f"lasts at most {limit:g} s."
            ),
        )

    async def _session_cap(self, cap: float) -> None:
        """At ``cap`` real seconds of session age, end the session whatever its compression."""
        await asyncio.sleep(max(0.0, self._session.started_at + cap - self._loop.time()))
        self._shared.ended_sessions.add(self._session.id)
        self.terminate("session_limit", code=1011, reason=self._settings.deadline_reason)

    def _session_over(self, session: SessionInfo) -> bool:
        """True when the session of a snapshot has ended (or its time ran out meanwhile)."""
        if session.id in self._shared.ended_sessions:
            return True
        cap = self._family.session_cap
        if cap is not None and self._loop.time() - session.started_at >= self._settings.real(cap):
            return True
        limit = self._settings.session_limit
        if limit is None or self._compression or not (session.audio or self._session_audio):
            return False
        return self._loop.time() - session.started_at >= self._settings.real(limit)

    async def _lifetime(self) -> None:
        lifetime = self._settings.real(self._settings.connection_lifetime)
        lead = min(self._settings.real(self._settings.go_away_lead), lifetime)
        await asyncio.sleep(lifetime - lead)
        await self._go_away(lead, warn=lead > 0 and self._setup_answered)

    def go_away_now(self, time_left: float) -> bool:
        """Send ``goAway`` with ``time_left`` (real seconds, as on the wire) now and end the
        connection at that deadline, as the service does; False if the setup was not
        answered yet (the service sends no goAway before it)."""
        if not self._setup_answered or self.ending:
            return False
        self._spawn(self._go_away(time_left))
        return True

    async def _go_away(self, time_left: float, *, warn: bool = True) -> None:
        """``goAway`` (if ``warn``), then the deadline close ``time_left`` real seconds later."""
        settings = self._settings
        if warn:
            await self._send(wire.go_away(wire.format_time_left(round(time_left, 3))))
            self.record.go_away_sent = True
        await asyncio.sleep(time_left)
        self.terminate(
            "deadline", code=settings.deadline_close_code, reason=settings.deadline_reason
        )
