"""Tests of the compat layer: the foreign libraries' internals we reach under."""
