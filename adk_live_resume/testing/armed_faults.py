"""The faults armed on one connection of the fake server, and when each one fires.

A drop fault (``close``, ``abort``) fires at most once: :meth:`ArmedFaults.fire` at the
connection's trigger points, a timer for ``after_seconds``. A ``server_message`` fault is
sent once at its trigger point (:meth:`ArmedFaults.send_messages`); an ``issue_handle`` fault
is taken once, right after the setup (:meth:`ArmedFaults.take_handle_issues`).
Faults may be added while the connection is open (:meth:`ArmedFaults.arm`). The connection
does the firing itself (the ``end`` callback) and owns every task started here (the
``spawn`` callback).
"""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import Awaitable, Callable, Coroutine, Iterable
from typing import Any

from .faults import Fault, FaultKind
from .protocol import JsonDict

__all__ = ["ArmedFaults"]

logger = logging.getLogger("adk_live_resume.testing")

Spawn = Callable[[Coroutine[Any, Any, None]], Any]


class ArmedFaults:
    """The faults of connection number ``connection``; ``real`` converts service seconds."""

    def __init__(
        self,
        faults: Iterable[Fault],
        *,
        connection: int,
        end: Callable[[Fault], None],
        spawn: Spawn,
        real: Callable[[float], float],
    ) -> None:
        self._faults = list(faults)
        self._connection = connection
        self._end = end
        self._spawn = spawn
        self._real = real

    def of_kind(self, kind: FaultKind) -> list[Fault]:
        """The armed faults of ``kind``, in arming order."""
        return [fault for fault in self._faults if fault.kind == kind]

    def fire(self, matches: Callable[[Fault], bool]) -> bool:
        """Fire the first armed drop fault that ``matches``; True if one fired."""
        for fault in self._faults:
            if fault.is_drop and matches(fault):
                self._fire(fault)
                return True
        return False

    async def send_messages(
        self, matches: Callable[[Fault], bool], send: Callable[[JsonDict], Awaitable[None]]
    ) -> None:
        """Send, with ``send``, the message of every armed ``server_message`` fault that
        ``matches``, in arming order; each fires once."""
        taken = [fault for fault in self._faults if fault.sends_message and matches(fault)]
        for fault in taken:
            self._faults.remove(fault)
            logger.info("fake live server: connection %d: fault %s", self._connection, fault)
            await send(json.loads(fault.message))

    def take_handle_issues(self) -> int:
        """Take every armed ``issue_handle`` fault (each fires once); return how many."""
        taken = [fault for fault in self._faults if fault.issues_handle]
        for fault in taken:
            self._faults.remove(fault)
            logger.info("fake live server: connection %d: fault %s", self._connection, fault)
        return len(taken)

    def start_timers(self) -> None:
        """The setup was answered: start the ``after_seconds`` timers of the drop faults."""
        for fault in self._faults:
            if fault.is_drop and fault.after_seconds is not None:
                self._spawn(self._after(fault))

    def arm(
        self,
        faults: Iterable[Fault],
        *,
        messages_seen: int,
        setup_answered: bool,
        hold_pongs: Callable[[float], None],
    ) -> None:
        """Add ``faults`` to the open connection (see ``LiveConnection.arm`` for how their
        triggers count); ``ValueError`` before anything is armed if one could never fire."""
        faults = list(faults)
        for fault in faults:
            if fault.sends_message and fault.after_setup and setup_answered:
                raise ValueError(
                    f"connection {self._connection} has answered its setup already: send the"
                    " message now with FakeLiveServer.send_message_now instead"
                )
            if fault.issues_handle and setup_answered:
                raise ValueError(
                    f"connection {self._connection} has answered its setup already: issue the"
                    " handle now with FakeLiveServer.issue_handles_now instead"
                )
            due = fault.after_client_messages
            if due is not None and due <= messages_seen:
                raise ValueError(
                    f"connection {self._connection} has received {messages_seen} client"
                    f" messages already: after_client_messages={due} would never fire; give a"
                    " later message number"
                )
        for fault in faults:
            logger.info("fake live server: connection %d: armed %s", self._connection, fault)
            self._faults.append(fault)
            if fault.kind == "hold_pongs":
                hold_pongs(fault.seconds)
            if not setup_answered or not fault.is_drop:
                continue
            if fault.after_seconds is not None:
                self._spawn(self._after(fault))
            elif fault.after_setup:
                self._fire(fault)

    def _fire(self, fault: Fault) -> None:
        self._faults.remove(fault)
        logger.info("fake live server: connection %d: fault %s", self._connection, fault)
        self._end(fault)

    async def _after(self, fault: Fault) -> None:
        await asyncio.sleep(self._real(fault.after_seconds or 0.0))
        if fault in self._faults:
            self._fire(fault)
