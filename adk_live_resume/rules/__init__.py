"""Pure rules and decisions of the live loop: values in, values out, no I/O.

What the loop decides, each decision a function or a small state machine over immutable
values, tested without sockets: what follows a connection's end (``next_step`` over the
``outage`` and the ``failure_classes``, the ``retry_decision`` and the user's ``retry_hooks``),
when a healthy session has stalled (``stall_rule``, ``stall_nudge``), what a raw server frame is
(``wire_classifier``), a connection's lifecycle (``connection_state`` and its
``lifecycle_events``), what a failed opening ahead leaves (``opening_ahead``), the model
families' rules (``model_families``, ``setup_refusals``), and the values every layer shares:
the ``policy`` and our ``errors``. Rules import nothing from the other folders (the shell,
compat, observe, launch, the conversation's bookkeeping or the test kit): only each other and
the standard library (and google-genai's types, as values).
"""
