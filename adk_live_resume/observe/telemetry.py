"""OpenTelemetry signals of reconnects, through the OpenTelemetry API only.

The library never configures a provider: with none set (the default), every call here is a
cheap no-op. Configure OpenTelemetry as usual (ADK's own tracing, ``opentelemetry-instrument``,
or an SDK ``MeterProvider`` / ``TracerProvider``) and these appear:

Span events, on the span current where the live run executes (ADK's invocation span when ADK
tracing is on):

* ``adk_live_resume.reconnect``: attributes ``adk_live_resume.reason``, ``.attempt``,
  ``.gap_ms``, ``.state_restored``, ``.cause``, ``.connection_number``, ``.replayed_messages``,
  ``.dropped_audio_ms`` (voiced user audio, i.e. speech, that left the replay window and was
  not replayed), ``.dropped_silence_ms`` (unvoiced audio that left it: nothing said lost),
  ``.dropped_frames`` (video and image frames that left the frame window); ``.stall`` (what
  was seen, for a stall recovery) and ``.failure_class`` (how the end was read, e.g.
  ``quota`` or ``poisoned_handle``: ``ReconnectInfo.failure_class``) when set;
* ``adk_live_resume.gave_up``: attributes ``adk_live_resume.error`` (the exception class) and
  ``adk_live_resume.cause``;
* ``adk_live_resume.run_started``: how long the start of the run took, once its first answer
  is complete (or it ended before one): ``adk_live_resume.request_ms`` (ADK's request
  rebuild), ``.handle_ms`` (the stored handle and its catch-up), ``.connect_ms``,
  ``.restore_ms``, ``.answer_ms``, each from the end of the one before
  (:mod:`adk_live_resume.observe.run_timeline`).

Metrics (meter ``adk_live_resume``):

* ``adk_live_resume.reconnects`` (counter, ``{reconnect}``), attribute
  ``adk_live_resume.reason`` = ``drop`` / ``go_away`` / ``restart``;
* ``adk_live_resume.reconnect.gap`` (histogram, ``ms``): from losing a connection to the next
  one being ready, same attribute;
* ``adk_live_resume.gave_up`` (counter, ``{run}``), attribute ``adk_live_resume.error``;
* ``adk_live_resume.tokens.prompt``, ``.response``, ``.cached``, ``.thoughts`` and
  ``.tool_use_prompt`` (counters, ``{token}``): what the service counted
  (``usageMetadata``, summed as sent: per turn), attributes ``adk_live_resume.model`` and
  ``adk_live_resume.modality`` (``TEXT``, ``AUDIO``, ... where the service broke the count
  down, else ``MODALITY_UNSPECIFIED``), added when each connection ends;
* ``adk_live_resume.answer.first_output`` and ``adk_live_resume.answer.duration``
  (histograms, ``ms``): per answer, from the user turn to the first model output, and from
  there to the answer's end; attribute ``adk_live_resume.model``; with the span event
  ``adk_live_resume.answer`` (``.first_output_ms``, ``.duration_ms``, ``.characters``,
  ``.interrupted``, ``.connection_number``), stamped with the time the answer ended.

A failure inside OpenTelemetry is logged at DEBUG and never reaches the conversation.
OpenTelemetry is imported at the first signal, not with this module, so that
``import adk_live_resume`` stays light.
"""

from __future__ import annotations

import logging
from typing import Any

logger = logging.getLogger("adk_live_resume")

_SCOPE = "adk_live_resume"
#: Instruments of the current meter provider, by ``(kind, name)``.
_instruments: dict[tuple[str, str], Any] = {}
_provider: list[int] = []


def _instrument(kind: str, name: str, unit: str, description: str) -> Any:
    """The counter (``kind`` "counter") or histogram ("histogram") ``name`` of the current
    meter provider, made at its first use."""
    from opentelemetry import metrics

    provider = id(metrics.get_meter_provider())
    if _provider != [provider]:  # one provider at a time; a new one replaces the old
        _instruments.clear()
        _provider[:] = [provider]
    found = _instruments.get((kind, name))
    if found is None:
        meter = metrics.get_meter(_SCOPE)
        make = meter.create_counter if kind == "counter" else meter.create_histogram
        found = _instruments[(kind, name)] = make(name, unit=unit, description=description)
    return found


def count(
    name: str, value: float, attributes: dict[str, Any], *, unit: str, description: str
) -> None:
    """Add ``value`` to the counter ``name`` (made at its first use with ``unit`` and
    ``description``)."""
    try:
        _instrument("counter", name, unit, description).add(value, attributes)
    except Exception:  # never break a conversation over telemetry
        logger.debug("OpenTelemetry counter %s failed", name, exc_info=True)


def measure(
    name: str, value: float, attributes: dict[str, Any], *, unit: str, description: str
) -> None:
    """Record ``value`` in the histogram ``name`` (made at its first use)."""
    try:
        _instrument("histogram", name, unit, description).record(value, attributes)
    except Exception:
        logger.debug("OpenTelemetry histogram %s failed", name, exc_info=True)


def event(name: str, attributes: dict[str, Any], *, timestamp_ns: int | None = None) -> None:
    """A span event ``name`` on the current span (stamped ``timestamp_ns``, default now)."""
    try:
        from opentelemetry import trace

        trace.get_current_span().add_event(name, attributes, timestamp=timestamp_ns)
    except Exception:
        logger.debug("OpenTelemetry span event %s failed", name, exc_info=True)


def record_reconnect(attributes: dict[str, Any]) -> None:
    """A span event and the reconnect metrics for one completed reconnect."""
    event("adk_live_resume.reconnect", attributes)
    labels = {"adk_live_resume.reason": attributes["adk_live_resume.reason"]}
    count(
        "adk_live_resume.reconnects",
        1,
        labels,
        unit="{reconnect}",
        description="Live connections re-established, by reason",
    )
    measure(
        "adk_live_resume.reconnect.gap",
        attributes["adk_live_resume.gap_ms"],
        labels,
        unit="ms",
        description="Time from losing a live connection to the next one being ready",
    )


def record_gave_up(error: BaseException, cause: str) -> None:
    """A span event and the gave-up counter for a run that ended without its connection."""
    name = type(error).__name__
    event(
        "adk_live_resume.gave_up", {"adk_live_resume.error": name, "adk_live_resume.cause": cause}
    )
    count(
        "adk_live_resume.gave_up",
        1,
        {"adk_live_resume.error": name},
        unit="{run}",
        description="Live runs ended because the connection could not be restored",
    )


def record_run_started(attributes: dict[str, float]) -> None:
    """A span event with the durations of the phases of a run's start."""
    event("adk_live_resume.run_started", dict(attributes))
