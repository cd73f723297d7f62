"""Keep resumption handles and API keys out of logs, at every level.

Several ADK releases log ``sessionResumptionUpdate`` messages whole (2.13 at INFO), and a
handle is a credential: whoever holds it can resume the conversation. :class:`HandleRedactor`
is a ``logging.Filter`` that rewrites ``new_handle='...'`` in those records to a short prefix.
websockets logs whole handshakes at DEBUG (the ``x-goog-api-key`` header, a ``?key=`` in the
path) and the frames that carry handles: :class:`CredentialRedactor` cuts both.

What is recognised, quoted or not, JSON-escaped or not: a handle after ``new_handle``,
``newHandle`` or ``handle`` followed by ``=`` or ``:`` (``new_handle='...'``,
``"newHandle": "..."``, ``newHandle\\": \\"...`` inside a JSON string); a key or token
after ``x-goog-api-key``, ``authorization`` (with ``Bearer``), ``api_key``/``api-key``/
``apikey``, ``access_token``, a quoted ``"key"`` or a query's ``key=``
(``api_key='AIza...'``, ``{'x-goog-api-key': 'AIza...'}``, ``"key": "AIza..."``); and a
Google API key anywhere (``AIza`` and 35 more characters).
"""

from __future__ import annotations

import logging
import re
from collections.abc import Iterable

from ..resumption.handles import redact

_HANDLE = re.compile(
    r"""((?:new_handle|newHandle|handle)\\?['"]?\s*[=:]\s*\\?['"])([^'"\\]+)(\\?['"])"""
)


def redact_text(text: str) -> str:
    """``text`` with every ``new_handle='...'`` value cut to :func:`~..resumption.handles.redact`
    form."""
    return _HANDLE.sub(lambda m: m.group(1) + redact(m.group(2)) + m.group(3), text)


_KEY = re.compile(
    r"""((?:x-goog-api-key|authorization|api[_-]?key|access[_-]?token|(?<=[?&'"])key)"""
    r"""\\?['"]?\s*[:=]\s*\\?['"]?(?:bearer\s+)?)([^\s&'",\\]+)""",
    re.IGNORECASE,
)
#: A Google API key, wherever it stands (the form of every key the Gemini API issues).
_GOOGLE_KEY = re.compile(r"AIza[0-9A-Za-z_\-]{35}")


def redact_credentials(text: str) -> str:
    """``text`` with handles (:func:`redact_text`) and API keys or tokens (a header
    ``x-goog-api-key: ...``, ``Authorization: Bearer ...``, a query ``key=...``, their quoted
    forms, a bare Google API key) cut to their first 4 characters."""
    text = _KEY.sub(lambda m: m.group(1) + m.group(2)[:4] + "…", redact_text(text))
    return _GOOGLE_KEY.sub("AIza…", text)


class CredentialRedactor(logging.Filter):
    """A filter that applies :func:`redact_credentials` to every record it sees (for loggers
    that print whole handshakes, such as the ``websockets`` ones of the fault proxy)."""

    def filter(self, record: logging.LogRecord) -> bool:
        record.msg = redact_credentials(record.getMessage())
        record.args = None
        return True


class HandleRedactor(logging.Filter):
    """A filter that redacts handles in records of the loggers it is attached to."""

    def __init__(self) -> None:
        super().__init__()
        self._attached: list[logging.Logger] = []

    def filter(self, record: logging.LogRecord) -> bool:
        if "andle" in str(record.msg) or any("andle" in str(arg) for arg in _args(record)):
            record.msg = redact_text(record.getMessage())
            record.args = None
        return True

    def attach(self, names: Iterable[str]) -> None:
        for name in names:
            target = logging.getLogger(name)
            target.addFilter(self)
            self._attached.append(target)

    def detach(self) -> None:
        for target in self._attached:
            target.removeFilter(self)
        self._attached.clear()


def _args(record: logging.LogRecord) -> tuple[object, ...]:
    args = record.args
    if args is None:
        return ()
    if isinstance(args, tuple):
        return args
    return (args,)


_process_redactor: HandleRedactor | None = None
#: The logger websockets' client connections use unless given another: google-genai's live
#: socket logs its whole handshake there at DEBUG (the ``x-goog-api-key`` header).
WEBSOCKETS_CLIENT_LOGGER = "websockets.client"
_process_credential_redactor: CredentialRedactor | None = None


def protect_adk_loggers(names: Iterable[str], prefix: str = "google_adk") -> None:
    """Attach one process-wide :class:`HandleRedactor` to ADK's loggers, and one
    :class:`CredentialRedactor` to :data:`WEBSOCKETS_CLIENT_LOGGER` (idempotent).

    Covers ``names`` and every logger under ``prefix`` that exists by then (ADK creates one
    per module at import, and several print whole requests or events, handles included).
    Called on each resumable live run, whichever entry point started it, and left in place:
    it only ever shortens handles and keys.
    """
    global _process_redactor, _process_credential_redactor
    if _process_redactor is None:
        _process_redactor = HandleRedactor()
    if _process_credential_redactor is None:
        _process_credential_redactor = CredentialRedactor()
        logging.getLogger(WEBSOCKETS_CLIENT_LOGGER).addFilter(_process_credential_redactor)
    known = {logger.name for logger in _process_redactor._attached}
    wanted = set(names) | {
        name
        for name in logging.Logger.manager.loggerDict
        if name == prefix or name.startswith(prefix + ".")
    }
    _process_redactor.attach(sorted(wanted - known))
