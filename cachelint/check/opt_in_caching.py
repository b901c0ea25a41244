"""Breakpoints set only behind a switch that is off by default and that nothing in the tree turns on (CL501).

`if self.config.automatic_prompt_caching: kwargs["cache_control_injection_points"] = [...]`, with
`automatic_prompt_caching: bool = False` in the settings class: the code knows how to cache, but every request of
the project goes out without a breakpoint unless a user finds the switch. Found where all of these hold:
- an `if` tests a name or an attribute named for caching (`cache`, `caching`), and its body sets a breakpoint
  (a `cache_control` key or keyword, `cache_control_injection_points`, a Bedrock `cachePoint`);
- the switch is declared off in the tree (`automatic_prompt_caching: bool = False`, a parameter's `=False`, an
  assignment of `False`), and no .py file of the tree outside the tests turns it on (`=True`, `: True`,
  `"name": True`) or hands it on with another value (`use_cache=message.cache`);
- the function sets no breakpoint outside such switches (a tools breakpoint under a switch that is on by default
  marks its requests).
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterator
from dataclasses import dataclass

import libcst as cst

from cachelint.check import tree
from cachelint.check.module import ModuleContext, descendants

SWITCH_NAME = re.compile(r"cach(?:e|ing)", re.I)
BREAKPOINT = re.compile(r"""["']cache_control["']|\bcache_control\s*=|cache_control_injection_points|cachePoint""")


@dataclass(frozen=True, slots=True)
class OffSwitch:
    node: cst.If
    switch: str  # its name: `automatic_prompt_caching`
    declared: str  # where it is declared off: `base_adapter.py:137`


def breakpoints_behind_off_switches(ctx: ModuleContext) -> Iterator[OffSwitch]:
    if not BREAKPOINT.search(ctx.source):
        return
    found: list[OffSwitch] = []
    for branch in ctx.nodes(cst.If):
        switch = _switch(branch.test)
        if switch is None or not BREAKPOINT.search(ctx.code(branch.body)):
            continue
        declared = _declared_off(ctx.filename, switch)
        if declared is not None:
            found.append(OffSwitch(branch, switch, declared))
    for off in found:
        if not _marked_otherwise(ctx, off.node, [other.node for other in found]):
            yield off


def _marked_otherwise(ctx: ModuleContext, branch: cst.If, off: list[cst.If]) -> bool:
    """The function also sets a breakpoint outside every switch that is off (`if payload.cache_tool_definition:`,
    on by default, marks the tools): its requests do carry one."""
    function = ctx.enclosing_function(branch)
    if function is None:
        return False
    for statement in descendants(function.body):
        if isinstance(statement, cst.SimpleStatementLine) and BREAKPOINT.search(ctx.code(statement)) \
                and not any(ctx.contains(other, statement) for other in off):
            return True
    return False


def _switch(test: cst.BaseExpression) -> str | None:
    """`if self.config.automatic_prompt_caching:` / `if enable_cache:` (also the first operand of an `and`): the
    switch's name."""
    while isinstance(test, cst.BooleanOperation) and isinstance(test.operator, cst.And):
        test = test.left
    name = test.attr.value if isinstance(test, cst.Attribute) else test.value if isinstance(test, cst.Name) else None
    return name if name is not None and SWITCH_NAME.search(name) else None


def _declared_off(filename: str, switch: str) -> str | None:
    """Where the tree declares the switch off (`name: bool = False`, `name=False`, `name = False`), when no file of
    it outside the tests turns it on; else None."""
    from cachelint.check.config import test_path_below

    off = re.compile(rf"\b{re.escape(switch)}\s*(?::\s*[\w\[\]. |]+)?\s*=\s*False\b")
    # turned on: `= True`, `"name": True`, or handed on as a keyword with any value but an off one
    # (`use_cache=message.cache`, `use_cache=use_cache and is_last`)
    on = re.compile(rf"""\b{re.escape(switch)}["']?\s*(?::\s*[\w\[\]. |]+\s*=|=|:)\s*(?:True|true|1)\b"""
                    rf"""|\b{re.escape(switch)}\s*=\s*(?!False\b|None\b|0\b)[\w"'(\[{{.]""")

    def build(root: str) -> tuple[str | None, list[str]]:
        declared = None
        read: list[str] = []
        for path, text in tree.texts(root):
            read.append(path)
            if switch not in text:
                continue
            if on.search(text) and not test_path_below(path, root):
                return None, read
            match = off.search(text)
            if declared is None and match:
                declared = f"{os.path.relpath(path, root)}:{text.count(chr(10), 0, match.start()) + 1}"
        return declared, read

    return tree.tree_pass(filename, _DECLARED, build, switch)


_DECLARED: dict = {}
