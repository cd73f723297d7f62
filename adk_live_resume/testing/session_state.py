"""What one fake session holds across its connections: its turns, open background calls, audio.

Pure: no I/O. A :class:`SessionState` is made fresh or restored from a handle's
:class:`~adk_live_resume.testing.handles.Snapshot` when a connection's setup is read, and is
the only place its turns and NON_BLOCKING calls change. Guarantees:

* :meth:`SessionState.snapshot` holds the completed turns in order, the session's identity
  and start, whether it carried audio, and every NON_BLOCKING call still open: started and not
  answered, or answered and waiting to be told (an answer in flight is never continued after
  a resume: the client sends the result again);
* a restored state has exactly its snapshot's turns, context updates and session, its open
  calls only when the server keeps tool ids across connections
  (``tool_ids_outlive_connection``; else none), and carries audio when the snapshot's
  session did or the new setup answers in AUDIO;
* once it carried audio, a session keeps carrying audio.
"""

from __future__ import annotations

import collections
from collections.abc import Iterable

from .context_update import NO_UPDATE, SessionContext
from .handles import SessionInfo, Snapshot
from .model import Turn

__all__ = ["SessionState"]


class SessionState:
    """The turns, open NON_BLOCKING calls and audio flag of one session on one connection."""

    def __init__(
        self,
        info: SessionInfo,
        *,
        audio: bool,
        turns: Iterable[Turn] = (),
        background: Iterable[tuple[str, str]] = (),
        context: SessionContext = NO_UPDATE,
        replay: str | None = None,
    ) -> None:
        self._info = info
        self._audio = audio or info.audio
        #: Microphone audio arrived on this connection (a microphone conversation).
        self._microphone = False
        self._turns = list(turns)
        #: Open NON_BLOCKING calls of the session, by id (name): kept across resumption.
        self._background = dict(background)
        #: NON_BLOCKING calls whose result arrived and waits to be told (``WHEN_IDLE``).
        self._telling: dict[str, str] = {}
        #: What ``contextUpdate`` messages set (kept across resumption, in the snapshots).
        self.context = context
        #: A reply cut by the resume that restored this session, said again before the next
        #: answer (``None``: none).
        self._replay = replay

    @classmethod
    def restored(
        cls,
        snapshot: Snapshot,
        *,
        audio: bool,
        open_calls: bool,
        replays_cut_reply: bool = False,
        forget: bool = False,
    ) -> SessionState:
        """The session a handle's ``snapshot`` names; ``audio`` when the new setup answers in
        AUDIO. ``open_calls``: the snapshot's open NON_BLOCKING calls stay open under their
        old ids; otherwise (the field's behaviour: a call id belongs to the connection that
        issued it, Pipecat PR 5497, Strands PR 4244, voiceclaw PR 53) the restored session
        has none, and a response for one of them is stale. ``replays_cut_reply``: a reply
        that streamed when the handle was issued is said again, glued before the next answer
        (:meth:`take_replay`; a field report, the server's ``resume_replays_cut_reply``).
        ``forget``: it comes back without its turns (the server's
        ``forget_context_on_resume``)."""
        background = snapshot.background if open_calls else ()
        return cls(
            snapshot.session,
            audio=audio,
            turns=() if forget else snapshot.turns,
            background=background,
            context=snapshot.context,
            replay=snapshot.cut_reply if replays_cut_reply else None,
        )

    # ---- identity and audio ----------------------------------------------------------------

    @property
    def id(self) -> str:
        """The session's id (the same on every connection that resumes it)."""
        return self._info.id

    @property
    def started_at(self) -> float:
        """When the session's first connection began (event loop, real seconds)."""
        return self._info.started_at

    @property
    def audio(self) -> bool:
        """The session carried audio (AUDIO answers or audio input) at some point."""
        return self._audio

    def heard_audio(self) -> None:
        """Audio input arrived: the session carries audio from now on."""
        self._audio = True
        self._microphone = True

    @property
    def microphone(self) -> bool:
        """Microphone audio arrived on this connection: a microphone conversation."""
        return self._microphone

    # ---- turns -----------------------------------------------------------------------------

    @property
    def turns(self) -> tuple[Turn, ...]:
        """The completed turns, oldest first."""
        return tuple(self._turns)

    def remember(self, *turns: Turn) -> None:
        """Add completed turns at the end."""
        self._turns.extend(turns)

    def take_replay(self) -> str | None:
        """The cut reply to say again before the next answer, once (``None``: none)."""
        replay, self._replay = self._replay, None
        return replay

    def last_user_text(self) -> str:
        """The text of the latest user turn ("" when there is none)."""
        return next((t.text for t in reversed(self._turns) if t.role == "user"), "")

    # ---- NON_BLOCKING calls ----------------------------------------------------------------

    def open_call(self, call_id: str, name: str) -> None:
        """A NON_BLOCKING call started: it stays open until its response arrives."""
        self._background[call_id] = name

    def close_call(self, call_id: str) -> str | None:
        """The response of call ``call_id`` arrived: its function's name if it was open."""
        return self._background.pop(call_id, None)

    def telling(self, call_id: str, name: str) -> None:
        """The result of call ``call_id`` waits to be told: open in the snapshots meanwhile."""
        self._telling[call_id] = name

    def told(self, call_id: str) -> None:
        """The telling of call ``call_id``'s result starts: it is no longer open."""
        self._telling.pop(call_id, None)

    def calls_open(self) -> bool:
        """A NON_BLOCKING call is open: started and not answered, or answered and its
        result not told yet."""
        return bool(self._background or self._telling)

    # ---- context updates -------------------------------------------------------------------

    def update_context(self, update: SessionContext) -> SessionContext:
        """A ``contextUpdate`` arrived: the session's context from now on."""
        self.context = self.context.updated(update)
        return self.context

    # ---- snapshots -------------------------------------------------------------------------

    def snapshot(
        self,
        *,
        now: float,
        connection: int,
        last_consumed_index: int | None,
        consumed: collections.Counter[str],
        cut_reply: str | None = None,
    ) -> Snapshot:
        """The session as a handle issued now restores it (see the module docstring);
        ``cut_reply``: the reply streaming now."""
        return Snapshot(
            tuple(self._turns),
            now,
            connection,
            SessionInfo(self._info.id, self._info.started_at, self._audio),
            last_consumed_index,
            consumed,
            tuple({**self._background, **self._telling}.items()),
            self.context,
            cut_reply,
        )
