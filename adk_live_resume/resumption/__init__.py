"""Resumption handles: which one to resume with, what it covers, where it is kept.

The resumption state of one live session (``handles``: the newest good handle and when it is
safe), a handle at rest (``stored_handle``: sealed, with its expiry), what a stored handle
covers of the ADK session (``handle_coverage``) and where a live run keeps it for the app and
in the session (``handle_store``). Resumption imports the rules and the conversation: never
the shell, compat, observe or launch.
"""
