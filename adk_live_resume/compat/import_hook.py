"""Run a function on a module right after it is imported, without importing it.

Guarantees: nothing is imported here; the function runs once, right after the module's own
code ran (at once if it is imported already); the finder takes itself off ``sys.meta_path``
as the module is found, so it costs nothing afterwards; what the function raises is logged
(WARNING) and never breaks the import.
"""

from __future__ import annotations

import contextlib
import importlib.abc
import importlib.machinery
import importlib.util
import logging
import sys
from collections.abc import Callable, Sequence
from types import ModuleType
from typing import Any

logger = logging.getLogger("adk_live_resume")

Then = Callable[[ModuleType], None]


def after_import(name: str, then: Then) -> None:
    """Call ``then(module)`` once ``name`` is imported (now if it is already)."""
    module = sys.modules.get(name)
    if module is not None:
        _run(then, module)
        return
    sys.meta_path.insert(0, _Finder(name, then))


def _run(then: Then, module: ModuleType) -> None:
    try:
        then(module)
    except Exception:  # never break the import of someone else's module
        logger.warning("adk_live_resume could not hook %s", module.__name__, exc_info=True)


class _Loader(importlib.abc.Loader):
    """The module's own loader, then ``then``."""

    def __init__(self, inner: Any, then: Then) -> None:
        self._inner = inner
        self._then = then

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> ModuleType | None:
        create = getattr(self._inner, "create_module", None)
        return create(spec) if create is not None else None

    def exec_module(self, module: ModuleType) -> None:
        module.__loader__ = self._inner
        if module.__spec__ is not None:
            module.__spec__.loader = self._inner
        self._inner.exec_module(module)
        _run(self._then, module)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)


class _Finder(importlib.abc.MetaPathFinder):
    """Finds ``name`` with the other finders and wraps its loader (once)."""

    def __init__(self, name: str, then: Then) -> None:
        self._name = name
        self._then = then

    def find_spec(
        self, fullname: str, path: Sequence[str] | None, target: ModuleType | None = None
    ) -> importlib.machinery.ModuleSpec | None:
        if fullname != self._name:
            return None
        with contextlib.suppress(ValueError):
            sys.meta_path.remove(self)
        spec = importlib.util.find_spec(fullname)
        if spec is None or spec.loader is None or not hasattr(spec.loader, "exec_module"):
            return spec
        spec.loader = _Loader(spec.loader, self._then)
        return spec
