"""Early dial: the next connection's socket is opened as soon as a reconnect is known to come.

google-genai's ``AsyncLive.connect`` opens its websocket with its module's ``ws_connect(uri,
additional_headers=..., ssl=...)`` and only then sends the setup (the model, the config, the
resumption handle). Until the setup the socket carries nothing of the session, so a socket
opened to the same address with the same headers and TLS settings is the socket the SDK would
open. The live loop uses that: on a goAway that must wait for its safe point (an answer in
flight, the user speaking), the socket for the next connection is opened at once; at the
safe point ADK and google-genai connect as usual and find it ready, so only the setup (with
the newest handle) is left to wait for. Against a remote server this takes the TCP, TLS and
websocket handshakes (several round trips) out of the silence after the answer.

The same when the server closes the connection with a code the loop resumes after: the
socket is opened as the close frame arrives (:func:`websockets_compat.watch_frames`), while
google-genai reports the close only after the close handshake, a round trip later; the SDK's
connect then finds the socket open or on its way, and every message queued before the close
frame has been read by then, so the setup carries the newest handle. Not on a drop without a
close frame, nor on a goAway at a safe point: the connect starts at once there anyway (on
one thread, dialing a moment earlier only reorders the same work: measured, no gain).

Pieces:

* :class:`EarlyDialer`, one per live run: learns the address from the SDK's own call
  (:meth:`EarlyDialer.learn`), opens one socket ahead (:meth:`EarlyDialer.dial`, after the
  process's reconnect pacer gave its turn: an early socket is a connection attempt), hands it
  to the SDK's next call for the same address (:meth:`EarlyDialer.take`) and closes it if
  nobody takes it (:meth:`EarlyDialer.discard`).
* :func:`hook`/:func:`unhook`: put a pass-through in place of google-genai's ``ws_connect``
  (once per process, under a lock, when the first live run with ``early_dial`` starts;
  :func:`adk_live_resume.uninstall` puts it back, only if still ours). It consults the dialer of
  the run whose connect is on the way (:func:`dialing_for`, a context variable set only
  around that call) and otherwise calls the original unchanged.

Guarantees:

* A socket opened ahead is used only for the same uri, headers and TLS settings, only while
  it is open, and only if it is younger than :data:`MAX_AGE` seconds; otherwise it is closed
  and the SDK opens its own. A socket nobody takes is closed :data:`MAX_AGE` seconds after
  it was dialed (a timer, whatever the run does meanwhile), and before an agent transfer or
  a rerun (the loop discards it). A failed early dial is never reported: the SDK dials
  again.
* A socket still being opened is handed over as is: the SDK's connect waits for it and raises
  what opening it raised (the connect error the SDK would have raised itself), and a
  cancelled connect (``connect_timeout``) cancels it.
* While no proxy was configured when the run started, the hook passes ``proxy=None`` to every
  connect of the run (:mod:`.connect_params`: websockets would otherwise look a proxy up in
  the environment on each one); a configured proxy is left to websockets, as before.
* Nothing is dialed without an address learnt from the SDK in this run, and at most one
  socket is open ahead per run. Every task started here is awaited or cancelled by
  :meth:`EarlyDialer.discard`.
"""

from __future__ import annotations

import asyncio
import contextvars
import logging
import threading
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from types import TracebackType
from typing import Any

from ..compat import genai_compat
from . import connect_params

logger = logging.getLogger("adk_live_resume.loop")

#: A socket opened ahead and not taken within this many seconds is closed, not handed over:
#: a server may close a socket that sends no setup.
MAX_AGE = 15.0

_dialer: contextvars.ContextVar[EarlyDialer | None] = contextvars.ContextVar(
    "adk_live_resume_dialer", default=None
)


@dataclass(frozen=True)
class Address:
    """What google-genai passed to ``ws_connect``: the uri and the keyword arguments (headers
    with the credentials, TLS settings). Held in memory only, never logged."""

    args: tuple[Any, ...]
    kwargs: dict[str, Any]


class EarlyDialer:
    """At most one socket opened ahead for one live run."""

    def __init__(self, *, close: Callable[[Any], None]) -> None:
        #: ``close(connection)`` takes a socket nobody will use down (in the background).
        self._close = close
        self.address: Address | None = None
        self._task: asyncio.Task[Any] | None = None
        self._address: Address | None = None  # the one ``_task`` dials
        self._started_at = 0.0
        self._expiry: asyncio.TimerHandle | None = None
        #: Sockets opened ahead, and how many of them the SDK used.
        self.dialed = 0
        self.used = 0
        #: No proxy configured when the run started: its connects skip websockets' lookup
        #: (:mod:`.connect_params`).
        self.no_proxy = connect_params.direct()

    def learn(self, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Address:
        """Remember the address google-genai connects to, and return it (the hook calls
        this)."""
        self.address = Address(args, dict(kwargs))
        return self.address

    def holds_turn(self) -> bool:
        """A socket opened ahead (it took the pacer's turn) is on its way to the next connect:
        being opened, or open and young enough to be taken."""
        task = self._task
        if task is None:
            return False
        if asyncio.get_running_loop().time() - self._started_at > MAX_AGE:
            return False
        return not task.done() or _open(task)

    def dial(self, turn: Callable[[], Awaitable[bool]]) -> bool:
        """Start opening a socket to the learnt address once ``turn()`` (the pacer) says go;
        return whether it started (not without an address, not twice)."""
        if self.address is None or self._task is not None:
            return False
        original = _original
        if original is None or _hooked is None:
            return False
        address = self.address

        async def open_socket() -> Any:
            if not await turn():
                return None  # the run was closed while waiting for the pacer
            return await original(*address.args, **address.kwargs)

        self._address = address
        self._started_at = asyncio.get_running_loop().time()
        self._task = asyncio.get_running_loop().create_task(
            open_socket(), name="adk_live_resume early dial"
        )
        self._task.add_done_callback(_retrieve)
        self._expiry = asyncio.get_running_loop().call_later(MAX_AGE, self._expire)
        self.dialed += 1
        logger.debug("opening the next connection's socket ahead")
        return True

    def ready(self) -> bool:
        """A socket opened ahead is open and waiting to be taken."""
        return self._task is not None and self._task.done() and _open(self._task)

    def take(self, address: Address) -> _Dialed | None:
        """The socket opened ahead, for google-genai's ``ws_connect`` to ``address``; ``None``
        when there is none fit for it (it is then closed)."""
        task, dialed_for = self._task, self._address
        if task is None:
            return None
        self._forget()
        age = asyncio.get_running_loop().time() - self._started_at
        if dialed_for != address or age > MAX_AGE:
            why = "another address" if dialed_for != address else f"{age:.1f} s old"
            logger.debug("not using the socket opened ahead (%s)", why)
            self._give_up(task)
            return None
        if task.done() and not _open(task):
            self._give_up(task)
            return None
        self.used += 1
        return _Dialed(task, address)

    async def discard(self) -> None:
        """Close the socket opened ahead, or stop opening it. Never raises."""
        task = self._task
        self._forget()
        if task is None:
            return
        if not task.done():
            task.cancel()
        await asyncio.wait({task})
        self._give_up(task)

    def _forget(self) -> None:
        """The socket opened ahead is no longer this dialer's to hand out."""
        self._task = self._address = None
        if self._expiry is not None:
            self._expiry.cancel()
            self._expiry = None

    def _expire(self) -> None:
        """:data:`MAX_AGE` passed and nobody took the socket opened ahead: close it now (the
        run may go on for long without connecting: an agent transfer, a long turn)."""
        task = self._task
        self._expiry = None
        if task is not None:
            logger.debug("closing the socket opened ahead: unused for %.0f s", MAX_AGE)
            self._forget()
            self._give_up(task)

    def _give_up(self, task: asyncio.Task[Any]) -> None:
        if not task.done():
            task.cancel()
            return
        if not task.cancelled() and task.exception() is None and task.result() is not None:
            self._close(task.result())


def _retrieve(task: asyncio.Task[Any]) -> None:
    """Mark a failed early dial's error as seen: it is never reported (the SDK dials again)."""
    if not task.cancelled() and task.exception() is not None:
        logger.debug("opening a socket ahead failed: %r", task.exception())


def _open(task: asyncio.Task[Any]) -> bool:
    """A finished dial whose socket is there and still open."""
    if task.cancelled() or task.exception() is not None or task.result() is None:
        return False
    state = getattr(task.result(), "state", None)
    return getattr(state, "name", "OPEN") == "OPEN"


class _Dialed:
    """What the hook returns in place of ``ws_connect(...)``: the socket opened ahead, used as
    google-genai uses a websockets ``connect`` (``async with`` or ``await``)."""

    def __init__(self, task: asyncio.Task[Any], address: Address) -> None:
        self._task = task
        self._address = address
        self._connection: Any = None

    async def _get(self) -> Any:
        connection = await self._task  # cancelling the caller cancels the dial too
        if connection is None:  # the early dial gave its turn up: dial like the SDK would
            assert _original is not None
            connection = await _original(*self._address.args, **self._address.kwargs)
        self._connection = connection
        return connection

    def __await__(self) -> Any:
        return self._get().__await__()

    async def __aenter__(self) -> Any:
        return await self._get()

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        if self._connection is not None:
            await self._connection.close()


def dialing_for(dialer: EarlyDialer | None) -> contextvars.Token[EarlyDialer | None]:
    """Make ``dialer`` the one google-genai's next ``ws_connect`` in this context consults;
    undo with :func:`stop_dialing`."""
    return _dialer.set(dialer)


def stop_dialing(token: contextvars.Token[EarlyDialer | None]) -> None:
    _dialer.reset(token)


# ---- the hook in google-genai ----------------------------------------------------------------

_lock = threading.Lock()
_original: Any = None
_hooked: Any = None


def _ws_connect(*args: Any, **kwargs: Any) -> Any:
    """google-genai's ``ws_connect``, through the dialer of the run being connected."""
    original = _original
    dialer = _dialer.get()
    if dialer is None:
        return original(*args, **kwargs)
    kwargs = connect_params.connect_kwargs(original, kwargs, no_proxy=dialer.no_proxy)
    dialed = dialer.take(dialer.learn(args, kwargs))
    return dialed if dialed is not None else original(*args, **kwargs)


def hook() -> bool:
    """Put :func:`_ws_connect` in place of google-genai's ``ws_connect`` (once; idempotent);
    return whether it is in place (not on an SDK without that name: no early dial there)."""
    global _original, _hooked
    with _lock:
        current = genai_compat.genai_ws_connect()
        if current is None:
            return False
        if _hooked is not None:
            # Hooked already. Someone may have wrapped the hook since (it is still in their
            # chain) or put another function back (then no address is ever learnt and
            # nothing is dialed early): hooking again could make a loop of wrappers.
            return True
        if current is _ws_connect:  # (ours, put back by someone who had saved it)
            _hooked = current
            return _original is not None
        _original, _hooked = current, _ws_connect
        genai_compat.set_genai_ws_connect(_ws_connect)
        return True


def unhook() -> None:
    """Put google-genai's ``ws_connect`` back, if the hook is still the one in place."""
    global _hooked
    with _lock:
        if _hooked is None:
            return
        current = genai_compat.genai_ws_connect()
        if current is _hooked:
            genai_compat.set_genai_ws_connect(_original)
        elif current is not None:
            logger.warning(
                "google.genai.live.ws_connect was replaced after adk_live_resume hooked it;"
                " leaving the replacement in place"
            )
        _hooked = None  # (``_original`` stays: a replacement that wraps the hook still works)
