"""Tool calls and tool results of stored turns, serialized again for every request from a store that reorders keys.

An app that keeps its conversations in PostgreSQL `jsonb` gets each object back with its keys in jsonb's order
(shorter keys first), not in the order the model wrote them. Code that turns every stored turn into provider
messages again for each request (`"arguments": json.dumps(call.args)`, a tool message's
`content=json.dumps(result)`) then renders a tool call one way in the turn it was made and another way from the
next turn on: that turn and the whole history after it are prefilled again. `sort_keys=True` renders the same
dict the same way whatever order it comes back in.

Found where all of these hold:
- the tree speaks of `jsonb` (a SQLAlchemy `JSONB` column, `::jsonb` in SQL): the store that reorders keys;
- a `json.dumps` without `sort_keys` (or a helper of the module that returns one, or `str()` of a tool's
  response) lands in a tool call's `arguments` or a tool result's content;
- what it serializes is read from data handed to the function (a parameter or the item of a loop over one),
  not computed there: a turn that was stored, not a tool run just now;
- the message is handed back by a function that sends no request itself: a converter run for every request,
  not an agent loop appending its newest turn once (nor a function every caller of which appends what it returns
  to a list: `history.extend(adapter.format_tool_results(results))` converts the newest turn once).
Without `jsonb` in the tree nothing is reported: the same code builds the same key order every time.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass

import libcst as cst

from cachelint.check import tree
from cachelint.check.depends import parameters_of
from cachelint.check.config import test_path_below
from cachelint.check.module import LIST_GROWERS, ModuleContext, called_name
from cachelint.check.renderers import returned
from cachelint.check.values import string_value

REORDERING_STORE = re.compile(r"\bjsonb\b", re.IGNORECASE)
CONVERSATION_STORE = re.compile(r"class\s+\w*(?:Message|Conversation|Session|Event|Chat|Thread|Turn)\w*\s*[(:]"
                                r"|(?i:table)\s+(?i:if\s+not\s+exists\s+)?\W?(?:conversations?|messages?|chat_\w+|sessions?|events?|threads?)\b"
                                r"|__tablename__\s*=\s*[\"'](?:conversations?|messages?|chat\w*|sessions?|events?|threads?)[\"']"
                                # a table described as data: `SESSION_TABLE_SCHEMA = {...}`, `Table("sessions", metadata, ...)`
                                r"|(?i:\b(?:conversations?|messages?|chats?|sessions?|events?|threads?)_table\w*\s*=)"
                                r"|\bTable\(\s*[\"'](?:conversations?|messages?|chat\w*|sessions?|events?|threads?)[\"']")
MAX_FOUND = 24  # per module
MAX_HOPS = 6  # local assignments and loops followed back to the data handed in
# a call that turns the stored value into plain data first: serialize_for_json(call.args), result.model_dump()
CONVERTS = re.compile(r"serializ|jsonable|to_dict|to_json|^dict$|^as_dict$", re.IGNORECASE)
READS = frozenset({"get", "items", "values", "model_dump", "dict", "to_dict", "as_dict", "copy"})  # methods that read it
# a function that converts the provider's fresh response (`_convert_to_chat_completion(anthropic_msg)`,
# `parse_response`): what it renders is stored once, as text, not rendered again from the store
RESPONSE_CONVERTER = re.compile(r"response|completion|parse|from_(?:anthropic|openai|provider|api)", re.IGNORECASE)
HISTORY = re.compile(r"histor|messages|conversation|turns|events|session|chat|transcript|contents", re.IGNORECASE)
STRUCTURED = re.compile(r"result|response|output|args|arguments|data|payload", re.IGNORECASE)
TEXT_KEYS = frozenset({"content", "text", "message", "msg"})
TOOL_RESULT_TYPES = ("tool_result", "function_call_output", "function_result")
TOOL_RESULT_CLASS = re.compile(r"Tool(?:Result|Message|Response)|FunctionResponse|FunctionMessage")


@dataclass(frozen=True, slots=True)
class Reserialized:
    node: cst.Call  # json.dumps(...) / str(...) / the helper's call
    slot: str  # "the arguments of a tool call" | "a tool result"
    message: cst.CSTNode  # the dict or constructor call it lands in
    helper: str | None  # the module's helper that calls json.dumps, if any


def reordering_store(filename: str, source: str = "") -> tuple[str, int] | None:
    """(file relative to the tree, line) where the tree keeps conversations in jsonb: a file of the app (not of its
    tests) that speaks of jsonb and defines what a conversation is stored as (a `Session`, `Conversation`,
    `Message` or `Event` class, a `conversations` table); None when there is none. jsonb that holds a vector
    store's metadata or a setting reorders no turn. The module's own `source` is asked first (a module that
    defines its store beside the code that renders from it)."""
    match = REORDERING_STORE.search(source)
    if match and CONVERSATION_STORE.search(source):
        return os.path.basename(filename), source.count("\n", 0, match.start()) + 1
    root = tree.root_of(filename)
    return tree.first_match(filename, REORDERING_STORE, lambda path, text: CONVERSATION_STORE.search(text) is not None
                            and not test_path_below(path, root))


def reserialized_turns(ctx: ModuleContext, senders: set[int]) -> list[Reserialized]:
    """Tool calls' arguments and tool results re-serialized from stored turns without `sort_keys` (see the
    module's docstring). `senders`: ids of the functions that send a request themselves."""
    found: list[Reserialized] = []
    if ctx.is_test:
        return found  # a test suite builds its messages once, to check them
    for call in ctx.nodes(cst.Call):
        if not call.args or call.args[0].keyword is not None:
            continue
        if called_name(call) not in ("dumps", "str") and not ctx.called_functions(call):
            continue  # neither json.dumps, str() nor a helper of the module
        function = ctx.enclosing_function(call)
        if function is None or id(function) in senders or RESPONSE_CONVERTER.search(function.name.value):
            continue  # an agent loop appending its newest turn, or a provider's fresh response converted once
        landed = _landing(ctx, call, function)
        if landed is None:
            continue  # (before the costly name lookup of what is called)
        helper = _serializer(ctx, call)
        if helper is False:
            continue
        slot, message = landed
        if called_name(call) == "str" and (slot != "a tool result" or not _structured_response(call.args[0].value)):
            continue
        if not _handed_in(ctx, call.args[0].value, function, 0) or not returned(ctx, message):
            continue
        if _added_to_parameter(ctx, message, function):
            continue  # the caller's history grown by its newest turn (an agent loop's helper): built once, kept
        if tree.grown_by_every_caller(ctx.filename, function.name.value):
            continue  # `history.extend(adapter.format_tool_results(results))`: the newest turn, converted once
        found.append(Reserialized(call, slot, message, helper or None))
        if len(found) >= MAX_FOUND:
            break
    return found


def _serializer(ctx: ModuleContext, call: cst.Call) -> str | bool:
    """"" for json.dumps without sort_keys or str(); the helper's name for a function of the module that returns
    json.dumps of its first parameter without sort_keys; False for anything else."""
    if ctx.qualified_name_in(call.func, {"json.dumps"}):
        return "" if _unsorted(call) else False
    if isinstance(call.func, cst.Name) and call.func.value == "str" and len(call.args) == 1:
        return ""
    for function in ctx.called_functions(call):
        params = [p.name.value for p in function.params.params if p.name.value not in ("self", "cls")]
        if not params:
            continue
        for value in ctx.returns_of(function):
            if isinstance(value, cst.Call) and ctx.qualified_name_in(value.func, {"json.dumps"}) and _unsorted(value) \
                    and value.args and isinstance(value.args[0].value, cst.Name) and value.args[0].value.value == params[0]:
                return function.name.value
    return False


def _unsorted(call: cst.Call) -> bool:
    sort_keys = next((a for a in call.args if a.keyword is not None and a.keyword.value == "sort_keys"), None)
    return sort_keys is None or (isinstance(sort_keys.value, cst.Name) and sort_keys.value.value == "False")


def _landing(ctx: ModuleContext, node: cst.CSTNode, function: cst.FunctionDef, hops: int = 0) -> tuple[str, cst.CSTNode] | None:
    """(slot, message) when the value of `node` becomes a tool call's arguments or a tool result's content:
    directly, through a conditional expression, or through a local name assigned once and used there."""
    child = node
    for parent in ctx.ancestors(node):
        if isinstance(parent, (cst.IfExp, cst.BooleanOperation)):
            child = parent
            continue
        if isinstance(parent, cst.DictElement) and parent.value is child:
            holder = ctx.parent(parent)
            slot = _dict_slot(string_value(parent.key), holder) if isinstance(holder, cst.Dict) else None
            return (slot, holder) if slot else None
        if isinstance(parent, cst.Arg) and parent.value is child and parent.keyword is not None:
            holder = ctx.parent(parent)
            slot = _call_slot(parent.keyword.value, holder) if isinstance(holder, cst.Call) else None
            return (slot, holder) if slot else None
        if isinstance(parent, cst.Assign) and parent.value is child and hops < 1:
            target = parent.targets[0].target if len(parent.targets) == 1 else None
            if isinstance(target, cst.Name):
                return _used_in_message(ctx, target.value, parent, function, hops + 1)
            return None
        return None
    return None


def _used_in_message(ctx: ModuleContext, name: str, assign: cst.Assign, function: cst.FunctionDef, hops: int) -> tuple[str, cst.CSTNode] | None:
    for use in ctx.nodes(cst.Name):
        if use.value != name or ctx.enclosing_function(use) is not function or ctx.contains(assign, use):
            continue
        if not any(binding is assign.targets[0].target for binding, _ in ctx.assigned_values(use)):
            continue
        landed = _landing(ctx, use, function, hops)
        if landed is not None:
            return landed
    return None


def _dict_slot(key: str | None, holder: cst.Dict) -> str | None:
    keys = {string_value(e.key): e.value for e in holder.elements if isinstance(e, cst.DictElement)}
    if key == "arguments" and "name" in keys:
        return "the arguments of a tool call"
    if key in ("content", "output") and (string_value(keys.get("role")) == "tool" or string_value(keys.get("type")) in TOOL_RESULT_TYPES):
        return "a tool result"
    return None


def _call_slot(keyword: str, holder: cst.Call) -> str | None:
    keywords = {a.keyword.value: a.value for a in holder.args if a.keyword is not None}
    if keyword == "arguments" and "name" in keywords:
        return "the arguments of a tool call"
    if keyword in ("content", "output") and (string_value(keywords.get("role")) == "tool"
                                            or string_value(keywords.get("type")) in TOOL_RESULT_TYPES
                                            or TOOL_RESULT_CLASS.search(called_name(holder))):
        return "a tool result"
    return None


def _structured_response(expr: cst.BaseExpression) -> bool:
    """`str()` renders a dict only where it reads a tool's structured response (`part.function_response.response
    ["result"]`), not a message's text (`str(msg.content)`, nearly always a string already)."""
    words = []
    while isinstance(expr, (cst.Attribute, cst.Subscript)):
        words.append(expr.attr.value if isinstance(expr, cst.Attribute) else string_value(expr.slice[0].slice.value)
                     if isinstance(expr.slice[0].slice, cst.Index) else None)
        expr = expr.value
    return bool(words) and words[0] not in TEXT_KEYS and any(w and STRUCTURED.search(w) for w in words)


def _added_to_parameter(ctx: ModuleContext, message: cst.CSTNode, function: cst.FunctionDef) -> bool:
    """Whether the statement that holds the message appends it to (or stores it into) a list the function was
    handed: `messages.append({...})` with `messages` a parameter."""
    statement = ctx.statement_of(message)
    if not isinstance(statement, cst.SimpleStatementLine):
        return False
    params = parameters_of(function)
    for small in statement.body:
        if isinstance(small, cst.Expr) and isinstance(small.value, cst.Call) and isinstance(small.value.func, cst.Attribute) \
                and small.value.func.attr.value in LIST_GROWERS:
            root = small.value.func.value
            while isinstance(root, cst.Subscript):
                root = root.value
            return isinstance(root, cst.Name) and root.value in params
    return False


def _handed_in(ctx: ModuleContext, expr: cst.BaseExpression, function: cst.FunctionDef, hops: int, read: bool = False) -> bool:
    """Whether `expr` reads a part of a stored turn handed to the function: an attribute, item or `.get()` of a
    parameter, of the item of a loop over one, of history the function narrows (`self._fit(self.chat_history)`)
    or of a history kept on `self`. A parameter passed whole (`create_tool_message(call, result)`) is a tool's
    fresh result, put into a message once."""
    while True:
        if isinstance(expr, (cst.Attribute, cst.Subscript)):
            if isinstance(expr, cst.Attribute) and isinstance(expr.value, cst.Name) and expr.value.value == "self":
                return bool(HISTORY.search(expr.attr.value))  # self.chat_history: the turns the object keeps
            expr, read = expr.value, True
        elif isinstance(expr, cst.Call) and isinstance(expr.func, cst.Attribute) and expr.func.attr.value in READS:
            expr, read = expr.func.value, True  # turn.get("arguments"), turn.model_dump()
        elif isinstance(expr, cst.BooleanOperation):
            expr = expr.left  # turn.get("tool_calls") or []
        elif isinstance(expr, cst.Call) and CONVERTS.search(called_name(expr)) and expr.args and expr.args[0].keyword is None:
            expr = expr.args[0].value  # serialize_for_json(call.args)
        else:
            break
    if not isinstance(expr, cst.Name) or expr.value in ("self", "cls") or hops > MAX_HOPS:
        return False
    for binding, assigned in ctx.assigned_values(expr):
        if isinstance(binding, cst.Param):
            return read and _param_of(binding, function)
        if ctx.enclosing_function(binding) is not function:
            continue
        loop = _loop_of(ctx, binding)
        if loop is not None:
            return _handed_in(ctx, _iterated(loop.iter), function, hops + 1, True)
        if isinstance(assigned, cst.Call) and (HISTORY.search(expr.value) or HISTORY.search(called_name(assigned))):
            return any(_handed_in(ctx, arg.value, function, hops + 1, True) for arg in assigned.args)  # history narrowed
        if assigned is not None:
            return _handed_in(ctx, assigned, function, hops + 1, read)
        return False
    return False


def _loop_of(ctx: ModuleContext, binding: cst.CSTNode) -> cst.For | cst.CompFor | None:
    """The loop whose target binds `binding` (`for turn in ...`, `for i, turn in enumerate(...)`)."""
    child = binding
    for parent in ctx.ancestors(binding):
        if isinstance(parent, (cst.For, cst.CompFor)):
            return parent if parent.target is child else None
        if not isinstance(parent, (cst.Tuple, cst.List, cst.Element)):
            return None
        child = parent
    return None


def _iterated(expr: cst.BaseExpression) -> cst.BaseExpression:
    """What a loop walks: `history` in `enumerate(history)`, `zip(history, ...)`, `reversed(history)`."""
    if isinstance(expr, cst.Call) and isinstance(expr.func, cst.Name) and expr.func.value in ("enumerate", "zip", "reversed", "sorted", "list") \
            and expr.args and expr.args[0].keyword is None:
        return expr.args[0].value
    return expr


def _param_of(param: cst.Param, function: cst.FunctionDef) -> bool:
    return any(p is param for p in (*function.params.posonly_params, *function.params.params, *function.params.kwonly_params))
