"""Tests of resumption handles, their coverage and their store."""
