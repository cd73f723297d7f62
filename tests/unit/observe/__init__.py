"""Tests of what users see: callbacks, log lines, telemetry."""
