"""Install the resumable live loop into every ADK flow, process-wide.

Modelled on OpenTelemetry instrumentors: :func:`install` and :func:`uninstall` are idempotent
and thread-safe; the original ``BaseLlmFlow.run_live`` is saved and put back only if the
attribute still holds our replacement (if something else patched it after us, we leave it
alone and say so).
"""

from __future__ import annotations

import functools
import logging
import threading
from collections.abc import AsyncGenerator
from dataclasses import dataclass
from typing import Any

from . import adk_compat, loop
from .errors import InstallConflictError
from .policy import ResumePolicy

logger = logging.getLogger("adk_live_resume")

_MARK = "__adk_live_resume__"
_lock = threading.RLock()


@dataclass
class _Installed:
    policy: ResumePolicy
    original: Any
    replacement: Any


_installed: _Installed | None = None


def install(policy: ResumePolicy | None = None, *, strict: bool = True) -> None:
    """Make every ADK live run resume across lost connections.

    Call once at startup, before ``Runner.run_live``. Calling again with the same policy
    (or with ``policy=None``) does nothing; calling with a different policy raises
    :class:`~adk_live_resume.errors.InstallConflictError` (``uninstall()`` first).

    ``strict`` refuses google-adk releases outside the tested range with
    :class:`~adk_live_resume.errors.UnsupportedAdkVersionError`; ``strict=False`` tries
    anyway as long as the release has what the loop needs.
    """
    global _installed
    with _lock:
        if _installed is not None:
            if policy is None or policy == _installed.policy:
                return
            raise InstallConflictError(
                "adk_live_resume is already installed with a different policy "
                f"({_installed.policy!r}); call adk_live_resume.uninstall() first, "
                "or pass the same policy."
            )
        if strict:
            adk_compat.check_supported_version()
        adk_compat.surface()  # fail now, with a clear error, rather than mid-conversation
        from google.adk.flows.llm_flows.base_llm_flow import BaseLlmFlow

        chosen = policy or ResumePolicy()
        original = BaseLlmFlow.__dict__["run_live"]

        @functools.wraps(original)
        async def run_live(self: Any, invocation_context: Any) -> AsyncGenerator[Any, None]:
            fallback = functools.partial(original, self)
            async for event in loop.run_live(
                self, invocation_context, policy=chosen, fallback=fallback
            ):
                yield event

        setattr(run_live, _MARK, True)
        BaseLlmFlow.run_live = run_live  # type: ignore[method-assign]
        _installed = _Installed(chosen, original, run_live)
        logger.debug("installed on google-adk %s", adk_compat.adk_version())


def uninstall() -> bool:
    """Put the original ``run_live`` back; return whether anything was installed."""
    global _installed
    with _lock:
        if _installed is None:
            return False
        from google.adk.flows.llm_flows.base_llm_flow import BaseLlmFlow

        if BaseLlmFlow.__dict__.get("run_live") is _installed.replacement:
            BaseLlmFlow.run_live = _installed.original  # type: ignore[method-assign]
        else:
            logger.warning(
                "BaseLlmFlow.run_live was replaced by someone else after "
                "adk_live_resume.install(); leaving their version in place"
            )
        _installed = None
        return True


def is_installed() -> bool:
    """Whether :func:`install` is in effect."""
    with _lock:
        return _installed is not None


def installed_policy() -> ResumePolicy | None:
    """The policy :func:`install` was called with, or ``None`` when not installed."""
    with _lock:
        return _installed.policy if _installed is not None else None
