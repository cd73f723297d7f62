"""Conversation bookkeeping: what was sent, answered and owed across connections."""
