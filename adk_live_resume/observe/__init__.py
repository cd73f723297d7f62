"""Observe: how users and operators see what the live loop does.

The user's callbacks and their reports (``callbacks``: ``on_reconnect``, ``on_run_end``,
``on_before_move``), OpenTelemetry signals (``telemetry``), how long a run's start took
(``run_timeline``), how one connection ended (``connection_end``), lines a user must see
(``startup_log``), and keeping handles and keys out of every log (``log_redaction``). Observe
imports the rules, the conversation, compat and resumption: never the shell or launch.
"""
