"""Start-up hook of ``adk-live-resume`` for child Python processes.

The launcher puts this directory first on ``PYTHONPATH``, so Python imports this module at
start-up. It only registers an import hook (:mod:`adk_live_resume.import_hook`: the standard
library and that module, nothing else is imported): when the process imports
``google.adk``, right after that package has loaded,
``adk_live_resume.launcher.install_from_environment()`` installs the patch with the policy
the launcher passed down. A process that never imports ADK is not touched. A failure is
reported on stderr and never stops the process. Any other ``sitecustomize`` found further
along ``sys.path`` is run afterwards, as if this one were not there.
"""

from __future__ import annotations

import importlib.machinery
import importlib.util
import os
import sys

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


def _hook() -> None:
    """Install the patch right after ``google.adk`` is imported."""
    try:
        from adk_live_resume.import_hook import after_import
    except Exception as error:  # never break the user's process
        sys.stderr.write(
            f"adk-live-resume: not installed in process {os.getpid()} "
            f"({type(error).__name__}: {error}); its live sessions will not resume\n"
        )
        return
    after_import(_TARGET, lambda module: _install())


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
