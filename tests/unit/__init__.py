"""Unit and property tests of the package, one folder per layer."""
