"""Launch: how the resumable loop gets into a process.

``patch`` installs it into every ADK flow (``install()``), ``flows`` offers it per agent
(``ResumableLlmAgent``), ``config`` reads the ``ADK_LIVE_RESUME_*`` environment, and the
zero-code ``launcher`` runs an app with it (``_bootstrap`` for its child processes,
``inject_launch`` for ``--inject``, which starts the fault proxy in front of the app). Launch
may import every folder; nothing in the package imports launch but the package's own
``__init__`` and ``__main__``, and the test kit.
"""
