"""What the fault proxy asks its upstream for: the one host it dials, the path, the headers.

The upstream is fixed when the proxy is made (:class:`Upstream`: scheme, host and port, and a
base path); a client of the proxy chooses only the path and query under it. Its request
target must be a path in origin form (RFC 9112 section 3.2.1): one ``/`` first, then the
characters RFC 3986 allows in a path and a query, ``%`` only before two hex digits. Refused
(:func:`request_target` raises ``ValueError``, the proxy answers HTTP 400): an absolute URI
(``wss://elsewhere/...``), a network-path reference (``//elsewhere/...``), anything that does
not begin with ``/`` (``:x@elsewhere/...``, ``.elsewhere/...``, which would turn the
configured host into userinfo or a subdomain if appended to it), a fragment, a backslash,
spaces, control and non-ASCII characters. :meth:`Upstream.uri` builds the address from the
fixed parts and checks that its host is still the configured one.

:func:`upstream_request` gives the headers to dial with: the client's, without those the
websocket handshake owns, and with the proxy's own key (when it has one) in place of the
client's.

Pure: no I/O.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from urllib.parse import quote, urlsplit, urlunsplit

from websockets.datastructures import Headers

__all__ = ["Upstream", "loggable_path", "request_target", "upstream_request"]

# RFC 3986: unreserved / pct-encoded / sub-delims / ":" / "@" in a path segment; a query also
# takes "/" and "?". A percent sign is checked apart (two hex digits after it).
_PATH = re.compile(r"/[A-Za-z0-9\-._~!$&'()*+,;=:@/%]*\Z")
_QUERY = re.compile(r"[A-Za-z0-9\-._~!$&'()*+,;=:@/?%]*\Z")
_PERCENT = re.compile(r"%(?![0-9A-Fa-f]{2})")

#: What the refusal says a request target must be.
TARGET_FORM = (
    "a path such as /ws/google.ai.generativelanguage.v1beta.GenerativeService."
    "BidiGenerateContent?key=...: one '/' first, no scheme, host, userinfo or fragment"
)

# Request headers the websocket handshake owns; every other header goes to the upstream.
_HOP_BY_HOP = frozenset(
    {
        "host",
        "upgrade",
        "connection",
        "sec-websocket-key",
        "sec-websocket-version",
        "sec-websocket-extensions",
        "sec-websocket-accept",
        "content-length",
        "transfer-encoding",
    }
)


def request_target(target: str) -> str:
    """``target`` (a client's request target) when it is a path in origin form; else
    ``ValueError`` saying what it must be (and never quoting the target's query)."""
    path, sep, query = target.partition("?")
    problem = ""
    if not path.startswith("/"):
        problem = "it does not begin with '/'"
    elif path.startswith("//"):
        problem = "it begins with '//' (a host, not a path)"
    elif not _PATH.match(path) or (sep and not _QUERY.match(query)):
        problem = "it holds a character a path or query may not (RFC 3986)"
    elif _PERCENT.search(target):
        problem = "a '%' is not followed by two hex digits"
    if problem:
        raise ValueError(f"the request target must be {TARGET_FORM}; {problem}")
    return target


@dataclass(frozen=True)
class Upstream:
    """The one place the proxy dials: ``scheme://netloc`` and a base path, fixed at start."""

    scheme: str
    netloc: str
    base_path: str

    @classmethod
    def from_url(cls, url: str) -> Upstream:
        """The upstream at ``url`` (``https://...``, ``wss://...``, or plain ``http``/``ws``
        for a local fake); ``ValueError`` for anything else."""
        parts = urlsplit(url)
        scheme = {"https": "wss", "wss": "wss", "http": "ws", "ws": "ws"}.get(parts.scheme)
        if scheme is None or not parts.hostname or parts.query or parts.fragment:
            raise ValueError(
                f"upstream must be an https:// or wss:// URL such as "
                f"https://generativelanguage.googleapis.com, got {url!r}"
            )
        return cls(scheme, parts.netloc, parts.path.rstrip("/"))

    @property
    def url(self) -> str:
        """``scheme://netloc/base``: what the proxy dials under."""
        return f"{self.scheme}://{self.netloc}{self.base_path}"

    def uri(self, target: str) -> str:
        """The address to dial for the client's request ``target`` (checked with
        :func:`request_target`): always this upstream's host, the target under its base
        path."""
        path, _, query = request_target(target).partition("?")
        uri = urlunsplit((self.scheme, self.netloc, self.base_path + path, query, ""))
        if urlsplit(uri).netloc != self.netloc:  # (cannot happen for a checked target)
            raise ValueError(f"the request target must be {TARGET_FORM}")
        return uri


def upstream_request(
    path: str, headers: list[tuple[str, str]], api_key: str | None
) -> tuple[str, Headers]:
    """The path (or whole address) and headers to open the upstream with: the client's,
    without the handshake's own headers, and with ``api_key`` (when given) in place of the
    client's key, in the ``x-goog-api-key`` header and in a ``key=`` query parameter alike."""
    kept = [(n, v) for n, v in headers if n.lower() not in _HOP_BY_HOP]
    if api_key is None:
        return path, Headers(kept)
    kept = [(n, api_key if n.lower() == "x-goog-api-key" else v) for n, v in kept]
    base, sep, query = path.partition("?")
    if sep:
        parts = [
            f"key={quote(api_key, safe='')}" if part.startswith("key=") else part
            for part in query.split("&")
        ]
        path = base + "?" + "&".join(parts)
    return path, Headers(kept)


def loggable_path(path: str) -> str:
    """The request path without its query (it may carry ``key=`` or ``access_token=``)."""
    return path.split("?", 1)[0]
