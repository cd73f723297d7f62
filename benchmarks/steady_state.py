"""Steady state: what the patched loop costs when nothing goes wrong, against stock ADK.

No faults. Patched and stock runs alternate block by block (patched, stock, patched, ...), each
block a fresh ``Runner.run_live`` (real SDK, real TLS websocket) against the fake server, which
runs in a process of its own so that this process's CPU time is the client's alone:

* **text**: turns one after the other (``say`` and wait for the whole answer); CPU per turn
  (``time.process_time``) and wall time per turn;
* **audio**: 20 ms chunks of 16 kHz PCM16 (640 bytes; synthetic speech, 1.2 s utterances with
  1 s of quiet room noise between them), pushed as a user would: ``send_realtime`` then
  ``await asyncio.sleep(0)``, chunk after chunk, as fast as the loop lets the producer run.
  The drain rate is chunks per second from the first push until ADK's sender has taken the
  last chunk off the ``LiveRequestQueue``; CPU per chunk over the same span.

Every figure is per block; the tables summarise the blocks of each side, and the verdicts
compare medians. Goals: patched at most 1.05x stock in CPU per turn and per chunk, and a
drain rate at least 1/1.05 of stock's (issue 10); at most 0.95x stock per text turn and 0.6x
per audio chunk (issue 51, on an idle machine: the load average is printed before and after).

``--accounting`` measures something else in the same way: the patched loop counting tokens
and answer times against the patched loop not counting (:mod:`_steady_accounting`; goal: at
most 1.02x CPU per turn), written to ``steady_state_accounting.json``.
"""

from __future__ import annotations

import asyncio
import gc
import logging
import os
import sys
import time
from collections.abc import Callable
from contextlib import AbstractContextManager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from _fake_process import FakeServerProcess
from common import (
    Stats,
    check,
    finite,
    markdown_table,
    output_dirs,
    parser,
    print_report,
    pyplot,
    save_figure,
    write_result,
)

NAME = "steady_state"
VARIANTS = ("patched", "stock")
CHUNK_BYTES = 640  # 20 ms of 16 kHz 16-bit mono
CHUNK_MS = 20.0
GOAL = 1.05
#: Issue 51's goals, per text turn and per audio chunk (patched / stock, idle machine).
TIGHT_GOALS = {"cpu_per_turn_ms": 0.95, "cpu_per_chunk_us": 0.6}


@dataclass(frozen=True)
class Size:
    blocks: int  # per side
    turns: int  # per text block
    chunks: int  # per audio block
    warmup_turns: int = 5
    warmup_chunks: int = 100


FULL = Size(blocks=10, turns=200, chunks=1000)
QUICK = Size(blocks=2, turns=30, chunks=300)


@dataclass
class Side:
    cpu_per_turn_ms: list[float] = field(default_factory=list)
    wall_per_turn_ms: list[float] = field(default_factory=list)
    cpu_per_chunk_us: list[float] = field(default_factory=list)
    drain_chunks_per_s: list[float] = field(default_factory=list)


def mic_chunks(count: int) -> list[bytes]:
    """``count`` 20 ms chunks of a microphone: utterances and quiet room noise in turn."""
    from adk_live_resume.testing import silence_pcm, speech_pcm

    period = speech_pcm("turn on the kitchen lights", seconds=1.2) + silence_pcm(1.0, noise=40)
    stream = bytearray()
    while len(stream) < count * CHUNK_BYTES:
        stream += period
    return [bytes(stream[i * CHUNK_BYTES : (i + 1) * CHUNK_BYTES]) for i in range(count)]


def _variant(variant: str) -> Any:
    from adk_live_resume.testing import patch_installed, patch_removed

    return patch_installed() if variant == "patched" else patch_removed()


async def _start(server: FakeServerProcess) -> Any:
    from google.adk.agents import LlmAgent

    from adk_live_resume.testing import LiveDriver

    return await LiveDriver.start(LlmAgent(name="bench", model=server.gemini()))


async def _stop(live: Any) -> None:
    try:
        await live.close(timeout=5.0)
    except TimeoutError:
        await live.cancel()
    if live.error is not None:
        raise RuntimeError("the live run failed") from live.error


#: What a block runs under: a variant's name to the context that sets it up.
Arrange = Callable[[str], AbstractContextManager[Any]]


async def text_block(
    server: FakeServerProcess, variant: str, size: Size, side: Side, arrange: Arrange = _variant
) -> None:
    with arrange(variant):
        live = await _start(server)
        for i in range(size.warmup_turns):
            await live.say(f"warm up {i}")
        gc.collect()
        cpu, wall = time.process_time(), time.perf_counter()
        for i in range(size.turns):
            answer = await live.say(f"turn number {i}")
            if answer != f"echo: turn number {i}":
                raise RuntimeError(f"unexpected answer {answer!r}")
        cpu, wall = time.process_time() - cpu, time.perf_counter() - wall
        await _stop(live)
    side.cpu_per_turn_ms.append(cpu / size.turns * 1000)
    side.wall_per_turn_ms.append(wall / size.turns * 1000)


async def drained(queue: Any, poll: float = 0.0) -> None:
    """Return once ADK's sender has taken every request off ``queue`` (a
    ``LiveRequestQueue``, which keeps an ``asyncio.Queue`` and offers no wait of its own)."""
    while queue._queue.qsize():  # noqa: ASYNC110 - polling a queue we do not own
        await asyncio.sleep(poll)


async def audio_block(
    server: FakeServerProcess,
    variant: str,
    size: Size,
    chunks: list[bytes],
    side: Side,
    arrange: Arrange = _variant,
) -> None:
    from google.genai import types

    blobs = [types.Blob(data=c, mime_type="audio/pcm;rate=16000") for c in chunks]
    with arrange(variant):
        live = await _start(server)
        queue = live.queue
        for blob in blobs[: size.warmup_chunks]:
            queue.send_realtime(blob)
            await asyncio.sleep(0)
        await drained(queue, 0.001)
        gc.collect()
        cpu, wall = time.process_time(), time.perf_counter()
        for blob in blobs[size.warmup_chunks :]:
            queue.send_realtime(blob)
            await asyncio.sleep(0)
        await drained(queue, 0.001)
        cpu, wall = time.process_time() - cpu, time.perf_counter() - wall
        await _stop(live)
    measured = len(blobs) - size.warmup_chunks
    side.cpu_per_chunk_us.append(cpu / measured * 1e6)
    side.drain_chunks_per_s.append(measured / wall)


async def measure(size: Size) -> dict[str, Side]:
    sides = {variant: Side() for variant in VARIANTS}
    chunks = mic_chunks(size.chunks + size.warmup_chunks)
    async with FakeServerProcess(chunk_delay=0.0, session_limit=None) as server:
        for block in range(size.blocks):
            # alternate, and alternate who goes first, so that drift hits both sides alike
            order = VARIANTS if block % 2 == 0 else tuple(reversed(VARIANTS))
            for variant in order:
                await text_block(server, variant, size, sides[variant])
            for variant in order:
                await audio_block(server, variant, size, chunks, sides[variant])
            print(f"[bench] block {block + 1}/{size.blocks} done", flush=True)
    return sides


FIGURES = (
    ("cpu_per_turn_ms", "CPU per text turn (ms)", "lower"),
    ("wall_per_turn_ms", "wall time per text turn (ms)", "lower"),
    ("cpu_per_chunk_us", "CPU per audio chunk (µs)", "lower"),
    ("drain_chunks_per_s", "queue drain rate (chunks/s)", "higher"),
)


def report(sides: dict[str, Side]) -> tuple[str, list[str], dict[str, Any]]:
    rows: list[list[object]] = []
    verdicts: list[str] = []
    payload: dict[str, Any] = {}
    for attribute, label, better in FIGURES:
        payload[attribute] = {}
        medians = {}
        for variant in VARIANTS:
            values: list[float] = getattr(sides[variant], attribute)
            stats = Stats.of(values)
            medians[variant] = stats.median
            payload[attribute][variant] = {"blocks": values, "stats": stats}
            rows.append([label, variant, stats.n, stats.median, stats.p90, stats.p99, stats.spread])
        ratio = medians["patched"] / medians["stock"]
        payload[attribute]["ratio"] = ratio
        if attribute == "wall_per_turn_ms":
            verdicts.append(f"{label}: patched {ratio:.3f}x stock (no goal)")
        elif better == "lower":
            met = "met" if ratio <= GOAL else "MISSED"
            verdicts.append(f"{label}: patched {ratio:.3f}x stock: goal <= {GOAL}x: {met}")
            tight = TIGHT_GOALS[attribute]
            met = "met" if ratio <= tight else "MISSED"
            verdicts.append(
                f"{label}: patched {ratio:.3f}x stock: goal <= {tight}x on an idle machine: {met}"
            )
        else:
            met = "met" if ratio >= 1 / GOAL else "MISSED"
            verdicts.append(
                f"{label}: patched {ratio:.3f}x stock's rate: goal >= {1 / GOAL:.3f}x: {met}"
            )
    table = markdown_table(
        ["figure (per block)", "client", "blocks", "median", "p90", "p99", "spread (IQR)"], rows
    )
    return table, verdicts, payload


def plot(sides: dict[str, Side], target: Path) -> None:
    plt = pyplot()
    figure, axes = plt.subplots(1, len(FIGURES), figsize=(3.3 * len(FIGURES), 3.8))
    for axis, (attribute, label, _) in zip(axes, FIGURES, strict=True):
        data = [getattr(sides[v], attribute) for v in VARIANTS]
        axis.boxplot(data)
        axis.set_xticks(range(1, len(VARIANTS) + 1), list(VARIANTS))
        axis.set_title(label, fontsize=9)
        axis.set_ylim(bottom=0)
        axis.grid(axis="y", alpha=0.3)
    figure.suptitle("Steady state, per block (patched and stock alternating)", fontsize=10)
    save_figure(figure, target)


def main() -> int:
    options = parser(__doc__.splitlines()[0])
    options.add_argument(
        "--accounting",
        action="store_true",
        help="measure what counting tokens and answer times costs (counting against not)",
    )
    args = options.parse_args()
    logging.basicConfig(level=logging.ERROR)
    results, plots = output_dirs(args.quick)
    if args.accounting:
        import _steady_accounting

        title, table, verdicts, payload = _steady_accounting.run(args.quick)
        print_report(title, table, verdicts)
        write_result(results, f"{NAME}_accounting", {**payload, "verdicts": verdicts})
        return 0
    size = QUICK if args.quick else FULL
    load_before = os.getloadavg()
    sides = asyncio.run(measure(size))
    table, verdicts, payload = report(sides)
    title = (
        f"Steady state ({size.blocks} blocks per side: {size.blocks * size.turns} text turns, "
        f"{size.blocks * size.chunks} audio chunks)"
    )
    load = (load_before[0], os.getloadavg()[0])
    verdicts.append(
        f"load average {load[0]:.1f} before, {load[1]:.1f} after (an idle machine is below 1)"
    )
    print_report(title, table, verdicts)
    write_result(
        results,
        NAME,
        {
            "blocks": size.blocks,
            "turns_per_block": size.turns,
            "chunks_per_block": size.chunks,
            "figures": payload,
            "verdicts": verdicts,
        },
    )
    plot(sides, plots / f"{NAME}.png")
    for attribute, label, _ in FIGURES:
        for variant in VARIANTS:
            values = getattr(sides[variant], attribute)
            check(len(values) == size.blocks, f"{label}: {variant} missed a block")
            check(finite(*values) and all(v > 0 for v in values), f"{label}: implausible")
    return 0


if __name__ == "__main__":
    sys.exit(main())
