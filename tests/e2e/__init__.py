"""End-to-end tests: the real Runner.run_live against the fake server over TLS."""
