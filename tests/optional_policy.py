"""A throwaway ``ResumePolicy`` with optional (``X | None``) fields, for the tests of the
policy's machinery: the environment, the JSON hand-off, the launcher flags, the docs table.

:func:`use_probe_policy` makes the machinery see :class:`ProbePolicy` instead of
``ResumePolicy`` (and gives its fields launcher flags), in this process; a child process
calls it too before it imports ``google.adk``. Nothing here is specific to the two fields:
they go through the same code any field added to ``ResumePolicy`` later would.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass

from adk_live_resume import ResumePolicy
from adk_live_resume.launch import config, launcher


@dataclass(frozen=True, kw_only=True)
class ProbePolicy(ResumePolicy):
    """``ResumePolicy`` plus two optional fields, one with a default and one without."""

    probe_timeout: float | None = 3.0
    """Seconds a probe may take; ``None``: no limit."""
    probe_limit: int | None = None
    """Probes allowed per run; ``None``: no limit."""


#: The launcher flags of the two fields: (field, help), as in ``launcher._FLAGS``.
PROBE_FLAGS: tuple[tuple[str, str], ...] = (
    ("probe_timeout", "seconds a probe may take"),
    ("probe_limit", "probes allowed per run"),
)


def use_probe_policy() -> None:
    """Make this process's policy machinery read and build :class:`ProbePolicy` (for good)."""
    config.ResumePolicy = ProbePolicy  # type: ignore[misc]
    launcher._FLAGS = (*launcher._FLAGS, *PROBE_FLAGS)


@contextmanager
def probe_policy_in_use() -> Iterator[None]:
    """:func:`use_probe_policy` for the duration of the block, then the real one again."""
    saved = config.ResumePolicy, launcher._FLAGS
    use_probe_policy()
    try:
        yield
    finally:
        config.ResumePolicy, launcher._FLAGS = saved  # type: ignore[misc]
