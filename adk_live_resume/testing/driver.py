"""Drive a real ADK ``Runner.run_live`` conversation from a test, one turn at a time.

:class:`LiveDriver` owns the ``LiveRequestQueue`` and a task that consumes ``run_live``
into :attr:`LiveDriver.events`. It never hides what the run did: an exception that ends
``run_live`` is kept in :attr:`LiveDriver.error` and re-raised by :meth:`say` and friends, so a
test fails with the real error instead of a timeout.

Example::

    async with FakeLiveServer() as server:
        agent = LlmAgent(name="echo", model=server.gemini())
        async with await LiveDriver.start(agent) as live:
            assert await live.say("hello") == "echo: hello"
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable
from types import TracebackType
from typing import TYPE_CHECKING, Any

from google.genai import types

if TYPE_CHECKING:
    from google.adk.events.event import Event


class LiveRunEnded(AssertionError):
    """``run_live`` ended while a test was waiting for more."""


class LiveDriver:
    """A running ``Runner.run_live`` with helpers to talk to it."""

    def __init__(self, runner: Any, session: Any, queue: Any, run_config: Any) -> None:
        self.runner = runner
        self.session = session
        self.queue = queue
        self.run_config = run_config
        #: Every event ``run_live`` yielded, in order.
        self.events: list[Event] = []
        #: The exception that ended ``run_live``, if any.
        self.error: BaseException | None = None
        self._changed = asyncio.Event()
        self._task: asyncio.Task[None] | None = None

    @classmethod
    async def start(
        cls,
        agent: Any,
        *,
        run_config: Any = None,
        history: list[tuple[str, str]] | None = None,
        app_name: str = "adk_live_resume_tests",
        user_id: str = "user",
        session_service: Any = None,
        runner: Any = None,
    ) -> LiveDriver:
        """Create a runner and session for ``agent`` and start ``run_live``.

        The runner keeps sessions in memory unless ``session_service`` (any ADK
        ``BaseSessionService``) is given.

        ``history`` is a list of ``(role, text)`` pairs ("user" or "model") stored in the ADK
        session before the live run starts, so the first connection has history to send.
        ``run_config`` defaults to text responses with session resumption on. ``runner``:
        an existing runner to share (many sessions in one process, as an app serves them);
        ``agent`` and ``app_name`` are then the runner's.
        """
        from google.adk.agents.live_request_queue import LiveRequestQueue
        from google.adk.agents.run_config import RunConfig
        from google.adk.events.event import Event
        from google.adk.runners import InMemoryRunner, Runner

        if runner is not None:
            if session_service is not None:
                raise ValueError("give runner or session_service, not both")
            agent, app_name = runner.agent, runner.app_name
        elif session_service is None:
            runner = InMemoryRunner(agent=agent, app_name=app_name)
        else:
            runner = Runner(agent=agent, app_name=app_name, session_service=session_service)
        session = await runner.session_service.create_session(app_name=app_name, user_id=user_id)
        for role, text in history or []:
            await runner.session_service.append_event(
                session,
                Event(
                    author="user" if role == "user" else agent.name,
                    content=types.Content(role=role, parts=[types.Part(text=text)]),
                ),
            )
        if run_config is None:
            run_config = RunConfig(
                response_modalities=[types.Modality.TEXT],
                session_resumption=types.SessionResumptionConfig(),
            )
        driver = cls(runner, session, LiveRequestQueue(), run_config)
        driver._task = asyncio.create_task(driver._consume(user_id), name="LiveDriver.run_live")
        return driver

    async def _consume(self, user_id: str) -> None:
        try:
            async for event in self.runner.run_live(
                user_id=user_id,
                session_id=self.session.id,
                live_request_queue=self.queue,
                run_config=self.run_config,
            ):
                self.events.append(event)
                self._changed.set()
        except Exception as error:
            self.error = error
        finally:
            self._changed.set()

    # -- state ----------------------------------------------------------------------------

    @property
    def task(self) -> asyncio.Task[None]:
        assert self._task is not None
        return self._task

    @property
    def ended(self) -> bool:
        """Whether ``run_live`` has finished (normally, with an error, or cancelled)."""
        return self.task.done()

    async def _wait_change(self, deadline: float) -> None:
        remaining = deadline - asyncio.get_running_loop().time()
        if remaining <= 0:
            raise TimeoutError
        self._changed.clear()
        await asyncio.wait_for(self._changed.wait(), remaining)

    # -- talking --------------------------------------------------------------------------

    def send_text(self, text: str) -> int:
        """Queue a user text turn; return the event index the answer will follow."""
        mark = len(self.events)
        self.queue.send_content(types.Content(role="user", parts=[types.Part(text=text)]))
        return mark

    def send_audio(self, pcm: bytes, *, sample_rate: int = 16000) -> None:
        """Queue raw 16-bit PCM audio."""
        self.queue.send_realtime(types.Blob(data=pcm, mime_type=f"audio/pcm;rate={sample_rate}"))

    async def say(
        self, text: str, *, timeout: float = 10.0, skip: Callable[[str], bool] | None = None
    ) -> str:
        """Send a text turn and return the model's answer text once its turn completes."""
        return await self.answer_after(self.send_text(text), timeout=timeout, skip=skip)

    async def answer_after(
        self, mark: int, *, timeout: float = 10.0, skip: Callable[[str], bool] | None = None
    ) -> str:
        """Return the text of the first completed turn with text among the events after ``mark``.

        Turns without text (tool-call turns) are skipped: their answer comes in a later turn.
        So are turns whose text ``skip(text)`` accepts (answers that answer no user turn, such
        as the result of a NON_BLOCKING tool told while the user talks on).
        """
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout
        while True:
            start = mark
            flushed: int | None = None  # a model text passed on whole, its turn not ended yet
            for index in range(mark, len(self.events)):
                event = self.events[index]
                if getattr(event, "interrupted", False):
                    start = index + 1  # an earlier answer was cut off: not part of this one
                    flushed = None
                elif _has_text(event, partial=False):
                    flushed = index
                elif flushed is not None and _has_text(event, partial=True):
                    # A new answer streams after a text passed on whole without its turn's
                    # end: that answer was cut off (ADK 1.x passes a cut answer's text on
                    # without its ``interrupted`` mark).
                    start, flushed = flushed + 1, None
                if _has_calls(event):
                    flushed = None  # (text before a tool call: the answer goes on after it)
                if getattr(event, "turn_complete", False):
                    flushed = None
                    segment = self.events[start : index + 1]
                    text = answer_text(segment)
                    if not text or (skip is not None and skip(text)):
                        # a tool-call turn (or one whose calls were answered for the model):
                        # the answer comes in a later turn
                        start = index + 1
                        continue
                    return text
            self._raise_if_ended("a completed model turn")
            try:
                await self._wait_change(deadline)
            except TimeoutError:
                raise TimeoutError(
                    f"no completed turn within {timeout} s; events since: "
                    f"{[summarize(e) for e in self.events[mark:]]}"
                ) from None

    async def wait_for_event(self, predicate: Any, *, after: int = 0, timeout: float = 10.0) -> Any:
        """Return the first event after index ``after`` for which ``predicate(event)`` holds."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout
        while True:
            for event in self.events[after:]:
                if predicate(event):
                    return event
            self._raise_if_ended("a matching event")
            try:
                await self._wait_change(deadline)
            except TimeoutError:
                raise TimeoutError(f"no matching event within {timeout} s") from None

    def _raise_if_ended(self, what: str) -> None:
        if not self.ended:
            return
        if self.error is not None:
            raise LiveRunEnded(
                f"run_live raised while waiting for {what}: see its error, chained below"
            ) from self.error
        raise LiveRunEnded(
            f"run_live ended while waiting for {what}: the queue was closed or the run returned"
        )

    # -- ending ---------------------------------------------------------------------------

    async def wait_ended(self, timeout: float = 10.0) -> BaseException | None:
        """Wait for ``run_live`` to finish; return the error it raised, if any."""
        await asyncio.wait_for(asyncio.shield(self.task), timeout)
        return self.error

    async def close(self, timeout: float = 10.0) -> BaseException | None:
        """Close the request queue and wait for ``run_live`` to end; return its error."""
        self.queue.close()
        return await self.wait_ended(timeout)

    async def cancel(self, timeout: float = 5.0) -> float:
        """Cancel the consuming task; return the seconds it took to end."""
        loop = asyncio.get_running_loop()
        started = loop.time()
        self.task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await asyncio.wait_for(self.task, timeout)
        return loop.time() - started

    async def __aenter__(self) -> LiveDriver:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        if not self.ended:
            await self.cancel()


def _has_text(event: Any, *, partial: bool) -> bool:
    """Whether ``event`` is the model's, with answer text (not thoughts), partial or not."""
    if getattr(event, "author", "user") == "user" or bool(event.partial) != partial:
        return False
    content = getattr(event, "content", None)
    return any(p.text and not p.thought for p in getattr(content, "parts", None) or [])


def _has_calls(event: Any) -> bool:
    """Whether ``event`` carries tool calls or their responses."""
    content = getattr(event, "content", None)
    return any(
        p.function_call or p.function_response for p in getattr(content, "parts", None) or []
    )


def answer_text(events: list[Any]) -> str:
    """The model's answer in ``events``: final (non-partial) text, else transcription, else
    partial text, else the text the model's audio carries (the fake server answers in
    :mod:`~adk_live_resume.testing.speech`'s synthetic speech, so an audio answer without
    output transcription reads back too)."""
    texts: list[str] = []
    transcripts: list[str] = []
    partial_texts: list[str] = []
    audio: list[tuple[bool, Any]] = []
    for event in events:
        if getattr(event, "author", "user") == "user":
            continue
        content = getattr(event, "content", None)
        for part in getattr(content, "parts", None) or []:
            if part.text and not part.thought:
                (partial_texts if event.partial else texts).append(part.text)
            blob = part.inline_data
            if blob is not None and blob.data and (blob.mime_type or "").startswith("audio/"):
                audio.append((bool(event.partial), blob))
        transcription = getattr(event, "output_transcription", None)
        if transcription is not None and transcription.text and transcription.finished:
            transcripts.append(transcription.text)
    if texts:
        return "".join(texts)
    if transcripts:
        return "".join(transcripts)
    if partial_texts:
        return "".join(partial_texts)
    return _audio_text(audio)


def _audio_text(audio: list[tuple[bool, Any]]) -> str:
    """The text of the model's audio parts: the final ones, or else the partial ones (a
    release that yields both repeats the audio in the final)."""
    from .vad import decode_speech

    finals = [blob for partial, blob in audio if not partial]
    blobs = finals or [blob for _, blob in audio]
    if not blobs:
        return ""
    mime = blobs[0].mime_type or ""
    rate = int(mime.partition("rate=")[2] or 24000)
    return "".join(decode_speech(b"".join(blob.data for blob in blobs), sample_rate=rate))


def summarize(event: Any) -> str:
    """A one-line description of an ADK event for failure messages."""
    bits = [str(getattr(event, "author", "?"))]
    if getattr(event, "turn_complete", False):
        bits.append("turn_complete")
    if getattr(event, "interrupted", False):
        bits.append("interrupted")
    if getattr(event, "partial", False):
        bits.append("partial")
    content = getattr(event, "content", None)
    for part in getattr(content, "parts", None) or []:
        if part.text:
            bits.append(repr(part.text[:40]))
        elif part.function_call:
            bits.append(f"call:{part.function_call.name}")
        elif part.function_response:
            bits.append(f"response:{part.function_response.name}")
    return " ".join(bits)
