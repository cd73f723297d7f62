"""Compat: the foreign libraries' internals, one module per library, and what sits on them."""
