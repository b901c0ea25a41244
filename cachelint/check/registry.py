"""The rules: every `rules/clNNN_*.py` module holds one Rule class."""

from __future__ import annotations

import importlib
import pkgutil
from functools import lru_cache

import cachelint.rules as package
from cachelint.rules.base import Rule


@lru_cache(maxsize=1)
def all_rules() -> tuple[type[Rule], ...]:
    found = []
    for info in sorted(pkgutil.iter_modules(package.__path__), key=lambda m: m.name):
        if not info.name.startswith("cl"):
            continue
        module = importlib.import_module(f"{package.__name__}.{info.name}")
        for value in vars(module).values():
            if isinstance(value, type) and issubclass(value, Rule) and value is not Rule and getattr(value, "code", None):
                found.append(value)
    return tuple(sorted(found, key=lambda r: r.code))


def rule(code: str) -> type[Rule] | None:
    return next((r for r in all_rules() if r.code == code.upper()), None)
