"""Connect cost: the client's CPU per live connect, websockets' proxy lookup on and off, and
with the TLS session of the connection before reused.

A bare google-genai client (``client.aio.live.connect``: TCP, TLS, the websocket handshake,
the setup and its ``setupComplete``, then close) connects again and again to the fake server,
which runs in a process of its own (``_scale_server.py``), so the CPU measured
(``time.process_time``) is the client's only. Blocks alternate: websockets' default (it looks
a proxy up in the environment on every connect) and ``proxy=None`` (what
``adk_live_resume.shell.connect_params`` passes while no proxy is configured), so a noisy
neighbour hits both alike. A third kind, also interleaved, reuses the TLS session of the
connection before (the fake server's ``ssl`` context issues TLS 1.3 session tickets, as
Google's front ends do): every connect resumes the session (``session_reused``, counted) on
the client's one context, so the certificate is not verified again. Reported: CPU per
connect for each, their ratios, and the lookup alone (``urllib.request.getproxies()`` and
``proxy_bypass()``, what websockets calls).

    python3 scripts/dev.py bench connect_cost            # 10 blocks of 40 connects each way
    python3 scripts/dev.py bench connect_cost --quick    # 2 blocks of 5
"""

from __future__ import annotations

import asyncio
import os
import ssl
import statistics
import time
import urllib.request
from typing import Any

import _scale_server
from common import check, finite, machine, markdown_table, output_dirs, parser, write_result


class _ReusingSSLObject(ssl.SSLObject):
    """An ``SSLObject`` that resumes the last TLS session its context saw for the host
    (asyncio's ``wrap_bio`` passes no session of its own)."""

    last: dict[tuple[int, str | None], ssl.SSLSession] = {}

    @classmethod
    def _create(  # type: ignore[override]
        cls,
        incoming: ssl.MemoryBIO,
        outgoing: ssl.MemoryBIO,
        server_side: bool = False,
        server_hostname: str | None = None,
        session: ssl.SSLSession | None = None,
        context: ssl.SSLContext | None = None,
    ) -> ssl.SSLObject:
        if session is None and not server_side:
            session = cls.last.get((id(context), server_hostname))
        return super()._create(  # type: ignore[misc,no-any-return]
            incoming,
            outgoing,
            server_side=server_side,
            server_hostname=server_hostname,
            session=session,
            context=context,
        )


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

    from adk_live_resume.compat import genai_compat

    client = genai.Client(
        api_key="bench", http_options=types.HttpOptions(base_url=hello["base_url"])
    )
    default = genai_compat.genai_ws_connect()

    def direct(*args: Any, **kwargs: Any) -> Any:
        return default(*args, **{**kwargs, "proxy": None})

    reused = [0, 0]  # connects, of which resumed a TLS session

    class Reusing:
        """``ws_connect`` with ``proxy=None`` that notes each connection's TLS session."""

        def __init__(self, *args: Any, **kwargs: Any) -> None:
            self._connect = default(*args, **{**kwargs, "proxy": None})

        async def __aenter__(self) -> Any:
            self._connection = connection = await self._connect
            tls = connection.transport.get_extra_info("ssl_object")
            reused[0] += 1
            reused[1] += tls.session_reused
            _ReusingSSLObject.last[(id(tls.context), tls.server_hostname)] = tls.session
            return connection

        async def __aexit__(self, *exc: object) -> None:
            await self._connection.close()

    context: ssl.SSLContext = client._api_client._websocket_ssl_ctx["ssl"]
    config = types.LiveConnectConfig(session_resumption=types.SessionResumptionConfig())
    cpu: dict[str, list[float]] = {"lookup": [], "no lookup": [], "tls session reused": []}

    async def once() -> None:
        async with client.aio.live.connect(model="gemini-live-2.5-flash", config=config):
            pass

    await once()  # warm up (imports, the first handshake)
    kinds = list(cpu)
    for block in range(blocks):
        for kind in kinds[block % 3 :] + kinds[: block % 3]:  # rotated: noise hits all alike
            reusing = kind == "tls session reused"
            context.sslobject_class = _ReusingSSLObject if reusing else ssl.SSLObject
            genai_compat.set_genai_ws_connect(
                default if kind == "lookup" else Reusing if reusing else direct
            )
            began = time.process_time()
            for _ in range(per_block):
                await once()
            cpu[kind].append((time.process_time() - began) / per_block)
    genai_compat.set_genai_ws_connect(default)
    context.sslobject_class = ssl.SSLObject
    cpu["reused"] = [float(n) for n in reused]
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
    tls = statistics.median(cpu["tls session reused"])
    connects, resumed = cpu["reused"]
    rows = [
        ["websockets' default (proxy looked up)", f"{1000 * with_lookup:.2f}", "1.00"],
        ["proxy=None", f"{1000 * without:.2f}", f"{without / with_lookup:.3f}"],
        [
            f"proxy=None, TLS session reused ({resumed:.0f} of {connects:.0f} resumed)",
            f"{1000 * tls:.2f}",
            f"{tls / with_lookup:.3f} ({tls / without:.3f} of proxy=None)",
        ],
        ["the lookup alone", f"{1000 * lookup:.3f}", f"{lookup / with_lookup:.3f}"],
    ]
    print(markdown_table(["connect", "CPU per connect (ms, median of blocks)", "ratio"], rows))
    about = machine()
    print(
        f"\n{blocks} blocks of {per_block} connects each way, interleaved; load "
        f"{os.getloadavg()[0]:.1f}; {about['cpus']} CPUs, Python {about['python']}, "
        f"google-genai {about['google-genai']}, websockets {about['websockets']}"
    )
    check(finite(with_lookup, without, tls, lookup), "a figure is not a number")
    write_result(results_dir, "connect_cost", {"cpu": cpu, "lookup": lookup})


if __name__ == "__main__":
    main()
