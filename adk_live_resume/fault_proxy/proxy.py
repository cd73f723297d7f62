"""A fault-injecting proxy in front of any Live endpoint: the real service or the fake.

::

    async with FakeLiveServer() as server, FaultProxy(server) as proxy:
        agent = LlmAgent(name="a", model=proxy.gemini())
        ...
        proxy.go_away(5.0)        # goAway timeLeft "5s" now, the close 1008 at the deadline

    async with FaultProxy("https://generativelanguage.googleapis.com") as proxy:
        with proxy.environment(api_key=os.environ["GOOGLE_API_KEY"]):
            ...                   # the real service, with faults on command

What it guarantees:

* It listens on 127.0.0.1 only, with a certificate of its own (:mod:`.certs`); it connects
  only to the upstream it was given: the host is fixed when the proxy is made, a client
  chooses only the path and query under it. A request target that is not a path (an
  absolute URI, ``//host/...``, ``:x@host/...``: :mod:`.proxy_request`) is refused with HTTP
  400 and dials nothing. Each client websocket gets its own upstream websocket, opened during
  the client's handshake with the same path, query and credentials headers; an upstream that
  refuses the handshake gives the client the same HTTP status.
* Messages go through unchanged and in order, both ways, each ``latency`` seconds late. An
  upstream close is passed on with its code and reason, an upstream abort as an abort; a
  client close closes the upstream.
* Faults, on command (the methods below) or on a schedule (:class:`~.inject_spec.
  InjectSchedule`, per connection from its opening): :meth:`go_away` (then, at the deadline,
  after everything queued before it, the close :attr:`FaultProxy.deadline_close_code`: 1008
  with :data:`GO_AWAY_DEADLINE_REASON` by default, as a recorded real run closes a client
  that stayed past its goAway (``gemini-live-protocol.md``, "Field facts that contradict or
  extend the above"); 1011 "Deadline expired ..." with ``deadline_close_code=1011``),
  :meth:`close` with a code, :meth:`abort` (no close frame), latency each way,
  :meth:`hold_pongs` (pings from the client stay unanswered until :meth:`release_pongs`),
  :meth:`refuse_resumes` (a setup that carries a handle is closed with 1008 and never
  reaches the upstream), :meth:`hold_handles` (``sessionResumptionUpdate`` messages with a
  handle are kept from the client), :meth:`stall` (from the next user turn the model seems
  to stop answering, in one of the shapes of :mod:`.stall_filter`; for the connection, or
  for the live session).
* Handles and API keys are logged only as short prefixes; the request's query is never
  logged.
* With ``record=PATH`` every frame relayed, both ways (injected ones included), every
  opening and every end is written to ``PATH`` as JSON lines, handles, keys and inline audio,
  image and video bytes redacted (:mod:`.recording`).
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import json
import logging
import os
import ssl
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from types import TracebackType
from typing import TYPE_CHECKING, Any, Protocol

from websockets.asyncio.client import ClientConnection, connect
from websockets.asyncio.server import Server, ServerConnection, serve
from websockets.exceptions import ConnectionClosed, InvalidStatus
from websockets.frames import Frame, Opcode
from websockets.http11 import Request, Response

from ..observe.log_redaction import CredentialRedactor
from ..resumption.handles import redact
from .certs import TlsMaterial, create_tls_material
from .inject_spec import (
    DEFAULT_DEADLINE_REASON,
    GO_AWAY_CLOSE_CODES,
    GO_AWAY_DEADLINE_REASON,
    InjectSchedule,
)
from .proxy_request import Upstream, loggable_path, upstream_request
from .recording import Recorder
from .stall_filter import STALL_SHAPES, StallFilter, StallShape
from .wire_json import format_time_left, pick, pick_dict

if TYPE_CHECKING:
    from google.adk.models import Gemini
    from google.genai import Client

__all__ = ["DEADLINE_CLOSE_CODE", "GO_AWAY_DEADLINE_REASON", "FaultProxy", "ProxiedConnection"]

#: The proxy's log, under the name its users configure (the test kit's).
logger = logging.getLogger("adk_live_resume.testing.proxy")
# websockets logs whole handshakes (headers: the API key) and frames (handles) at DEBUG.
_frames_logger = logging.getLogger(logger.name + ".frames")
_frames_logger.addFilter(CredentialRedactor())

#: The code the service closes with at a goAway's deadline (recorded: 1008 with
#: :data:`GO_AWAY_DEADLINE_REASON`; ``deadline_close_code=1011`` for the older 1011).
DEADLINE_CLOSE_CODE = 1008
#: The code of a refused handle.
REFUSED_RESUME_CODE = 1008
#: The largest message relayed, either way (bytes): 16 MiB, sixteen times what google-genai
#: itself accepts from the server (websockets' default of 1 MiB) and room for a fresh start's
#: history; a larger one closes that side with 1009 (message too big).
MAX_MESSAGE_SIZE = 16 * 2**20


class _Address(Protocol):
    @property
    def base_url(self) -> str: ...

    @property
    def cert_path(self) -> str: ...


@dataclass
class ProxiedConnection:
    """What the proxy saw of one relayed websocket (handles only as :func:`redact` forms)."""

    index: int
    path: str = ""
    resumed: bool = False
    resume_handle: str = "<none>"
    handles_seen: list[str] = field(default_factory=list)
    messages_up: int = 0
    messages_down: int = 0
    faults: list[str] = field(default_factory=list)
    #: how the client side ended: "client", "upstream", "go_away", "close", "abort",
    #: "refused", "shutdown"; None while open
    ended_by: str | None = None
    close_code: int | None = None


def _json(message: str | bytes) -> Any:
    try:
        return json.loads(message)
    except ValueError:
        return None


class _Relay:
    """One client websocket, its upstream, and the faults armed on it."""

    def __init__(
        self,
        proxy: FaultProxy,
        client: ServerConnection,
        upstream: ClientConnection,
        record: ProxiedConnection,
    ) -> None:
        self.proxy = proxy
        self.client = client
        self.upstream = upstream
        self.record = record
        self.loop = asyncio.get_running_loop()
        self.opened = self.loop.time()
        self._down: asyncio.Queue[tuple[float, Any]] = asyncio.Queue()
        self._up: asyncio.Queue[tuple[float, Any]] = asyncio.Queue()
        self._binary_down = True
        self._timers: list[asyncio.TimerHandle] = []
        self._held_pongs: list[Frame] = []
        self._ended = asyncio.Event()
        #: The stall fault armed on this connection, if any (see :meth:`FaultProxy.stall`).
        self.stall: StallFilter | None = None
        #: Every handle of the session this connection resumed with or relayed.
        self._handles: set[str] = set()
        self._intercept_pongs()

    # ---- faults ------------------------------------------------------------------------------

    def go_away(self, time_left: float) -> None:
        payload = {"goAway": {"timeLeft": format_time_left(time_left)}}
        self.record.faults.append(f"go_away {time_left:g}s")
        self._down.put_nowait((self.loop.time(), payload))
        code = self.proxy.deadline_close_code
        reason = GO_AWAY_DEADLINE_REASON if code == 1008 else DEFAULT_DEADLINE_REASON
        self._timers.append(
            self.loop.call_later(time_left, self.close_now, code, reason, "go_away")
        )

    def close_now(self, code: int, reason: str = "", ended_by: str = "close") -> None:
        if self.record.ended_by is not None:
            return
        self.record.faults.append(f"close {code}")
        self._end(ended_by, code)
        self.loop.create_task(self._close_both(code, reason))

    def abort_now(self) -> None:
        if self.record.ended_by is not None:
            return
        self.record.faults.append("abort")
        self._end("abort", None)
        self.client.transport.abort()
        self.loop.create_task(self.upstream.close(1001, "client gone"))

    def stall_now(self, shape: str, session: bool, *, armed: bool = True) -> None:
        if self.record.ended_by is None and self.stall is None:
            self.record.faults.append(f"stall {shape}" + (" (session)" if session else ""))
            self.stall = StallFilter(shape, session=session, armed=armed)
            if session:
                self.proxy.stalled_sessions.update(dict.fromkeys(self._handles, shape))

    def release_pongs(self) -> None:
        held, self._held_pongs = self._held_pongs, []
        for frame in held:
            self._send_frame(frame)
        if held and self.client.transport is not None and not self.client.transport.is_closing():
            self.client.send_data()

    # ---- relaying ----------------------------------------------------------------------------

    def _intercept_pongs(self) -> None:
        protocol = self.client.protocol
        self._send_frame: Callable[[Frame], None] = protocol.send_frame

        def send_frame(frame: Frame) -> None:
            if frame.opcode is Opcode.PONG and self.proxy.pongs_held:
                self._held_pongs.append(frame)
                return
            self._send_frame(frame)

        protocol.send_frame = send_frame  # type: ignore[method-assign]

    def arm(self, schedule: InjectSchedule) -> None:
        if schedule.goaway_every is not None:
            self._every(schedule.goaway_every, lambda: self.go_away(schedule.goaway_time_left))
        if schedule.drop_every is not None:
            self._timers.append(self.loop.call_later(schedule.drop_every, self.abort_now))
        if schedule.stall_after is not None:
            self._timers.append(
                self.loop.call_later(
                    schedule.stall_after,
                    self.stall_now,
                    schedule.stall_shape,
                    schedule.stall_session,
                )
            )
        if schedule.close_every is not None:
            self._timers.append(
                self.loop.call_later(
                    schedule.close_every,
                    self.close_now,
                    schedule.close_code,
                    "injected by the fault proxy",
                )
            )

    def _every(self, period: float, action: Callable[[], None]) -> None:
        def fire() -> None:
            if self.record.ended_by is None:
                action()
                self._timers.append(self.loop.call_later(period, fire))

        self._timers.append(self.loop.call_later(period, fire))

    async def run(self) -> None:
        tasks = [
            self.loop.create_task(self._read_client()),
            self.loop.create_task(self._read_upstream()),
            self.loop.create_task(self._send(self._up, self.upstream, up=True)),
            self.loop.create_task(self._send(self._down, self.client, up=False)),
        ]
        for task in tasks:
            task.add_done_callback(self._report_crash)
        try:
            await self._ended.wait()
            # Let the close or abort that ended it go out before the tasks are cancelled.
            await asyncio.wait([self.loop.create_task(self.client.wait_closed())], timeout=5.0)
        finally:
            for timer in self._timers:
                timer.cancel()
            for task in tasks:
                task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)
            await self._close_both(1001, "proxy closing")

    def _report_crash(self, task: asyncio.Task[None]) -> None:
        if not task.cancelled() and task.exception() is not None:
            logger.error(
                "proxy connection %d: relay task failed; closing it",
                self.record.index,
                exc_info=task.exception(),
            )
            self.close_now(1011, "fault proxy error")

    def _end(self, ended_by: str, code: int | None) -> None:
        if self.record.ended_by is None:
            self.record.ended_by = ended_by
            self.record.close_code = code
            if self.proxy.recorder is not None:
                self.proxy.recorder.ended(self.record.index, ended_by, code)
            logger.info(
                "proxy connection %d ended by %s (code %s)", self.record.index, ended_by, code
            )
        self._ended.set()

    async def _close_both(self, code: int, reason: str) -> None:
        """The client's close first (its code is the fault), then the upstream's."""
        with contextlib.suppress(Exception):
            await self.client.close(code, reason)
        with contextlib.suppress(Exception):
            await self.upstream.close(1000 if code == 1011 else code, reason)

    async def _read_client(self) -> None:
        first = True
        try:
            async for message in self.client:
                self.record.messages_up += 1
                if first:
                    first = False
                    if self._refuse(message):
                        return
                elif self.stall is not None:
                    self.stall.up(message)
                self._up.put_nowait((self.loop.time() + self.proxy.latency, message))
        except ConnectionClosed:
            pass
        rcvd = self.client.close_code
        self._up.put_nowait((self.loop.time() + self.proxy.latency, ("close", rcvd)))

    def _refuse(self, setup_message: str | bytes) -> bool:
        setup = pick_dict(_json(setup_message), "setup")
        handle = pick(pick_dict(setup, "sessionResumption"), "handle")
        if not handle:
            return False
        self.record.resumed = True
        self.record.resume_handle = redact(handle)
        logger.info("proxy connection %d resumes with handle %s", self.record.index, redact(handle))
        self._handles.add(str(handle))
        stalled = self.proxy.stalled_sessions.get(str(handle))
        if stalled is not None:  # a session that stalls: this connection stalls at once
            self.stall_now(stalled, True, armed=False)
        if self.proxy._take_refusal():
            self.record.faults.append("refused resume")
            self.close_now(REFUSED_RESUME_CODE, "resumption refused (fault proxy)", "refused")
            return True
        return False

    async def _read_upstream(self) -> None:
        try:
            async for message in self.upstream:
                self._binary_down = isinstance(message, bytes)
                self.record.messages_down += 1
                if self._withhold(message):
                    continue
                relayed = message if self.stall is None else self.stall.down(message)
                if relayed is None:
                    continue
                self._down.put_nowait((self.loop.time() + self.proxy.latency, relayed))
        except ConnectionClosed:
            pass
        rcvd = self.upstream.protocol.close_rcvd
        ending: Any = ("abort", None) if rcvd is None else ("close", (rcvd.code, rcvd.reason))
        self._down.put_nowait((self.loop.time() + self.proxy.latency, ending))

    def _withhold(self, message: str | bytes) -> bool:
        update = pick_dict(_json(message), "sessionResumptionUpdate")
        handle = pick(update, "newHandle")
        if not handle:
            return False
        self.record.handles_seen.append(redact(handle))
        self._handles.add(str(handle))
        if self.stall is not None and self.stall.session:
            self.proxy.stalled_sessions[str(handle)] = self.stall.shape
        if self.proxy.handles_held:
            self.record.faults.append("held handle")
            return True
        return False

    async def _send(
        self,
        queue: asyncio.Queue[tuple[float, Any]],
        target: ServerConnection | ClientConnection,
        *,
        up: bool,
    ) -> None:
        while True:
            due, item = await queue.get()
            delay = due - self.loop.time()
            if delay > 0:
                await asyncio.sleep(delay)
            if isinstance(item, tuple):
                kind, detail = item
                if self.record.ended_by is not None:
                    return  # a fault ended it first: its own close stands
                if up:  # the client went away: close the upstream the same way
                    self._end("client", detail)
                    with contextlib.suppress(Exception):
                        await self.upstream.close(detail or 1000)
                elif kind == "abort":
                    self._end("upstream", None)
                    self.client.transport.abort()
                else:
                    code, reason = detail
                    self._end("upstream", code)
                    with contextlib.suppress(Exception):
                        await self.client.close(code, reason)
                return
            if isinstance(item, dict):  # an injected message: same frame type as upstream's
                data = json.dumps(item)
                item = data.encode() if self._binary_down else data
            if self.proxy.recorder is not None:
                self.proxy.recorder.frame(self.record.index, from_client=up, frame=item)
            try:
                await target.send(item)
            except ConnectionClosed:
                return


class FaultProxy:
    """Relays Live websockets from 127.0.0.1 to ``upstream`` and injects faults into them.

    Args:
        upstream: a URL (``https://generativelanguage.googleapis.com``, ``wss://...``) or an
            object with ``base_url`` and ``cert_path`` (a :class:`FakeLiveServer`, whose
            certificate is then trusted for the upstream connections).
        upstream_cert: a PEM bundle to trust for the upstream (default: the system's; ignored
            when ``upstream`` carries ``cert_path``).
        schedule: faults on every connection, from its opening (:func:`~.inject_spec.
            parse_inject_spec`). Its ``latency`` and ``refuse_resume`` set the defaults of
            :attr:`latency` and :meth:`refuse_resumes`.
        open_timeout: seconds for the upstream handshake.
        max_message_size: the largest message relayed, either way, in bytes
            (:data:`MAX_MESSAGE_SIZE`, 16 MiB); a larger one closes its side with 1009.
        api_key: the key to present upstream in place of the client's (so that
            :meth:`gemini` and :meth:`genai_client`, which carry the fake's key, reach the
            real service); None: the client's own key goes through.
        record: a file to write every relayed frame to, both ways, as JSON lines with
            handles, keys and audio redacted (:mod:`.recording`); None: no recording.
        deadline_close_code: the close at a goAway's deadline, 1008 (with
            :data:`GO_AWAY_DEADLINE_REASON`, as recorded from the service) or 1011 (with
            "Deadline expired ..."); None: the schedule's ``goaway_close_code`` (1008 unless
            ``--inject goaway-close-code=1011``).
    """

    def __init__(
        self,
        upstream: str | _Address,
        *,
        upstream_cert: str | None = None,
        schedule: InjectSchedule | None = None,
        open_timeout: float = 20.0,
        api_key: str | None = None,
        record: str | os.PathLike[str] | None = None,
        deadline_close_code: int | None = None,
        max_message_size: int = MAX_MESSAGE_SIZE,
    ) -> None:
        if isinstance(upstream, str):
            base = upstream
        else:
            base = upstream.base_url
            upstream_cert = upstream.cert_path
        #: The one host and base path every upstream connection goes to (fixed here).
        self.upstream = Upstream.from_url(base)
        self.upstream_url = self.upstream.url
        self._upstream_ssl: ssl.SSLContext | None = None
        if self.upstream.scheme == "wss":
            self._upstream_ssl = ssl.create_default_context(cafile=upstream_cert)
        self.schedule = schedule or InjectSchedule()
        self.latency = self.schedule.latency
        #: The close at a goAway's deadline: 1008 (recorded) or 1011.
        self.deadline_close_code = (
            self.schedule.goaway_close_code if deadline_close_code is None else deadline_close_code
        )
        if self.deadline_close_code not in GO_AWAY_CLOSE_CODES:
            raise ValueError(
                f"deadline_close_code must be 1008 or 1011, got {self.deadline_close_code}"
            )
        self.pongs_held = False
        self.handles_held = False
        self._refusals = self.schedule.refuse_resume
        #: Handles of live sessions a stall ``session=True`` stalled, and its shape.
        self.stalled_sessions: dict[str, str] = {}
        self.open_timeout = open_timeout
        if isinstance(max_message_size, bool) or not isinstance(max_message_size, int):
            raise TypeError(f"max_message_size must be a number of bytes, not {max_message_size!r}")
        if max_message_size < 1:
            raise ValueError(f"max_message_size must be at least 1 byte, not {max_message_size}")
        self.max_message_size = max_message_size
        self._api_key = api_key
        self.connections: list[ProxiedConnection] = []
        self._relays: dict[int, _Relay] = {}
        self._pending: dict[int, ClientConnection] = {}
        self._counter = itertools.count(1)
        self._server: Server | None = None
        self._tls: TlsMaterial | None = None
        self._started = time.monotonic()
        self._record_path = record
        #: Writes the recording while the proxy runs (``record=``), else None.
        self.recorder: Recorder | None = None

    # ---- addresses, like FakeLiveServer's ----------------------------------------------------

    @property
    def base_url(self) -> str:
        if self._server is None:
            raise RuntimeError("proxy not started")
        port = next(iter(self._server.sockets)).getsockname()[1]
        return f"https://127.0.0.1:{port}"

    @property
    def cert_path(self) -> str:
        if self._tls is None:
            raise RuntimeError("proxy not started")
        return str(self._tls.cert_path)

    def ca_bundle(self) -> str:
        """A PEM bundle that trusts this proxy and everything ``SSL_CERT_FILE`` (or else
        certifi) trusted: for ``SSL_CERT_FILE`` in an app whose other HTTPS calls must still
        verify. Written once, next to the proxy's certificate."""
        if self._tls is None:
            raise RuntimeError("proxy not started")
        bundle = self._tls.directory / "bundle.pem"
        if not bundle.exists():
            base = os.environ.get("SSL_CERT_FILE")
            if not base or not os.path.isfile(base):
                import certifi

                base = certifi.where()
            with open(base, encoding="ascii", errors="replace") as trusted:
                text = trusted.read()
            bundle.write_text(text.rstrip("\n") + "\n" + self._tls.cert_path.read_text())
        return str(bundle)

    def environment(
        self, *, vertex: bool = False, api_key: str | None = None
    ) -> contextlib.AbstractContextManager[dict[str, str]]:
        """Point code that builds its own clients at the proxy (see :mod:`.client_config`);
        ``api_key``: the key the upstream needs (default: the fake's)."""
        from .client_config import environment

        return _with_key(environment(self, vertex=vertex), api_key)

    def genai_client(self, api_version: str | None = None, *, vertex: bool = False) -> Client:
        """A ``google.genai.Client`` that reaches the upstream through this proxy."""
        from .client_config import genai_client

        return genai_client(self, api_version=api_version, vertex=vertex)

    def gemini(self, model: str = "gemini-live-fake", *, vertex: bool = False) -> Gemini:
        """A ``google.adk.models.Gemini`` that reaches the upstream through this proxy."""
        from .client_config import fake_gemini

        return fake_gemini(self, model=model, vertex=vertex)

    # ---- faults on command -------------------------------------------------------------------

    def _targets(self, connection: int | None) -> list[_Relay]:
        if connection is not None:
            relay = self._relays.get(connection)
            return [] if relay is None else [relay]
        return list(self._relays.values())

    def go_away(self, time_left: float, *, connection: int | None = None) -> list[int]:
        """Send a ``goAway`` (``timeLeft`` real seconds) to the open connections (or one), and
        close each at its deadline with :attr:`deadline_close_code` (1008 unless switched).
        Returns the indexes reached."""
        targets = self._targets(connection)
        for relay in targets:
            relay.go_away(time_left)
        return [relay.record.index for relay in targets]

    def close(self, code: int, reason: str = "", *, connection: int | None = None) -> list[int]:
        """Close the open connections (or one) with ``code`` now (the upstream too)."""
        targets = self._targets(connection)
        for relay in targets:
            relay.close_now(code, reason)
        return [relay.record.index for relay in targets]

    def abort(self, *, connection: int | None = None) -> list[int]:
        """Abort the open connections (or one) without a close frame: a network drop."""
        targets = self._targets(connection)
        for relay in targets:
            relay.abort_now()
        return [relay.record.index for relay in targets]

    def hold_pongs(self) -> None:
        """Leave the clients' pings unanswered (a keepalive timeout follows on their side)."""
        self.pongs_held = True

    def release_pongs(self) -> None:
        """Answer pings again, held ones first."""
        self.pongs_held = False
        for relay in self._relays.values():
            relay.release_pongs()

    def hold_handles(self, held: bool = True) -> None:
        """Keep ``sessionResumptionUpdate`` messages with a handle from the clients."""
        self.handles_held = held

    def stall(
        self, shape: StallShape = "silent", *, session: bool = False, connection: int | None = None
    ) -> list[int]:
        """Make the open connections (or one) stall from the next user turn on: the socket
        stays open and pings are answered, but the model's answers are withheld or emptied
        in ``shape`` (:mod:`.stall_filter`); ``session``: a connection that resumes the
        session stalls too. Returns the indexes reached."""
        if shape not in STALL_SHAPES:
            raise ValueError(f"shape must be one of {', '.join(STALL_SHAPES)}, not {shape!r}")
        targets = self._targets(connection)
        for relay in targets:
            relay.stall_now(shape, session)
        return [relay.record.index for relay in targets]

    def refuse_resumes(self, count: int = 1) -> None:
        """Refuse the next ``count`` setups that carry a resumption handle (close 1008)."""
        self._refusals = count

    def _take_refusal(self) -> bool:
        if self._refusals > 0:
            self._refusals -= 1
            return True
        return False

    def open_connections(self) -> int:
        return len(self._relays)

    # ---- lifecycle ---------------------------------------------------------------------------

    async def __aenter__(self) -> FaultProxy:
        self._tls = create_tls_material()
        if self._record_path is not None:
            self.recorder = Recorder(self._record_path)
        self._server = await serve(
            self._handle,
            "127.0.0.1",
            0,
            ssl=self._tls.server_context(),
            process_request=self._open_upstream,
            max_size=self.max_message_size,
            ping_interval=None,
            compression=None,
            logger=_frames_logger,
        )
        logger.info("fault proxy on %s -> %s", self.base_url, self.upstream_url)
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        for relay in list(self._relays.values()):
            relay.record.ended_by = relay.record.ended_by or "shutdown"
            relay.client.transport.abort()
            relay._ended.set()
        if self._server is not None:
            self._server.close(close_connections=True)
            await self._server.wait_closed()
        for upstream in self._pending.values():
            with contextlib.suppress(Exception):
                await upstream.close()
        if self._tls is not None:
            self._tls.cleanup()
        if self.recorder is not None:
            self.recorder.close()

    async def _open_upstream(
        self, connection: ServerConnection, request: Request
    ) -> Response | None:
        """Open the upstream during the client's handshake; pass its refusal on. A request
        target that is not a path (:mod:`.proxy_request`) is refused with 400 and dials
        nothing."""
        try:
            uri = self.upstream.uri(request.path)
        except ValueError as refused:
            logger.warning("fault proxy refused a request: %s", refused)
            return connection.respond(400, f"fault proxy: {refused}\n")
        address, headers = upstream_request(uri, list(request.headers.raw_items()), self._api_key)
        try:
            upstream = await connect(
                address,
                additional_headers=headers,
                ssl=self._upstream_ssl,
                max_size=self.max_message_size,
                compression=None,
                open_timeout=self.open_timeout,
                user_agent_header=None,
                logger=_frames_logger,
            )
        except InvalidStatus as refused:
            status = refused.response.status_code
            logger.info("upstream refused %s: HTTP %d", loggable_path(request.path), status)
            return connection.respond(status, refused.response.body.decode(errors="replace"))
        except (OSError, TimeoutError) as error:
            logger.warning("upstream %s unreachable: %s", self.upstream_url, error)
            return connection.respond(502, f"fault proxy: upstream unreachable: {error}\n")
        self._pending[id(connection)] = upstream
        return None

    async def _handle(self, client: ServerConnection) -> None:
        upstream = self._pending.pop(id(client))
        record = ProxiedConnection(index=next(self._counter))
        record.path = loggable_path(client.request.path if client.request else "")
        self.connections.append(record)
        if self.recorder is not None:
            self.recorder.opened(record.index, record.path)
        relay = _Relay(self, client, upstream, record)
        self._relays[record.index] = relay
        relay.arm(self.schedule)
        logger.info("proxy connection %d opened (%s)", record.index, record.path)
        try:
            await relay.run()
        finally:
            self._relays.pop(record.index, None)


@contextlib.contextmanager
def _with_key(
    inner: contextlib.AbstractContextManager[dict[str, str]], api_key: str | None
) -> Iterator[dict[str, str]]:
    with inner as variables:
        if api_key is None:
            yield variables
            return
        os.environ["GOOGLE_API_KEY"] = api_key
        yield {**variables, "GOOGLE_API_KEY": api_key[:4] + "…"}
