"""Resumption handles: which one to resume with, what it covers, where it is kept."""
