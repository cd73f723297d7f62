"""Tests of the test kit: the fake Gemini Live server, the fault proxy, the driver."""
