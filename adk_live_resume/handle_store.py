"""Where a live run keeps its newest resumption handle: for the app to read, and in the session.

Two users, one per-run :class:`HandleKeeper` the live loop feeds:

* **Apps that keep handles themselves** read the run's newest handle and its age with
  :func:`current_handle` (keyed by the ``LiveRequestQueue`` they passed to ``run_live``), and
  start a later run from one with :func:`run_config_resuming`.
* **Several workers, one conversation** (``ResumePolicy.store_handle_in_session``): the newest
  good handle is sealed (:mod:`adk_live_resume.stored_handle`) and written into the ADK
  session's state under :data:`STATE_KEY`, through the runner's own session service, as an
  event with a ``state_delta`` (the only write every session service offers: InMemory,
  Database, Vertex AI). The next ``run_live`` of the session, in any process, starts by
  resuming with it while it is valid.

Guarantees:

* The receive path never waits for storage: :meth:`HandleKeeper.observe` is synchronous; writes
  run in one background task that always writes the newest value last (values that arrive
  while a write is in flight are coalesced, never reordered). :meth:`HandleKeeper.close`
  flushes the newest value at the end of the run, bounded by ``flush_timeout``.
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

from .handles import redact
from .policy import ResumePolicy
from .stored_handle import HandleSealer, ResumeHandle, SessionKey, StoredHandleError

logger = logging.getLogger("adk_live_resume.handle_store")

#: The session-state key that holds the sealed handle (``None`` once it was given up).
STATE_KEY = "adk_live_resume.handle"

#: Newest handle per ``LiveRequestQueue`` (the object an app owns for the whole run).
_by_queue: weakref.WeakKeyDictionary[Any, ResumeHandle] = weakref.WeakKeyDictionary()


def current_handle(live_request_queue: Any) -> ResumeHandle | None:
    """The newest good handle of the live run fed by ``live_request_queue``, or ``None``.

    Available while the run goes on and after it ended (until the queue is garbage
    collected). The handle is a credential: keep it server-side, as you would a password.
    """
    return _by_queue.get(live_request_queue)


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


Write = Callable[[str | None], Awaitable[None]]


class LatestWriter:
    """Writes values one at a time in a background task; the newest value is written last.

    ``offer`` never blocks. Values offered while a write is in flight replace each other (only
    the newest is written next). A failed write is logged; its value is written again by
    :meth:`flush` unless a newer one was offered.
    """

    _NOTHING: Any = object()

    def __init__(self, write: Write, describe: Callable[[str | None], str]) -> None:
        self._write = write
        self._describe = describe
        self._pending: Any = self._NOTHING
        self._failed: Any = self._NOTHING
        self._task: asyncio.Task[None] | None = None
        #: Writes that completed, and writes that raised.
        self.written = 0
        self.failures = 0

    def offer(self, value: str | None) -> None:
        """Write ``value`` soon (after any write in flight), superseding unwritten ones."""
        self._pending = value
        self._failed = self._NOTHING
        if self._task is None or self._task.done():
            self._task = asyncio.get_running_loop().create_task(
                self._drain(), name="adk_live_resume handle store"
            )

    async def _drain(self) -> None:
        while self._pending is not self._NOTHING:
            value, self._pending = self._pending, self._NOTHING
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
        if self._failed is not self._NOTHING and self._pending is self._NOTHING:
            self._pending, self._failed = self._failed, self._NOTHING
            if self._task is None or self._task.done():
                self._task = asyncio.get_running_loop().create_task(
                    self._drain(), name="adk_live_resume handle store"
                )
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


class HandleKeeper:
    """The per-run link between the live loop and the places that keep its handle.

    The loop calls :meth:`start` once (and resumes with :attr:`loaded` if it is set),
    :meth:`observe` for every new good handle, :meth:`forget` when the handle died, and
    :meth:`close` at the end of the run.
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

    @classmethod
    def start(cls, ctx: Any, policy: ResumePolicy, *, agent_name: str) -> HandleKeeper:
        """The keeper for the run of ``ctx``; loads the stored handle if the policy opts in.

        Raises :class:`~adk_live_resume.stored_handle.HandleKeyError` when the policy opts in
        and no sealing key is configured.
        """
        store = None
        if policy.store_handle_in_session:
            store = SessionHandleStore.for_context(ctx, agent_name=agent_name)
        keeper = cls(ctx.live_request_queue, ttl=policy.handle_ttl, store=store)
        if store is not None:
            keeper.loaded = store.load(policy.handle_ttl)
        return keeper

    def observe(self, handle: str) -> None:
        """A new good handle arrived now; publish it and store it in the background."""
        resume = ResumeHandle(handle, time.time())
        if self._queue is not None:
            _by_queue[self._queue] = resume
        if self._store is not None:
            self._store.save(resume)

    def forget(self) -> None:
        """The handle was refused or expired: stored, it would only be refused again."""
        if self._queue is not None:
            _by_queue.pop(self._queue, None)
        if self._store is not None:
            self._store.save(None)

    async def close(self, timeout: float = 2.0) -> None:
        """Flush the newest handle to the session (bounded by ``timeout``)."""
        if self._store is not None:
            await self._store.flush(timeout)


class SessionHandleStore:
    """Keeps one live session's sealed handle in its ADK session, via the session service."""

    def __init__(self, ctx: Any, sealer: HandleSealer, owner: SessionKey, agent_name: str) -> None:
        self._ctx = ctx
        self._sealer = sealer
        self._owner = owner
        self._agent_name = agent_name
        self._writer = LatestWriter(self._write, self._describe)
        self._offered = False

    @classmethod
    def for_context(cls, ctx: Any, *, agent_name: str) -> SessionHandleStore:
        session = ctx.session
        owner = SessionKey(session.app_name, session.user_id, session.id)
        return cls(ctx, HandleSealer.from_environment(), owner, agent_name)

    def load(self, ttl: float) -> ResumeHandle | None:
        """The stored handle if it opens for this session and is younger than ``ttl``."""
        token = self._ctx.session.state.get(STATE_KEY)
        if token is None:
            return None
        try:
            sealed = self._sealer.open(token, self._owner)
        except StoredHandleError as error:
            logger.warning(
                "session %s: ignoring the stored resumption handle (%s); starting a fresh"
                " session with the conversation so far",
                self._owner.session_id,
                error,
            )
            return None
        handle = sealed.handle
        if sealed.agent_name != self._agent_name:
            logger.info(
                "session %s: the stored handle resumes agent %s's live session, not %s's;"
                " starting a fresh session with the conversation so far",
                self._owner.session_id,
                sealed.agent_name,
                self._agent_name,
            )
            return None
        if not handle.is_valid(ttl):
            logger.info(
                "session %s: stored handle %s is %.0f s old (limit %.0f s); starting a fresh"
                " session with the conversation so far",
                self._owner.session_id,
                redact(handle.handle),
                handle.age(),
                ttl,
            )
            return None
        logger.info(
            "session %s: resuming with stored handle %s (%.0f s old)",
            self._owner.session_id,
            redact(handle.handle),
            handle.age(),
        )
        return handle

    def save(self, handle: ResumeHandle | None) -> None:
        """Store ``handle`` (``None``: no usable handle) soon; never blocks."""
        if handle is None and not self._offered and self._ctx.session.state.get(STATE_KEY) is None:
            return  # nothing stored to take back
        self._offered = True
        token = None if handle is None else self._sealer.seal(handle, self._owner, self._agent_name)
        self._writer.offer(token)

    async def flush(self, timeout: float) -> bool:
        return await self._writer.flush(timeout)

    def _describe(self, token: str | None) -> str:
        return "<none>" if token is None else f"for session {self._owner.session_id}"

    async def _write(self, token: str | None) -> None:
        from google.adk.events.event import Event
        from google.adk.events.event_actions import EventActions

        ctx = self._ctx
        event = Event(
            invocation_id=ctx.invocation_id,
            author=self._agent_name,
            branch=getattr(ctx, "branch", None),
            actions=EventActions(state_delta={STATE_KEY: token}),
        )
        await ctx.session_service.append_event(session=ctx.session, event=event)
