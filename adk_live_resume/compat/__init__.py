"""Compat: the foreign libraries' internals, one module per library, and what sits on them.

Every private name of a library we do not own is here: ``adk_compat`` (google-adk),
``genai_compat`` (google-genai), ``websockets_compat`` (websockets: the frame watch), each
found by feature, not by version string; ``hooks`` checks them once per process,
``import_hook`` runs a function on a module right after it is imported, and the pieces that
sit directly on google-genai's session live beside them (``tap``, the listener of every
message and send; ``chunk_encoding``, microphone chunks put on the wire as google-genai would).
Compat imports the rules and the conversation's values only: never the shell, resumption,
observe or launch.
"""
