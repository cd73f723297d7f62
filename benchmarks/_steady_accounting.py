"""``bench steady_state --accounting``: what counting tokens and answer times costs per turn.

The patched loop, twice in one run: each connection counting (:mod:`adk_live_resume.
connection_figures`: every ``usageMetadata``, every user turn, every piece of model output and
every answer's end, then the report at the connection's end) and not counting (the switch
:func:`adk_live_resume.conversation.connection_figures.off`, which only this benchmark uses). Blocks
alternate (and who goes first alternates too), each a fresh ``Runner.run_live`` against the
fake server in a process of its own, which sends ``usageMetadata`` with every answer as the
field shows. Text turns and microphone chunks, as in the steady state; the verdict is the
median over block pairs of (counting / not counting), so that a machine whose load drifts
hits both halves of a pair alike. The load average is recorded before and after.

A second figure needs no A/B: the counting work of one text turn, replayed in a tight loop
on the same objects the loop makes (the answer's three chunks, its ``turnComplete`` with its
``usageMetadata``, the user turn), timed with ``time.process_time``; it says what the ratio
should show, with no noise.
"""

from __future__ import annotations

import asyncio
import contextlib
import gc
import os
import time
from collections.abc import Iterator
from typing import Any

from _fake_process import FakeServerProcess
from common import Stats, check, finite, markdown_table, percentile
from steady_state import Side, Size, audio_block, mic_chunks, text_block

GOAL = 1.02
VARIANTS = ("counting", "not counting")


FULL = Size(blocks=16, turns=200, chunks=1000)
QUICK = Size(blocks=2, turns=30, chunks=200)


@contextlib.contextmanager
def _counting(variant: str) -> Iterator[None]:
    from adk_live_resume.conversation import connection_figures
    from adk_live_resume.testing import patch_installed

    with patch_installed():
        if variant == "counting":
            yield
        else:
            with connection_figures.off():
                yield


async def measure(size: Size) -> dict[str, Side]:
    sides = {variant: Side() for variant in VARIANTS}
    chunks = mic_chunks(size.chunks + size.warmup_chunks)
    async with FakeServerProcess(chunk_delay=0.0, session_limit=None) as server:
        for block in range(size.blocks):
            order = VARIANTS if block % 2 == 0 else tuple(reversed(VARIANTS))
            for variant in order:
                await text_block(server, variant, size, sides[variant], _counting)
            for variant in order:
                await audio_block(server, variant, size, chunks, sides[variant], _counting)
            print(f"[bench] block {block + 1}/{size.blocks} done", flush=True)
    return sides


def direct_us_per_turn(repeats: int = 20000) -> float:
    """The counting work of one text turn, replayed ``repeats`` times (µs of CPU each)."""
    from google.genai import types

    from adk_live_resume.conversation.connection_figures import ConnectionFigures

    answer = types.LiveServerMessage.model_validate(
        {
            "serverContent": {"turnComplete": True},
            "usageMetadata": {
                "promptTokenCount": 400,
                "responseTokenCount": 4,
                "totalTokenCount": 404,
                "promptTokensDetails": [{"modality": "TEXT", "tokenCount": 400}],
                "responseTokensDetails": [{"modality": "TEXT", "tokenCount": 4}],
            },
        }
    )
    figures = ConnectionFigures()
    gc.collect()
    cpu = time.process_time()
    for i in range(repeats):
        now = float(i)
        figures.user_turn(now)
        for _ in range(3):  # the answer's chunks
            figures.output(now + 0.001, 5)
        if answer.usage_metadata is not None:
            figures.usage(answer.usage_metadata)
        figures.answer_ended(now + 0.002)
        if i % 1000 == 999:
            figures = ConnectionFigures()  # (a connection's answers are kept until its end)
    return (time.process_time() - cpu) / repeats * 1e6


def paired(counting: list[float], not_counting: list[float]) -> list[float]:
    """Each block's counting figure over the not-counting block run beside it."""
    return [a / b for a, b in zip(counting, not_counting, strict=True)]


def run(quick: bool) -> tuple[str, str, list[str], dict[str, Any]]:
    """Measure; return the title, the table, the verdicts and the result's payload."""
    size = QUICK if quick else FULL
    load_before = os.getloadavg()
    sides = asyncio.run(measure(size))
    load_after = os.getloadavg()
    direct = direct_us_per_turn(2000 if quick else 20000)
    rows: list[list[object]] = []
    payload: dict[str, Any] = {
        "load_average_before": load_before,
        "load_average_after": load_after,
        "direct_counting_us_per_turn": direct,
    }
    verdicts: list[str] = []
    for attribute, label in (
        ("cpu_per_turn_ms", "CPU per text turn (ms)"),
        ("cpu_per_chunk_us", "CPU per audio chunk (µs)"),
    ):
        payload[attribute] = {}
        for variant in VARIANTS:
            values = getattr(sides[variant], attribute)
            stats = Stats.of(values)
            payload[attribute][variant] = {"blocks": values, "stats": stats}
            rows.append([label, variant, stats.n, stats.median, stats.p90, stats.spread])
            check(len(values) == size.blocks, f"{label}: {variant} missed a block")
            check(finite(*values) and all(v > 0 for v in values), f"{label}: implausible")
        ratios = sorted(
            paired(getattr(sides["counting"], attribute), getattr(sides["not counting"], attribute))
        )
        ratio = percentile(ratios, 50)
        payload[attribute]["paired_ratios"] = ratios
        payload[attribute]["ratio"] = ratio
        met = "met" if ratio <= GOAL else "MISSED"
        verdicts.append(
            f"{label}: counting {ratio:.4f}x not counting (median of {len(ratios)} pairs,"
            f" IQR {percentile(ratios, 25):.4f}-{percentile(ratios, 75):.4f}):"
            f" goal <= {GOAL}x: {met}"
        )
    turn_ms = Stats.of(sides["not counting"].cpu_per_turn_ms).median
    verdicts.append(
        f"counting alone, replayed: {direct:.1f} µs of CPU per text turn"
        f" ({direct / 10 / turn_ms:.2f}% of a turn's {turn_ms:.2f} ms)"
    )
    verdicts.append(
        "load average (1, 5, 15 min): before "
        + ", ".join(f"{x:.2f}" for x in load_before)
        + "; after "
        + ", ".join(f"{x:.2f}" for x in load_after)
    )
    table = markdown_table(
        ["figure (per block)", "loop", "blocks", "median", "p90", "spread (IQR)"], rows
    )
    title = (
        f"Steady state, counting against not counting ({size.blocks} blocks per side:"
        f" {size.blocks * size.turns} text turns, {size.blocks * size.chunks} audio chunks)"
    )
    return title, table, verdicts, payload
