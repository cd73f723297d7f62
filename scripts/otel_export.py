"""Print what OpenTelemetry exports of a short live conversation, for docs/observability.md.

Run in the project's environment (``.venv/bin/python scripts/otel_export.py``): a fresh
process sets the SDK's ``InMemoryMetricReader`` as its meter provider, runs "one", "two
words", a drop and "three" through the patched ``Runner.run_live`` against the fake Gemini
Live server, and prints the SDK's own JSON (``MetricsData.to_json()``) of the tokens and
answer metrics of the ``adk_live_resume`` scope, number lists on one line.
"""

from __future__ import annotations

import asyncio
import json
import re
from typing import Any

KEPT = {
    "adk_live_resume.tokens.prompt",
    "adk_live_resume.tokens.response",
    "adk_live_resume.answer.first_output",
    "adk_live_resume.answer.duration",
}


async def conversation() -> None:
    from google.adk.agents import LlmAgent

    import adk_live_resume
    from adk_live_resume.testing import FakeLiveServer, LiveDriver

    adk_live_resume.install()
    async with FakeLiveServer(chunk_delay=0.0) as server:
        agent = LlmAgent(name="assistant", model=server.gemini())
        async with await LiveDriver.start(agent) as live:
            await live.say("one")
            await live.say("two words")
            await server.restart()
            await live.say("three")
            await live.close()


def kept(export: dict[str, Any]) -> dict[str, Any]:
    """The export with the kept metrics of the ``adk_live_resume`` scope only."""
    for resource in export["resource_metrics"]:
        attributes = resource["resource"]["attributes"]
        resource["resource"]["attributes"] = {
            k: v for k, v in attributes.items() if k in ("telemetry.sdk.name", "service.name")
        }
        resource["scope_metrics"] = [
            s for s in resource["scope_metrics"] if s["scope"]["name"] == "adk_live_resume"
        ]
        for scope in resource["scope_metrics"]:
            scope["metrics"] = [m for m in scope["metrics"] if m["name"] in KEPT]
    return export


def main() -> None:
    from opentelemetry import metrics
    from opentelemetry.sdk.metrics import MeterProvider
    from opentelemetry.sdk.metrics.export import InMemoryMetricReader

    reader = InMemoryMetricReader()
    metrics.set_meter_provider(MeterProvider(metric_readers=[reader]))
    asyncio.run(conversation())
    data = reader.get_metrics_data()
    assert data is not None
    text = json.dumps(kept(json.loads(data.to_json())), indent=2)
    print(
        re.sub(
            r"\[\s*([-0-9.,\s]+?)\s*\]",
            lambda m: "[" + ", ".join(x.strip() for x in m.group(1).split(",")) + "]",
            text,
        )
    )


if __name__ == "__main__":
    main()
