"""What the ``adk api_server`` / ``adk web`` tests add to :mod:`adk_live_resume.testing.workers`.

The processes themselves (started under the launcher, on 127.0.0.1, in a process group of
their own, the checkout under test first on ``PYTHONPATH``) come from the package module;
here: a proxy that fails every request that would leave 127.0.0.1, and the texts of a
``/run_sse`` stream.
"""

from __future__ import annotations

import json

#: Any request that bypasses NO_PROXY (so goes anywhere but 127.0.0.1) fails through this.
DEAD_PROXY = "http://127.0.0.1:9"


def sse_texts(stream: str) -> list[str]:
    """The text of every non-partial event of a ``/run_sse`` response, in order."""
    texts = []
    for line in stream.splitlines():
        if not line.startswith("data:"):
            continue
        event = json.loads(line.removeprefix("data:"))
        parts = (event.get("content") or {}).get("parts") or []
        text = "".join(p.get("text") or "" for p in parts)
        if text and not event.get("partial"):
            texts.append(text)
    return texts
