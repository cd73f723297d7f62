"""Fault proxy overhead: what relaying through :class:`FaultProxy` adds per message.

No faults. The bare google-genai SDK talks to the fake server (in a process of its own)
either directly or through a fault proxy running as the launcher's ``--inject`` runs it (its
own event loop in a thread of this process). Direct and proxied blocks alternate (direct,
proxy, direct, ...), each block a fresh connection and ``turns`` text turns one after the
other (send, read the whole answer and the handle after it). Figures per block: wall time per
turn, and the time the proxy adds per relayed message: (proxied - direct median turn time) /
messages per turn (the client's one plus every server message of the turn). No goal: a
ratio to read, against direct in the same run.
"""

from __future__ import annotations

import asyncio
import logging
import sys
import time
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
    write_result,
)

NAME = "proxy_overhead"
VARIANTS = ("direct", "proxy")
FULL = (8, 200)  # blocks per side, turns per block
QUICK = (2, 20)


async def _block(address: Any, turns: int) -> tuple[float, float]:
    """(seconds per turn, messages per turn) of one connection of ``turns`` turns."""
    from google.genai import types

    from adk_live_resume.fault_proxy.client_config import genai_client

    config = types.LiveConnectConfig(
        response_modalities=[types.Modality.TEXT],
        session_resumption=types.SessionResumptionConfig(),
    )
    client = genai_client(address)
    messages = 0
    async with client.aio.live.connect(model="gemini-live-fake", config=config) as session:
        started = time.perf_counter()
        for number in range(turns):
            await session.send_client_content(
                turns=types.Content(role="user", parts=[types.Part(text=f"turn {number}")]),
                turn_complete=True,
            )
            messages += 1
            handle = False
            while not handle:
                async for message in session.receive():
                    messages += 1
                    update = message.session_resumption_update
                    if update is not None and update.new_handle:
                        handle = True
                        break
        elapsed = time.perf_counter() - started
    return elapsed / turns, messages / turns


async def measure(blocks: int, turns: int) -> dict[str, dict[str, list[float]]]:
    from adk_live_resume.fault_proxy.proxy import FaultProxy
    from adk_live_resume.launch.inject_launch import InjectedProxy

    sides: dict[str, dict[str, list[float]]] = {
        v: {"turn_ms": [], "messages": []} for v in VARIANTS
    }
    async with FakeServerProcess(chunk_delay=0.0, session_limit=None) as server:
        running = InjectedProxy(FaultProxy(server))
        running.start()
        try:
            proxied = _Address(running.proxy.base_url, running.proxy.cert_path)
            await _block(server, 5)  # warm-up, both ways
            await _block(proxied, 5)
            for _ in range(blocks):
                for variant in VARIANTS:
                    address = server if variant == "direct" else proxied
                    per_turn, messages = await _block(address, turns)
                    sides[variant]["turn_ms"].append(per_turn * 1000)
                    sides[variant]["messages"].append(messages)
        finally:
            running.stop()
    return sides


class _Address:
    def __init__(self, base_url: str, cert_path: str) -> None:
        self.base_url = base_url
        self.cert_path = cert_path


def main() -> int:
    args = parser(__doc__.splitlines()[0]).parse_args()
    logging.basicConfig(level=logging.ERROR)
    blocks, turns = QUICK if args.quick else FULL
    results, _ = output_dirs(args.quick)
    sides = asyncio.run(measure(blocks, turns))
    direct = Stats.of(sides["direct"]["turn_ms"])
    proxy = Stats.of(sides["proxy"]["turn_ms"])
    messages = Stats.of(sides["proxy"]["messages"]).median
    added_us = (proxy.median - direct.median) * 1000 / messages
    ratio = proxy.median / direct.median
    rows = [
        [variant, stats.n, stats.median, stats.p90, stats.spread]
        for variant, stats in (("direct", direct), ("proxy", proxy))
    ]
    table = markdown_table(["client", "blocks", "median ms/turn", "p90", "spread (IQR)"], rows)
    verdicts = [
        f"through the proxy: {ratio:.3f}x direct per turn; about {added_us:.0f} us added per "
        f"relayed message ({messages:.1f} messages per turn); no goal",
    ]
    print_report(
        f"Fault proxy overhead ({blocks} blocks of {turns} turns per side)", table, verdicts
    )
    write_result(
        results,
        NAME,
        {
            "blocks": blocks,
            "turns_per_block": turns,
            "figures": sides,
            "ratio": ratio,
            "added_us_per_message": added_us,
            "verdicts": verdicts,
        },
    )
    for variant in VARIANTS:
        values = sides[variant]["turn_ms"]
        check(len(values) == blocks, f"{variant} missed a block")
        check(finite(*values) and all(v > 0 for v in values), f"{variant}: implausible")
    check(finite(ratio, added_us) and ratio > 0, "the ratio is implausible")
    return 0


if __name__ == "__main__":
    sys.exit(main())
