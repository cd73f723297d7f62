"""Conversation bookkeeping: what was sent, answered and owed across connections.

The records a live run keeps of its conversation, each pure and fed by the shell: the
``outbox`` of client messages a new connection may need again (with its ``frame_window``,
``client_sends``, ``context_updates``, ``transcript_echo``), tool calls by id (``tool_calls``,
``late_results``, ``deferred_results``), whether the user is speaking and what is still
unanswered (``activity``, ``answers``, ``model_work``, ``unknown_status``), what a fresh
session starts with (``fresh_history``, ``withheld``), and what a connection counted
(``token_usage``, ``connection_figures``, ``context_check``). The conversation imports only
the rules (and google-genai's types): never the shell, compat, resumption, observe or launch.
"""
