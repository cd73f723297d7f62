"""Start-up hook of ``adk-live-resume`` for child Python processes.

The launcher puts this directory first on ``PYTHONPATH``, so Python imports this module at
start-up. It only registers an import hook (:mod:`adk_live_resume.compat.import_hook`: the standard
library and that module, nothing else is imported): when the process imports
``google.adk``, right after that package has loaded,
``adk_live_resume.launch.launcher.install_from_environment()`` installs the patch with the policy
the launcher passed down. A process that never imports ADK is not touched and hears nothing,
even a Python that cannot import ``adk_live_resume`` at all (another interpreter the app
starts, which inherited ``PYTHONPATH``). A failure to install, once ADK is imported, is
reported on stderr and never stops the process. Any other ``sitecustomize`` found further
along ``sys.path`` is run afterwards, as if this one were not there.
"""

from __future__ import annotations

import importlib.machinery
import importlib.util
import os
import sys
from types import ModuleType

_TARGET = "google.adk"
_HERE = os.path.dirname(os.path.abspath(__file__))


def _install() -> None:
    try:
        from adk_live_resume.launch.launcher import install_from_environment

        install_from_environment()
    except Exception as error:  # never break the user's process
        sys.stderr.write(
            f"adk-live-resume: not installed in process {os.getpid()} "
            f"({type(error).__name__}: {error}); its live sessions will not resume\n"
        )


def _import_hook_module() -> ModuleType | None:
    """``adk_live_resume.compat.import_hook``; where this Python cannot import the package (another
    interpreter the app starts, which inherited ``PYTHONPATH``), the same file loaded from
    beside this directory, so that the failure is told only if that process imports ADK."""
    try:
        from adk_live_resume.compat import import_hook

        return import_hook
    except Exception:
        pass
    path = os.path.join(os.path.dirname(os.path.dirname(_HERE)), "compat", "import_hook.py")
    try:
        spec = importlib.util.spec_from_file_location("_adk_live_resume_import_hook", path)
        if spec is None or spec.loader is None:
            return None
        module = importlib.util.module_from_spec(spec)
        sys.modules[spec.name] = module
        spec.loader.exec_module(module)
        return module
    except Exception:  # a Python too old for the hook cannot run ADK either
        sys.modules.pop("_adk_live_resume_import_hook", None)
        return None


def _hook() -> None:
    """Install the patch right after ``google.adk`` is imported (said on stderr then, if it
    cannot be installed; a process that never imports ADK hears nothing)."""
    module = _import_hook_module()
    if module is not None:
        module.after_import(_TARGET, lambda imported: _install())


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


_hook()
_chain_next_sitecustomize()
