"""`cachelint diff`: why a prefix broke, where, and what it cost."""

from cachelint.diff.explain import Break, explain

__all__ = ["Break", "explain"]
