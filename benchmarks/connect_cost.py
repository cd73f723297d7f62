"""Connect cost: the client's CPU per live connect, websockets' proxy lookup on and off.

A bare google-genai client (``client.aio.live.connect``: TCP, TLS, the websocket handshake,
the setup and its ``setupComplete``, then close) connects again and again to the fake server,
which runs in a process of its own (``_scale_server.py``), so the CPU measured
(``time.process_time``) is the client's only. Blocks alternate: websockets' default (it looks
a proxy up in the environment on every connect) and ``proxy=None`` (what
``adk_live_resume.connect_params`` passes while no proxy is configured), so a noisy
neighbour hits both alike. Reported: CPU per connect for each, their ratio, and the lookup
alone (``urllib.request.getproxies()`` and ``proxy_bypass()``, what websockets calls).

    python3 scripts/dev.py bench connect_cost            # 10 blocks of 40 connects each way
    python3 scripts/dev.py bench connect_cost --quick    # 2 blocks of 5
"""

from __future__ import annotations

import asyncio
import os
import statistics
import time
import urllib.request
from typing import Any

import _scale_server
from common import check, finite, machine, markdown_table, output_dirs, parser, write_result


def lookup_cpu(samples: int = 2000) -> float:
    """CPU seconds of websockets' per-connect proxy lookup (no proxy configured)."""
    began = time.process_time()
    for _ in range(samples):
        urllib.request.getproxies()
        urllib.request.proxy_bypass("127.0.0.1:443")
    return (time.process_time() - began) / samples


async def measure(hello: dict[str, Any], blocks: int, per_block: int) -> dict[str, list[float]]:
    os.environ["SSL_CERT_FILE"] = hello["cert_path"]
    from google import genai
    from google.genai import types

    from adk_live_resume import genai_compat

    client = genai.Client(
        api_key="bench", http_options=types.HttpOptions(base_url=hello["base_url"])
    )
    default = genai_compat.genai_ws_connect()

    def direct(*args: Any, **kwargs: Any) -> Any:
        return default(*args, **{**kwargs, "proxy": None})

    config = types.LiveConnectConfig(session_resumption=types.SessionResumptionConfig())
    cpu: dict[str, list[float]] = {"lookup": [], "no lookup": []}

    async def once() -> None:
        async with client.aio.live.connect(model="gemini-live-2.5-flash", config=config):
            pass

    await once()  # warm up (imports, the first handshake)
    for block in range(blocks):
        order = ("lookup", "no lookup") if block % 2 == 0 else ("no lookup", "lookup")
        for kind in order:
            genai_compat.set_genai_ws_connect(default if kind == "lookup" else direct)
            began = time.process_time()
            for _ in range(per_block):
                await once()
            cpu[kind].append((time.process_time() - began) / per_block)
    genai_compat.set_genai_ws_connect(default)
    return cpu


def main() -> None:
    options = parser(__doc__ or "")
    args = options.parse_args()
    blocks, per_block = (2, 5) if args.quick else (10, 40)
    results_dir, _ = output_dirs(args.quick)
    with _scale_server.running() as hello:
        cpu = asyncio.run(measure(hello, blocks, per_block))
    lookup = lookup_cpu()
    with_lookup = statistics.median(cpu["lookup"])
    without = statistics.median(cpu["no lookup"])
    rows = [
        ["websockets' default (proxy looked up)", f"{1000 * with_lookup:.2f}", "1.00"],
        ["proxy=None", f"{1000 * without:.2f}", f"{without / with_lookup:.3f}"],
        ["the lookup alone", f"{1000 * lookup:.3f}", f"{lookup / with_lookup:.3f}"],
    ]
    print(markdown_table(["connect", "CPU per connect (ms, median of blocks)", "ratio"], rows))
    about = machine()
    print(
        f"\n{blocks} blocks of {per_block} connects each way, interleaved; load "
        f"{os.getloadavg()[0]:.1f}; {about['cpus']} CPUs, Python {about['python']}, "
        f"google-genai {about['google-genai']}, websockets {about['websockets']}"
    )
    check(finite(with_lookup, without, lookup), "a figure is not a number")
    write_result(results_dir, "connect_cost", {"cpu": cpu, "lookup": lookup})


if __name__ == "__main__":
    main()
