"""Opt-in entry point without a global patch: flows and an agent that run the resumable loop.

``ResumableLlmAgent`` is an ``LlmAgent`` whose live runs resume across lost connections;
``ResumableSingleFlow`` / ``ResumableAutoFlow`` are the flows it uses, for code that builds
flows itself. They run the same loop as :func:`adk_live_resume.install`.

Without :func:`adk_live_resume.install`, the first live run of the process says once (INFO
on ``adk_live_resume``, where ADK's lines go) that live runs resume, and checks the hooks into
other libraries (:mod:`adk_live_resume.compat.hooks`) as ``install()`` would.

Sub-agents reached by ``transfer_to_agent`` run their own flow: make them
``ResumableLlmAgent`` too (or use :func:`adk_live_resume.install`).
"""

from __future__ import annotations

import logging
from collections.abc import AsyncGenerator
from typing import Any

from google.adk.agents.llm_agent import LlmAgent
from google.adk.flows.llm_flows.auto_flow import AutoFlow
from google.adk.flows.llm_flows.single_flow import SingleFlow
from pydantic import Field

from ..compat import adk_compat, hooks
from ..observe import startup_log
from ..rules.policy import ResumePolicy
from ..shell import loop
from . import patch

logger = logging.getLogger("adk_live_resume")


class _ResumableRunLive:
    """Mixin: ``run_live`` through the resumable loop; other models use the parent's."""

    resume_policy: ResumePolicy | None = None

    def __init__(self, policy: ResumePolicy | None = None) -> None:
        super().__init__()
        self.resume_policy = policy

    def _effective_policy(self) -> ResumePolicy:
        return self.resume_policy or patch.installed_policy() or ResumePolicy()

    async def run_live(self, invocation_context: Any) -> AsyncGenerator[Any, None]:
        fallback = super().run_live  # type: ignore[misc]
        policy = self._effective_policy()
        if not patch.is_installed():
            hooks.check()  # what install() would have checked (once per process)
            startup_log.announce_subclass(
                logger,
                "adk_live_resume: live runs of ResumableLlmAgent resume across dropped "
                "connections and goAway (google-adk %s); %r",
                adk_compat.adk_version(),
                policy,
            )
        async for event in loop.run_live(
            self, invocation_context, policy=policy, fallback=fallback
        ):
            yield event


class ResumableSingleFlow(_ResumableRunLive, SingleFlow):
    """ADK's ``SingleFlow`` with the resumable live loop."""


class ResumableAutoFlow(_ResumableRunLive, AutoFlow):
    """ADK's ``AutoFlow`` (agent transfer) with the resumable live loop."""


class ResumableLlmAgent(LlmAgent):
    """An ``LlmAgent`` whose live runs resume across lost connections.

    ``resume_policy`` overrides the policy for this agent; by default the one given to
    :func:`adk_live_resume.install` is used, else ``ResumePolicy()``.
    """

    resume_policy: ResumePolicy | None = Field(default=None, exclude=True)

    @property
    def _llm_flow(self) -> Any:
        stock = super()._llm_flow
        if isinstance(stock, AutoFlow):
            return ResumableAutoFlow(self.resume_policy)
        if isinstance(stock, SingleFlow):
            return ResumableSingleFlow(self.resume_policy)
        logger.warning(
            "ResumableLlmAgent %s: unknown flow %s; live runs will not resume",
            self.name,
            type(stock).__name__,
        )
        return stock
