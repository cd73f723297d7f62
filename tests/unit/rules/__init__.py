"""Unit and property tests of the pure rules and decisions."""
