"""cachelint: make LLM prompt caching visible and correct."""

__version__ = "0.1.0"
