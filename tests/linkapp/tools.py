"""The bot's tools; the most recently used ones are offered first."""

from __future__ import annotations

TOOL_SPECS = {
    "search_orders": {
        "name": "search_orders",
        "description": "Find a customer's orders by email or order number.",
        "input_schema": {"type": "object", "properties": {"query": {"type": "string"}}, "required": ["query"]},
    },
    "track_parcel": {
        "name": "track_parcel",
        "description": "Where a parcel is now, from its tracking number.",
        "input_schema": {"type": "object", "properties": {"tracking": {"type": "string"}}, "required": ["tracking"]},
    },
    "open_ticket": {
        "name": "open_ticket",
        "description": "Open a ticket for a human agent with a one-line summary.",
        "input_schema": {"type": "object", "properties": {"summary": {"type": "string"}}, "required": ["summary"]},
    },
}


def tools_for(recent: list[str]) -> list[dict]:
    """The tool list, most recently used first."""
    ordered = recent + [name for name in TOOL_SPECS if name not in recent]  # link: tools_reordered
    return [TOOL_SPECS[name] for name in ordered]
