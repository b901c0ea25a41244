"""The rule catalog (installed as `cachelint.rules`): codes and names shared by `check`, `diff` and the proxy.

Codes are fixed: the static analyzer reports them, `cachelint diff` and the proxy name the mistake behind a
cache break with them. The linter's rules (one module a rule, with docs, examples and fixes) live beside
this file.
"""

from __future__ import annotations

NAMES: dict[str, str] = {
    "CL101": "volatile-value-in-prefix",
    "CL102": "unsorted-json-in-prefix",
    "CL103": "unordered-iteration-in-prefix",
    "CL104": "per-request-data-in-system-prompt",
    "CL201": "unordered-tools",
    "CL202": "per-request-tool-list",
    "CL301": "rewritten-history",
    "CL401": "param-change-mid-conversation",
    "CL501": "missing-cache-control",
    "CL502": "cache-control-on-volatile-block",
    "CL503": "too-many-cache-breakpoints",
    "CL504": "cache-breakpoint-below-minimum",
    "CL505": "ttl-order",
}
