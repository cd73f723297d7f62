"""Tests of the launcher, the environment's policy and install()."""
