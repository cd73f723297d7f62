"""Observe: how users and operators see what the live loop does."""
