"""One websocket connection of the fake server, served from its setup to its close.

Per connection, in order:

1. the lifetime timers start (:mod:`~adk_live_resume.testing.connection_clocks`);
2. the first message must be ``{"setup": {...}}``, keeping its model family's setup rules
   (:mod:`~adk_live_resume.testing.setup_rules`, else 1007); a resumption handle in it is
   checked (an unknown or expired one, or a ``Fault.refuse_resume``, closes with
   ``refuse_close_code``; a session that has ended, 1007); with
   ``refuse_resume_while_open``, a resume of a session whose earlier socket is still open is
   closed with 1011, as the service does (off by default: a client that drops TCP and
   resumes at once races the server's notice);
3. a model the server refuses (``refused_models``) is closed with 1011 "Internal error
   encountered."; setup delays, flapping, a resume of a poisoned session (closed right after
   its ``setupComplete``, or at its first client message), then ``{"setupComplete": {}}``;
   from then on the idle close watches the client's messages;
4. client messages are handled one at a time, in order
   (:mod:`~adk_live_resume.testing.turn_taking`); the model answers in a task of its own
   (:mod:`~adk_live_resume.testing.generation`) so that new input can interrupt it; handles
   are issued at resumable points (:mod:`~adk_live_resume.testing.handle_issuing`). On a
   resumed connection, a client message whose identity the snapshot already consumed, sent
   before the first message the snapshot did not consume (the replay), is recorded in
   ``record.resent_consumed`` (and handled as usual); a repeat after it is new input.

:class:`LiveConnection` coordinates parts that each own their state and are reached only
through their methods: the wire (:mod:`~adk_live_resume.testing.connection_wire`: sends, the
end, tasks), the armed faults (:mod:`~adk_live_resume.testing.armed_faults`), the connection's
clocks, and from the setup on the setup's choices
(:mod:`~adk_live_resume.testing.setup_choices`), the session
(:mod:`~adk_live_resume.testing.session_state`), the ledger of client messages and the handle
issuer (:mod:`~adk_live_resume.testing.handle_issuing`), the session's clocks, the generation
and the turn taking. Every task the connection starts is cancelled and awaited before its
handler returns, and the record is final (``record.finished``) from then on.

A new kind of server message the fake should send on demand (a fault or a server method)
goes out through :meth:`ConnectionWire.send
<adk_live_resume.testing.connection_wire.ConnectionWire.send>`: a method here beside
:meth:`LiveConnection.go_away_now` for a server method, or a trigger in
:class:`~adk_live_resume.testing.armed_faults.ArmedFaults` for a fault.
"""

from __future__ import annotations

import asyncio
import json
import logging
import secrets
from collections.abc import Sequence
from dataclasses import dataclass

from websockets.asyncio.server import ServerConnection
from websockets.exceptions import ConnectionClosed

from . import protocol as wire
from .armed_faults import ArmedFaults
from .connection_clocks import ConnectionClocks, SessionClocks, session_ended
from .connection_wire import ConnectionWire, _ConnectionEnded
from .dialect import model_name
from .faults import Fault
from .generation import Generation
from .handle_issuing import ConsumedLedger, HandleIssuer
from .handles import HandleIssue, SessionInfo
from .protocol import JsonDict, pick_dict
from .records import ConnectionRecord, EndedBy, ResentMessage, short_handle
from .session_state import SessionState
from .settings import INTERNAL_ERROR_REASON, INVALID_ARGUMENT_REASON, ServerSettings, SharedState
from .setup_choices import SetupChoices, read_setup
from .setup_rules import broken_rule
from .turn_taking import TurnTaking

__all__ = ["LiveConnection", "SessionParts"]

logger = logging.getLogger("adk_live_resume.testing")


@dataclass(frozen=True)
class SessionParts:
    """The parts a connection has once its setup was read and its session restored."""

    session: SessionState
    handles: HandleIssuer
    clocks: SessionClocks
    generation: Generation
    turns: TurnTaking

    @classmethod
    def compose(
        cls,
        wire_: ConnectionWire,
        choices: SetupChoices,
        session: SessionState,
        ledger: ConsumedLedger,
        faults: ArmedFaults,
        settings: ServerSettings,
        shared: SharedState,
    ) -> SessionParts:
        """The parts of the session's life on one connection, wired to each other.

        The handle issuer asks the generation (busy?) and the turn taking (audio held?), the
        generation asks the turn taking (is the user speaking?): made later, they are reached
        through these functions.
        """
        later: list[tuple[Generation, TurnTaking]] = []
        handles = HandleIssuer(
            wire_,
            session,
            ledger,
            enabled=choices.resumption,
            transparent=choices.transparent,
            settings=settings,
            shared=shared,
            busy=lambda: bool(later) and later[0][0].busy(),
            held_since=lambda: later[0][1].held_since() if later else None,
        )
        clocks = SessionClocks(wire_, session, choices, settings, shared)
        generation = Generation(
            wire_,
            session,
            handles,
            faults,
            choices=choices,
            settings=settings,
            shared=shared,
            user_speaking=lambda: bool(later) and later[0][1].speaking(),
        )
        turns = TurnTaking(
            wire_,
            session,
            ledger,
            handles,
            clocks,
            generation,
            choices=choices,
            settings=settings,
            shared=shared,
        )
        later.append((generation, turns))
        return cls(session, handles, clocks, generation, turns)


class LiveConnection:
    """Serves one websocket connection; see the module docstring for the sequence."""

    def __init__(
        self,
        ws: ServerConnection,
        record: ConnectionRecord,
        faults: Sequence[Fault],
        settings: ServerSettings,
        shared: SharedState,
    ) -> None:
        self.record = record
        self._settings = settings
        self._shared = shared
        self._wire = ConnectionWire(ws, record)
        self._faults = ArmedFaults(
            faults,
            connection=record.index,
            end=self._end_by_fault,
            spawn=self._wire.spawn,
            real=settings.real,
        )
        self._clocks = ConnectionClocks(self._wire, settings)
        self._ledger = ConsumedLedger()
        self._fresh = SessionInfo(secrets.token_hex(8), self._wire.now(), audio=False)
        self._parts: SessionParts | None = None
        self._setup_answered = False
        self._counted_open: str | None = None  # the session counted in shared.open_sessions

    # ---- what the server asks of an open connection ----------------------------------------

    @property
    def ending(self) -> bool:
        """True once the connection has been ended by anyone."""
        return self._wire.ending

    def terminate(
        self, ended_by: EndedBy, *, code: int = 1000, reason: str = "", abort: bool = False
    ) -> None:
        """End the connection now (see :meth:`ConnectionWire.terminate
        <adk_live_resume.testing.connection_wire.ConnectionWire.terminate>`)."""
        self._wire.terminate(ended_by, code=code, reason=reason, abort=abort)

    def arm(self, faults: Sequence[Fault]) -> None:
        """Add ``faults`` to this connection, already open. Triggers count as for a fault armed
        at the start, with two differences: ``after_setup`` fires at once when the setup was
        answered already, and ``after_seconds`` counts from now. ``after_client_messages=N``
        counts the connection's messages from its start, so ``N`` must not be reached yet
        (``ValueError`` otherwise, before anything is armed)."""
        self._faults.arm(
            faults,
            messages_seen=self._ledger.received,
            setup_answered=self._setup_answered and not self.ending,
            hold_pongs=self._clocks.hold_pongs,
        )

    def go_away_now(self, time_left: float) -> bool:
        """Send ``goAway`` with ``time_left`` (real seconds, as on the wire) now and end the
        connection at that deadline, as the service does; False if the setup was not
        answered yet (the service sends no goAway before it)."""
        if not self._setup_answered or self.ending:
            return False
        self._clocks.go_away_now(time_left)
        return True

    async def send_message_now(self, message: JsonDict) -> bool:
        """Send ``message`` as given now; False if the setup was not answered yet or the
        connection is ending (nothing sent)."""
        if not self._setup_answered or self.ending:
            return False
        try:
            await self._wire.send(message)
        except _ConnectionEnded:
            return False
        return True

    async def issue_handle_now(self) -> HandleIssue | None:
        """Issue a handle now if this connection is at a resumable point, else None.

        When it is not (the model generates or a call is pending), ``{"resumable": false}`` is
        sent instead, as the service does. None too when the setup did not ask for handles.
        """
        if self._parts is None or not self._setup_answered:
            return None
        return await self._parts.handles.issue_now()

    def _end_by_fault(self, fault: Fault) -> None:
        if fault.kind == "poison" and self._counted_open is not None:
            self._shared.poisoned_sessions[self._counted_open] = fault
        if fault.kind == "abort":
            self.terminate("fault", abort=True)
        else:
            self.terminate("fault", code=fault.code or 1000, reason=fault.reason)

    # ---- serving ---------------------------------------------------------------------------

    async def run(self) -> None:
        """Serve the connection until it closes; never raises for connection errors."""
        self.record.accepted(self._wire.request_path(), self._wire.now())
        self._clocks.start_lifetime(lambda: self._setup_answered)
        held = [f.seconds for f in self._faults.of_kind("hold_pongs")]
        pong_delay = held[-1] if held else self._settings.pong_delay
        if pong_delay is not None:
            self._clocks.hold_pongs(pong_delay)
        try:
            await self._serve()
        except (ConnectionClosed, _ConnectionEnded):
            pass
        except Exception as exc:  # a bug in the fake: keep it visible in the record
            logger.exception("fake live server: connection %d failed", self.record.index)
            self.record.errors.append(repr(exc))
            self.terminate("fault", code=1011, reason="fake server error")
        finally:
            await self._finish()

    async def _finish(self) -> None:
        if self._counted_open is not None:
            self._shared.open_sessions[self._counted_open] -= 1
            self._counted_open = None
        await self._wire.finish()
        if self._parts is not None:
            self._parts.generation.cancel_pending()
        self._wire.mark_finished()

    async def _serve(self) -> None:
        timeout = self._settings.setup_timeout
        try:
            async with asyncio.timeout(None if timeout is None else self._settings.real(timeout)):
                raw = await self._wire.receive()
        except TimeoutError:
            self.terminate("setup_timeout", code=1011, reason="no setup in time")
            return
        message = self._parse(raw)
        setup = pick_dict(message, "setup") if message is not None else None
        if setup is None:
            self.terminate("refused", code=1007, reason=INVALID_ARGUMENT_REASON)
            return
        self.record.set_up(setup)
        choices = read_setup(
            setup, refuse_3_1_content=self._settings.wire_shapes.refuse_3_1_mid_session_content
        )
        broken = broken_rule(setup, choices.family) if self._settings.setup_rules else None
        if broken is not None:
            self.record.refused_setup(broken)
            self.terminate("refused", code=1007, reason=INVALID_ARGUMENT_REASON)
            return
        if choices.resumption:
            self.record.resumption_asked(choices.resume_handle, transparent=choices.transparent)
        if model_name(setup) in self._settings.refused_models:
            logger.info("fake live server: connection %d: model refused", self.record.index)
            self.terminate("refused", code=1011, reason=INTERNAL_ERROR_REASON)
            return
        session = self._restore(choices)
        if session is not None:  # (a session resumed after a contextUpdate has its tools)
            choices = session.context.choices(choices)
        if session is None:
            return
        self._ledger.track(self._shared.received_by(session.id))
        parts = self._parts = SessionParts.compose(
            self._wire,
            choices,
            session,
            self._ledger,
            self._faults,
            self._settings,
            self._shared,
        )
        self.record.joined(session.id)
        self._shared.open_sessions[session.id] += 1
        self._counted_open = session.id
        delay = sum(f.seconds for f in self._faults.of_kind("setup_delay"))
        if delay:
            await asyncio.sleep(self._settings.real(delay))
        flap = self._shared.flap
        if flap is not None and (self.record.resumed or not flap.resuming_only):
            if flap.after_setup:
                await self._wire.send(wire.setup_complete())
            self.terminate("flap", code=flap.code, reason=flap.reason)
            return
        poison = self._shared.poisoned_sessions.get(session.id) if self.record.resumed else None
        if poison is not None and not poison.at_first_input:
            await self._wire.send(wire.setup_complete())
            self.terminate("poisoned", code=poison.code or 1011, reason=poison.reason)
            return
        if not self._faults.of_kind("no_setup_complete"):
            await self._wire.send(wire.setup_complete())
        self._setup_answered = True
        self._clocks.watch_idle()
        self._faults.start_timers()
        await self._faults.send_messages(lambda f: f.after_setup, self._wire.send)
        if self._faults.take_handle_issues():
            await parts.handles.issue_now()
        if self._faults.fire(lambda f: f.after_setup):
            return
        parts.clocks.start(resumable=parts.handles.resumable, issue_handle=parts.handles.issue)
        async for raw in self._wire.messages():
            if self.ending:
                continue
            message = self._parse(raw)
            resent = self._ledger.receive(message)
            index = self._ledger.received
            self.record.client_messages.append(
                message if message is not None else {"unparsed": str(raw)}
            )
            self._clocks.client_message()
            if poison is not None:  # (a poisoned session's resume dies at its first input)
                self.terminate("poisoned", code=poison.code or 1011, reason=poison.reason)
                continue
            if resent is not None:
                self.record.resent_consumed.append(ResentMessage(self.record.index, index, resent))
                logger.info(
                    "fake live server: connection %d: message %d (%s) was already consumed",
                    self.record.index,
                    index,
                    resent,
                )
            if message is not None:
                try:
                    await parts.handles.send_late()
                    await parts.turns.handle(message)
                except _ConnectionEnded:
                    continue
            self._ledger.mark_handled()
            self.record.handled(index)
            try:
                await self._faults.send_messages(self._is_due_after_messages, self._wire.send)
            except _ConnectionEnded:
                continue
            self._faults.fire(self._is_due_after_messages)

    def _is_due_after_messages(self, fault: Fault) -> bool:
        return fault.after_client_messages == self._ledger.received

    @staticmethod
    def _parse(raw: str | bytes) -> JsonDict | None:
        try:
            value = json.loads(raw)
        except (ValueError, UnicodeDecodeError):
            return None
        return value if isinstance(value, dict) else None

    def _restore(self, choices: SetupChoices) -> SessionState | None:
        """The session: fresh, or restored from the snapshot of the setup's handle; None (and
        refused) when the handle is invalid or its session is over."""
        handle = self.record.resume_handle
        if handle is None:
            return SessionState(self._fresh, audio=choices.audio_out)
        refusal = next(iter(self._faults.of_kind("refuse_resume")), None)
        snapshot = None
        if refusal is None:
            snapshot = self._shared.handles.lookup(handle, now=self._wire.now())
        if snapshot is not None and self._session_over(snapshot.session, choices):
            self._shared.ended_sessions.add(snapshot.session.id)
            logger.info("fake live server: connection %d: session has ended", self.record.index)
            self.terminate("refused", code=1007, reason=INVALID_ARGUMENT_REASON)
            return None
        if (
            snapshot is not None
            and self._settings.refuse_resume_while_open
            and self._shared.open_sessions[snapshot.session.id] > 0
        ):
            logger.info(
                "fake live server: connection %d: resume while the session's old socket is open",
                self.record.index,
            )
            self.terminate("refused", code=1011, reason=INTERNAL_ERROR_REASON)
            return None
        if snapshot is None:
            code = self._settings.refuse_close_code
            if refusal is not None and refusal.code is not None:
                code = refusal.code
            reason = (refusal.reason if refusal is not None else "") or self._settings.refuse_reason
            logger.info(
                "fake live server: connection %d refused handle %s",
                self.record.index,
                short_handle(handle),
            )
            self.terminate("refused", code=code, reason=reason)
            return None
        session = SessionState.restored(
            snapshot,
            replays_cut_reply=self._settings.resume_replays_cut_reply,
            audio=choices.audio_out,
            open_calls=self._settings.tool_ids_outlive_connection,
            forget=self._settings.forget_context_on_resume,
        )
        self._ledger.restore(
            snapshot.consumed, received=self._shared.received_by(snapshot.session.id)
        )
        self.record.restored()
        logger.info(
            "fake live server: connection %d resumed %s (%d turns)",
            self.record.index,
            short_handle(handle),
            len(session.turns),
        )
        return session

    def _session_over(self, session: SessionInfo, choices: SetupChoices) -> bool:
        """True when the session of a snapshot has ended (or its time ran out meanwhile)."""
        settings = self._settings
        cap = choices.family.session_cap
        limit = settings.session_limit
        return session_ended(
            session,
            now=self._wire.now(),
            ended=self._shared.ended_sessions,
            cap=None if cap is None else settings.real(cap),
            limit=None if limit is None else settings.real(limit),
            compression=choices.compression,
            audio=choices.audio_out,
        )
