"""Tests of the live shell's parts: connecting, pacing, watching, the run's rules."""
