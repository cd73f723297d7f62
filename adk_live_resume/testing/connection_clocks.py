"""The clocks of one fake-server connection: its lifetime, the session's limits, late pongs.

All in service seconds, converted to real seconds by ``time_scale``:

* lifetime (:class:`ConnectionClocks`): ``goAway`` at ``connection_lifetime - go_away_lead``
  after the TCP accept, the deadline close (``deadline_close_code``: by default 1008 with the
  recorded reason :data:`~adk_live_resume.testing.settings.GO_AWAY_DEADLINE_REASON`, source:
  the glosa recording in ``gemini-live-protocol.md``, "Field facts"; 1011 "Deadline expired"
  behind the switch, and on a connection that was sent no goAway) at
  ``connection_lifetime``; :meth:`ConnectionClocks.go_away_now` does the same at once;
* session length (:class:`SessionClocks`): a session that carried audio (AUDIO responses or
  audio input) and whose current setup has no ``contextWindowCompression`` is closed with
  1011 once ``session_limit`` seconds have passed since its first connection (across
  resumptions); resuming it afterwards is refused with 1007 (:func:`session_ended`);
* the model family's session age cap closes the session with 1011 whatever the compression
  (resumes refused afterwards);
* idle handles every ``HandleSchedule.idle_interval`` while the connection is resumable;
* an empty ``sessionResumptionUpdate {}`` every 0.5-1 real seconds from the setup's answer
  on, whatever the setup asked (recorded: :mod:`~adk_live_resume.testing.wire_shapes`);
* pings are answered ``pong_delay`` (or ``Fault.hold_pongs``) late
  (:mod:`~adk_live_resume.testing.keepalive`);
* the idle close (:meth:`ConnectionClocks.watch_idle`): 1008 and no goAway once no client
  message arrived for ``idle_close_after`` *real* seconds, as measured on the service
  (:data:`~adk_live_resume.testing.settings.IDLE_CLOSE_AFTER`: Omi fork, probe
  ``lane5-goaway.py``, 2026-08-24); pings are no client message.

Every timer runs in a task of the connection's wire, so it ends with the connection.
"""

from __future__ import annotations

import asyncio
import random
from collections.abc import Callable, Collection, Coroutine
from typing import Any

from . import protocol as wire
from .connection_wire import ConnectionWire
from .handles import SessionInfo
from .session_state import SessionState
from .settings import DEFAULT_DEADLINE_REASON, IDLE_CLOSE_CODE, ServerSettings, SharedState
from .setup_choices import SetupChoices
from .wire_shapes import EMPTY_UPDATE

__all__ = ["ConnectionClocks", "SessionClocks", "lifetime_timing", "session_ended"]


def lifetime_timing(settings: ServerSettings) -> tuple[float, float]:
    """``(wait, lead)`` in real seconds: ``goAway`` after ``wait``, the deadline close
    ``lead`` later (the lead never exceeds the lifetime)."""
    lifetime = settings.real(settings.connection_lifetime)
    lead = min(settings.real(settings.go_away_lead), lifetime)
    return lifetime - lead, lead


def session_ended(
    session: SessionInfo,
    *,
    now: float,
    ended: Collection[str],
    cap: float | None,
    limit: float | None,
    compression: bool,
    audio: bool,
) -> bool:
    """True when ``session`` has ended, or its time ran out by ``now`` (real seconds).

    Pure. ``cap`` is the family's age cap and ``limit`` the audio session limit (real
    seconds, None: none); the limit applies only without ``compression`` in the new setup
    and when the session carried audio or the new setup answers in audio (``audio``).
    """
    if session.id in ended:
        return True
    age = now - session.started_at
    if cap is not None and age >= cap:
        return True
    if limit is None or compression or not (session.audio or audio):
        return False
    return age >= limit


class ConnectionClocks:
    """The lifetime and keepalive of one connection, from its TCP accept."""

    def __init__(self, wire_: ConnectionWire, settings: ServerSettings) -> None:
        self._wire = wire_
        self._settings = settings
        self._last_client: float | None = None

    def start_lifetime(self, setup_answered: Callable[[], bool]) -> None:
        """Start the lifetime timer; its ``goAway`` is sent only if the setup was answered
        by then (and the lead is not 0), the deadline close comes either way."""
        self._wire.spawn(self._lifetime(setup_answered))

    async def _lifetime(self, setup_answered: Callable[[], bool]) -> None:
        wait, lead = lifetime_timing(self._settings)
        await asyncio.sleep(wait)
        await self._go_away(lead, warn=lead > 0 and setup_answered())

    def go_away_now(self, time_left: float) -> None:
        """Send ``goAway`` with ``time_left`` (real seconds, as on the wire) now and end the
        connection at that deadline, as the service does (the caller checks that the setup
        was answered: the service sends no goAway before it)."""
        self._wire.spawn(self._go_away(time_left))

    async def _go_away(self, time_left: float, *, warn: bool = True) -> None:
        """``goAway`` (if ``warn``), then the deadline close ``time_left`` real seconds later."""
        settings = self._settings
        if warn:
            await self._wire.send(wire.go_away(wire.format_time_left(round(time_left, 3))))
            self._wire.record.go_away_went()
        await asyncio.sleep(time_left)
        code, reason = settings.deadline_close(go_away_sent=self._wire.record.go_away_sent)
        self._wire.terminate("deadline", code=code, reason=reason)

    def hold_pongs(self, service_seconds: float) -> None:
        """Answer every ping ``service_seconds`` late from now on."""
        self._wire.hold_pongs(self._settings.real(service_seconds))

    def watch_idle(self) -> None:
        """The setup was answered: from now on, close the connection with 1008 (no goAway,
        no reason: the measurement gives none) once no client message arrived for
        ``idle_close_after`` real seconds (see the module docstring)."""
        after = self._settings.idle_close_after
        if after is None:
            return
        self._last_client = self._wire.now()
        self._wire.spawn(self._idle_close(after))

    def client_message(self) -> None:
        """A client message arrived: the connection is not idle."""
        if self._last_client is not None:
            self._last_client = self._wire.now()

    async def _idle_close(self, after: float) -> None:
        while True:
            assert self._last_client is not None
            left = self._last_client + after - self._wire.now()
            if left <= 0:
                self._wire.terminate("idle", code=IDLE_CLOSE_CODE)
                return
            await asyncio.sleep(left)


class SessionClocks:
    """The session's length limit, its family's age cap and idle handles, on one connection."""

    def __init__(
        self,
        wire_: ConnectionWire,
        session: SessionState,
        choices: SetupChoices,
        settings: ServerSettings,
        shared: SharedState,
    ) -> None:
        self._wire = wire_
        self._session = session
        self._choices = choices
        self._settings = settings
        self._shared = shared
        self._over_limit = False

    def start(
        self,
        *,
        resumable: Callable[[], bool],
        issue_handle: Callable[[], Coroutine[Any, Any, object]],
    ) -> None:
        """The setup was answered: start the idle handles (``issue_handle`` whenever
        ``resumable``), the session limit and the family's age cap, as the settings say."""
        settings = self._settings
        waits = settings.wire_shapes.empty_update_waits(self._wire.record.index)
        if waits is not None:
            self._wire.spawn(self._empty_updates(waits))
        interval = settings.handle_schedule.idle_interval
        if interval is not None and self._choices.resumption:
            self._wire.spawn(self._idle_handles(settings.real(interval), resumable, issue_handle))
        if settings.session_limit is not None:
            self._wire.spawn(self._session_clock(settings.real(settings.session_limit)))
        cap = self._choices.family.session_cap
        if cap is not None:
            self._wire.spawn(self._session_cap(settings.real(cap)))

    async def _empty_updates(self, waits: random.Random) -> None:
        """An empty ``sessionResumptionUpdate {}`` every 0.5-1 s, as recorded (see
        :mod:`~adk_live_resume.testing.wire_shapes`), with or without resumption asked."""
        shapes = self._settings.wire_shapes
        while True:
            await asyncio.sleep(shapes.next_empty_update(waits))
            await self._wire.send({**EMPTY_UPDATE, "sessionResumptionUpdate": {}})

    @staticmethod
    async def _idle_handles(
        interval: float,
        resumable: Callable[[], bool],
        issue_handle: Callable[[], Coroutine[Any, Any, object]],
    ) -> None:
        """Issue a handle every ``interval`` real seconds while the model is idle."""
        while True:
            await asyncio.sleep(interval)
            if resumable():
                await issue_handle()

    def _until(self, age: float) -> float:
        return max(0.0, self._session.started_at + age - self._wire.now())

    async def _session_clock(self, limit: float) -> None:
        """At ``limit`` real seconds after the session started, enforce the session limit."""
        await asyncio.sleep(self._until(limit))
        self._over_limit = True
        self.enforce_session_limit()

    def enforce_session_limit(self) -> None:
        """End the session if it is over its limit and the limit applies (it carried audio
        and the setup has no compression); called again when audio arrives."""
        if not self._over_limit or not self._session.audio or self._choices.compression:
            return
        self._shared.ended_sessions.add(self._session.id)
        limit = self._settings.session_limit
        self._wire.terminate(
            "session_limit",
            code=1011,
            reason=(
                f"Session limit reached: an audio session without contextWindowCompression "
                f"lasts at most {limit:g} s."
            ),
        )

    async def _session_cap(self, cap: float) -> None:
        """At ``cap`` real seconds of session age, end the session whatever its compression."""
        await asyncio.sleep(self._until(cap))
        self._shared.ended_sessions.add(self._session.id)
        self._wire.terminate("session_limit", code=1011, reason=DEFAULT_DEADLINE_REASON)
