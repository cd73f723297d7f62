"""Tests of the repository itself: house rules, docs, changelog, scripts, examples."""
