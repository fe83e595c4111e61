"""Families that live in the test suite (registered by the tests that use them)."""
