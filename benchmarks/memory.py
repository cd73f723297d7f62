"""Memory: an hour of continuous microphone audio, time-scaled, patched against stock.

Four runs, one after the other in this order: patched and stock without new handles (the
server issues none while the microphone streams), then patched and stock with a new handle
after every second of audio the model spends idle. Each run is a fresh ``Runner.run_live``
(real SDK, real TLS websocket) against the fake server in a process of its own (so that the
traced memory is the client's alone; ``session_limit`` off, since an hour of audio without
compression is past the service's 15 minutes). A run streams 180,000 chunks of 20 ms (16 kHz
PCM16): quiet room noise with a 1.2 s utterance every 30 s, pushed as fast as ADK's sender
takes them (the producer waits while more than 50 requests are queued, so the queue's backlog
is not what is measured).

``tracemalloc`` traces the run from just before it starts; every 20 s of audio the garbage is
collected and the traced memory sampled. Figures: memory after the 5-minute warm-up, at the
end, growth (end - after warm-up) and the peak. Goal (issue 10): flat, and at most 1 MiB above
stock at the end.
"""

from __future__ import annotations

import asyncio
import gc
import logging
import sys
import tracemalloc
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from _fake_process import FakeServerProcess
from common import (
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
from steady_state import drained

NAME = "memory"
CHUNK_BYTES = 640
CHUNK_SECONDS = 0.02
MIB = 1024 * 1024
RUNS = (
    ("patched", False),
    ("stock", False),
    ("patched", True),
    ("stock", True),
)
BACKLOG = 50


@dataclass(frozen=True)
class Size:
    chunks: int
    sample_every: int  # chunks
    warmup: int  # chunks
    #: Chunks of the untraced run of each kind that comes first (lazy imports, caches).
    first_run: int = 1_500  # one utterance cycle (30 s)


FULL = Size(chunks=180_000, sample_every=1_000, warmup=15_000)  # 1 h, every 20 s, 5 min
QUICK = Size(chunks=2_000, sample_every=250, warmup=500, first_run=300)  # 40 s


@dataclass
class Trace:
    variant: str
    handles: bool
    audio_s: list[float] = field(default_factory=list)
    traced_mib: list[float] = field(default_factory=list)
    peak_mib: float = 0.0
    handles_received: int = 0
    #: Growth from the end of the warm-up to the end, by where it was allocated (MiB).
    growth_by_package: dict[str, float] = field(default_factory=dict)

    @property
    def label(self) -> str:
        return f"{self.variant}, {'new handles' if self.handles else 'no new handles'}"

    def at(self, audio_seconds: float) -> float:
        """Traced memory at the first sample at or after ``audio_seconds`` of audio."""
        for when, value in zip(self.audio_s, self.traced_mib, strict=True):
            if when >= audio_seconds:
                return value
        return self.traced_mib[-1]


PACKAGES = (
    ("adk_live_resume", "adk_live_resume/"),
    ("google-adk", "google/adk/"),
    ("google-genai", "google/genai/"),
    ("pydantic", "pydantic"),
    ("websockets", "websockets/"),
)


def package_of(filename: str) -> str:
    """Where an allocation was made: one of :data:`PACKAGES`, "stdlib" or "other"."""
    for name, marker in PACKAGES:
        if marker in filename:
            return name
    if "site-packages" not in filename and "/lib/python3" in filename:
        return "stdlib"
    return "other"


def by_package(snapshot: tracemalloc.Snapshot) -> dict[str, float]:
    """Traced memory (MiB) of ``snapshot`` by the package whose code allocated it."""
    sizes: dict[str, float] = {}
    for stat in snapshot.statistics("filename"):
        name = package_of(stat.traceback[0].filename)
        sizes[name] = sizes.get(name, 0.0) + stat.size / MIB
    return sizes


def microphone() -> list[bytes]:
    """One cycle of the microphone (30 s): an utterance, then quiet room noise."""
    from adk_live_resume.testing import silence_pcm, speech_pcm

    cycle = speech_pcm("what is the weather like", seconds=1.2) + silence_pcm(28.8, noise=40)
    return [cycle[i : i + CHUNK_BYTES] for i in range(0, len(cycle), CHUNK_BYTES)]


async def one_run(size: Size, variant: str, handles: bool, *, traced: bool = True) -> Trace:
    from google.adk.agents import LlmAgent
    from google.genai import types

    from adk_live_resume.testing import HandleSchedule, LiveDriver, patch_installed, patch_removed

    schedule = (
        {"on_turn_complete": True, "every_audio_ms": 1000}
        if handles
        else {"on_turn_complete": False}
    )
    trace = Trace(variant, handles)
    cycle = [types.Blob(data=c, mime_type="audio/pcm;rate=16000") for c in microphone()]
    assert HandleSchedule(**schedule)  # the settings are valid before a process is started
    server = FakeServerProcess(chunk_delay=0.0, session_limit=None, handle_schedule=schedule)
    warm: dict[str, float] = {}
    async with server:
        gc.collect()
        if traced:
            tracemalloc.start()
        try:
            with patch_installed() if variant == "patched" else patch_removed():
                live = await LiveDriver.start(LlmAgent(name="bench", model=server.gemini()))
                queue = live.queue
                for number in range(size.chunks):
                    queue.send_realtime(cycle[number % len(cycle)])
                    if queue._queue.qsize() > BACKLOG:
                        await drained(queue, 0.001)
                    else:
                        await asyncio.sleep(0)
                    if (number + 1) % size.sample_every == 0:
                        await drained(queue, 0.001)
                        gc.collect()
                        trace.audio_s.append((number + 1) * CHUNK_SECONDS)
                        trace.traced_mib.append(tracemalloc.get_traced_memory()[0] / MIB)
                        if traced and number + 1 == size.warmup:
                            warm = by_package(tracemalloc.take_snapshot())
                        if (number + 1) % (size.sample_every * 30) == 0:
                            print(f"[bench] {trace.label}: {number + 1} chunks", flush=True)
                trace.peak_mib = tracemalloc.get_traced_memory()[1] / MIB if traced else 0.0
                if traced:
                    end = by_package(tracemalloc.take_snapshot())
                    trace.growth_by_package = {
                        name: end.get(name, 0.0) - warm.get(name, 0.0)
                        for name in sorted(set(end) | set(warm))
                    }
                trace.handles_received = sum(
                    1 for e in live.events if getattr(e, "live_session_resumption_update", None)
                )
                try:
                    await live.close(timeout=5.0)
                except TimeoutError:
                    await live.cancel()
                if live.error is not None:
                    raise RuntimeError(f"{trace.label}: the live run failed") from live.error
        finally:
            tracemalloc.stop()
    if traced:
        print(f"[bench] {trace.label}: done", flush=True)
    return trace


def report(traces: list[Trace], size: Size) -> tuple[str, list[str], dict[str, Any]]:
    warm = size.warmup * CHUNK_SECONDS
    rows: list[list[object]] = []
    payload: dict[str, Any] = {}
    for trace in traces:
        after_warmup, final = trace.at(warm), trace.traced_mib[-1]
        rows.append(
            [
                trace.label,
                len(trace.traced_mib),
                after_warmup,
                final,
                final - after_warmup,
                trace.peak_mib,
                trace.handles_received,
            ]
        )
        payload[trace.label] = {
            "audio_s": trace.audio_s,
            "traced_mib": trace.traced_mib,
            "after_warmup_mib": after_warmup,
            "final_mib": final,
            "growth_mib": final - after_warmup,
            "peak_mib": trace.peak_mib,
            "handles_received": trace.handles_received,
            "growth_by_package_mib": trace.growth_by_package,
        }
    verdicts: list[str] = []
    for handles in (False, True):
        mine = next(t for t in traces if t.variant == "patched" and t.handles == handles)
        stock = next(t for t in traces if t.variant == "stock" and t.handles == handles)
        above = mine.traced_mib[-1] - stock.traced_mib[-1]
        growth = mine.traced_mib[-1] - mine.at(warm)
        stock_growth = stock.traced_mib[-1] - stock.at(warm)
        kind = "new handles" if handles else "no new handles"
        verdicts.append(
            f"{kind}: patched ends {above:+.2f} MiB from stock: goal <= +1 MiB: "
            f"{'met' if above <= 1.0 else 'MISSED'}"
        )
        verdicts.append(
            f"{kind}: patched grew {growth:+.2f} MiB after the warm-up, stock "
            f"{stock_growth:+.2f} MiB: goal flat (at most stock's growth + 1 MiB): "
            f"{'met' if growth <= max(stock_growth, 0.0) + 1.0 else 'MISSED'}"
        )
    table = markdown_table(
        [
            "run",
            "samples",
            "after warm-up MiB",
            "end MiB",
            "growth MiB",
            "peak MiB",
            "handle updates seen",
        ],
        rows,
    )
    columns = [name for name, _ in PACKAGES] + ["stdlib", "other"]
    origins = markdown_table(
        ["growth after the warm-up (MiB), allocated by", *columns],
        [[t.label, *(t.growth_by_package.get(c, 0.0) for c in columns)] for t in traces],
    )
    return f"{table}\n\n{origins}", verdicts, payload


def plot(traces: list[Trace], size: Size, target: Path) -> None:
    plt = pyplot()
    figure, axis = plt.subplots(figsize=(8, 4.2))
    styles = {"patched": "-", "stock": "--"}
    for trace in traces:
        axis.plot(
            [s / 60 for s in trace.audio_s],
            trace.traced_mib,
            styles[trace.variant],
            label=trace.label,
            linewidth=1.2,
        )
    axis.axvline(size.warmup * CHUNK_SECONDS / 60, color="grey", linewidth=0.8, linestyle=":")
    axis.set_xlabel("microphone audio streamed (minutes, time-scaled)")
    axis.set_ylabel("traced memory of the run (MiB)")
    axis.set_ylim(bottom=0)
    axis.grid(alpha=0.3)
    axis.legend(fontsize=8)
    axis.set_title("Memory over an hour of microphone audio (dotted: end of warm-up)", fontsize=10)
    save_figure(figure, target)


async def measure(size: Size) -> list[Trace]:
    # A short untraced run of each kind first: what the first run in a process allocates
    # once (lazy imports, schema and client caches) is no run's memory.
    warmup = Size(chunks=size.first_run, sample_every=size.first_run, warmup=0)
    for variant, handles in RUNS:
        await one_run(warmup, variant, handles, traced=False)
    return [await one_run(size, variant, handles) for variant, handles in RUNS]


def main() -> int:
    args = parser(__doc__.splitlines()[0]).parse_args()
    logging.basicConfig(level=logging.ERROR)
    size = QUICK if args.quick else FULL
    results, plots = output_dirs(args.quick)
    traces = asyncio.run(measure(size))
    table, verdicts, payload = report(traces, size)
    minutes = size.chunks * CHUNK_SECONDS / 60
    title = f"Memory ({size.chunks} chunks of 20 ms: {minutes:.0f} min of audio per run)"
    print_report(title, table, verdicts)
    write_result(results, NAME, {"chunks": size.chunks, "runs": payload, "verdicts": verdicts})
    plot(traces, size, plots / f"{NAME}.png")
    for trace in traces:
        check(len(trace.traced_mib) == size.chunks // size.sample_every, f"{trace.label}: gaps")
        check(
            finite(*trace.traced_mib) and all(0 < v < 1024 for v in trace.traced_mib),
            f"{trace.label}: implausible traced memory",
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
