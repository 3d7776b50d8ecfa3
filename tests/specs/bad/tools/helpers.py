"""Helpers for the bad specs that name Python tools."""


def word_count(text: str) -> int:
    """Count the words of a text."""
    return len(text.split())
