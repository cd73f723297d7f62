"""Install the resumable live loop into every ADK flow, process-wide.

Modelled on OpenTelemetry instrumentors: :func:`install` and :func:`uninstall` are idempotent
and thread-safe; the original ``BaseLlmFlow.run_live`` is saved and put back only if the
attribute still holds our replacement (if something else patched it after us, we leave it
alone and say so).
"""

from __future__ import annotations

import functools
import logging
import os
import threading
from collections.abc import AsyncGenerator
from dataclasses import dataclass
from typing import Any

from ..compat import adk_compat, genai_compat
from ..observe import startup_log
from ..rules.errors import UnsupportedAdkVersionError
from ..rules.policy import ResumePolicy
from . import config

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

    Call once at startup, before ``Runner.run_live``. Without ``policy``, the policy comes
    from the ``ADK_LIVE_RESUME_*`` environment variables over the defaults
    (:mod:`adk_live_resume.launch.config`); a ``policy`` given here wins over them (set variables
    are then reported as ignored).

    The first install wins, as with OpenTelemetry instrumentors: calling again with the same
    policy (or none) does nothing; calling with a different policy keeps the installed one
    and logs a WARNING naming both (``uninstall()`` first to change it). This is what
    happens when an app that calls ``install(...)`` runs under the ``adk-live-resume``
    launcher: the launcher's policy, installed first, stays.

    A google-adk release newer than the tested range is run on feature detection after a
    WARNING (once per process); a missing feature raises
    :class:`~adk_live_resume.rules.errors.UnsupportedAdkVersionError` naming it. A release older
    than the supported minimum is refused with that error unless ``strict=False``.

    Raises :class:`TypeError` at once if ``policy`` is not a :class:`ResumePolicy`, and
    :class:`~.config.ConfigError` (a ``ValueError``) for a bad environment
    variable.

    Every hook into another library's internals is checked here (:mod:`..compat.hooks`): one WARNING
    per optional feature that is off and why; ADK's essential one missing raises
    :class:`~adk_live_resume.rules.errors.UnsupportedAdkVersionError`.

    Logs one INFO line on ``adk_live_resume`` when installed, where ADK's own lines go: if
    logging is not set up yet (the launcher installs before ADK's CLI sets it up), the line
    waits until it is (:mod:`..observe.startup_log`).
    """
    if policy is not None and not isinstance(policy, ResumePolicy):
        raise TypeError(
            f"install() takes a ResumePolicy, not {type(policy).__name__} {policy!r}: "
            "write install(ResumePolicy(max_attempts=5))"
        )
    if not isinstance(strict, bool):
        raise TypeError(f"install(strict=...) must be True or False, not {strict!r}")
    _install(policy, strict=strict, resolved=False)


def install_resolved(policy: ResumePolicy, *, strict: bool = True) -> None:
    """:func:`install` ``policy``, resolved from the ``ADK_LIVE_RESUME_*`` variables (and
    what the launcher's options put over them): the variables are applied, so none is
    reported as ignored. The launcher's entry point (:mod:`adk_live_resume.launch.launcher`)."""
    _install(policy, strict=strict, resolved=True)


def _install(policy: ResumePolicy | None, *, strict: bool, resolved: bool) -> None:
    global _installed
    with _lock:
        if _installed is not None:
            if policy is not None and policy != _installed.policy:
                logger.warning(
                    "adk_live_resume is already installed with %r; keeping it and ignoring "
                    "install(%r) (the first install wins; call adk_live_resume.uninstall() "
                    "first to change the policy)",
                    _installed.policy,
                    policy,
                )
            return
        chosen = _policy_for(policy, resolved=resolved)
        try:
            newer = adk_compat.check_supported_version() == "newer"
        except UnsupportedAdkVersionError:
            if strict:
                raise
            newer = False
        if newer:
            _warn_untested_release()
        if genai_compat.genai_is_newer_than_tested():
            _warn_untested_genai()
        adk_compat.surface()  # fail now, with a clear error, rather than mid-conversation
        from google.adk.flows.llm_flows.base_llm_flow import BaseLlmFlow

        from ..compat import hooks
        from ..shell import loop  # here, not at the top: `import adk_live_resume` stays light

        hooks.check()  # the essential one raises; a WARNING per optional feature that is off

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
        startup_log.announce(
            "install",
            logger,
            "adk_live_resume installed on google-adk %s: live sessions resume across dropped "
            "connections and goAway; %r",
            adk_compat.adk_version(),
            chosen,
        )


def _policy_for(policy: ResumePolicy | None, *, resolved: bool = False) -> ResumePolicy:
    """The policy to install: the one given, else the environment's over the defaults.
    ``resolved``: the one given was resolved from the environment (nothing is ignored)."""
    config.warn_unknown_variables(os.environ)
    if policy is None:
        return config.resolve_policy(os.environ)
    if resolved:
        return policy
    ignored = [
        variable
        for variable in (
            config.POLICY_JSON_ENV,
            *config.policy_variables(),
            *config.renamed_variables(),
        )
        if os.environ.get(variable, "").strip()
    ]
    if ignored:
        logger.warning(
            "install() was given a policy, so %s %s ignored (a policy in code wins over the "
            "environment; call install() without a policy to use them)",
            ", ".join(ignored),
            "is" if len(ignored) == 1 else "are",
        )
    return policy


_warned_untested: set[str] = set()


def _warn_once(key: str, message: str, *args: object) -> None:
    """Log ``message`` as a WARNING the first time ``key`` is seen in this process."""
    if key in _warned_untested:
        return
    _warned_untested.add(key)
    logger.warning(message, *args)


def _warn_untested_release() -> None:
    version = adk_compat.adk_version()
    _warn_once(
        f"google-adk {version}",
        "google-adk %s is newer than the releases adk-live-resume is tested with (%s); "
        "installing on feature detection. Please report problems, and check for a newer "
        "adk-live-resume.",
        version,
        adk_compat.TESTED_ADK_TEXT,
    )


def _warn_untested_genai() -> None:
    version = genai_compat.genai_version()
    _warn_once(
        f"google-genai {version}",
        "google-genai %s is newer than the newest release adk-live-resume is tested with "
        "(%s); the live protocol may have moved. Please report problems, and check for a "
        "newer adk-live-resume.",
        version,
        genai_compat.TESTED_GENAI_NEWEST,
    )


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
        startup_log.withdraw("install")
        from ..shell import early_dial

        early_dial.unhook()
        return True


def is_installed() -> bool:
    """Whether :func:`install` is in effect."""
    with _lock:
        return _installed is not None


def installed_policy() -> ResumePolicy | None:
    """The policy :func:`install` was called with, or ``None`` when not installed."""
    with _lock:
        return _installed.policy if _installed is not None else None
