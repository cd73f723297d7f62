"""Connect parameters worked out once per live run, not once per connection: the proxy.

websockets (15 and later) looks a proxy up on every ``connect`` it is not told one for (its
default ``proxy=True``): ``urllib.request.getproxies()`` and ``proxy_bypass()`` each read the
whole environment (and, on macOS and Windows, the system's settings). A herd of reconnects
pays that once per attempt. A live run asks once, when it starts (:func:`direct`); while no
proxy is configured, every connection it opens passes ``proxy=None`` (:func:`connect_kwargs`),
which is what websockets' own lookup would have decided: with no proxies at all it uses none.

Guarantees:

* ``proxy=None`` is added only when ``urllib.request.getproxies()`` returned no proxy when the
  run started, only if the caller passed no ``proxy`` of its own, and only if the installed
  websockets' ``connect`` takes ``proxy``; anything else is passed through unchanged.
* A configured proxy (any ``*_proxy`` environment variable, or the system's settings where
  urllib reads them) keeps working as before: websockets looks it up per connect.
* A proxy configured after a run started applies to the runs that start after it.
* TLS settings, headers and the uri are never touched (certificate verification is exactly
  google-genai's).

It is applied where every connect of a run passes through: the early-dial hook on
google-genai's ``ws_connect`` (:mod:`.early_dial`), so with ``early_dial=False`` websockets
looks the proxy up per connect as it always did.
"""

from __future__ import annotations

import functools
import inspect
import urllib.request
from typing import Any

__all__ = ["connect_kwargs", "direct"]


def direct() -> bool:
    """Whether no proxy is configured now (the environment, or the system's settings where
    urllib reads them), so connections may go without websockets' per-connect lookup."""
    try:
        return not urllib.request.getproxies()
    except Exception:  # (a broken system proxy setting: let websockets decide, as before)
        return False


@functools.cache
def _takes_proxy(connect: Any) -> bool:
    try:
        return "proxy" in inspect.signature(connect).parameters
    except (TypeError, ValueError):
        return False


def connect_kwargs(connect: Any, kwargs: dict[str, Any], *, no_proxy: bool) -> dict[str, Any]:
    """``kwargs`` for ``connect`` (websockets' connect, as google-genai calls it), with
    ``proxy=None`` added when ``no_proxy`` (:func:`direct` at the run's start), the caller set
    no proxy and ``connect`` takes one; otherwise ``kwargs`` itself."""
    if not no_proxy or "proxy" in kwargs or not _takes_proxy(connect):
        return kwargs
    return {**kwargs, "proxy": None}
