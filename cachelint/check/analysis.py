"""One module analysed once: its LLM call sites and the facts about their prefix arguments.

Rules query this object; none of them walks the tree for call sites or data flow on its own.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from functools import cached_property

import libcst as cst

from cachelint.check.callsites import CallSite, find_call_sites
from cachelint.check.module import ModuleContext
from cachelint.check.values import Fact, ValueWalker

PREFIX_ARGS = ("tools", "system", "instructions", "messages", "input")
ANTHROPIC_MINIMUMS = [  # model-name prefix -> minimum cacheable prompt length (providers.md, latest copy)
    ("claude-opus-4-8", 1024), ("claude-opus-4-7", 2048), ("claude-opus-4-6", 4096), ("claude-opus-4-5", 4096),
    ("claude-opus-5", 512), ("claude-fable", 512), ("claude-mythos", 512), ("claude-sonnet-5", 1024),
    ("claude-sonnet-4", 1024), ("claude-opus-4", 1024), ("claude-haiku-4", 4096), ("claude-3-5-haiku", 2048),
    ("claude-3-haiku", 2048),
]


def anthropic_minimum(model: str | None) -> int:
    name = (model or "").lower()
    for prefix, minimum in ANTHROPIC_MINIMUMS:
        if name.startswith(prefix):
            return minimum
    return 1024


@dataclass(slots=True)
class Options:
    volatile_functions: dict[str, str] = field(default_factory=dict)
    call_patterns: dict[str, str] = field(default_factory=dict)
    model: str | None = None


class Analysis:
    def __init__(self, ctx: ModuleContext, options: Options | None = None) -> None:
        self.ctx = ctx
        self.options = options or Options()

    @cached_property
    def sites(self) -> list[CallSite]:
        return find_call_sites(self.ctx, self.options.call_patterns)

    @cached_property
    def site_facts(self) -> list[tuple[CallSite, list[Fact]]]:
        out = []
        for site in self.sites:
            walker = ValueWalker(self.ctx, site, self.options.volatile_functions)
            facts: list[Fact] = []
            for arg in PREFIX_ARGS:
                facts += walker.walk_argument(arg)
            out.append((site, facts))
        return out

    def facts(self, kinds: set[str], *, args: tuple[str, ...] = PREFIX_ARGS, prefix: bool = True) -> Iterator[tuple[CallSite, Fact]]:
        """Facts of some kinds, once per node (the first call site that reaches it wins)."""
        seen: set[int] = set()
        for site, facts in self.site_facts:
            for fact in facts:
                if fact.kind in kinds and fact.landing.arg in args and (fact.landing.prefix or not prefix) and id(fact.node) not in seen:
                    seen.add(id(fact.node))
                    yield site, fact

    def describe_site(self, site: CallSite) -> str:
        return f"{site.callee}() on line {self.ctx.span(site.node).row}"

    def model_of(self, site: CallSite) -> str | None:
        model = site.arg("model")
        if isinstance(model, cst.SimpleString) and isinstance(model.evaluated_value, str):
            return model.evaluated_value
        return self.options.model
