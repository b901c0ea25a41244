"""From an observed cache break to the line of code that caused it (`cachelint report --source DIR`)."""

from cachelint.link.annotate import annotate, rank_sources, render_sources_text

__all__ = ["annotate", "rank_sources", "render_sources_text"]
