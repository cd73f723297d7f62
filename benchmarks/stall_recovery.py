"""Stall recovery: from a stalled user turn to its answer, per stall shape.

Each sample is a fresh patched run (a real ``Runner.run_live`` with ``adk_live_resume``
installed, the real google-genai SDK, a real TLS websocket on 127.0.0.1, the in-process fake
server): one turn answered, a ``Fault.stall`` armed on the connection, a second turn sent
(the stalled one); the sample is the time from that send to the end of its answer, which
comes after the loop noticed the stall and recovered: a resume with the turn replayed for
silence, a fresh session with the conversation rebuilt for a turn answered with nothing.
Shapes:

* ``silent``: no answer at all; noticed ``stall_timeout`` after the turn;
* ``empty`` and ``rejected``: ``turnComplete`` with no content (``RESPONSE_REJECTED``);
  noticed when that turn ends (``degenerate_turns=1`` here; the default 3 waits for three);
* ``quiet_audio``: an answer whose audio is near silence, then ``turnComplete``; noticed when
  that turn ends, as the empty ones. Its runs answer in audio (``response_modalities``
  AUDIO, with output transcription, which the fake sends only with voiced answers), where a
  voice app meets it: the answer is longer to stream than text, which the figure beyond
  both shows.

Beside each sample, the run's reported reconnect gap (``ReconnectInfo.gap_ms``: from the
stall's detection to the next connection ready, the turn replayed or the history sent). The
figure to read: time to answer minus (``stall_timeout`` for silence, 0 for the other shapes)
plus the reconnect gap, i.e. what the detection and the answer cost beyond the timer and the
reconnect. ``stall_timeout`` is 1 s here (the default 15 s would add 14 s to each silent
sample and change nothing else).
"""

from __future__ import annotations

import asyncio
import logging
import sys
from typing import Any

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

NAME = "stall_recovery"
SHAPES = ("silent", "empty", "rejected", "quiet_audio")
STALL_TIMEOUT = 1.0
FULL = 20
QUICK = 2


async def _sample(shape: str) -> tuple[float, float]:
    """One run: seconds from the stalled turn's send to its answer, and the gap (ms)."""
    from google.adk.agents import LlmAgent
    from google.adk.agents.run_config import RunConfig
    from google.genai import types

    import adk_live_resume
    from adk_live_resume import ReconnectInfo, ResumePolicy
    from adk_live_resume.testing import FakeLiveServer, Fault, LiveDriver

    seen: list[ReconnectInfo] = []
    remove = adk_live_resume.on_reconnect(seen.append)
    adk_live_resume.install(ResumePolicy(stall_timeout=STALL_TIMEOUT, degenerate_turns=1))
    try:
        async with FakeLiveServer() as server:
            agent = LlmAgent(name="assistant", model=server.gemini())
            config = None
            if shape == "quiet_audio":  # (an audio session: see the module)
                config = RunConfig(
                    response_modalities=[types.Modality.AUDIO],
                    session_resumption=types.SessionResumptionConfig(),
                    output_audio_transcription=types.AudioTranscriptionConfig(),
                )
            async with await LiveDriver.start(agent, run_config=config) as live:
                assert await live.say("one") == "echo: one"
                server.script(Fault.stall(shape), connection=1)  # type: ignore[arg-type]
                loop = asyncio.get_running_loop()
                sent = loop.time()
                assert await live.say("two", timeout=30) == "echo: two"
                took = loop.time() - sent
                await live.close()
    finally:
        remove()
        adk_live_resume.uninstall()
    assert [r.reason for r in seen] == ["stall"], seen
    return took, seen[0].gap_ms


async def measure(samples: int) -> dict[str, dict[str, list[float]]]:
    """Interleaved rounds: one sample of each shape per round."""
    figures: dict[str, dict[str, list[float]]] = {
        shape: {"to_answer_s": [], "gap_ms": []} for shape in SHAPES
    }
    for _ in range(samples):
        for shape in SHAPES:
            took, gap = await _sample(shape)
            figures[shape]["to_answer_s"].append(took)
            figures[shape]["gap_ms"].append(gap)
    return figures


def main() -> int:
    args = parser(__doc__.splitlines()[0]).parse_args()
    logging.basicConfig(level=logging.ERROR)
    from adk_live_resume import set_testing

    set_testing(True)  # (no backoff: a stall's resume goes at once in any case)
    samples = QUICK if args.quick else FULL
    results, _ = output_dirs(args.quick)
    figures = asyncio.run(measure(samples))
    rows: list[list[Any]] = []
    verdicts: list[str] = []
    for shape in SHAPES:
        answer = Stats.of(figures[shape]["to_answer_s"])
        gap = Stats.of(figures[shape]["gap_ms"])
        timer = STALL_TIMEOUT if shape == "silent" else 0.0
        beyond = (answer.median - timer) * 1000 - gap.median
        rows.append([shape, answer.n, answer.median, answer.p90, timer, gap.median, beyond])
        verdicts.append(
            f"{shape}: answered {answer.median:.3f} s after the stalled turn (median); the timer"
            f" {timer:g} s, the reconnect gap {gap.median:.0f} ms, {beyond:.0f} ms beyond both"
        )
    table = markdown_table(
        [
            "shape",
            "samples",
            "median s to answer",
            "p90",
            "timer s",
            "median reconnect gap ms",
            "median ms beyond both",
        ],
        rows,
    )
    print_report(f"Stall recovery ({samples} samples per shape)", table, verdicts)
    write_result(
        results,
        NAME,
        {
            "samples": samples,
            "stall_timeout": STALL_TIMEOUT,
            "figures": figures,
            "verdicts": verdicts,
        },
    )
    for shape in SHAPES:
        values = figures[shape]["to_answer_s"] + figures[shape]["gap_ms"]
        check(len(figures[shape]["to_answer_s"]) == samples, f"{shape} missed a sample")
        check(finite(*values) and all(v >= 0 for v in values), f"{shape}: implausible")
    silent = Stats.of(figures["silent"]["to_answer_s"]).median
    check(silent >= STALL_TIMEOUT, "a silent stall was answered before its timer could fire")
    return 0


if __name__ == "__main__":
    sys.exit(main())
