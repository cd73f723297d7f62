"""Package names that are imported on first use, not with the package (PEP 562).

``import adk_live_resume`` runs at the start of apps (and of every pytest run, through the
plugin), so its ``__init__`` imports only what is cheap and defers the rest (the flows and
ADK's llm-flow internals, the handle store and ``cryptography``, the fake server) to the
first access of a name that needs it::

    if TYPE_CHECKING:
        from .flows import ResumableLlmAgent
    else:
        __getattr__, __dir__ = lazy_exports.attach(
            __name__, globals(), {"ResumableLlmAgent": ".flows"}
        )

Guarantees: ``from package import Name``, ``package.Name`` and ``from package import *``
work for every lazy name as if it had been imported eagerly and return the very object its
submodule defines; the first access imports the submodule and stores the value in the
package's namespace, so later accesses are plain attribute lookups. ``dir(package)`` lists
the lazy names before they are loaded. An unknown name raises :class:`AttributeError` as
usual. Type checkers see the names through the package's ``if TYPE_CHECKING:`` imports
(and no module ``__getattr__``, which would make any misspelt name type-check as ``Any``).
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping
from typing import Any


def attach(
    package: str, namespace: dict[str, Any], exports: Mapping[str, str]
) -> tuple[Callable[[str], Any], Callable[[], list[str]]]:
    """``(__getattr__, __dir__)`` for ``package``, whose module globals are ``namespace``.

    ``exports`` maps each lazy name to the module that defines it, relative to ``package``
    (``".flows"``).
    """

    def __getattr__(name: str) -> Any:
        try:
            module = exports[name]
        except KeyError:
            raise AttributeError(f"module {package!r} has no attribute {name!r}") from None
        value = getattr(importlib.import_module(module, package), name)
        namespace[name] = value
        return value

    def __dir__() -> list[str]:
        return sorted({*namespace, *exports})

    return __getattr__, __dir__
