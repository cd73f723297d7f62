"""Network latency in front of the fake server: a TCP relay on 127.0.0.1 that delays every byte.

Every byte is delayed by a fixed one-way latency, so that a test or a benchmark pays the round
trips a remote server costs (the TCP, TLS and websocket handshakes, the setup, a close handshake).

::

    async with FakeLiveServer() as server, LatencyRelay(server, one_way=0.05) as relay:
        agent = LlmAgent(name="a", model=relay.gemini())  # 100 ms round trips
        client = relay.genai_client()

Faults, scripts and records stay the server's (``server.close_open(...)``,
``server.connections``); only the clients are pointed at the relay. Its delays are real
seconds: the server's ``time_scale`` does not apply to them.

What it guarantees:

* Bytes go through unchanged and in order (TLS is end to end: the relay never decrypts), each
  chunk ``one_way`` seconds after it was read, in both directions.
* The TCP handshake's round trip is emulated too: the client's first bytes reach the server no
  sooner than ``3 * one_way`` after its connect (SYN, SYN-ACK, then data), although the
  client's own connect to the relay completes at once.
* Endings travel with the same delay and keep their kind: an end of stream (FIN) is passed on
  as one once everything before it was delivered; a reset (a server's abort) aborts the other
  side; a closed socket closes the other side after its data.
* It listens on 127.0.0.1 only and connects only to the address it fronts.

Not emulated: bandwidth, loss, jitter, Nagle. The delay is applied per chunk read, on the event
loop of the process that runs the relay (the benchmark's own; its CPU work is a few
microseconds per chunk).
"""

from __future__ import annotations

import asyncio
import collections
from types import TracebackType
from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    from google.adk.models import Gemini
    from google.genai import Client

_EOF = object()  # the peer sent FIN
_CLOSE = object()  # the peer closed cleanly: close after the data
_ABORT = object()  # the peer reset the connection: abort


class _Address(Protocol):
    @property
    def base_url(self) -> str: ...

    @property
    def cert_path(self) -> str: ...


class _DelayedPipe:
    """What one side read, delivered to the other side ``delay`` seconds later, in order.
    Once it is done (an ending delivered, or the target's socket gone) it takes nothing more."""

    def __init__(self, loop: asyncio.AbstractEventLoop, delay: float) -> None:
        self._loop = loop
        self._delay = delay
        self._items: collections.deque[tuple[float, object]] = collections.deque()
        self._timer: asyncio.TimerHandle | None = None
        self._not_before = 0.0
        self.target: _Side | None = None
        self.done = False

    def hold_until(self, when: float) -> None:
        """Treat what is read before ``when`` (loop time) as read at ``when``."""
        self._not_before = when

    def push(self, item: object) -> None:
        if self.done:
            return  # nobody to deliver to any more
        due = max(self._loop.time(), self._not_before) + self._delay
        self._items.append((due, item))
        self._schedule()

    def _schedule(self) -> None:
        if self._timer is None and self._items and self.target is not None:
            self._timer = self._loop.call_at(self._items[0][0], self._flush)

    def attach(self, target: _Side) -> None:
        self.target = target
        self._schedule()

    def _flush(self) -> None:
        self._timer = None
        target = self.target
        assert target is not None and target.transport is not None
        transport = target.transport
        now = self._loop.time()
        while self._items and self._items[0][0] <= now and not self.done:
            _, item = self._items.popleft()
            if item is _EOF:
                target.send_eof()
            elif item is _CLOSE:
                transport.close()
                self.stop()
            elif item is _ABORT:
                transport.abort()
                self.stop()
            elif not transport.is_closing():
                assert isinstance(item, bytes)
                transport.write(item)
        self._schedule()

    def stop(self) -> None:
        """Deliver nothing more."""
        self.done = True
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        self._items.clear()


class _Side(asyncio.Protocol):
    """One socket of a relayed connection: what it reads goes into ``outgoing``, and
    ``incoming`` delivers to it. Its transport is in ``registry`` while it is open; it is
    closed once each way has ended (its peer's FIN read, ours passed on), as TCP does."""

    def __init__(
        self, outgoing: _DelayedPipe, incoming: _DelayedPipe, registry: set[asyncio.Transport]
    ) -> None:
        self.outgoing = outgoing
        self.incoming = incoming
        self.registry = registry
        self.transport: asyncio.Transport | None = None
        self._eof_read = False
        self._eof_sent = False

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        assert isinstance(transport, asyncio.Transport)
        self.transport = transport
        self.registry.add(transport)
        self.incoming.attach(self)

    def data_received(self, data: bytes) -> None:
        self.outgoing.push(bytes(data))

    def eof_received(self) -> bool:
        self.outgoing.push(_EOF)
        self._eof_read = True
        # Stay open for writing while the other way still carries data.
        return not self._eof_sent

    def send_eof(self) -> None:
        """Pass the other side's FIN on (a close if this transport cannot half-close)."""
        assert self.transport is not None
        self._eof_sent = True
        if self._eof_read or not self.transport.can_write_eof():
            self.transport.close()
        else:
            self.transport.write_eof()

    def connection_lost(self, exc: Exception | None) -> None:
        if self.transport is not None:
            self.registry.discard(self.transport)
        self.incoming.stop()  # nothing more can be written to this socket
        self.outgoing.push(_CLOSE if exc is None else _ABORT)


class LatencyRelay:
    """Fronts ``target`` (a :class:`~adk_live_resume.testing.FakeLiveServer`, or anything with
    ``base_url`` on 127.0.0.1 and ``cert_path``) on a port of its own, with ``one_way`` seconds
    of latency each way (a round trip is twice that). Start it after the server; it aborts
    whatever it still relays on exit."""

    def __init__(self, target: _Address, *, one_way: float) -> None:
        if one_way < 0:
            raise ValueError(f"one_way must be >= 0 seconds, got {one_way!r}")
        host, _, port = target.base_url.removeprefix("https://").rpartition(":")
        if host != "127.0.0.1":
            raise ValueError(f"the relay fronts 127.0.0.1 only, not {host!r}")
        self._target_port = int(port)
        self._cert_path = target.cert_path
        self.one_way = one_way
        self._server: asyncio.Server | None = None
        self._transports: set[asyncio.Transport] = set()
        self._tasks: set[asyncio.Task[None]] = set()

    @property
    def base_url(self) -> str:
        if self._server is None:
            raise RuntimeError("relay not started")
        port = self._server.sockets[0].getsockname()[1]
        return f"https://127.0.0.1:{port}"

    @property
    def cert_path(self) -> str:
        return self._cert_path

    def open_sockets(self) -> int:
        """Sockets the relay holds open now: two per relayed connection (the client's and
        the server's), none once every connection has ended both ways."""
        return len(self._transports)

    def genai_client(self, api_version: str | None = None, *, vertex: bool = False) -> Client:
        """A ``google.genai.Client`` that reaches the server through this relay."""
        from ..fault_proxy.client_config import genai_client

        return genai_client(self, api_version=api_version, vertex=vertex)

    def gemini(self, model: str = "gemini-live-fake", *, vertex: bool = False) -> Gemini:
        """A ``google.adk.models.Gemini`` that reaches the server through this relay."""
        from ..fault_proxy.client_config import fake_gemini

        return fake_gemini(self, model=model, vertex=vertex)

    async def __aenter__(self) -> LatencyRelay:
        loop = asyncio.get_running_loop()
        self._server = await loop.create_server(self._accept, "127.0.0.1", 0)
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        assert self._server is not None
        self._server.close()
        for task in list(self._tasks):
            task.cancel()
        for transport in list(self._transports):
            transport.abort()
        await asyncio.gather(*self._tasks, return_exceptions=True)
        await self._server.wait_closed()

    def _accept(self) -> asyncio.Protocol:
        loop = asyncio.get_running_loop()
        upstream = _DelayedPipe(loop, self.one_way)  # client -> server
        downstream = _DelayedPipe(loop, self.one_way)  # server -> client
        # SYN and SYN-ACK: the client's first byte reaches the server 3 one-way delays after
        # its connect (the relay itself accepted at once).
        upstream.hold_until(loop.time() + 2 * self.one_way)
        client_side = _Side(upstream, downstream, self._transports)
        task = loop.create_task(self._open_upstream(client_side))
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)
        return client_side

    async def _open_upstream(self, client_side: _Side) -> None:
        """Connect to the target for ``client_side``; abort the client if that fails."""
        loop = asyncio.get_running_loop()
        try:
            await loop.create_connection(
                lambda: _Side(client_side.incoming, client_side.outgoing, self._transports),
                "127.0.0.1",
                self._target_port,
            )
        except OSError:
            if client_side.transport is not None:
                client_side.transport.abort()
