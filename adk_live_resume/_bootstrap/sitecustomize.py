"""Start-up hook of ``adk-live-resume`` for child Python processes.

The launcher puts this directory first on ``PYTHONPATH``, so Python imports this module at
start-up. It only registers an import hook (standard library only, nothing else is
imported): when the process imports ``google.adk``, right after that package has loaded,
``adk_live_resume.launcher.install_from_environment()`` installs the patch with the policy
the launcher passed down. A process that never imports ADK is not touched. A failure is
reported on stderr and never stops the process. Any other ``sitecustomize`` found further
along ``sys.path`` is run afterwards, as if this one were not there.
"""

from __future__ import annotations

import importlib.abc
import importlib.machinery
import importlib.util
import os
import sys
from collections.abc import Sequence
from types import ModuleType
from typing import Any

_TARGET = "google.adk"
_HERE = os.path.dirname(os.path.abspath(__file__))


def _install() -> None:
    try:
        from adk_live_resume.launcher import install_from_environment

        install_from_environment()
    except Exception as error:  # never break the user's process
        sys.stderr.write(
            f"adk-live-resume: not installed in process {os.getpid()} "
            f"({type(error).__name__}: {error}); its live sessions will not resume\n"
        )


class _Loader(importlib.abc.Loader):
    """Runs the real loader of ``google.adk``, then installs the patch."""

    def __init__(self, inner: Any) -> None:
        self._inner = inner

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> ModuleType | None:
        create = getattr(self._inner, "create_module", None)
        return create(spec) if create is not None else None

    def exec_module(self, module: ModuleType) -> None:
        module.__loader__ = self._inner
        if module.__spec__ is not None:
            module.__spec__.loader = self._inner
        self._inner.exec_module(module)
        _install()

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)


class _Hook(importlib.abc.MetaPathFinder):
    """Finds ``google.adk`` with the other finders and wraps its loader (once)."""

    def find_spec(
        self, fullname: str, path: Sequence[str] | None, target: ModuleType | None = None
    ) -> importlib.machinery.ModuleSpec | None:
        if fullname != _TARGET:
            return None
        if self in sys.meta_path:
            sys.meta_path.remove(self)
        spec = importlib.util.find_spec(fullname)
        if spec is None or spec.loader is None or not hasattr(spec.loader, "exec_module"):
            return spec
        spec.loader = _Loader(spec.loader)
        return spec


def _chain_next_sitecustomize() -> None:
    """Run the ``sitecustomize`` this one shadows, if any."""
    for entry in sys.path:
        if not entry or os.path.abspath(entry) == _HERE:
            continue
        spec = importlib.machinery.PathFinder.find_spec("sitecustomize", [entry])
        if spec is None or spec.loader is None:
            continue
        module = importlib.util.module_from_spec(spec)
        try:
            spec.loader.exec_module(module)
        except Exception as error:
            sys.stderr.write(f"Error in sitecustomize ({spec.origin}): {error!r}\n")
        return


if _TARGET not in sys.modules and not any(isinstance(f, _Hook) for f in sys.meta_path):
    sys.meta_path.insert(0, _Hook())
_chain_next_sitecustomize()
