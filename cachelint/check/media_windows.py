"""The images of older messages stripped in place, beyond the newest few (CL301).

Computer-use and vision agents send a screenshot with every step and keep only the newest few in the history:
`images_to_remove = total_images - images_to_keep`, then a walk over the messages that puts a placeholder where the
oldest images were (`msg["content"] = new_content`, `fr.parts = None`, `history[i] = Message(...)`). Each new image
pushes one more out, so a message the previous request sent with its image is sent without it: the prefix breaks
there on every step, and everything after it is prefilled again. Removing them in large chunks (Anthropic's
computer-use demo removes a multiple of `min_removal_threshold` at once) keeps the prefix for several steps, and is
left alone.

Recognized in one function: a setting that counts the images (or screenshots, embeds) to keep, and either a write
into an item of a list the function walks (or into the list at an index), in a loop, or the history replaced by a
copy rebuilt from it with a filter (`filtered = [m for i, m in enumerate(messages) if i not in to_remove]`, returned;
`messages = new_messages` after a loop over `messages` that fills `new_messages`).
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass

import libcst as cst

from cachelint.check.module import ModuleContext, descendants

MEDIA = r"(?:images?|imgs?|screenshots?|embeds?|photos?|pictures?)"
# the number of images kept, as a name the code binds or reads (not a function it calls): `images_to_keep`,
# `self._n_images_to_keep`, `max_recent_turn_with_screenshots`, `IMAGE_RETAIN_TURNS`, `max_embeds`,
# `only_n_most_recent_images`; not a size (`MAX_IMAGE_SIZE`, `max_image_width`)
MEDIA_WORD = re.compile(rf"(?i)(?:^|_){MEDIA}(?:_|$)")
KEEP_WORD = re.compile(r"(?i)(?:^|_)(?:keep|retain|retention|recent|max|limit|n|num|only)(?:_|$)|to_?keep")
NOT_A_COUNT = re.compile(r"(?i)size|width|height|bytes|dim|pixel|resolution|quality|url|path|dir|file|format|token|char")
# the cheap look at the text first (gate.py): a media word and a keeping word in one identifier
QUICK = re.compile(r"(?i)(?:keep|retain|recent|max|limit|last)\w{0,30}?(?:image|img|screenshot|embed|photo|picture)"
                   r"|(?:image|img|screenshot|embed|photo|picture)\w{0,30}?(?:keep|retain|retention|limit|window|recent|max)")
MEDIA_TEXT = re.compile(r"(?i)image|screenshot|img|embed|photo|picture|base64")
CHUNKED = re.compile(r"(?i)removal_threshold|remove\w*_chunk|chunk\w*_remov|in_chunks")  # large steps: the prefix holds
# a list of a conversation's messages or an agent's steps
HISTORY = re.compile(r"messages|history|conversation|turns|trajectory|steps|msgs|records|memory|context", re.I)


@dataclass(frozen=True, slots=True)
class MediaWindow:
    node: cst.CSTNode  # the write that strips an older image
    setting: str  # how many are kept


def media_windows(ctx: ModuleContext) -> Iterator[MediaWindow]:
    if ctx.is_test or not QUICK.search(ctx.source):
        return
    for function in ctx.nodes(cst.FunctionDef):
        setting = _keep_setting(ctx, function)
        if setting is None or CHUNKED.search(ctx.code(function.body)) or not _walks(function):
            continue
        write = _first_write(ctx, function) or _rebuilt_without(ctx, function)
        if write is not None:
            yield MediaWindow(write, setting)


def _keep_setting(ctx: ModuleContext, function: cst.FunctionDef) -> str | None:
    """The first name the function binds or reads (a parameter, a local, an attribute, a constant; not a function it
    calls) that counts the images to keep."""
    for node in descendants(function):
        if isinstance(node, cst.Name):
            parent = ctx.parent(node)
            if isinstance(parent, cst.Call) and parent.func is node or isinstance(parent, cst.Attribute) and parent.attr is node \
                    and isinstance(ctx.parent(parent), cst.Call) and ctx.parent(parent).func is parent:
                continue  # `get_recent_task_screenshot_urls(...)`: a function, not a count
            if MEDIA_WORD.search(node.value) and KEEP_WORD.search(node.value) and not NOT_A_COUNT.search(node.value):
                return node.value
    return None


def _walks(function: cst.FunctionDef) -> bool:
    return any(isinstance(n, cst.For) for n in descendants(function.body))


def _first_write(ctx: ModuleContext, function: cst.FunctionDef) -> cst.CSTNode | None:
    """The first statement, in a loop of the function's own over a history (or over what such a loop walks), that
    writes into an item of what the loop walks (or into the walked list at an index), where the loop speaks of
    images: `msg["content"] = new_content`, `fr.parts = None`, `history[i] = Message(...)`."""
    histories: set[str] = set()  # the walked names of the loops over a history, for the loops nested in them
    for loop in descendants(function.body):
        if not isinstance(loop, cst.For) or ctx.enclosing_function(loop) is not function:
            continue
        walked = _walked(loop)
        root = _iterated_root(loop)
        if not (root is not None and (HISTORY.search(root) or root in histories or _made_from_history(ctx, function, root))):
            continue
        histories |= walked
        if not any(MEDIA_TEXT.search(ctx.code(around)) for around in (loop, *_loops_around(ctx, loop, function))):
            continue  # `messages[i] = SystemMessage(MARKDOWN + m.content)`: a loop that handles no image
        for node in descendants(loop.body):
            if isinstance(node, cst.Assign) and ctx.enclosing_function(node) is function:
                for target in node.targets:
                    if isinstance(target.target, (cst.Subscript, cst.Attribute)) and _root(target.target) in walked:
                        return ctx.statement_of(node)
    return None


def _loops_around(ctx: ModuleContext, node: cst.CSTNode, function: cst.FunctionDef) -> list[cst.CSTNode]:
    return [a for a in ctx.ancestors(node) if isinstance(a, cst.For) and ctx.contains(function, a)]


def _made_from_history(ctx: ModuleContext, function: cst.FunctionDef, name: str) -> bool:
    """`tool_results = [b for m in messages for b in m["content"] if ...]`: the name holds items of a history."""
    for node in ctx.nodes_in(cst.Assign, function):
        if len(node.targets) == 1 and isinstance(node.targets[0].target, cst.Name) and node.targets[0].target.value == name \
                and isinstance(node.value, (cst.ListComp, cst.GeneratorExp)):
            root = _root(node.value.for_in.iter)
            return root is not None and HISTORY.search(root) is not None
    return False


def _iterated_root(loop: cst.For) -> str | None:
    """What the loop walks: `messages` in `for m in reversed(messages[:n])`, or in `for idx in range(boundary):
    msg = messages[idx]`."""
    iterable = loop.iter
    if isinstance(iterable, cst.Call) and isinstance(iterable.func, cst.Name) and iterable.func.value == "range":
        index = {n.value for n in descendants(loop.target) if isinstance(n, cst.Name)}
        for node in descendants(loop.body):
            if isinstance(node, cst.Subscript) and any(isinstance(n, cst.Name) and n.value in index for n in descendants(node.slice[0])):
                return _root(node.value)
        return None
    iterable = _unwrapped(iterable)
    return _root(iterable) if isinstance(iterable, (cst.Name, cst.Attribute, cst.Subscript)) else None


def _unwrapped(iterable: cst.BaseExpression) -> cst.BaseExpression:
    """The list a loop walks, out of `enumerate(...)`, `reversed(...)` and a slice: `messages` of
    `enumerate(reversed(messages[:n]))`."""
    while isinstance(iterable, cst.Call) and iterable.args:
        iterable = iterable.args[0].value
    return iterable.value if isinstance(iterable, cst.Subscript) else iterable


def _rebuilt_without(ctx: ModuleContext, function: cst.FunctionDef) -> cst.CSTNode | None:
    """The history replaced by a copy rebuilt from it without the older images: `messages = new_messages` after a
    loop over `messages` that appends to `new_messages`, or `filtered = [m for i, m in enumerate(messages) if i not
    in to_remove]` returned."""
    returned = {ctx.code(r) for r in ctx.returns_of(function) if isinstance(r, cst.Name)}
    for assign in descendants(function.body):
        if not isinstance(assign, cst.Assign) or len(assign.targets) != 1 or not isinstance(assign.targets[0].target, cst.Name) \
                or ctx.enclosing_function(assign) is not function:
            continue
        target, value = assign.targets[0].target.value, assign.value
        if isinstance(value, cst.ListComp):
            source = _root(_unwrapped(value.for_in.iter))
            if source and HISTORY.search(source) and value.for_in.ifs and (target in returned or target == source):
                return ctx.statement_of(assign)
        elif isinstance(value, cst.Name) and HISTORY.search(target) and _filled_from(ctx, function, value.value, target):
            return ctx.statement_of(assign)
    return None


def _filled_from(ctx: ModuleContext, function: cst.FunctionDef, new: str, history: str) -> bool:
    """A loop over `history` appends to the list named `new`."""
    for loop in descendants(function.body):
        if isinstance(loop, cst.For) and history in _walked(loop):
            for node in descendants(loop.body):
                if isinstance(node, cst.Call) and isinstance(node.func, cst.Attribute) and node.func.attr.value == "append" \
                        and isinstance(node.func.value, cst.Name) and node.func.value.value == new:
                    return True
    return False


def _walked(loop: cst.For) -> set[str]:
    """The names a loop binds to what it walks (`msg`, `i, msg`, `old_turn`, and `msg = messages[idx]` in its body)
    and the list itself (`messages`)."""
    names = {n.value for n in descendants(loop.target) if isinstance(n, cst.Name)}
    for node in descendants(loop.body):  # for idx in range(boundary): msg = messages[idx]
        if isinstance(node, cst.Assign) and len(node.targets) == 1 and isinstance(node.targets[0].target, cst.Name) \
                and isinstance(node.value, cst.Subscript) and any(isinstance(n, cst.Name) and n.value in names for n in descendants(node.value.slice[0])):
            names.add(node.targets[0].target.value)
    iterable = _unwrapped(loop.iter)
    root = _root(iterable)
    if root is not None and root != "self":
        names.add(root)
    elif isinstance(iterable, cst.Attribute):
        names.add(f"self.{iterable.attr.value}")
    return names


def _root(expr: cst.BaseExpression) -> str | None:
    """`msg["content"]` -> msg; `self._history[i]` -> self._history; `fr.parts` -> fr."""
    while isinstance(expr, (cst.Subscript, cst.Attribute)):
        if isinstance(expr, cst.Attribute) and isinstance(expr.value, cst.Name) and expr.value.value == "self":
            return f"self.{expr.attr.value}"
        expr = expr.value
    return expr.value if isinstance(expr, cst.Name) else None
