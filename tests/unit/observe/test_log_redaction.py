"""Handles and keys are cut in every form a log record may print them (pure), and the app's
own websockets client logger carries the redactor once a resumable run has started."""

from __future__ import annotations

import json
import logging

import pytest

from adk_live_resume.observe import log_redaction
from adk_live_resume.observe.log_redaction import (
    CredentialRedactor,
    redact_credentials,
    redact_text,
)

KEY = "AIzaSyA-1234567890abcdefghijklmnopqrstu"
HANDLE = "Cj4KJDk1ZGVhZWE4LTk0NTQtNGVlNi1hZWFkLWQ2ZjM1NGE3ZjQ1ZhIWCg"


@pytest.mark.parametrize(
    "text",
    [
        f"> x-goog-api-key: {KEY}",
        f"> GET /ws/x?alt=1&key={KEY} HTTP/1.1",
        f"Client(api_key='{KEY}')",
        f'Client(api_key="{KEY}")',
        f"headers={{'x-goog-api-key': '{KEY}'}}",
        f'{{"x-goog-api-key": "{KEY}"}}',
        f'{{"key": "{KEY}", "other": 1}}',
        f"{{'key': '{KEY}'}}",
        json.dumps({"request": json.dumps({"key": KEY})}),  # escaped JSON inside JSON
        f"GOOGLE_API_KEY={KEY}",
        f"the key {KEY} was used",  # bare
        f"Authorization: Bearer {KEY}",
        f"{{'Authorization': 'Bearer {KEY}'}}",
        f"access_token={KEY}&x=1",
    ],
)
def test_a_key_is_cut_to_its_first_characters_in_every_form(text: str) -> None:
    redacted = redact_credentials(text)
    assert KEY not in redacted and KEY[8:] not in redacted
    assert "AIza" in redacted  # a short prefix stays, to tell keys apart


@pytest.mark.parametrize(
    "text",
    [
        f"new_handle='{HANDLE}' resumable=True",
        f'new_handle="{HANDLE}"',
        f'{{"newHandle": "{HANDLE}", "resumable": true}}',
        f'{{"newHandle":"{HANDLE}"}}',
        f"{{'handle': '{HANDLE}'}}",
        json.dumps({"message": json.dumps({"newHandle": HANDLE})}),  # newHandle\": \"...
        json.dumps(json.dumps({"setup": {"sessionResumption": {"handle": HANDLE}}})),
    ],
)
def test_a_handle_is_cut_in_every_form(text: str) -> None:
    for redacted in (redact_text(text), redact_credentials(text)):
        assert HANDLE not in redacted and HANDLE[:6] in redacted


def test_text_without_credentials_is_left_as_it_is() -> None:
    text = '{"serverContent": {"turnComplete": true}} keyboard=1 monkey: "x"'
    assert redact_credentials(text) == text


def test_the_credential_redactor_rewrites_a_record_with_arguments(
    caplog: pytest.LogCaptureFixture,
) -> None:
    log = logging.getLogger("test.credential_redaction")
    redactor = CredentialRedactor()
    log.addFilter(redactor)
    try:
        with caplog.at_level(logging.DEBUG, logger="test.credential_redaction"):
            log.debug("> %s: %s", "x-goog-api-key", KEY)
            log.debug("%s", {"x-goog-api-key": KEY, "newHandle": HANDLE})
    finally:
        log.removeFilter(redactor)
    assert KEY not in caplog.text and HANDLE not in caplog.text
    assert "x-goog-api-key: AIza…" in caplog.text


def test_a_live_run_protects_the_websockets_client_logger() -> None:
    log_redaction.protect_adk_loggers(["google_adk.any"])
    client_logger = logging.getLogger(log_redaction.WEBSOCKETS_CLIENT_LOGGER)
    redactors = [f for f in client_logger.filters if isinstance(f, CredentialRedactor)]
    assert len(redactors) == 1
    log_redaction.protect_adk_loggers(["google_adk.any"])  # idempotent
    assert [f for f in client_logger.filters if isinstance(f, CredentialRedactor)] == redactors
