"""Where a live run keeps its newest resumption handle: for the app to read, and in the session.

Two users, one per-run :class:`HandleKeeper` the live loop feeds:

* **Apps that keep handles themselves** read the run's newest handle and its age with
  :func:`current_handle` (keyed by the ``LiveRequestQueue`` they passed to ``run_live``), and
  start a later run from one with :func:`run_config_resuming`.
* **Several workers, one conversation** (``ResumePolicy.store_handle_in_session``): the newest
  good handle is sealed (:mod:`adk_live_resume.resumption.stored_handle`) and written into the ADK
  session's state under :data:`STATE_KEY`, through the runner's own session service, as an
  event with a ``state_delta`` (the only write every session service offers: InMemory,
  Database, Vertex AI). The next ``run_live`` of the session, in any process, starts by
  resuming with it while it is valid.

Guarantees:

* The receive path never waits for storage: :meth:`HandleKeeper.observe` is synchronous; writes
  run in one background task that always writes the newest value last (values that arrive
  while a write is in flight are coalesced, never reordered). :meth:`HandleKeeper.close`
  flushes the newest value at the end of the run, bounded by ``flush_timeout``.
* A run whose consumer went away (cancelled, or its generator closed) never waits for a write
  (:func:`run_end_waits`): :meth:`HandleKeeper.let_go` starts the write of the newest handle
  and returns; the write goes on in the background and is given up (cancelled) after
  ``flush_timeout``, or when the next run of the session in this process starts (it read the
  session without it). Either way the session holds a handle the model heard up to the event
  it says it covers: the newest, or (given up) an older one whose catch-up holds the rest.
* Bounded writes: at most one write per ``ResumePolicy.handle_store_interval`` (the first at
  once), plus one on goAway and on a drop (:meth:`HandleKeeper.store_now`) and at the end.
* Each stored handle says which session events it covers
  (:mod:`adk_live_resume.resumption.handle_coverage`); a run that loads it gets what the session
  holds after that point (:attr:`HandleKeeper.catch_up`), or no handle (a fresh start) when that
  cannot be told as text turns; the turns this process withheld from the model are not in it
  (:mod:`adk_live_resume.conversation.withheld`).
* A stored token older than another this session's events wrote (a client put an old one
  back) is refused and logged: no rollback.
* A failed write is logged (with the handle redacted) and retried with the next value or at
  the end of the run; it never breaks the conversation.
* A stored handle that cannot be opened (another key, altered, copied from another session),
  or is older than ``ResumePolicy.handle_ttl``, is not used: the run starts a fresh session
  with the conversation rebuilt from the ADK session, and says so in the log.
* Handles never appear whole in a log line or a ``repr``.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
import weakref
from collections.abc import Awaitable, Callable
from typing import Any

from ..conversation import withheld
from ..rules.policy import ResumePolicy
from .handle_coverage import CatchUp, catch_up, covered_event_id
from .handles import redact
from .stored_handle import HandleSealer, ResumeHandle, SealedHandle, SessionKey, StoredHandleError

logger = logging.getLogger("adk_live_resume.handle_store")

#: The session-state key that holds the sealed handle (``None`` once it was given up).
STATE_KEY = "adk_live_resume.handle"

#: Newest handle per ``LiveRequestQueue`` (the object an app owns for the whole run).
_by_queue: weakref.WeakKeyDictionary[Any, ResumeHandle] = weakref.WeakKeyDictionary()


def current_handle(live_request_queue: Any) -> ResumeHandle | None:
    """The newest good handle of the live run fed by ``live_request_queue``, or ``None``.

    Available while the run goes on and after it ended (until the queue is garbage
    collected). A handle issued while the model says its work goes on (Gemini API) is not
    handed out: it holds no request; the one issued at the last finished turn stays. The
    handle is a credential: keep it server-side, as you would a password.
    """
    return _by_queue.get(live_request_queue)


def run_end_waits(ending: BaseException | None) -> bool:
    """Whether the end of a run that ends with ``ending`` (``None``: returned) waits for the
    newest handle's write: not when its consumer went away (a cancellation, or the generator
    closed), which must end it at once."""
    return not isinstance(ending, (asyncio.CancelledError, GeneratorExit))


def run_config_resuming(
    handle: ResumeHandle | None,
    run_config: Any = None,
    *,
    policy: ResumePolicy | None = None,
) -> Any:
    """A ``RunConfig`` whose run resumes from ``handle``; ``run_config`` is not modified.

    If ``handle`` is ``None`` or older than ``policy.handle_ttl`` (the default policy's when
    not given), the copy asks for session resumption without a handle, so the run starts a
    fresh session with the conversation rebuilt from the ADK session.
    """
    from google.adk.agents.run_config import RunConfig
    from google.genai import types

    base = RunConfig() if run_config is None else run_config
    ttl = (policy or ResumePolicy()).handle_ttl
    usable: str | None = None
    if handle is not None:
        if handle.is_valid(ttl):
            usable = handle.handle
        else:
            logger.info(
                "handle %s is %.0f s old (limit %.0f s); the run starts a fresh session",
                redact(handle.handle),
                handle.age(),
                ttl,
            )
    asked = base.session_resumption or types.SessionResumptionConfig()
    return base.model_copy(
        update={"session_resumption": asked.model_copy(update={"handle": usable})}
    )


Write = Callable[[Any], Awaitable[None]]

#: The write each session's last run left going in the background (its consumer went away):
#: the next run of that session in this process gives it up
#: (:meth:`SessionHandleStore.for_context`).
_let_go: dict[SessionKey, asyncio.Task[None]] = {}


class LatestWriter:
    """Writes values one at a time in a background task; the newest value is written last.

    ``offer`` never blocks. Values offered while a write is in flight or waits for its turn
    replace each other (only the newest is written next). Writes start at least ``interval``
    seconds apart (the first at once), except that :meth:`hurry` and :meth:`flush` start the
    write of what waits at once. A failed write is logged; its value is written again by
    :meth:`hurry` or :meth:`flush` unless a newer one was offered.
    """

    _NOTHING: Any = object()

    def __init__(
        self, write: Write, describe: Callable[[Any], str], *, interval: float = 0.0
    ) -> None:
        self._write = write
        self._describe = describe
        self._interval = interval
        self._pending: Any = self._NOTHING
        self._failed: Any = self._NOTHING
        self._task: asyncio.Task[None] | None = None
        self._hurry = asyncio.Event()
        self._last_start: float | None = None
        #: Writes that completed, and writes that raised.
        self.written = 0
        self.failures = 0

    def offer(self, value: Any) -> None:
        """Write ``value`` in its turn (after any write in flight), superseding unwritten ones."""
        self._pending = value
        self._failed = self._NOTHING
        self._start()

    def hurry(self) -> None:
        """Start writing the newest unwritten value (a failed one included) now."""
        if self._failed is not self._NOTHING and self._pending is self._NOTHING:
            self._pending, self._failed = self._failed, self._NOTHING
        if self._pending is not self._NOTHING:
            self._hurry.set()
            self._start()

    def _start(self) -> None:
        if self._task is None or self._task.done():
            self._task = asyncio.get_running_loop().create_task(
                self._drain(), name="adk_live_resume handle store"
            )

    async def _drain(self) -> None:
        loop = asyncio.get_running_loop()
        while self._pending is not self._NOTHING:
            if self._last_start is not None and not self._hurry.is_set():
                wait = self._last_start + self._interval - loop.time()
                if wait > 0:
                    with contextlib.suppress(TimeoutError):
                        await asyncio.wait_for(self._hurry.wait(), wait)
            self._hurry.clear()
            value, self._pending = self._pending, self._NOTHING
            self._last_start = loop.time()
            try:
                await self._write(value)
            except Exception as error:
                self.failures += 1
                logger.warning(
                    "could not store resumption handle %s in the session: %r",
                    self._describe(value),
                    error,
                )
                if self._pending is self._NOTHING:
                    self._failed = value
            else:
                self.written += 1

    async def flush(self, timeout: float) -> bool:
        """Wait until the newest value is written (retrying a failed one once).

        Returns whether it was; after ``timeout`` seconds the write in flight is cancelled.
        """
        self.hurry()
        task = self._task
        if task is None:
            return True
        done, _ = await asyncio.wait({task}, timeout=timeout)
        if not done:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task
            logger.warning("storing the resumption handle took over %.1f s; gave up", timeout)
            return False
        return self._failed is self._NOTHING and self._pending is self._NOTHING

    def let_go(self, timeout: float) -> asyncio.Task[None] | None:
        """Start writing the newest value (as :meth:`hurry`) and return at once; the write
        goes on in the background and is cancelled if it has not ended ``timeout`` seconds
        from now. Returns the task that writes (``None``: nothing to write)."""
        self.hurry()
        task = self._task
        if task is None or task.done():
            return None
        timer = asyncio.get_running_loop().call_later(timeout, self._give_up, task, timeout)
        task.add_done_callback(lambda _: timer.cancel())
        return task

    def _give_up(self, task: asyncio.Task[None], timeout: float) -> None:
        if not task.done():
            task.cancel()
            logger.warning(
                "storing the resumption handle after the run ended took over %.1f s; gave up",
                timeout,
            )


class HandleKeeper:
    """The per-run link between the live loop and the places that keep its handle.

    The loop calls :meth:`start` once (and resumes with :attr:`loaded` if it is set, giving
    the model :attr:`catch_up` once), :meth:`observe` for every new good handle,
    :meth:`store_now` on a goAway or a drop, :meth:`forget` when the handle died, and
    :meth:`close` at the end of the run (:meth:`let_go` when the run's consumer went away).
    """

    def __init__(
        self,
        queue: Any,
        *,
        ttl: float,
        store: SessionHandleStore | None,
    ) -> None:
        self._queue = queue
        self._ttl = ttl
        self._store = store
        #: The valid stored handle the run should resume with, if any.
        self.loaded: ResumeHandle | None = None
        #: What the session holds after the point :attr:`loaded` covers: the model gets it
        #: once, on the connection that resumes with :attr:`loaded`.
        self.catch_up: CatchUp | None = None

    @classmethod
    def start(cls, ctx: Any, policy: ResumePolicy, *, agent_name: str) -> HandleKeeper:
        """The keeper for the run of ``ctx``; loads the stored handle if the policy opts in.

        Raises :class:`~.stored_handle.HandleKeyError` when the policy opts in
        and no sealing key is configured.
        """
        store = None
        if policy.store_handle_in_session:
            store = SessionHandleStore.for_context(
                ctx, agent_name=agent_name, interval=policy.handle_store_interval
            )
        keeper = cls(ctx.live_request_queue, ttl=policy.handle_ttl, store=store)
        if store is not None:
            loaded = store.load(policy.handle_ttl)
            if loaded is not None:
                keeper.loaded, keeper.catch_up = loaded
        return keeper

    def observe(self, handle: str) -> None:
        """A new good handle arrived now; publish it and store it in the background."""
        resume = ResumeHandle(handle, time.time())
        if self._queue is not None:
            _by_queue[self._queue] = resume
        if self._store is not None:
            self._store.save(resume)

    def take_catch_up(self) -> CatchUp | None:
        """What the stored handle's session lacks, for the one connection that resumes it;
        ``None`` from then on."""
        catch_up, self.catch_up = self.catch_up, None
        return catch_up

    def store_now(self) -> None:
        """The connection is going (goAway, a drop): store the newest handle without waiting
        for ``handle_store_interval``."""
        if self._store is not None:
            self._store.hurry()

    def forget(self) -> None:
        """The handle was refused or expired: stored, it would only be refused again (and
        what came after it goes to the fresh session with the whole conversation)."""
        self.catch_up = None
        if self._queue is not None:
            _by_queue.pop(self._queue, None)
        if self._store is not None:
            self._store.save(None)
            self._store.hurry()

    async def close(self, timeout: float = 2.0) -> None:
        """Flush the newest handle to the session (bounded by ``timeout``)."""
        if self._store is not None:
            await self._store.flush(timeout)

    def let_go(self, timeout: float = 2.0) -> None:
        """Start writing the newest handle to the session and return at once: the write goes
        on in the background, given up after ``timeout`` seconds."""
        if self._store is not None:
            self._store.let_go(timeout)


class SessionHandleStore:
    """Keeps one live session's sealed handle in its ADK session, via the session service."""

    def __init__(
        self,
        ctx: Any,
        sealer: HandleSealer,
        owner: SessionKey,
        agent_name: str,
        *,
        interval: float = 0.0,
    ) -> None:
        self._ctx = ctx
        self._sealer = sealer
        self._owner = owner
        self._agent_name = agent_name
        self._writer = LatestWriter(self._write, self._describe, interval=interval)
        self._offered = False

    @classmethod
    def for_context(cls, ctx: Any, *, agent_name: str, interval: float = 0.0) -> SessionHandleStore:
        """The store of ``ctx``'s session. A write an earlier run of that session in this
        process left going in the background is given up first: this run read the session
        without it, and it must not land under this run's writes."""
        session = ctx.session
        owner = SessionKey(session.app_name, session.user_id, session.id)
        sealer = HandleSealer.from_environment()
        earlier = _let_go.pop(owner, None)
        if earlier is not None and not earlier.done():
            logger.info(
                "session %s: a new run starts while the last one's handle is still being"
                " stored; that write is given up (this run resumes from what the session held)",
                owner.session_id,
            )
            earlier.cancel()
        return cls(ctx, sealer, owner, agent_name, interval=interval)

    def load(self, ttl: float) -> tuple[ResumeHandle, CatchUp] | None:
        """The stored handle and what the session holds after it, if the handle opens for
        this session, is the newest this session stored, is younger than ``ttl``, and what
        came after it can be given to the model (else ``None``, logged: a fresh start)."""
        token = self._ctx.session.state.get(STATE_KEY)
        if token is None:
            return None
        session_id = self._owner.session_id
        try:
            sealed = self._sealer.open(token, self._owner)
        except StoredHandleError as error:
            logger.warning(
                "session %s: ignoring the stored resumption handle (%s); starting a fresh"
                " session with the conversation so far",
                session_id,
                error,
            )
            return None
        handle = sealed.handle
        newest = self._newest_stored(token)
        if newest is not None and handle.issued_at < newest:
            logger.warning(
                "session %s: the stored resumption handle is older than one this session"
                " stored before (%.0f s older): someone put an old token back into the"
                " session's state; refused, starting a fresh session with the conversation so"
                " far",
                session_id,
                newest - handle.issued_at,
            )
            return None
        why = self._unusable(sealed, ttl)
        if why is not None:
            logger.info(
                "session %s: %s; starting a fresh session with the conversation so far",
                session_id,
                why,
            )
            return None
        assert sealed.covers is not None  # (checked by _unusable)
        screened = withheld.of_session(session_id)
        after = catch_up(self._ctx.session.events, sealed.covers, self._agent_name, screened)
        if after is None:
            logger.info(
                "session %s: what the session holds after stored handle %s cannot be given"
                " back on resume (a tool call, speech, another agent, or its events are gone);"
                " starting a fresh session with the conversation so far",
                session_id,
                redact(handle.handle),
            )
            return None
        logger.info(
            "session %s: resuming with stored handle %s (%.0f s old); %d finished and %d"
            " unanswered turn(s) after it go to the model",
            session_id,
            redact(handle.handle),
            handle.age(),
            len(after.context),
            len(after.unanswered),
        )
        return handle, after

    def _unusable(self, sealed: SealedHandle, ttl: float) -> str | None:
        handle = sealed.handle
        if sealed.agent_name != self._agent_name:
            return (
                f"the stored handle resumes agent {sealed.agent_name}'s live session, not"
                f" {self._agent_name}'s"
            )
        if not handle.is_valid(ttl):
            return (
                f"stored handle {redact(handle.handle)} is {handle.age():.0f} s old"
                f" (limit {ttl:.0f} s)"
            )
        if sealed.covers is None:
            return (
                "the stored handle does not say which session events it covers (an older"
                " release stored it)"
            )
        return None

    def _newest_stored(self, current: str) -> float | None:
        """Issue time of the newest handle of this session among the tokens its events wrote
        (other than ``current``); tokens that do not open are left out."""
        newest: float | None = None
        for event in self._ctx.session.events:
            delta = getattr(getattr(event, "actions", None), "state_delta", None) or {}
            token = delta.get(STATE_KEY)
            if not isinstance(token, str) or token == current:
                continue
            try:
                issued = self._sealer.open(token, self._owner).handle.issued_at
            except StoredHandleError:
                continue
            newest = issued if newest is None else max(newest, issued)
        return newest

    def save(self, handle: ResumeHandle | None) -> None:
        """Store ``handle`` (``None``: no usable handle) in its turn; never blocks."""
        if handle is None and not self._offered and self._ctx.session.state.get(STATE_KEY) is None:
            return  # nothing stored to take back
        self._offered = True
        if handle is None:
            self._writer.offer(None)
        else:
            self._writer.offer((handle, covered_event_id(self._ctx.session.events)))

    def hurry(self) -> None:
        self._writer.hurry()

    async def flush(self, timeout: float) -> bool:
        return await self._writer.flush(timeout)

    def let_go(self, timeout: float) -> None:
        task = self._writer.let_go(timeout)
        if task is None:
            return
        owner = self._owner
        _let_go[owner] = task

        def ended(done: asyncio.Task[None]) -> None:
            if _let_go.get(owner) is done:
                del _let_go[owner]

        task.add_done_callback(ended)

    def _describe(self, value: tuple[ResumeHandle, str] | None) -> str:
        return "<none>" if value is None else f"for session {self._owner.session_id}"

    async def _write(self, value: tuple[ResumeHandle, str] | None) -> None:
        from google.adk.events.event import Event
        from google.adk.events.event_actions import EventActions

        token = None
        if value is not None:
            handle, covers = value
            token = self._sealer.seal(handle, self._owner, self._agent_name, covers)
        ctx = self._ctx
        event = Event(
            invocation_id=ctx.invocation_id,
            author=self._agent_name,
            branch=getattr(ctx, "branch", None),
            actions=EventActions(state_delta={STATE_KEY: token}),
        )
        await ctx.session_service.append_event(session=ctx.session, event=event)
