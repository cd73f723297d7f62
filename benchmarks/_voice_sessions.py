"""One round of ``benchmarks/voice_scale.py``: N voice sessions in this process, microphones in
real time, the model answering in audio.

Run by ``voice_scale.py`` (a helper, not a benchmark)::

    python benchmarks/_voice_sessions.py --job cost --client patched --sessions 100 \\
        --seconds 10 --server '<hello JSON>'

Every session is a real ``Runner.run_live`` (one runner, one agent answering in audio, one
session each; ``patched`` with the patch installed, ``stock`` without), or for ``--client
floor`` a bare google-genai session (no ADK: the detecting floor of ``resume_gap``, streaming
the same microphone), talking TLS to the fake server of ``_scale_server.py`` in another
process. Each session's microphone (``_voice_mic.Microphone``) sends a 20 ms chunk every 20
ms of wall time, from a phase of its own (seeded), so the chunks of N sessions are spread
over the 20 ms; a chunk that is due while the loop is busy is sent as soon as it runs (a
microphone does not wait).

* ``--job cost``: streams ``--warmup`` seconds, then measures ``--seconds``: the process's
  CPU (user + system) per chunk sent, the event loop's lag (a 10 ms ticker: how late it
  wakes), the resident memory per session (before the sessions start, once they stream, at
  the end), how late the microphones ran, the model's audio answers read;
* ``--job move``: streams ``--calm`` seconds, then (patched) sends every connection a
  ``goAway`` (``timeLeft`` 10 s) and streams ``--after`` seconds, then drops every socket
  at once (no close frame) and streams ``--after`` seconds more; the floor only has the
  drop, at the same moment. Then it asks the server which audio every connection received
  and works out per session: the gap the drop made (the dropped connection's end to the
  next connection's first message, as ``resume_gap`` times it), the microphone audio that
  no connection received, and the answers the fault delayed or lost.

Prints one JSON line.
"""

from __future__ import annotations

import argparse
import asyncio
import binascii
import contextlib
import gc
import itertools
import json
import logging
import os
import random
import resource
import sys
import tempfile
import time
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from _scale_server import raise_fd_limit
from _scale_sessions import STARTING_AT_ONCE, Address, _control, rss_bytes
from _voice_analysis import analyse
from _voice_mic import CHUNK_SECONDS, CYCLE_CHUNKS, Chunk, Microphone

#: The goAway's ``timeLeft`` (real seconds); the patched loop's ``go_away_margin`` is 5 s.
GO_AWAY_TIME_LEFT = 10.0
#: How long any single wait may take before the round fails.
TIMEOUT = 120.0
MODEL = "gemini-live-fake"


def cpu_seconds() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def process_cpu_seconds(pid: int) -> float:
    """Another process's CPU (user + system), from ``/proc/<pid>/stat``."""
    with open(f"/proc/{pid}/stat") as stat:
        fields = stat.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


@dataclass
class Answer:
    """One answer of the model, as the client read it."""

    text: str
    first_audio_at: float
    complete_at: float


@dataclass
class Listener:
    """What a session's client read of the model's output."""

    decode: bool
    audio_chunks: int = 0
    answers: list[Answer] = field(default_factory=list)
    _pcm: bytearray = field(default_factory=bytearray)
    _first: float | None = None

    def audio(self, data: bytes) -> None:
        self.audio_chunks += 1
        if self._first is None:
            self._first = time.monotonic()
        if self.decode:
            self._pcm += data

    def turn_complete(self) -> None:
        if self._first is not None:
            text = ""
            if self.decode:
                from adk_live_resume.testing.vad import decode_speech

                text = " ".join(decode_speech(bytes(self._pcm), sample_rate=24000))
            self.answers.append(Answer(text, self._first, time.monotonic()))
        self._pcm.clear()
        self._first = None


@dataclass
class Produced:
    """What a session's microphone sent: every chunk's key and time, every utterance's end."""

    keys: list[str] = field(default_factory=list)
    times: list[float] = field(default_factory=list)
    utterance_ends: dict[int, float] = field(default_factory=dict)
    late: list[float] = field(default_factory=list)


class Voice:
    """A session: its microphone and what it read. Subclasses send and read."""

    def __init__(self, index: int, decode: bool) -> None:
        self.index = index
        self.listener = Listener(decode)
        self.produced = Produced()
        self.keep = decode  # note every chunk (the move job)
        self.errors: list[str] = []
        #: Chunks sent so far.
        self.sent = 0
        #: Whether the microphone speaks (else room noise alone: the model never answers).
        self.speech = True
        #: The chunks to send, made beforehand (a real microphone's bytes cost the app
        #: nothing to make, so neither do these): one cycle in a loop for the cost job, every
        #: chunk of the round, each unique, for the move job. None: made as they go.
        self.chunks: Iterable[Chunk] | None = None

    async def send(self, chunk: Chunk) -> None:
        raise NotImplementedError

    async def stream(self, start: float, phase: float, stop: asyncio.Event) -> None:
        """Send a chunk every 20 ms of wall time from ``start + phase`` until ``stop``."""
        loop = asyncio.get_running_loop()
        produced = self.produced
        source = (
            self.chunks
            if self.chunks is not None
            else Microphone(self.index, speech=self.speech).chunks()
        )
        for number, chunk in enumerate(source):
            due = start + phase + number * CHUNK_SECONDS
            wait = due - loop.time()
            # a microphone late to the loop still hands over one chunk per loop turn (each
            # chunk is an event of its own), never its whole backlog at once
            await asyncio.sleep(max(0.0, wait))
            if stop.is_set():
                return
            now = loop.time()
            if number % 10 == 0:
                produced.late.append(now - due)
            if self.keep:
                produced.keys.append(chunk.key)
                produced.times.append(now)
                if chunk.utterance_end:
                    produced.utterance_ends[chunk.cycle] = now
            await self.send(chunk)
            self.sent += 1


class AdkVoice(Voice):
    """A ``Runner.run_live`` session fed through its ``LiveRequestQueue``."""

    def __init__(self, index: int, decode: bool, runner: Any, run_config: Any) -> None:
        super().__init__(index, decode)
        from google.adk.agents.live_request_queue import LiveRequestQueue

        self.runner = runner
        self.run_config = run_config
        self.queue = LiveRequestQueue()
        self.task: asyncio.Task[None] | None = None
        self.ready = asyncio.Event()

    async def start(self) -> None:
        session = await self.runner.session_service.create_session(
            app_name=self.runner.app_name, user_id=f"user-{self.index}"
        )
        self.task = asyncio.create_task(self._consume(session.id))

    async def _consume(self, session_id: str) -> None:
        listener = self.listener
        try:
            async for event in self.runner.run_live(
                user_id=f"user-{self.index}",
                session_id=session_id,
                live_request_queue=self.queue,
                run_config=self.run_config,
            ):
                self.ready.set()
                content = event.content
                if content is not None and content.parts:
                    for part in content.parts:
                        blob = part.inline_data
                        if (
                            blob is not None
                            and blob.data
                            and (blob.mime_type or "").startswith("audio/")
                        ):
                            listener.audio(blob.data)
                if event.turn_complete or event.interrupted:
                    listener.turn_complete()
        except Exception as error:
            self.errors.append(f"run_live: {type(error).__name__}: {error}"[:300])

    async def send(self, chunk: Chunk) -> None:
        from google.genai import types

        self.queue.send_realtime(types.Blob(data=chunk.data, mime_type="audio/pcm;rate=16000"))

    async def close(self) -> None:
        self.queue.close()
        if self.task is not None:
            try:
                async with asyncio.timeout(10):
                    await self.task
            except TimeoutError:
                self.task.cancel()
                await asyncio.gather(self.task, return_exceptions=True)


class FloorVoice(Voice):
    """A bare google-genai session that streams the same microphone and, when its receive
    ends (a drop), resumes at once with the newest handle it read; the chunks due while it
    has no connection are lost (the SDK keeps nothing)."""

    def __init__(self, index: int, client: Any, config: Any) -> None:
        super().__init__(index, True)
        self.client = client
        self.config = config
        self.handle: str | None = None
        self.session: Any = None
        self.stacks: list[contextlib.AsyncExitStack] = []
        self.reader: asyncio.Task[None] | None = None
        self.ready = asyncio.Event()
        self.lost_sends = 0

    async def _connect(self) -> Any:
        from google.genai import types

        stack = contextlib.AsyncExitStack()
        self.stacks.append(stack)
        config = self.config.model_copy(
            update={"session_resumption": types.SessionResumptionConfig(handle=self.handle)}
        )
        return await stack.enter_async_context(
            self.client.aio.live.connect(model=MODEL, config=config)
        )

    async def start(self) -> None:
        self.session = await self._connect()
        self.ready.set()
        self.reader = asyncio.create_task(self._read())

    async def _read(self) -> None:
        from google.genai import errors
        from websockets.exceptions import ConnectionClosed

        listener = self.listener
        while True:
            session = self.session
            try:
                while True:
                    empty = True
                    async for message in session.receive():
                        empty = False
                        content = message.server_content
                        if content is not None:
                            turn = content.model_turn
                            for part in (turn.parts or []) if turn else []:
                                if part.inline_data is not None and part.inline_data.data:
                                    listener.audio(part.inline_data.data)
                            if content.turn_complete or content.interrupted:
                                listener.turn_complete()
                        update = message.session_resumption_update
                        if update is not None and update.new_handle and update.resumable:
                            self.handle = update.new_handle
                    if empty:
                        break
            except (errors.APIError, ConnectionClosed):
                pass
            except asyncio.CancelledError:
                raise
            self.session = None
            try:
                self.session = await self._connect()  # at once, with the newest handle
            except Exception as error:
                self.errors.append(f"reconnect: {type(error).__name__}: {error}"[:300])
                return
            old = self.stacks.pop(-2)
            with contextlib.suppress(Exception):
                await old.aclose()

    async def send(self, chunk: Chunk) -> None:
        from google.genai import types

        session = self.session
        if session is None:
            self.lost_sends += 1
            return
        try:
            await session.send_realtime_input(
                audio=types.Blob(data=chunk.data, mime_type="audio/pcm;rate=16000")
            )
        except Exception:
            self.lost_sends += 1

    async def close(self) -> None:
        if self.reader is not None:
            self.reader.cancel()
            await asyncio.gather(self.reader, return_exceptions=True)
        for stack in reversed(self.stacks):
            with contextlib.suppress(Exception):
                await stack.aclose()


class WireVoice(Voice):
    """The wire floor of the cost job: a bare TLS websocket (opened by google-genai, which
    then steps aside) that sends each chunk as ready-made ``realtimeInput`` text and reads
    every frame without parsing it. What any client pays to stream a microphone in real
    time (a timer's wake-up, a send, the TLS record, the reads), with no SDK and no ADK."""

    PREFIX = '{"realtimeInput": {"audio": {"data": "'
    SUFFIX = '", "mimeType": "audio/pcm;rate=16000"}}}'

    def __init__(self, index: int, client: Any) -> None:
        super().__init__(index, False)
        self.client = client
        self.stack = contextlib.AsyncExitStack()
        self.websocket: Any = None
        self.reader: asyncio.Task[None] | None = None
        self.ready = asyncio.Event()

    async def start(self) -> None:
        from google.genai import types

        config = types.LiveConnectConfig(response_modalities=[types.Modality.AUDIO])
        session = await self.stack.enter_async_context(
            self.client.aio.live.connect(model=MODEL, config=config)
        )
        self.websocket = session._ws
        self.reader = asyncio.create_task(self._read())
        self.ready.set()

    async def _read(self) -> None:
        with contextlib.suppress(Exception):
            async for _ in self.websocket:
                self.listener.audio_chunks += 1  # (frames, of any kind)

    async def send(self, chunk: Chunk) -> None:
        data = binascii.b2a_base64(chunk.data, newline=False).decode("ascii")
        await self.websocket.send(self.PREFIX + data + self.SUFFIX)

    async def close(self) -> None:
        if self.reader is not None:
            self.reader.cancel()
            await asyncio.gather(self.reader, return_exceptions=True)
        with contextlib.suppress(Exception):
            await self.stack.aclose()


def _wire_voices(sessions: int, hello: dict[str, Any]) -> list[WireVoice]:
    from google import genai
    from google.genai import types

    os.environ["SSL_CERT_FILE"] = hello["cert_path"]
    client = genai.Client(
        api_key="bench", http_options=types.HttpOptions(base_url=hello["base_url"])
    )
    return [WireVoice(i, client) for i in range(sessions)]


class Lag:
    """How late a 10 ms ticker wakes (the loop is busy), every wake; and the time the
    garbage collector took meanwhile (full collections apart), which stops the loop too."""

    def __init__(self) -> None:
        self.samples: list[float] = []
        self.gc_seconds = self.gc_full_seconds = 0.0
        self.gc_full = 0
        self._gc_started = 0.0
        gc.callbacks.append(self._on_gc)

    def _on_gc(self, phase: str, info: dict[str, int]) -> None:
        if phase == "start":
            self._gc_started = time.perf_counter()
            return
        took = time.perf_counter() - self._gc_started
        self.gc_seconds += took
        if info.get("generation") == 2:
            self.gc_full += 1
            self.gc_full_seconds += took

    def stop(self) -> None:
        gc.callbacks.remove(self._on_gc)

    async def tick(self) -> None:
        loop = asyncio.get_running_loop()
        while True:
            before = loop.time()
            await asyncio.sleep(0.01)
            self.samples.append(loop.time() - before - 0.01)


def _percentile(values: list[float], pct: float) -> float:
    ordered = sorted(values)
    if not ordered:
        return float("nan")
    rank = (len(ordered) - 1) * pct / 100
    low = int(rank)
    high = min(low + 1, len(ordered) - 1)
    return ordered[low] + (ordered[high] - ordered[low]) * (rank - low)


async def _adk_voices(
    sessions: int, client: str, hello: dict[str, Any], decode: bool
) -> tuple[list[AdkVoice], Any]:
    from google.adk.agents import LlmAgent
    from google.adk.agents.run_config import RunConfig
    from google.adk.runners import InMemoryRunner
    from google.genai import types

    from adk_live_resume.fault_proxy.client_config import fake_gemini

    model = fake_gemini(Address(hello["base_url"], hello["cert_path"]))
    agent = LlmAgent(name="voice", model=model, instruction="Answer briefly.")
    runner = InMemoryRunner(agent=agent, app_name="voice")
    run_config = RunConfig(
        response_modalities=[types.Modality.AUDIO],
        session_resumption=types.SessionResumptionConfig(),
    )
    return [AdkVoice(i, decode, runner, run_config) for i in range(sessions)], runner


async def _cost_voices(sessions: int, client: str, hello: dict[str, Any]) -> tuple[list[Any], Any]:
    """The cost job's sessions: ``Runner.run_live`` sessions (patched or stock; and their
    runner), or the wire floor's bare sockets (no runner)."""
    if client == "wire":
        return _wire_voices(sessions, hello), None
    return await _adk_voices(sessions, client, hello, False)


async def _start_all(voices: list[Any]) -> None:
    gate = asyncio.Semaphore(STARTING_AT_ONCE)

    async def one(voice: Any) -> None:
        async with gate:
            await voice.start()
            async with asyncio.timeout(TIMEOUT):
                if isinstance(voice, AdkVoice):
                    # run_live connects lazily: a first chunk makes it open the connection
                    voice.queue.send_realtime(_quiet_blob())
                    await _connected(voice)
                else:
                    await voice.ready.wait()

    await asyncio.gather(*(one(v) for v in voices))


def _quiet_blob() -> Any:
    from google.genai import types

    return types.Blob(data=bytes(640), mime_type="audio/pcm;rate=16000")


async def _connected(voice: AdkVoice) -> None:
    """Until ADK's sender took the first chunk (the connection is open)."""
    while voice.queue._queue.qsize():
        if voice.task is not None and voice.task.done():
            raise RuntimeError(f"session {voice.index} ended: {voice.errors}")
        await asyncio.sleep(0.01)


@contextlib.contextmanager
def _variant(client: str) -> Any:
    from adk_live_resume.testing import patch_installed, patch_removed

    if client == "patched":
        with patch_installed(fast_backoff=False) as policy:
            yield policy
    else:
        with patch_removed():
            yield None


def _phases(sessions: int, seed: int) -> list[float]:
    """Where each session's microphone starts: anywhere in the first cycle (seeded), so the
    sessions speak at different times and their chunks spread over the 20 ms."""
    rng = random.Random(seed * 7919 + sessions)
    return [rng.uniform(0, CYCLE_CHUNKS * CHUNK_SECONDS) for _ in range(sessions)]


async def cost_round(
    sessions: int,
    client: str,
    hello: dict[str, Any],
    warmup: float,
    seconds: float,
    seed: int,
    speech: bool = True,
) -> dict[str, Any]:
    """The cost job (see the module; ``speech=False``: the microphones send room noise
    alone, so the model never answers and the microphone's path is measured by itself)."""
    import adk_live_resume

    peaks: list[float] = []
    with _variant(client):
        unregister = adk_live_resume.on_run_end(lambda s: peaks.append(s.peak_replay_audio_ms))
        # one session first, started and closed: what the first one pays once (lazy imports,
        # the SDK's caches, the chunk encoding learned) is no session's memory
        first, _ = await _cost_voices(1, client, hello)
        await _start_all(first)
        await first[0].close()
        voices, runner = await _cost_voices(sessions, client, hello)
        cycle = list(itertools.islice(Microphone(0, speech=speech).chunks(), CYCLE_CHUNKS))
        for voice in voices:
            voice.chunks = itertools.cycle(cycle)
        gc.collect()
        rss_before = rss_bytes()
        began = time.monotonic()
        await _start_all(voices)
        start_seconds = time.monotonic() - began
        gc.collect()
        rss_started = rss_bytes()
        stop = asyncio.Event()
        loop = asyncio.get_running_loop()
        start = loop.time() + 0.05
        phases = _phases(sessions, seed)
        streams = [asyncio.create_task(v.stream(start, phases[v.index], stop)) for v in voices]
        await asyncio.sleep(warmup)
        lag = Lag()
        ticker = asyncio.create_task(lag.tick())
        collections = [g["collections"] for g in gc.get_stats()]
        for v in voices:
            v.produced.late.clear()
        chunks_before = _sent(voices)
        answers_before = sum(len(v.listener.answers) for v in voices)
        audio_before = sum(v.listener.audio_chunks for v in voices)
        server_cpu = process_cpu_seconds(hello["pid"])
        cpu = cpu_seconds()
        wall = time.monotonic()
        await asyncio.sleep(seconds)
        cpu = cpu_seconds() - cpu
        wall = time.monotonic() - wall
        server_cpu = process_cpu_seconds(hello["pid"]) - server_cpu
        chunks = _sent(voices) - chunks_before
        ticker.cancel()
        lag.stop()
        collections = [
            g["collections"] - c for g, c in zip(gc.get_stats(), collections, strict=True)
        ]
        answers = sum(len(v.listener.answers) for v in voices) - answers_before
        audio = sum(v.listener.audio_chunks for v in voices) - audio_before
        stop.set()
        await asyncio.gather(*streams)
        gc.collect()
        rss_end = rss_bytes()
        peaks.clear()  # the first session's
        await asyncio.gather(*(v.close() for v in voices))
        unregister()
        late = [x for v in voices for x in v.produced.late]
        errors = [e for v in voices for e in v.errors]
    del runner
    return {
        "job": "cost",
        "speech": speech,
        "client": client,
        "sessions": sessions,
        "seconds": wall,
        "start_seconds": start_seconds,
        "chunks": chunks,
        "chunks_expected": sessions * wall / CHUNK_SECONDS,
        "cpu_seconds": cpu,
        "cpu_per_chunk_us": 1e6 * cpu / max(1, chunks),
        "server_cpu_seconds": server_cpu,
        "lag_p50_ms": 1000 * _percentile(lag.samples, 50),
        "lag_p99_ms": 1000 * _percentile(lag.samples, 99),
        "lag_max_ms": 1000 * max(lag.samples, default=float("nan")),
        "lag_samples": len(lag.samples),
        "gc_seconds": lag.gc_seconds,
        "gc_full": lag.gc_full,
        "gc_full_seconds": lag.gc_full_seconds,
        "gc_collections": collections,
        "late_p50_ms": 1000 * _percentile(late, 50),
        "late_p99_ms": 1000 * _percentile(late, 99),
        "rss_before": rss_before,
        "rss_per_session_started": (rss_started - rss_before) / sessions,
        "rss_per_session_end": (rss_end - rss_before) / sessions,
        "answers": answers,
        "answer_audio_chunks": audio,
        "peak_replay_audio_ms": max(peaks, default=float("nan")),
        "errors": errors[:10],
        "error_count": len(errors),
    }


def _sent(voices: list[Any]) -> int:
    return sum(v.sent for v in voices)


# ---- the move job --------------------------------------------------------------------------


def _recording_config(configs: list[Any]) -> Any:
    """Wrap google-genai's live ``connect`` to note the config the patched run asks for (the
    floor connects with it, so every client's setup costs the server the same)."""
    import google.genai.live as genai_live

    original = genai_live.AsyncLive.connect

    def connect(self: Any, **kwargs: Any) -> Any:
        configs.append(kwargs.get("config"))
        return original(self, **kwargs)

    return genai_live.AsyncLive, original, connect


def _floor_voices(sessions: int, hello: dict[str, Any], config: dict[str, Any] | None) -> list[Any]:
    from google import genai
    from google.genai import types

    os.environ["SSL_CERT_FILE"] = hello["cert_path"]
    client = genai.Client(
        api_key="bench", http_options=types.HttpOptions(base_url=hello["base_url"])
    )
    setup = (
        types.LiveConnectConfig.model_validate(config)
        if config
        else types.LiveConnectConfig(response_modalities=[types.Modality.AUDIO])
    )
    return [FloorVoice(i, client, setup) for i in range(sessions)]


async def move_round(
    sessions: int,
    client: str,
    hello: dict[str, Any],
    calm: float,
    after: float,
    seed: int,
    config: dict[str, Any] | None,
) -> dict[str, Any]:
    """The move job (see the module)."""
    import adk_live_resume

    configs: list[Any] = []
    reconnects: list[Any] = []
    with _variant("patched" if client == "patched" else "stock"):
        unregister = adk_live_resume.on_reconnect(reconnects.append)
        if client == "patched":
            owner, original, recording = _recording_config(configs)
            owner.connect = recording
            try:
                voices: list[Any] = (await _adk_voices(sessions, client, hello, True))[0]
                await _start_all(voices)
            finally:
                owner.connect = original
        else:
            voices = _floor_voices(sessions, hello, config)
            await _start_all(voices)
        settle = CYCLE_CHUNKS * CHUNK_SECONDS
        count = round((2 * settle + calm + 2 * after) / CHUNK_SECONDS)
        for voice in voices:  # (every chunk of the round, made before it starts)
            voice.chunks = list(itertools.islice(Microphone(voice.index).chunks(), count))
        stop = asyncio.Event()
        loop = asyncio.get_running_loop()
        start = loop.time() + 0.05
        phases = _phases(sessions, seed)
        streams = [asyncio.create_task(v.stream(start, phases[v.index], stop)) for v in voices]
        lag = Lag()
        ticker = asyncio.create_task(lag.tick())
        await asyncio.sleep(settle + calm)
        if client == "patched":
            go_away = await _control(hello["control_port"], f"goaway {GO_AWAY_TIME_LEFT}")
            go_away_at = float(go_away["at"])
        else:
            go_away_at = loop.time()  # the same moment of the round; nothing is sent
        # the CPU of the second before the drop (streaming) and of the second after it (the
        # recovery as well): their difference is what the reconnects cost
        await asyncio.sleep(after - 1.0)
        cpu_before = cpu_seconds()
        await asyncio.sleep(1.0)
        cpu_at_drop = cpu_seconds()
        drop = await _control(hello["control_port"], "drop")
        await asyncio.sleep(1.0)
        cpu_after = cpu_seconds()
        await asyncio.sleep(after - 1.0)
        stopped_at = loop.time()
        stop.set()
        ticker.cancel()
        lag.stop()
        await asyncio.gather(*streams)
        await asyncio.sleep(0.3)  # the last chunks reach the server
        with tempfile.TemporaryDirectory() as scratch:
            target = Path(scratch) / "heard.json"
            await _control(hello["control_port"], f"heard {target}")
            connections = json.loads(target.read_text())
        await asyncio.gather(*(v.close() for v in voices))
        unregister()
    times = {
        "start": start,
        "calm_from": start + settle,
        "go_away": go_away_at,
        "drop": float(drop["at"]),
        "stopped": stopped_at,
    }
    per_session = analyse(voices, connections, times, moved=client == "patched")
    errors = [e for v in voices for e in v.errors]
    setup = None
    if configs and configs[0] is not None:
        setup = configs[0].model_dump(mode="json", exclude_none=True)
    return {
        "job": "move",
        "client": client,
        "sessions": sessions,
        "times": {k: v - start for k, v in times.items()},
        "dropped": drop["dropped"],
        "per_session": per_session,
        "reconnects": [
            {"reason": r.reason, "gap_ms": r.gap_ms, "restored": r.state_restored}
            for r in reconnects
        ],
        "floor_lost_sends": sum(getattr(v, "lost_sends", 0) for v in voices),
        "lag_p99_ms": 1000 * _percentile(lag.samples, 99),
        "late_p99_ms": 1000 * _percentile([x for v in voices for x in v.produced.late], 99),
        "recovery_cpu_ms_per_session": 1000
        * ((cpu_after - cpu_at_drop) - (cpu_at_drop - cpu_before))
        / sessions,
        "setup": setup,
        "errors": errors[:10],
        "error_count": len(errors),
    }


def main() -> None:
    parsed = argparse.ArgumentParser(description=__doc__)
    parsed.add_argument("--job", choices=("cost", "move"), required=True)
    parsed.add_argument("--client", choices=("patched", "stock", "floor", "wire"), required=True)
    parsed.add_argument("--sessions", type=int, required=True)
    parsed.add_argument("--server", required=True, help="the server's hello line (JSON)")
    parsed.add_argument("--warmup", type=float, default=3.0)
    parsed.add_argument("--seconds", type=float, default=10.0)
    parsed.add_argument("--calm", type=float, default=6.6)
    parsed.add_argument("--after", type=float, default=6.0)
    parsed.add_argument("--seed", type=int, default=1)
    parsed.add_argument("--setup", help="a file holding the floor's setup (JSON)")
    parsed.add_argument(
        "--speech",
        choices=("on", "off"),
        default="on",
        help="off: the microphones send room noise alone (the model never answers)",
    )
    parsed.add_argument(
        "--gc-threshold",
        type=int,
        help="the garbage collector's first threshold (default: Python's, 700)",
    )
    args = parsed.parse_args()
    if args.gc_threshold:
        gc.set_threshold(args.gc_threshold, *gc.get_threshold()[1:])
    logging.basicConfig(level=logging.ERROR)
    # every session warns once that audio without compression ends at 15 minutes
    logging.getLogger("adk_live_resume").setLevel(logging.ERROR)
    raise_fd_limit()
    hello = json.loads(args.server)
    if args.job == "cost":
        if args.client == "floor":
            parsed.error("the cost job runs patched, stock or wire sessions")
        coroutine = cost_round(
            args.sessions,
            args.client,
            hello,
            args.warmup,
            args.seconds,
            args.seed,
            args.speech == "on",
        )
    else:
        if args.client in ("stock", "wire"):
            parsed.error("the move job runs patched or floor sessions")
        config = json.loads(Path(args.setup).read_text()) if args.setup else None
        coroutine = move_round(
            args.sessions, args.client, hello, args.calm, args.after, args.seed, config
        )
    result = asyncio.run(coroutine)
    sys.stdout.write(json.dumps(result) + "\n")


if __name__ == "__main__":
    main()
