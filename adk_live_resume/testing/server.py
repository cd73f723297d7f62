"""The fake Gemini Live server: a real TLS websocket server on 127.0.0.1.

Usage::

    async with FakeLiveServer(time_scale=0.01) as server:
        client = server.genai_client()                   # bare google-genai
        agent = LlmAgent(name="a", model=server.gemini())  # google-adk
        with server.environment():                        # anything that reads the env
            ...
        assert server.user_turns_answered() == ["hello"]

Guarantees:

* it listens on ``127.0.0.1`` (or ``localhost``) only, on an ephemeral port, with a fresh
  self-signed certificate (SAN ``IP:127.0.0.1``, ``DNS:localhost``) at :attr:`cert_path`;
* it serves every request path, so any API version and method name the SDK builds works,
  and on the same port the REST ``generateContent`` / ``streamGenerateContent`` of both
  dialects (:mod:`~adk_live_resume.testing.rest`; recorded in :meth:`rest_calls`);
* every connection gets a :class:`~adk_live_resume.testing.ConnectionRecord` in
  :attr:`connections`, complete once the connection's handler finished;
* all timers run on the event loop clock and stop with their connection; :meth:`stop` leaves no
  task, socket or temporary file behind;
* it behaves like the service for voice: voice activity detection on the received PCM
  (:mod:`~adk_live_resume.testing.vad`), handles at any resumable point on a
  :class:`~adk_live_resume.testing.HandleSchedule` or on demand (:meth:`issue_handles_now`;
  snapshot semantics in :mod:`~adk_live_resume.testing.handles`), parallel and sequential tool
  calls (:mod:`~adk_live_resume.testing.model`), the Gemini 3.x Live dialect
  (:mod:`~adk_live_resume.testing.dialect`), each model family's wire rules
  (:mod:`~adk_live_resume.testing.families`) and the audio session limit (``session_limit``).
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import dataclasses
import logging
import ssl
from collections.abc import Callable, Collection, Mapping
from types import TracebackType
from typing import TYPE_CHECKING, Any, cast

from websockets.asyncio.server import Server, ServerConnection, serve
from websockets.http11 import Request, Response

from ..fault_proxy.certs import TlsMaterial, create_tls_material
from ..observe.log_redaction import CredentialRedactor
from .connection import LiveConnection
from .faults import Fault, Flap
from .handles import HandleIssue, HandleSchedule, HandleStore
from .http_front import RestService
from .records import ConnectionRecord, HeardTurn, ResentMessage, ToolCallRecord
from .rest import RestCall
from .settings import AUDIO_SESSION_LIMIT, IDLE_CLOSE_AFTER, ServerSettings, SharedState
from .wire_shapes import WireShapes

if TYPE_CHECKING:
    from google.adk.models import Gemini
    from google.genai import Client

__all__ = ["FakeLiveServer"]

logger = logging.getLogger("adk_live_resume.testing")

# websockets logs every frame at DEBUG, resumption handles included, and every handshake
# whole (the client's x-goog-api-key header: a real key reaches the fake through `serve`
# with an agent's .env, or a keyed proxy). Neither may be logged whole: a filter on the
# fake's frame logger cuts both to a short prefix, whatever level the application sets
# (this module never sets a logger's level).
_frames_logger = logging.getLogger("adk_live_resume.testing.frames")
_frames_logger.addFilter(CredentialRedactor())

_LOOPBACK_HOSTS = ("127.0.0.1", "localhost")


class FakeLiveServer:
    """A scripted, fault-injecting stand-in for the Gemini Live API.

    Args:
        time_scale: real seconds per service second (0.01 runs a 600 s connection in 6 s).
            Connection lifetime, goAway lead, handle TTL, fault delays and setup delays are
            service seconds; ``chunk_delay`` is real seconds.
        connection_lifetime: service seconds from accept to the deadline close.
        go_away_lead: service seconds before the deadline at which ``goAway`` is sent. Its
            ``timeLeft`` is the remaining time in *real* seconds (``"60s"``, ``"0.600s"``).
        handle_ttl: service seconds a resumption handle stays valid after it is issued.
        refuse_close_code: close code for an unknown, expired or refused handle.
        deadline_close_code / deadline_reason: the close frame at a connection's deadline, when
            the client did not leave after its ``goAway``. Default 1008 with the recorded
            reason (:data:`~adk_live_resume.testing.GO_AWAY_DEADLINE_REASON`; a recorded run,
            martin-paladino/glosa ``samples/fixtures/lt_en.jsonl``); 1011 (the other close
            seen there) gets "Deadline expired before operation could complete.", and so does
            a connection that was sent no goAway (its setup was answered too late for one). A
            ``deadline_reason`` given is sent as is.
        chunk_delay: real seconds between the chunks of every answer.
        host: ``"127.0.0.1"`` (default) or ``"localhost"``; nothing else is allowed.
        handle_schedule: when handles are issued at resumable points
            (:class:`~adk_live_resume.testing.HandleSchedule`; default: after each
            ``turnComplete`` only). :meth:`issue_handles_now` issues one on demand.
        session_limit: service seconds an audio session without ``contextWindowCompression``
            lasts, from its first connection across resumptions (default 900: the documented
            15 minutes for audio-only sessions); then it is closed with 1011 and resuming it
            is refused with 1007. None: no limit. Text-only sessions and sessions whose setup
            carries compression never end.
        lenient_client_content: Gemini 3.x Live setups accept ``clientContent`` that the
            family rejects (recorded all the same) instead of closing with 1007.
        setup_timeout: service seconds a connection may stay open without sending its setup;
            then it is closed with 1011 (``ended_by`` "setup_timeout"). None (default): it
            may wait for ever.
        thought_summaries: native-audio models (the family that may think, see
            :mod:`~adk_live_resume.testing.families`) open every answer with a text part
            marked ``thought: true``.
        pong_delay: service seconds before a websocket ping is answered (the service has been
            seen taking 8-30 s). None (default): at once.
        port: the TCP port to listen on; 0 (default) picks a free ephemeral port.
        work_delay: real seconds an extended-thinking model works in the background between
            its first utterance and its answer (``interactionStatus`` ``IN_PROGRESS``).
        requires_action: while a call it issued is open, an extended-thinking model says
            ``REQUIRES_ACTION`` rather than ``IN_PROGRESS``: the older reading "the model waits
            for the client", which the API reference contradicts (default off).
        done_status: the ``interactionStatus`` of the ``turnComplete`` that ends a task, on
            the families that report it: ``"IDLE"`` (default) or ``"REQUIRES_ACTION"``,
            which the API reference and google-genai 3.6.1 document as "Deprecated: Use IDLE
            instead. The server has completed all processing and background reasoning" (a
            model that ends its answers with it; notes, "Field facts of 2026-11-29"). Any
            other name models a status a client does not know yet.
        setup_rules: a setup that breaks its model family's rules is closed with 1007
            "Request contains an invalid argument." (default on, as the field reports the
            Gemini 3.8 family: no ``thinkingConfig`` on ``gemini-3.8-live``; ``thinkingLevel``
            low, medium or high and OpenAPI ``parameters``, not ``parametersJsonSchema``, on
            extended thinking; :mod:`~adk_live_resume.testing.setup_rules`); which rule is in
            ``record.setup_refused``. Off: every setup is taken, as before those reports.
        resume_replays_cut_reply: a resumable handle goes out while each answer streams
            (after its first chunk), and a session resumed from one says the reply that
            streamed then again, glued before its next answer ("27 s of unwanted
            monologue": Omi probes ``lane5-session-resumption.py`` / ``-bargein.py`` on
            native audio, pydantic-ai PR 7379; notes, "Field facts of 2026-11-29"). Off by
            default: handles only at resumable points, and a generation in flight is never
            continued after a resume (notes, "Limits the service documents");
            ``HandleSchedule(mid_reply=True)`` issues the handles without the replay.

    The model family (:mod:`~adk_live_resume.testing.families`) is chosen per connection by
    the setup's model name: Gemini 2.x Live, 2.5 native audio, 3.1 Live, 3.8 Live or 3.8 Live
    with extended thinking.
        refuse_resume_while_open: a resume of a session whose earlier socket is still open is
            closed with 1011, as the service does (default off: a client that drops TCP and
            resumes at once would race the server's notice of the drop).
        wire_shapes: the recorded shapes of the service's messages (UUID handles, ``fc_``
            call ids, empty frames, a handle after a tool response, optional usage, 3.1
            content mid-session), each a switch
            (:class:`~adk_live_resume.testing.WireShapes`; default: all as recorded;
            ``WireShapes.before_recordings()``: the fake's older shapes).
        idle_close_after: real seconds without a client message after which a connection
            whose setup was answered is closed with 1008, no goAway (``ended_by`` "idle");
            resuming its session works. Default 151, as measured on the service (Omi fork,
            probe ``lane5-goaway.py``, 2026-08-24; notes, "Field facts of 2026-11-29"); None:
            never.
        refused_models: model names whose every setup, with a handle or without, is closed
            with 1011 "Internal error encountered." before ``setupComplete`` (``ended_by``
            "refused"), as the service refuses every handshake of a retired or broken model
            (a report of 2026-08-24; ``gemini-live-2.5-flash-preview`` was shut down on
            2025-12-09 per the Gemini API changelog). Default: none (which names the service
            refuses so is not recorded).
        tool_ids_outlive_connection: a resumed connection restores the open NON_BLOCKING
            calls its handle holds and acts on a ``toolResponse`` under their old ids. Off by
            default, as the field reports the service: a tool-call id belongs to the
            connection that issued it, and a response for an id an earlier connection issued
            is recorded in ``stale_tool_response_ids`` and not acted on (Pipecat PR 5497,
            Strands PR 4244, voiceclaw PR 53; notes, "Field facts that contradict or extend
            the above").
        forget_context_on_resume: a resumed session comes back without its conversation (no
            turn of it is restored: the model has forgotten it, and the next turn's
            ``promptTokenCount`` falls), as users saw resumed and ephemeral-token sessions
            do (forum threads 98979 and 118577; notes, "Field facts of 2026-11-29"). Off by
            default: the documented behaviour restores the session.
    """

    def __init__(
        self,
        *,
        time_scale: float = 1.0,
        connection_lifetime: float = 600.0,
        go_away_lead: float = 60.0,
        handle_ttl: float = 7200.0,
        refuse_close_code: int = 1008,
        deadline_close_code: int = 1008,
        deadline_reason: str | None = None,
        chunk_delay: float = 0.02,
        host: str = "127.0.0.1",
        handle_schedule: HandleSchedule | None = None,
        session_limit: float | None = AUDIO_SESSION_LIMIT,
        lenient_client_content: bool = False,
        setup_timeout: float | None = None,
        thought_summaries: bool = False,
        pong_delay: float | None = None,
        port: int = 0,
        refuse_resume_while_open: bool = False,
        tool_ids_outlive_connection: bool = False,
        wire_shapes: WireShapes | None = None,
        work_delay: float = 0.5,
        requires_action: bool = False,
        idle_close_after: float | None = IDLE_CLOSE_AFTER,
        refused_models: Collection[str] = (),
        done_status: str = "IDLE",
        setup_rules: bool = True,
        resume_replays_cut_reply: bool = False,
        forget_context_on_resume: bool = False,
    ) -> None:
        if host not in _LOOPBACK_HOSTS:
            raise ValueError("the fake server binds the loopback interface only")
        if not 0 <= port <= 65535:
            raise ValueError(f"port must be 0 (any free port) or 1-65535, not {port!r}")
        self.settings = ServerSettings(
            time_scale=time_scale,
            connection_lifetime=connection_lifetime,
            go_away_lead=go_away_lead,
            handle_ttl=handle_ttl,
            refuse_close_code=refuse_close_code,
            deadline_close_code=deadline_close_code,
            deadline_reason=deadline_reason,
            chunk_delay=chunk_delay,
            handle_schedule=handle_schedule or HandleSchedule(),
            session_limit=session_limit,
            lenient_client_content=lenient_client_content,
            setup_timeout=setup_timeout,
            thought_summaries=thought_summaries,
            pong_delay=pong_delay,
            refuse_resume_while_open=refuse_resume_while_open,
            tool_ids_outlive_connection=tool_ids_outlive_connection,
            wire_shapes=wire_shapes or WireShapes(),
            work_delay=work_delay,
            requires_action=requires_action,
            idle_close_after=idle_close_after,
            refused_models=frozenset(refused_models),
            done_status=done_status,
            setup_rules=setup_rules,
            resume_replays_cut_reply=resume_replays_cut_reply,
            forget_context_on_resume=forget_context_on_resume,
        )
        self.host = host
        self.connections: list[ConnectionRecord] = []
        self._shared = SharedState(HandleStore(self.settings.real(handle_ttl)))
        self._scripts: dict[int, list[Fault]] = {}
        self._next_scripts: collections.deque[list[Fault]] = collections.deque()
        self._live: set[LiveConnection] = set()
        self._rest = RestService(chunk_delay)
        self._server: Server | None = None
        self._tls: TlsMaterial | None = None
        self._port: int | None = None
        self._requested_port = port

    # ---- lifecycle -------------------------------------------------------------------------

    async def start(self) -> FakeLiveServer:
        """Generate the certificate and start listening. Returns self."""
        if self._server is not None:
            raise RuntimeError("server already started")
        self._tls = create_tls_material()
        self._server = await serve(
            self._handle,
            self.host,
            self._requested_port,
            ssl=self._tls.server_context(),
            max_size=None,
            ping_interval=None,
            compression=None,
            logger=_frames_logger,
            create_connection=cast(Any, self._rest.connection_factory()),
            process_request=self._refuse_handshake,
        )
        sockets = list(self._server.sockets)
        self._port = int(sockets[0].getsockname()[1])
        logger.info("fake live server listening on %s", self.url)
        return self

    async def stop(self) -> None:
        """Drop every open connection (ended_by "shutdown"), stop listening, delete the cert."""
        for connection in list(self._live):
            connection.terminate("shutdown", abort=True)
        self._rest.stop()
        if self._server is not None:
            self._server.close(close_connections=True)
            await self._server.wait_closed()
            self._server = None
        if self._tls is not None:
            self._tls.cleanup()
            self._tls = None

    async def __aenter__(self) -> FakeLiveServer:
        return await self.start()

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.stop()

    def _refuse_handshake(self, ws: ServerConnection, request: Request) -> Response | None:
        """Answer the upgrade with an HTTP error if the next connection is scripted to refuse
        it (``Fault.refuse_handshake``); the refused attempt takes its connection number."""
        index = len(self.connections) + 1
        faults = self._scripts.get(index)
        if faults is None and self._next_scripts:
            faults = self._next_scripts[0]
        refusal = next((f for f in faults or [] if f.kind == "refuse_handshake"), None)
        if refusal is None:
            return None
        if self._scripts.pop(index, None) is None:
            self._next_scripts.popleft()
        response = ws.respond(
            refusal.status, f"refused by a scripted fault: HTTP {refusal.status}\n"
        )
        if refusal.retry_after is not None:
            response.headers["Retry-After"] = refusal.retry_after
        now = asyncio.get_running_loop().time()
        reason = f"HTTP {refusal.status}" + (
            f" (Retry-After: {refusal.retry_after})" if refusal.retry_after is not None else ""
        )
        self.connections.append(
            ConnectionRecord(
                index=index,
                path=request.path,
                ended_by="handshake_refused",
                close_reason=reason,
                finished=True,
                accepted_at=now,
                ended_at=now,
            )
        )
        logger.info("fake live server: connection %d: handshake refused, %s", index, reason)
        return response

    async def _handle(self, ws: ServerConnection) -> None:
        record = ConnectionRecord(index=len(self.connections) + 1)
        self.connections.append(record)
        faults = self._scripts.pop(record.index, None)
        if faults is None and self._next_scripts:
            faults = self._next_scripts.popleft()
        connection = LiveConnection(ws, record, faults or [], self.settings, self._shared)
        self._live.add(connection)
        try:
            await connection.run()
        finally:
            self._live.discard(connection)

    # ---- addresses -------------------------------------------------------------------------

    @property
    def port(self) -> int:
        """The ephemeral TCP port (the server must be started)."""
        if self._port is None:
            raise RuntimeError("server not started")
        return self._port

    @property
    def url(self) -> str:
        """``wss://127.0.0.1:PORT``: the websocket origin; any path is served."""
        return f"wss://{self.host}:{self.port}"

    @property
    def base_url(self) -> str:
        """``https://127.0.0.1:PORT``: the base URL to give google-genai (no trailing slash)."""
        return f"https://{self.host}:{self.port}"

    @property
    def cert_path(self) -> str:
        """Path of the PEM certificate to trust (usable as ``SSL_CERT_FILE``)."""
        if self._tls is None:
            raise RuntimeError("server not started")
        return str(self._tls.cert_path)

    def client_ssl_context(self) -> ssl.SSLContext:
        """A fresh client SSL context trusting only this server's certificate."""
        if self._tls is None:
            raise RuntimeError("server not started")
        return self._tls.client_context()

    # ---- configuring clients (see client_config.py) ------------------------------------------

    def environment(self) -> contextlib.AbstractContextManager[dict[str, str]]:
        """Point every google-genai client built inside the block at this server.

        Sets ``GOOGLE_API_KEY``, ``GOOGLE_GENAI_USE_VERTEXAI=false``, ``GOOGLE_GEMINI_BASE_URL``
        and ``GOOGLE_VERTEX_BASE_URL``, ``SSL_CERT_FILE``, ``NO_PROXY``/``no_proxy``; removes
        variables that would redirect the client (Vertex project/location, ``GEMINI_API_KEY``).
        Every variable is restored exactly on exit. Yields the variables set.
        """
        from ..fault_proxy.client_config import environment

        return environment(self)

    def genai_client(self, api_version: str | None = None, *, vertex: bool = False) -> Client:
        """A ``google.genai.Client`` bound to this server; needs no environment variables.

        ``vertex=True``: the Vertex AI dialect (express mode), which allows ``transparent``.
        """
        from ..fault_proxy.client_config import genai_client

        return genai_client(self, api_version=api_version, vertex=vertex)

    def gemini(
        self,
        model: str = "gemini-live-fake",
        *,
        vertex: bool = False,
        ping_interval: float | None = None,
        ping_timeout: float | None = None,
    ) -> Gemini:
        """A ``google.adk.models.Gemini`` bound to this server (ADK 1.27 and 2.x alike).

        ``vertex=True``: a Vertex AI model (express mode), which allows ``transparent``.
        ``ping_interval`` / ``ping_timeout``: the live websocket's keepalive in real seconds
        (None: websockets' defaults, 20 s each).
        """
        from ..fault_proxy.client_config import fake_gemini

        return fake_gemini(
            self,
            model=model,
            vertex=vertex,
            ping_interval=ping_interval,
            ping_timeout=ping_timeout,
        )

    # ---- scripting -------------------------------------------------------------------------

    def script(self, *faults: Fault, connection: int | None = None) -> None:
        """Arm ``faults`` for connection number ``connection`` (1-based).

        With ``connection=None`` they go to the next connection that has no script of its own;
        each call with None scripts one more such connection, in call order. A connection
        already open gets them at once (see :meth:`LiveConnection.arm
        <adk_live_resume.testing.connection.LiveConnection.arm>` for how triggers count
        then); scripting a connection that has ended raises ``ValueError``.
        """
        if not faults:
            raise ValueError("give at least one Fault")
        if connection is None:
            self._next_scripts.append(list(faults))
            return
        if connection < 1:
            raise ValueError("connections are numbered from 1")
        live = next((c for c in self._live if c.record.index == connection), None)
        if live is not None:
            live.arm(faults)
        elif connection <= len(self.connections):
            raise ValueError(
                f"connection {connection} has ended: script a later connection, or pass"
                " connection=None for the next one"
            )
        else:
            self._scripts.setdefault(connection, []).extend(faults)

    def flap(
        self,
        code: int | None = 1011,
        reason: str = "",
        *,
        after_setup: bool = True,
        resuming_only: bool = True,
    ) -> None:
        """Make new connections fail at once, until ``flap(None)``.

        Each affected connection is closed with ``code`` right after its setup: after
        ``setupComplete`` was sent when ``after_setup`` (the default), before it otherwise.
        Affected are connections whose handle was accepted (``resuming_only``, the default) or
        every connection. Invalid handles are still refused first.
        """
        self._shared.flapping(
            None
            if code is None
            else Flap(code, reason, after_setup=after_setup, resuming_only=resuming_only)
        )

    async def restart(self, timeout: float = 10.0) -> None:
        """Drop every open connection without a close frame, like a server restart.

        The server keeps listening and every handle stays valid. Returns once the dropped
        connections' records are final.
        """
        dropped = list(self._live)
        for connection in dropped:
            connection.terminate("restart", abort=True)
        await self.wait_for(
            lambda: all(c.record.finished for c in dropped), timeout, what="restart"
        )

    async def close_open(self, code: int, reason: str = "", timeout: float = 10.0) -> None:
        """Close every open connection now with a close frame (``ended_by`` "fault").

        ``code`` 1006 (like 1005 and 1015, which no close frame may carry) drops TCP instead,
        so the client sees 1006. Returns once the records are final. Handles stay valid.
        """
        closing = list(self._live)
        for connection in closing:
            connection.terminate("fault", code=code, reason=reason)
        await self.wait_for(
            lambda: all(c.record.finished for c in closing), timeout, what="close_open"
        )

    def change_settings(self, **changes: Any) -> None:
        """Change settings (the constructor's timing and close-code arguments, e.g.
        ``connection_lifetime``) for the connections opened from now on; open connections
        keep theirs. An unknown name raises ``TypeError``, a bad value ``ValueError``."""
        self.settings = dataclasses.replace(self.settings, **changes)

    def go_away_now(self, time_left: float, *, connection: int | None = None) -> list[int]:
        """Send ``goAway{timeLeft}`` now on every open connection (or the one numbered
        ``connection``) whose setup was answered, and close each with the deadline close
        (``deadline_close_code``, ``ended_by`` "deadline") ``time_left`` real seconds later,
        unless the client leaves first. Returns the numbers of the connections warned.
        """
        if time_left < 0:
            raise ValueError(f"time_left must be >= 0 seconds, not {time_left!r}")
        warned = []
        for live in sorted(self._live, key=lambda c: c.record.index):
            if connection is not None and live.record.index != connection:
                continue
            if live.go_away_now(time_left):
                warned.append(live.record.index)
        return warned

    async def send_message_now(
        self, message: Mapping[str, Any], *, connection: int | None = None
    ) -> list[int]:
        """Send ``message`` (a JSON object, sent as given) now on every open connection (or
        the one numbered ``connection``) whose setup was answered; the connections go on.
        Returns the numbers of the connections it was sent on.

        For a server message of a kind the client's SDK may not know, e.g.
        ``{"someFutureMessage": {"detail": 1}}``: the service adds message kinds over time.
        To send one at a point of the conversation (mid-answer), script
        :meth:`Fault.server_message <adk_live_resume.testing.Fault.server_message>`.
        """
        body = dict(message)
        sent = []
        for live in sorted(self._live, key=lambda c: c.record.index):
            if connection is not None and live.record.index != connection:
                continue
            if await live.send_message_now(body):
                sent.append(live.record.index)
        return sent

    async def issue_handles_now(self) -> dict[int, HandleIssue | None]:
        """Issue a handle now on every open connection that asked for handles.

        Returns, per connection number, the :class:`HandleIssue` (with its snapshot point
        "idle_silent" or "idle_speaking") or None where the connection was not at a resumable
        point (it was sent ``{"resumable": false}``) or had not finished its setup. What a
        snapshot holds is documented in :mod:`adk_live_resume.testing.handles`: completed
        turns only, never an utterance still in progress.
        """
        issued: dict[int, HandleIssue | None] = {}
        for connection in sorted(self._live, key=lambda c: c.record.index):
            if connection.record.resumption_enabled:
                issued[connection.record.index] = await connection.issue_handle_now()
        return issued

    def expire_handles(self) -> None:
        """Make every handle issued so far unknown, as if its TTL had passed."""
        self._shared.handles.expire_all()

    # ---- records and queries ---------------------------------------------------------------

    def history_sends(self) -> int:
        """History sends over all connections."""
        return sum(c.history_sends for c in self.connections)

    def duplicate_history_sends(self) -> int:
        """History sends whose turns the session already held, over all connections."""
        return sum(c.duplicate_history_sends for c in self.connections)

    def handles_used(self) -> list[str]:
        """The resumption handle of every setup that carried one, in connection order."""
        return [c.resume_handle for c in self.connections if c.resume_handle is not None]

    def handles_issued(self) -> list[str]:
        """Every handle the server sent, in order."""
        return [h for c in self.connections for h in c.handles_issued]

    def user_turns_answered(self) -> list[str]:
        """The user turns whose answer was completed with ``turnComplete``, in answer order.

        "Every user turn answered exactly once" is ``sorted(...) == sorted(turns)`` on this.
        """
        return list(self._shared.answered_user_turns)

    def handle_issues(self) -> list[HandleIssue]:
        """Every handle the server sent, with where and at which point, in order."""
        return [issue for c in self.connections for issue in c.handle_issues]

    def heard_turns(self) -> list[HeardTurn]:
        """Every user turn the model received (typed, spoken, history), in order."""
        return [turn for c in self.connections for turn in c.heard]

    def resent_consumed(self) -> list[ResentMessage]:
        """Messages sent again on resumed connections although their snapshot held them."""
        return [message for c in self.connections for message in c.resent_consumed]

    def rejected_client_content(self) -> list[dict[str, Any]]:
        """``clientContent`` bodies the Gemini 3.x Live dialect rejected, in order."""
        return [body for c in self.connections for body in c.rejected_client_content]

    def rest_calls(self) -> list[RestCall]:
        """Every REST request (``generateContent``, ``streamGenerateContent``, or one the fake
        refused with an error status), in arrival order."""
        return list(self._rest.calls)

    def tool_call(self, call_id: str) -> ToolCallRecord:
        """The record of function call ``call_id`` (``KeyError`` if never issued)."""
        return self._shared.tool_calls[call_id]

    def tool_calls_issued(self) -> list[ToolCallRecord]:
        """Every function call the model made, in order."""
        return [call for c in self.connections for call in c.tool_calls]

    def tool_responses_received(self) -> list[dict[str, Any]]:
        """Every raw function response received, in order."""
        return [response for c in self.connections for response in c.tool_responses]

    def open_connections(self) -> int:
        """Number of connections whose handler is still running."""
        return len(self._live)

    async def wait_for_connections(
        self, n: int, timeout: float = 10.0, *, finished: bool = False
    ) -> list[ConnectionRecord]:
        """Wait until ``n`` connections have sent their setup (or ended) and return them.

        With ``finished=True`` wait until the first ``n`` connections have ended and their
        records are final. Raises ``TimeoutError`` after ``timeout`` real seconds.
        """

        def ready() -> bool:
            if len(self.connections) < n:
                return False
            first = self.connections[:n]
            if finished:
                return all(c.finished for c in first)
            return all(c.setup is not None or c.finished for c in first)

        await self.wait_for(ready, timeout, what=f"{n} connections")
        return self.connections[:n]

    async def wait_for(
        self, predicate: Callable[[], bool], timeout: float = 10.0, *, what: str = "condition"
    ) -> None:
        """Wait until ``predicate()`` is true (checked every 5 ms); ``TimeoutError`` otherwise."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout
        while not predicate():
            if loop.time() >= deadline:
                raise TimeoutError(f"timed out waiting for {what}; connections: {self.connections}")
            await asyncio.sleep(0.005)
