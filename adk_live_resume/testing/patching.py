"""Install or remove the patch for one test (or one block) and put the previous state back.

::

    from adk_live_resume import ResumePolicy
    from adk_live_resume.testing import patch_installed

    with patch_installed(ResumePolicy(max_attempts=3)):
        ...  # every Runner.run_live started here resumes; backoff waits are off

The pytest fixture ``live_resume_patch`` (:mod:`adk_live_resume.testing.pytest_plugin`) does the
same with the default policy for the whole test. Whatever was installed before (by the
application, the launcher or another test helper) is installed again afterwards with its own
policy; nothing installed before means nothing installed after.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

from ..launch.patch import install, installed_policy, uninstall
from ..rules.policy import ResumePolicy, testing_backoff

__all__ = ["patch_installed", "patch_removed"]


@contextlib.contextmanager
def _patch_state(policy: ResumePolicy | None, *, installed: bool) -> Iterator[None]:
    previous = installed_policy()
    uninstall()
    try:
        if installed:
            install(policy if policy is not None else ResumePolicy())
        yield
    finally:
        uninstall()
        if previous is not None:
            install(previous)


@contextlib.contextmanager
def patch_installed(
    policy: ResumePolicy | None = None, *, fast_backoff: bool = True
) -> Iterator[ResumePolicy]:
    """Install the patch with ``policy`` (default: ``ResumePolicy()``, not the environment's)
    for the block; yield the installed policy.

    ``fast_backoff`` (the default) turns backoff waits off inside the block, keeping every
    cap (:func:`adk_live_resume.testing_backoff`).
    """
    with _patch_state(policy, installed=True):
        chosen = installed_policy()
        assert chosen is not None
        if fast_backoff:
            with testing_backoff():
                yield chosen
        else:
            yield chosen


@contextlib.contextmanager
def patch_removed() -> Iterator[None]:
    """Run the block with stock google-adk (the patch uninstalled), e.g. to show the bug."""
    with _patch_state(None, installed=False):
        yield
