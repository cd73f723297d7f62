"""The OpenTelemetry SDK's in-memory metric reader and span exporter, as this process's providers.

OpenTelemetry lets a process set its meter and tracer providers once; every test module that
reads signals back (through the SDK, as an app's exporter would) shares these, whichever runs
first on a worker.
"""

from __future__ import annotations

from typing import Any

import pytest
from opentelemetry import metrics, trace
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import InMemoryMetricReader
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

READER = InMemoryMetricReader()
SPANS = InMemorySpanExporter()
METER_PROVIDER = MeterProvider(metric_readers=[READER])
TRACER_PROVIDER = TracerProvider()
TRACER_PROVIDER.add_span_processor(SimpleSpanProcessor(SPANS))


def providers() -> tuple[InMemoryMetricReader, InMemorySpanExporter]:
    """Set the providers (once per process) and return the reader and the exporter; skip, saying
    why, if another provider was set earlier in this process."""
    if not isinstance(metrics.get_meter_provider(), MeterProvider):
        metrics.set_meter_provider(METER_PROVIDER)
    if not isinstance(trace.get_tracer_provider(), TracerProvider):
        trace.set_tracer_provider(TRACER_PROVIDER)
    if metrics.get_meter_provider() is not METER_PROVIDER:
        pytest.skip("another OpenTelemetry meter provider was set earlier in this process")
    if trace.get_tracer_provider() is not TRACER_PROVIDER:
        pytest.skip("another OpenTelemetry tracer provider was set earlier in this process")
    return READER, SPANS


def points(reader: InMemoryMetricReader, name: str) -> list[Any]:
    """The data points of metric ``name`` the reader collects now."""
    data = reader.get_metrics_data()
    found: list[Any] = []
    for resource in data.resource_metrics if data else []:
        for scope in resource.scope_metrics:
            for metric in scope.metrics:
                if metric.name == name:
                    found.extend(metric.data.data_points)
    return found


def total(reader: InMemoryMetricReader, name: str, **labels: str) -> float:
    """The sum of counter ``name`` over the points whose ``adk_live_resume.<label>`` match."""
    return sum(
        p.value
        for p in points(reader, name)
        if all(p.attributes.get(f"adk_live_resume.{k}") == v for k, v in labels.items())
    )
