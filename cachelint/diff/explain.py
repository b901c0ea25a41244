"""Where a break is explained: how AFTER's cached prefix relates to BEFORE's, as the provider sees it.

The cause is decided in the provider's prefix order: model, then cache-key parameters, then tools (and the
output schema), then the system prompt, then the messages. The first difference wins; everything after it
is prefilled again. Every other divergence is listed too (`divergences`, in prefix order: tools, schema,
system, messages, then parameters, headers and the model), each with its own pointer, and the one the
provider's cache key reaches first is marked: fixing only that one would not save the prefix.

A history replaced by a summary (an agent's compaction) is its own cause, `compaction`: not a mistake but a
trade (the whole prompt is written again once, every later request is shorter).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from cachelint.diff.classify import json_key_order, volatile_kind, whitespace_only
from cachelint.diff.locate import common_prefix_items, common_prefix_length, first_difference
from cachelint.prompt.model import SECTION_ORDER, Block, Prompt
from cachelint.prompt.pointer import resolve
from cachelint.tokens import TokenCounter

CAUSES = ("none", "model_changed", "params_changed", "tools_changed", "system_changed", "messages_changed", "compaction")
_SECTION_CAUSE = {
    "tools": "tools_changed",
    "schema": "params_changed",
    "system": "system_changed",
    "messages": "messages_changed",
}
# The first section a parameter change invalidates (None: the whole prefix). From Anthropic's "what
# invalidates the cache" table; thinking is model-specific there (older models keep tools and system).
PARAM_SCOPE: dict[str, str | None] = {
    "tool_choice": "messages",
    "thinking": "messages",
    "output_config": "messages",
    "speed": "system",
}
EXCERPT = 40

# The catalog rule that names the mistake behind a detail. Details not listed (text_edited, tool_edited, ...)
# are changes cachelint cannot attribute to a known mistake.
_DETAIL_RULES = {
    "volatile_value": "CL101",
    "json_key_order": "CL102",
    "tools_reordered": "CL201",
    "tool_added": "CL202",
    "tool_removed": "CL202",
    "history_truncated": "CL301",
    "message_removed": "CL301",
    "message_edited": "CL301",
}


def rule_for_detail(cause: str, detail: str | None) -> str | None:
    if cause in ("model_changed", "params_changed"):
        return "CL401"
    if cause == "messages_changed" and detail in ("content_shape", "whitespace"):
        return "CL301"  # an earlier message re-serialized differently is rewritten history
    return _DETAIL_RULES.get(detail or "")


@dataclass(slots=True)
class Break:
    cause: str
    detail: str | None = None
    rule: str | None = None
    pointer: str | None = None
    char: int | None = None
    before: str = ""
    after: str = ""
    common_prefix_tokens: int = 0
    before_prompt_tokens: int = 0
    after_prompt_tokens: int = 0
    value_kind: str | None = None  # for volatile_value: timestamp, date, time, uuid, number, hex, random
    section: str | None = None
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def reprefilled_tokens(self) -> int:
        """Tokens of BEFORE's prompt after the divergence that AFTER must prefill again (wasted prefill)."""
        if self.cause == "none":
            return 0
        shared_tail = min(self.before_prompt_tokens, self.after_prompt_tokens)
        return max(0, shared_tail - self.common_prefix_tokens)

    def to_json(self) -> dict[str, Any]:
        return {
            "cause": self.cause,
            "detail": self.detail,
            "rule": self.rule,
            "location": {"pointer": self.pointer, "char": self.char},
            "before": self.before,
            "after": self.after,
            "common_prefix_tokens": self.common_prefix_tokens,
            "before_prompt_tokens": self.before_prompt_tokens,
            "after_prompt_tokens": self.after_prompt_tokens,
            "reprefilled_tokens": self.reprefilled_tokens,
            "value_kind": self.value_kind,
            "section": self.section,
            **self.extra,
        }


def divergence(brk: Break, first: bool) -> dict[str, Any]:
    """One divergence of a break as listed in `divergences`."""
    item = {
        "cause": brk.cause,
        "detail": brk.detail,
        "rule": brk.rule,
        "section": brk.section,
        "location": {"pointer": brk.pointer, "char": brk.char},
        "before": brk.before,
        "after": brk.after,
        "first": first,
    }
    for name in ("header", "before_pointer"):
        if name in brk.extra:
            item[name] = brk.extra[name]
    return item


def excerpt(text: str, at: int, width: int = EXCERPT) -> str:
    start, end = max(0, at - width), min(len(text), at + width)
    return ("…" if start else "") + text[start:end] + ("…" if end < len(text) else "")


def _shown(value: Any) -> str:
    return "(absent)" if value is None else json.dumps(value, ensure_ascii=False, separators=(",", ":"))


def _common_tokens(before: Block, after: Block, counter: TokenCounter) -> int:
    """Tokens shared at the start of two differing blocks of the same kind (0 if they differ in kind)."""
    if before.key[:4] != after.key[:4]:
        return 0
    at = common_prefix_length(before.text, after.text)
    if at == 0:
        return 0
    return common_prefix_items(counter.encode(before.text), counter.encode(after.text))


def _message_groups(blocks: list[Block]) -> list[tuple[int | None, tuple[Any, ...]]]:
    groups: list[tuple[int | None, list[Any]]] = []
    for b in blocks:
        if b.section != "messages":
            continue
        if groups and groups[-1][0] == b.message:
            groups[-1][1].append(b.key)
        else:
            groups.append((b.message, [b.key]))
    return [(m, tuple(keys)) for m, keys in groups]


def _message_pointer(block: Block) -> str:
    return "/".join(block.pointer.split("/")[:3])


def _deepest_strings(before: Block, after: Block) -> tuple[str, str]:
    """The innermost pair of differing strings (e.g. a tool call's arguments), else the block texts."""
    if isinstance(before.value, (dict, list)) and isinstance(after.value, (dict, list)):
        found = first_difference(before.value, after.value, "")
        if found is not None:
            try:
                b_node, a_node = resolve(before.value, found[0]), resolve(after.value, found[0])
            except (KeyError, IndexError):
                return before.text, after.text
            if isinstance(b_node, str) and isinstance(a_node, str):
                return b_node, a_node
    return before.text, after.text


def _text_detail(before: Block, after: Block) -> tuple[str | None, str | None]:
    """(detail, value kind) for two versions of one block, or (None, None) for a plain edit."""
    if before.kind == after.kind and before.role == after.role and before.text == after.text:
        return "content_shape", None
    if before.kind != after.kind or before.role != after.role:
        return None, None
    inner_b, inner_a = _deepest_strings(before, after)
    if whitespace_only(before.text, after.text) or whitespace_only(inner_b, inner_a):
        return "whitespace", None
    if json_key_order(before.text, after.text) or json_key_order(inner_b, inner_a):
        return "json_key_order", None
    kind = volatile_kind(inner_b, inner_a)
    if kind:
        return "volatile_value", kind
    return None, None


def _resolves(document: Any, pointer: str) -> bool:
    try:
        resolve(document, pointer)
    except (KeyError, IndexError, TypeError):
        return False
    return True


def _nearest_in(document: Any, pointer: str) -> str:
    """The longest ancestor of `pointer` that names something in `document` ("" is the whole document)."""
    parts = pointer.split("/")
    while len(parts) > 1:
        parts.pop()
        candidate = "/".join(parts)
        if _resolves(document, candidate):
            return candidate
    return ""


class _Explainer:
    def __init__(self, before: Prompt, after: Prompt, counter: TokenCounter) -> None:
        self.b, self.a, self.counter = before, after, counter

    def result(self, cause: str, **kw: Any) -> Break:
        detail = kw.get("detail")
        kw.setdefault("rule", rule_for_detail(cause, detail))
        pointer = kw.get("pointer")
        if pointer is not None and not _resolves(self.a.body, pointer) and _resolves(self.b.body, pointer):
            # a removal: the place exists only in BEFORE. Point at the nearest place in AFTER (the list or object
            # it was removed from) and keep the exact place in BEFORE beside it.
            kw["pointer"], kw["char"] = _nearest_in(self.a.body, pointer), None
            kw["extra"] = {**kw.get("extra", {}), "before_pointer": pointer}
        return Break(
            cause,
            before_prompt_tokens=self.b.prompt_tokens,
            after_prompt_tokens=self.a.prompt_tokens,
            **kw,
        )

    def explain(self) -> Break:
        first = self.first_cause()
        if first.cause == "none":
            return first
        found = self.all_divergences(first)
        first.extra["divergences"] = found
        return first

    def all_divergences(self, first: Break) -> list[dict[str, Any]]:
        """Every place AFTER departs from BEFORE, in prefix order; `first` (the cause) is marked."""
        out: list[dict[str, Any]] = []
        for section in SECTION_ORDER:
            b_blocks, a_blocks = self.b.section_blocks(section), self.a.section_blocks(section)  # type: ignore[arg-type]
            if [x.key for x in b_blocks] == [x.key for x in a_blocks]:
                continue
            if section == "messages" and len(a_blocks) > len(b_blocks) and [x.key for x in a_blocks[: len(b_blocks)]] == [x.key for x in b_blocks]:
                continue  # the conversation appended to: no divergence
            sub = _Explainer(self._only(self.b, section), self._only(self.a, section), self.counter)
            brk = sub.compare_blocks()
            if brk.cause != "none":
                out.append(divergence(brk, brk.section == first.section and first.cause not in ("model_changed", "params_changed")))
        for name, _scope in self.changed_params():
            brk = self.param_break(name, _scope, 0)
            out.append(divergence(brk, first.cause == "params_changed" and first.detail == name))
        if self.b.model != self.a.model:
            out.append(divergence(self.model_break(), first.cause == "model_changed"))
        if out and not any(d["first"] for d in out):
            out[0]["first"] = True
        return out

    @staticmethod
    def _only(prompt: Prompt, section: str) -> Prompt:
        return Prompt(prompt.provider, prompt.model, {}, [b for b in prompt.blocks if b.section == section], prompt.body, prompt.tokenizer)

    def model_break(self) -> Break:
        found = first_difference(self.b.model or "", self.a.model or "", "/model")
        return self.result(
            "model_changed",
            detail="model",
            pointer="/model",
            char=found[1] if found else None,
            before=_shown(self.b.model),
            after=_shown(self.a.model),
        )

    def param_break(self, name: str, scope: str | None, common: int) -> Break:
        is_header = name == "anthropic-beta"
        pointer, char = (None, None) if is_header else self.param_location(name)
        return self.result(
            "params_changed",
            detail=name,
            pointer=pointer,
            char=char,
            before=_shown(self.b.params.get(name)),
            after=_shown(self.a.params.get(name)),
            common_prefix_tokens=common,
            section=scope,
            extra={"header": name} if is_header else {},
        )

    def first_cause(self) -> Break:
        if self.b.model != self.a.model:
            return self.model_break()
        block_break = self.compare_blocks()
        param = self.changed_param()
        if param is not None:
            name, scope = param
            limit = self.a.tokens_before_section(scope) if scope else 0  # type: ignore[arg-type]
            if not scope or block_break.common_prefix_tokens >= limit:
                return self.param_break(name, scope, min(limit, block_break.common_prefix_tokens))
            # the blocks diverge before the part of the prefix the parameter invalidates: they are the cause
        return block_break

    def param_location(self, name: str) -> tuple[str, int | None]:
        base = "/" + name.replace(".", "/")
        try:
            found = first_difference(resolve(self.b.body, base), resolve(self.a.body, base), base)
        except (KeyError, IndexError, TypeError):
            return base, None
        return found if found else (base, None)

    def changed_param(self) -> tuple[str, str | None] | None:
        """The changed cache-key parameter that reaches the prefix first (one scoped to the whole prefix wins)."""
        changed = self.changed_params()
        changed.sort(key=lambda item: -1 if item[1] is None else SECTION_ORDER[item[1]])
        return changed[0] if changed else None

    def changed_params(self) -> list[tuple[str, str | None]]:
        names = list(self.b.params) + [n for n in self.a.params if n not in self.b.params]
        return [
            (name, PARAM_SCOPE.get(name) if self.a.provider == "anthropic" else None)
            for name in names
            if _shown(self.b.params.get(name)) != _shown(self.a.params.get(name))
        ]

    def compare_blocks(self) -> Break:
        bb, ab = self.b.blocks, self.a.blocks
        i, n = 0, min(len(bb), len(ab))
        while i < n and bb[i] is ab[i]:  # blocks the next request took over from this one: the same by construction
            i += 1
        i += common_prefix_items([b.key for b in bb[i:]], [a.key for a in ab[i:]])
        shared = sum(b.tokens for b in bb[:i])
        if i == len(bb):  # AFTER extends BEFORE (or equals it)
            return self.result("none", common_prefix_tokens=shared, rule=None)
        if i == len(ab):  # AFTER is a strict prefix of BEFORE: later blocks were dropped
            missing = bb[i]
            detail = {"tools": "tool_removed", "messages": "message_removed"}.get(missing.section, "text_edited")
            return self.result(
                _SECTION_CAUSE[missing.section],
                detail=detail,
                pointer=_message_pointer(missing) if missing.section == "messages" else missing.pointer,
                before=excerpt(missing.text, 0),
                after="(absent)",
                common_prefix_tokens=shared,
                section=missing.section,
            )
        b, a = bb[i], ab[i]
        section = min(b.section, a.section, key=SECTION_ORDER.__getitem__)
        if section == "tools":
            found = self.tools_change(shared)
            if found is not None:
                return found
        if section == "messages" and b.section == a.section == "messages":
            found = self.history_change(b, a, shared)
            if found is not None:
                return found
        return self.block_change(b, a, section, shared)

    def block_change(self, b: Block, a: Block, section: str, shared: int) -> Break:
        if b.section != a.section:  # a whole section (system prompt, schema) is there on one side only
            removed = b.section == section
            return self.result(
                _SECTION_CAUSE[section],
                detail=f"{section}_{'removed' if removed else 'added'}",
                pointer=b.pointer if removed else a.pointer,
                before=excerpt(b.text, 0) if removed else "(absent)",
                after="(absent)" if removed else excerpt(a.text, 0),
                common_prefix_tokens=shared,
                section=section,
            )
        detail, kind = _text_detail(b, a)
        if detail is None:
            detail = {"tools": "tool_edited", "schema": "response_format", "system": "text_edited"}.get(
                section, "message_edited"
            )
        found = first_difference(b.value, a.value, a.pointer) if detail != "content_shape" else None
        at = common_prefix_length(b.text, a.text)
        return self.result(
            _SECTION_CAUSE[section],
            detail=detail,
            value_kind=kind,
            pointer=found[0] if found else a.pointer,
            char=found[1] if found else None,
            before=excerpt(b.text, at),
            after=excerpt(a.text, at),
            common_prefix_tokens=shared + _common_tokens(b, a, self.counter),
            section=section,
        )

    def tools_change(self, shared: int) -> Break | None:
        btools, atools = self.b.section_blocks("tools"), self.a.section_blocks("tools")
        bnames, anames = [t.name for t in btools], [t.name for t in atools]
        if bnames == anames:
            return None  # same tools in the same order: one definition changed
        if sorted(map(str, bnames)) == sorted(map(str, anames)):
            detail = "tools_reordered"
        elif set(bnames) - set(anames):
            detail = "tool_removed"
        else:
            detail = "tool_added"
        first = common_prefix_items(bnames, anames)
        pointer, char = (atools[first].pointer if first < len(atools) else "/tools"), None
        if detail != "tools_reordered" and len(btools) == len(atools):  # a member renamed or swapped
            found = first_difference(btools[first].value, atools[first].value, atools[first].pointer)
            pointer, char = found if found else (pointer, None)
        return self.result(
            "tools_changed",
            detail=detail,
            pointer=pointer,
            char=char,
            before="tools: " + ", ".join(map(str, bnames)),
            after="tools: " + ", ".join(map(str, anames)),
            common_prefix_tokens=shared,
            section="tools",
            extra={
                "tools_added": [n for n in anames if n not in bnames],
                "tools_removed": [n for n in bnames if n not in anames],
            },
        )

    def history_change(self, b: Block, a: Block, shared: int) -> Break | None:
        """Messages dropped from the history (truncation, removal, or compaction into a summary)."""
        bm, am = _message_groups(self.b.blocks), _message_groups(self.a.blocks)
        bkeys, akeys = [keys for _, keys in bm], [keys for _, keys in am]
        k = common_prefix_items(bkeys, akeys)
        if k >= len(bkeys) or k >= len(akeys):
            return None
        for dropped in range(1, len(bkeys) - k):
            tail = bkeys[k + dropped :]
            replaced = dropped >= 2 and akeys[k + 1 : k + 1 + len(tail)] == tail
            if akeys[k : k + len(tail)] == tail or replaced:
                cause = "messages_changed"
                if replaced:
                    cause, detail = "compaction", "history_summarized"
                elif k == 0:
                    detail = "history_truncated"
                else:
                    detail = "message_removed"
                pointer = _message_pointer(a)
                return self.result(
                    cause,
                    detail=detail,
                    pointer=pointer,
                    before=excerpt(b.text, 0),
                    after=excerpt(a.text, 0),
                    common_prefix_tokens=shared,
                    section="messages",
                    extra={"messages_dropped": dropped, "first_dropped_message": bm[k][0]},
                )
        return None


def explain(before: Prompt, after: Prompt, counter: TokenCounter) -> Break:
    """Why AFTER's prefix does (cause "none") or does not extend BEFORE's, and what it costs."""
    return _Explainer(before, after, counter).explain()


def break_from_json(data: dict[str, Any]) -> Break:
    """A stored break (`Break.to_json()`) as a Break again, for the words and the fix."""
    known = {"cause", "detail", "rule", "location", "before", "after", "common_prefix_tokens", "before_prompt_tokens",
             "after_prompt_tokens", "reprefilled_tokens", "value_kind", "section"}
    location = data.get("location") or {}
    return Break(
        str(data.get("cause")), data.get("detail"), data.get("rule"), location.get("pointer"), location.get("char"),
        data.get("before") or "", data.get("after") or "", data.get("common_prefix_tokens") or 0,
        data.get("before_prompt_tokens") or 0, data.get("after_prompt_tokens") or 0, data.get("value_kind"),
        data.get("section"), {k: v for k, v in data.items() if k not in known},
    )
