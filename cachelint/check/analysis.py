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
def anthropic_minimum(model: str | None) -> int:
    """The model's minimum cacheable prompt length (one dated table: cachelint.simulate.models)."""
    from cachelint.simulate.models import anthropic_minimum as minimum

    return minimum(model)


@dataclass(slots=True)
class Options:
    volatile_functions: dict[str, str] = field(default_factory=dict)
    call_patterns: dict[str, str] = field(default_factory=dict)
    model: str | None = None
    confidence: str = "likely"  # the least sure findings reported (certain | likely)


class Analysis:
    def __init__(self, ctx: ModuleContext, options: Options | None = None, find_sites: bool = True) -> None:
        """`find_sites`: whether to look for requests at all (False: a module with no SDK in sight, looked at only
        for prompt-shaped data; no scope or name metadata is computed for call sites)."""
        self.ctx = ctx
        self.options = options or Options()
        self.find_sites = find_sites

    @cached_property
    def sites(self) -> list[CallSite]:
        return find_call_sites(self.ctx, self.options.call_patterns) if self.find_sites else []

    @cached_property
    def _cacheable(self) -> dict[int, bool]:
        from cachelint.check.prefix import prefix_text_bound

        from cachelint.simulate.models import caches_prompts

        found = {}
        for site in self.sites:
            if not caches_prompts(self.model_of(site)):
                found[id(site)] = False  # `model="gpt-3.5-turbo"`, `"claude-2"`: a model that caches no prompt
                continue
            text = prefix_text_bound(self.ctx, site)
            if text is None:
                found[id(site)] = True
                continue
            found[id(site)] = self.reaches_minimum(site, text)
        return found

    def reaches_minimum(self, site: CallSite, text: str) -> bool:
        """Whether `text` is at least the minimum cacheable length of the request's provider and model."""
        from cachelint.check.prefix import minimum_tokens
        from cachelint.tokens import counter_for

        model = self.model_of(site)
        provider = "anthropic" if site.api == "anthropic" else "openai"
        minimum = minimum_tokens(site, model)
        # a byte-level BPE token covers at least one byte: fewer bytes than the minimum is fewer tokens, and
        # no tokenizer has to be loaded to know it
        return len(text.encode("utf-8", "surrogatepass")) >= minimum and counter_for(provider, model).count(text) >= minimum

    def cacheable(self, site: CallSite) -> bool:
        """False when the request's reusable prefix is provably shorter than the provider's minimum cacheable
        length, or its model caches no prompt at all: nothing of it is ever cached, so nothing in it can break a
        cache."""
        return self._cacheable.get(id(site), True)

    @cached_property
    def site_facts(self) -> list[tuple[CallSite, list[Fact]]]:
        out = []
        for site in self.sites:
            if not self.cacheable(site):
                continue
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
        if not isinstance(site.node, cst.Call):
            return f"the {site.callee} on line {self.ctx.span(site.node).row} (a prompt by its shape; its sender is not in this module)"
        return f"{site.callee}() on line {self.ctx.span(site.node).row}"

    def model_of(self, site: CallSite) -> str | None:
        from cachelint.check.values import string_value

        expr = site.arg("model")
        return string_value(expr) or (self._set_on_self(expr) if expr is not None else None) or self.options.model

    def _set_on_self(self, expr) -> str | None:
        """`model=self.model` where the class sets `self.model` to one literal text and nothing else (a parameter's
        default is only a fallback: the app may pass another model)."""
        from cachelint.check.values import string_value

        if not (isinstance(expr, cst.Attribute) and isinstance(expr.value, cst.Name) and expr.value.value == "self"):
            return None
        cls = self.ctx.enclosing(expr, (cst.ClassDef,))
        if not isinstance(cls, cst.ClassDef):
            return None
        texts = set()
        for statement in self.ctx.self_assignments(cls).get(expr.attr.value, []):
            value = getattr(statement, "value", None)
            text = string_value(value) if value is not None and not isinstance(statement, cst.AugAssign) else None
            if text is None:
                return None
            texts.add(text)
        return texts.pop() if len(texts) == 1 else None
