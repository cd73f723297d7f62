"""Handle rules, close-code classification, duration parsing, log redaction (pure)."""

from __future__ import annotations

import datetime
import logging

import pytest
from google.genai import errors as genai_errors
from websockets.datastructures import Headers
from websockets.exceptions import ConnectionClosedError, ConnectionClosedOK, InvalidStatus
from websockets.frames import Close
from websockets.http11 import Response

from adk_live_resume.compat.tap import parse_time_left
from adk_live_resume.observe.log_redaction import HandleRedactor, redact_text
from adk_live_resume.resumption.handles import ResumptionState, redact
from adk_live_resume.rules.errors import Drop, classify, retry_after_seconds


def test_update_without_handle_never_erases_the_good_one() -> None:
    state = ResumptionState()
    assert state.observe(new_handle="h1", resumable=True, last_consumed_index=None, now=1.0)
    assert not state.observe(new_handle=None, resumable=False, last_consumed_index=None, now=2.0)
    assert state.handle == "h1" and not state.resumable_now
    # a handle that comes with resumable=false is not a good one either
    assert not state.observe(new_handle="h2", resumable=False, last_consumed_index=3, now=3.0)
    assert state.handle == "h1"
    assert state.observe(new_handle="h3", resumable=True, last_consumed_index=4, now=5.0)
    assert (state.handle, state.last_consumed_index, state.resumable_now) == ("h3", 4, True)
    assert state.age(now=7.0) == 2.0 and state.handles_received == 2


def test_starting_with_a_stored_handle_and_forget() -> None:
    state = ResumptionState.starting_with("stored")
    assert state.handle == "stored" and state.resumable_now
    state.forget()
    assert state.handle is None and state.age(now=1.0) is None
    assert ResumptionState.starting_with("").handle is None


def test_redact_keeps_a_short_prefix_only() -> None:
    secret = "CiQ4ZTY3YjM1Ny1hYjQ3LTQ0ZjktYjhkZS1iNzNiZjE4ZWM3ZTU"
    shown = redact(secret)
    assert secret not in shown and shown.startswith(secret[:6]) and str(len(secret)) in shown
    assert redact(None) == "<none>"


def _closed(error: type[Exception], code: int | None) -> Exception:
    frame = Close(code, "why") if code is not None else None
    return error(frame, frame, True if frame is not None else None)


@pytest.mark.parametrize(
    ("exc", "expected"),
    [
        (_closed(ConnectionClosedOK, 1000), Drop("closed", 1000, "why")),
        (_closed(ConnectionClosedError, 1011), Drop("closed", 1011, "why")),
        (
            ConnectionClosedError(None, None),
            Drop("closed", 1006, "abnormal closure (no close frame)"),
        ),
        (
            genai_errors.APIError(1008, {"message": "bad handle"}),
            Drop("closed", 1008, "bad handle"),
        ),
    ],
)
def test_classify_close_codes(exc: Exception, expected: Drop) -> None:
    assert classify(exc) == expected


def test_classify_connect_failures_and_non_connection_errors() -> None:
    refused = classify(ConnectionRefusedError(111, "refused"))
    assert refused is not None and refused.kind == "connect_failed"
    timed_out = classify(TimeoutError())
    assert timed_out is not None and timed_out.kind == "connect_failed"
    assert classify(genai_errors.APIError(403, {"message": "denied"})) is None
    assert classify(ValueError("tool bug")) is None
    assert classify(KeyError("x")) is None


def _refused(status: int, **headers: str) -> InvalidStatus:
    """What websockets' connect raises (and google-genai lets through) for a refused upgrade."""
    return InvalidStatus(Response(status, "refused", Headers(headers), b""))


def test_a_refused_handshake_keeps_its_status_and_retry_after() -> None:
    busy = classify(_refused(429, **{"Retry-After": "7"}))
    assert busy == Drop(
        "connect_failed",
        None,
        "HTTP 429 during the websocket handshake (Retry-After: 7 s)",
        status=429,
        retry_after=7.0,
    )
    unavailable = classify(_refused(503))
    assert unavailable is not None and unavailable.kind == "connect_failed"
    assert (unavailable.status, unavailable.retry_after) == (503, None)
    denied = classify(_refused(403, **{"Retry-After": "7"}))
    assert denied is not None and (denied.kind, denied.status) == ("rejected", 403)
    dated = classify(
        _refused(
            429,
            **{
                "Retry-After": "Fri, 27 Nov 2026 06:00:30 GMT",
                "Date": "Fri, 27 Nov 2026 06:00:00 GMT",
            },
        )
    )
    assert dated is not None and dated.retry_after == 30.0


@pytest.mark.parametrize(
    ("value", "seconds"),
    [
        ("120", 120.0),
        (" 2 ", 2.0),
        ("1.5", 1.5),
        ("0", 0.0),
        ("-3", None),
        ("inf", None),
        ("soon", None),
        ("", None),
        (None, None),
        ("Fri, 27 Nov 2026 06:00:10 GMT", 10.0),
        ("Fri, 27 Nov 2026 05:00:00 GMT", 0.0),  # in the past
    ],
)
def test_retry_after_takes_seconds_or_an_http_date(
    value: str | None, seconds: float | None
) -> None:
    now = datetime.datetime(2026, 11, 27, 6, 0, 0, tzinfo=datetime.UTC).timestamp()
    assert retry_after_seconds(value, now=now) == seconds


@pytest.mark.parametrize(
    ("value", "seconds"),
    [
        ("57s", 57.0),
        ("0.600s", 0.6),
        (" 3 s", 3.0),
        (12, 12.0),
        (datetime.timedelta(seconds=50), 50.0),
        (None, None),
        ("soon", None),
    ],
)
def test_parse_time_left(value: object, seconds: float | None) -> None:
    assert parse_time_left(value) == seconds


def test_handle_redactor_rewrites_records(caplog: pytest.LogCaptureFixture) -> None:
    secret = "Zm9vYmFyYmF6cXV4MTIzNDU2Nzg5MA"
    assert secret not in redact_text(f"update new_handle='{secret}' resumable=True")
    log = logging.getLogger("test.redaction")
    redactor = HandleRedactor()
    redactor.attach(["test.redaction"])
    try:
        with caplog.at_level(logging.INFO, logger="test.redaction"):
            log.info(
                "Update session resumption handle: %s.", f"new_handle='{secret}' resumable=True"
            )
            log.info("Plain message %s", 42)
    finally:
        redactor.detach()
    assert (
        secret not in caplog.text
        and secret[:6] in caplog.text
        and "Plain message 42" in caplog.text
    )
