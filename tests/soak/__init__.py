"""The seeded soaks and their pinned seeds."""
