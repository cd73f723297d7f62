"""Unit and property tests of the conversation bookkeeping."""
