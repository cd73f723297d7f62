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
  (:mod:`adk_live_resume.run_timeline`).

Metrics (meter ``adk_live_resume``):

* ``adk_live_resume.reconnects`` (counter, ``{reconnect}``), attribute
  ``adk_live_resume.reason`` = ``drop`` / ``go_away`` / ``restart``;
* ``adk_live_resume.reconnect.gap`` (histogram, ``ms``): from losing a connection to the next
  one being ready, same attribute;
* ``adk_live_resume.gave_up`` (counter, ``{run}``), attribute ``adk_live_resume.error``.

A failure inside OpenTelemetry is logged at DEBUG and never reaches the conversation.
OpenTelemetry is imported at the first signal, not with this module, so that
``import adk_live_resume`` stays light.
"""

from __future__ import annotations

import logging
from typing import Any

logger = logging.getLogger("adk_live_resume")

_SCOPE = "adk_live_resume"
_instruments: dict[int, tuple[Any, Any, Any]] = {}


def _meter_instruments() -> tuple[Any, Any, Any]:
    """(reconnects counter, gap histogram, gave-up counter) of the current meter provider."""
    from opentelemetry import metrics

    provider = metrics.get_meter_provider()
    found = _instruments.get(id(provider))
    if found is None:
        meter = metrics.get_meter(_SCOPE)
        found = (
            meter.create_counter(
                "adk_live_resume.reconnects",
                unit="{reconnect}",
                description="Live connections re-established, by reason",
            ),
            meter.create_histogram(
                "adk_live_resume.reconnect.gap",
                unit="ms",
                description="Time from losing a live connection to the next one being ready",
            ),
            meter.create_counter(
                "adk_live_resume.gave_up",
                unit="{run}",
                description="Live runs ended because the connection could not be restored",
            ),
        )
        _instruments.clear()  # one provider at a time; a new one replaces the old
        _instruments[id(provider)] = found
    return found


def record_reconnect(attributes: dict[str, Any]) -> None:
    """A span event and the reconnect metrics for one completed reconnect."""
    try:
        from opentelemetry import trace

        trace.get_current_span().add_event("adk_live_resume.reconnect", attributes)
        reconnects, gap, _ = _meter_instruments()
        labels = {"adk_live_resume.reason": attributes["adk_live_resume.reason"]}
        reconnects.add(1, labels)
        gap.record(attributes["adk_live_resume.gap_ms"], labels)
    except Exception:  # never break a conversation over telemetry
        logger.debug("OpenTelemetry reconnect signal failed", exc_info=True)


def record_gave_up(error: BaseException, cause: str) -> None:
    """A span event and the gave-up counter for a run that ended without its connection."""
    try:
        from opentelemetry import trace

        name = type(error).__name__
        trace.get_current_span().add_event(
            "adk_live_resume.gave_up",
            {"adk_live_resume.error": name, "adk_live_resume.cause": cause},
        )
        _, _, gave_up = _meter_instruments()
        gave_up.add(1, {"adk_live_resume.error": name})
    except Exception:
        logger.debug("OpenTelemetry gave-up signal failed", exc_info=True)


def record_run_started(attributes: dict[str, float]) -> None:
    """A span event with the durations of the phases of a run's start."""
    try:
        from opentelemetry import trace

        trace.get_current_span().add_event("adk_live_resume.run_started", attributes)
    except Exception:
        logger.debug("OpenTelemetry run-start signal failed", exc_info=True)
