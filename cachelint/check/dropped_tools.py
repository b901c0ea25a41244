"""Tools taken off one request of a conversation that the others send them with (CL203), where the requests go
through the app's own agent or client code rather than an SDK call in sight.

Two shapes real agents take:

- the last step after a step limit: `while not done and steps < max_steps: await self.step()`, then
  `self.req.func_tool = None` and one more `await self.step()` to force an answer, or the same step called again
  with the arguments the loop sent beside the tools (`self._create_chat_step({**base_kwargs, **tools_kwargs})` in the
  loop, `self._create_chat_step(base_kwargs)` after it);
- a retry or finalization path that builds the request with `tools=None` from the same history the loop's
  requests are built from with their tools (`self._build_request(spec, messages, tools=None)` beside
  `self._build_request(spec, messages, tools=spec.tools)`).

Either request shares no prefix with the ones before it (tools open the prefix), so the whole history is prefilled
again. Forbidding calls with `tool_choice="none"` keeps the prefix.

The mirror image: a tool added on the first pass only (`if depth == 0: functions.append(DIRECT_ANSWER_TOOL)` in a
function that calls itself with `depth + 1` once the tool results are in): the follow-up requests of the same turn
send the tools without it, so none of them shares a prefix with the first.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass

import libcst as cst

from cachelint.check.module import TOOL_WORD, ModuleContext, called_name, descendants, last_name

# what a conversation handed to a function is called
CONVERSATION_PARAM = re.compile(r"messages|history|conversation|convo|msgs|turns|contents|input", re.I)


@dataclass(frozen=True, slots=True)
class DroppedTools:
    node: cst.CSTNode  # the assignment or the call that drops them
    what: str  # `self.req.func_tool = None`
    how: str  # "after the step loop, before one more step" / "beside ... with tools"


def _empty(value: cst.BaseExpression) -> bool:
    return (isinstance(value, cst.Name) and value.value in ("None", "NOT_GIVEN")) or (isinstance(value, cst.List) and not value.elements)


def tools_cleared_for_a_last_step(ctx: ModuleContext) -> Iterator[DroppedTools]:
    """A loop that calls a step (`self.step()`, `self.run_once(req)`), then, after the loop, tools set to nothing
    and the same step called once more."""
    for loop in (*ctx.nodes(cst.While), *ctx.nodes(cst.For)):
        if not _bounded_by_a_count(loop):
            continue
        steps = {ctx.code(c.func) for c in descendants(loop.body) if isinstance(c, cst.Call) and _own_method(c.func)}
        if not steps:
            continue
        following = _statements_after(ctx, loop)
        if isinstance(loop, (cst.For, cst.While)) and loop.orelse is not None:  # for ...: ... else: one more step
            following = [*loop.orelse.body.body, *following]
        for index, statement in enumerate(following):
            cleared = _tools_cleared(ctx, statement)
            if cleared is None:
                continue
            later = [n for s in following[index:] for n in (s, *descendants(s))]
            if any(isinstance(n, cst.Call) and ctx.code(n.func) in steps and ctx.span(n).row > ctx.span(cleared).row for n in later):
                yield DroppedTools(cleared, ctx.code(cleared).strip(), "after the loop, before one more step of the same conversation")
                break


def tools_left_out_after_the_loop(ctx: ModuleContext) -> Iterator[DroppedTools]:
    """A step-limited loop calls a step of the object with the tools (`self._create_chat_step({**base_kwargs,
    **tools_kwargs})`, `self.step(messages, tools=tools)`), and once the steps are used up the same step is called
    again without them (`self._create_chat_step(base_kwargs)`, `self.step(messages)`) to force an answer."""
    for loop in (*ctx.nodes(cst.While), *ctx.nodes(cst.For)):
        if not _bounded_by_a_count(loop):
            continue
        with_tools: dict[str, set[str]] = {}  # step -> what it is sent beside the tools (`base_kwargs`), "" for keywords
        for call in (n for n in descendants(loop.body) if isinstance(n, cst.Call) and _own_method(n.func)):
            for bases in (_beside_tools(ctx, loop, arg) for arg in call.args):
                if bases is not None:
                    with_tools.setdefault(ctx.code(call.func), set()).update(bases)
        if not with_tools:
            continue
        following = _statements_after(ctx, loop)
        if isinstance(loop, (cst.For, cst.While)) and loop.orelse is not None:
            following = [*loop.orelse.body.body, *following]
        for call in (n for s in following for n in (s, *descendants(s)) if isinstance(n, cst.Call)):
            bases = with_tools.get(ctx.code(call.func))
            if bases is None or any(a.keyword is not None and a.keyword.value in OUTPUT_FORMATS for a in call.args):
                continue  # a side request in another output format (`response_format=`): CL401 says it
            names = {ctx.code(a.value) for a in call.args if a.keyword is None and not a.star}
            without = any(a.keyword is not None and a.keyword.value in ("tools", "functions") and _empty(a.value) for a in call.args)
            if names & bases or ("" in bases and (without or not any(a.keyword is not None and TOOL_WORD.search(a.keyword.value)
                                                                     for a in call.args))):
                yield DroppedTools(call, ctx.code(call).strip(), "after the steps are used up, without the tools the loop's steps send")
                break


OUTPUT_FORMATS = frozenset({"response_format", "output_type", "result_type", "text_format", "json_output", "output_schema", "response_model"})


def _beside_tools(ctx: ModuleContext, loop: cst.CSTNode, arg: cst.Arg) -> set[str] | None:
    """What an argument of a step in the loop sends beside the tools: the other dicts spread with a tools-named one
    (`{**base_kwargs, **tools_kwargs}`, also bound to a name in the loop first), or {""} for a `tools=` keyword that is
    not empty; None when it sends no tools."""
    if arg.keyword is not None:
        return {""} if arg.keyword.value in ("tools", "functions") and not _empty(arg.value) else None
    value = arg.value
    if isinstance(value, cst.Name):
        bound = [v for b, v in ctx.assigned_values(value) if v is not None and ctx.contains(loop, b)]
        value = bound[0] if len(bound) == 1 else value
    if not isinstance(value, cst.Dict):
        return None
    spread = [ctx.code(e.value) for e in value.elements if isinstance(e, cst.StarredDictElement)]
    tools = [name for name in spread if TOOL_WORD.search(name)]
    return set(spread) - set(tools) if tools and len(spread) > len(tools) else None


def tools_cleared_between_runs(ctx: ModuleContext) -> Iterator[DroppedTools]:
    """`agent.run(...)`, then `agent.tools = []` (or `agent.tools.clear()`) and `agent.run(...)` again: the same agent
    object, which keeps its memory (the conversation) between runs, sends its next run without the tools of the first
    (a proposal step after a discovery run). Both runs must be in blocks around the clearing (not the other branch of
    an `if`, nor a `with make_agent() as agent:` block of their own), and the agent not made anew in between."""
    for clear in _tool_clearings(ctx):
        target = clear.targets[0].target if isinstance(clear, cst.Assign) else clear.target if isinstance(clear, cst.AnnAssign) else None
        holder_node = target.value if isinstance(target, cst.Attribute) else clear.func.value.value  # type: ignore[union-attr]
        holder = ctx.code(holder_node)
        function = ctx.enclosing_function(clear)
        if holder == "self" or function is None or function.name.value == "__init__":
            continue
        row = ctx.span(clear).row
        blocks = {id(a) for a in ctx.ancestors(clear) if isinstance(a, cst.IndentedBlock)}
        remade = max((ctx.span(a).row for a in ctx.nodes_in(cst.Assign, function)
                      if ctx.span(a).row < row and any(ctx.code(t.target) == holder for t in a.targets)), default=0)
        before: set[str] = set()
        after: set[str] = set()
        for call in ctx.nodes_in(cst.Call, function):
            if not (isinstance(call.func, cst.Attribute) and ctx.code(call.func.value) == holder and RUNS.match(call.func.attr.value)):
                continue
            if id(ctx.parent(ctx.statement_of(call))) not in blocks:
                continue  # in a block of its own: another branch, or another `with ... as agent:`
            at = ctx.span(call).row
            if remade < at < row:
                before.add(call.func.attr.value)  # a run of the object the tools are taken from (not of one made since)
            elif at > row:
                after.add(call.func.attr.value)
        runs = before & after
        if runs:
            yield DroppedTools(clear, ctx.code(clear).strip(), f"between two `{holder}.{sorted(runs)[0]}()` runs of the same agent")


def _tool_clearings(ctx: ModuleContext) -> Iterator[cst.CSTNode]:
    """`agent.tools = []` / `= None`, `agent.tools: list = []`, `agent.tools.clear()`: an object's tools emptied."""
    for assign in ctx.nodes(cst.Assign):
        target = assign.targets[0].target if len(assign.targets) == 1 else None
        if isinstance(target, cst.Attribute) and TOOLS_HOLDER.match(target.attr.value) and _empty(assign.value):
            yield assign
    for assign in ctx.nodes(cst.AnnAssign):
        if isinstance(assign.target, cst.Attribute) and TOOLS_HOLDER.match(assign.target.attr.value) \
                and assign.value is not None and _empty(assign.value):
            yield assign
    for call in ctx.calls_by_name.get("clear", []):
        func = call.func
        if isinstance(func, cst.Attribute) and isinstance(func.value, cst.Attribute) and TOOLS_HOLDER.match(func.value.attr.value) \
                and not call.args:
            yield call


# a method that runs an agent's conversation on: `agent.run(...)`, `agent.step()`, `agent.chat(...)`
RUNS = re.compile(r"^a?(?:run|step|chat|invoke|execute|respond|continue|generate|ask)(?:_\w+)?$", re.I)


def _bounded_by_a_count(loop: cst.CSTNode) -> bool:
    """`while not done and steps < max_steps:` or `for _ in range(max_steps):`: a loop with a step limit."""
    if isinstance(loop, cst.While):
        return any(isinstance(n, cst.Comparison) and any(isinstance(c.operator, (cst.LessThan, cst.LessThanEqual)) for c in n.comparisons)
                   for n in (loop.test, *descendants(loop.test)))
    return isinstance(loop, cst.For) and isinstance(loop.iter, cst.Call) and last_name(loop.iter.func) == "range"


def _own_method(func: cst.BaseExpression) -> bool:
    """`self.step`: a method of the object itself (not `self.log.info`, `self.messages.append`)."""
    return isinstance(func, cst.Attribute) and isinstance(func.value, cst.Name) and func.value.value == "self"


def _statements_after(ctx: ModuleContext, loop: cst.CSTNode) -> list[cst.CSTNode]:
    """The statements after `loop` in its block."""
    parent = ctx.parent(loop)
    body = getattr(parent, "body", None)
    if isinstance(body, (list, tuple)) and loop in body:
        return list(body[body.index(loop) + 1:])
    return []




def tools_dropped_on_a_last_pass(ctx: ModuleContext, sites) -> Iterator[DroppedTools]:
    """Tools emptied or narrowed to a few on the last pass of a step-limited loop: `tools = None if i == max_steps else
    tools`, `if i == max_steps: tools = None`, `if current_turn == self.max_turns - 1: tools = [t for t in tools if
    t["name"] == "submit"]`, `elif self._tool_call_count >= self.tool_call_limit: tool_definitions = []`. The last
    request sends other tools than the ones before it, so it shares no prefix with them. One walk over the assignments
    of names that hold tools; the request that sends the name inside the loop, when one is in sight, anchors it (the
    other branch need not keep the tools: the value before the loop does), else the other branch of the test must
    keep them all."""
    anchors = _sent_in_loops(ctx, sites)
    yield from _dropped_in_the_call(ctx, sites)
    for assign in ctx.nodes(cst.Assign):
        if len(assign.targets) != 1 or ctx.enclosing_function(assign) is None:
            continue
        target = assign.targets[0].target
        name = last_name(target) if isinstance(target, (cst.Name, cst.Attribute)) else None
        if name is None or not TOOLS_HOLDER.match(name):
            continue
        statement = ctx.statement_of(assign)
        what = ctx.code(assign).strip()
        loop = next((loop for loop in anchors.get(ctx.code(target), []) if ctx.contains(loop, assign)), None) \
            if isinstance(target, cst.Name) else None
        anchored = loop is not None
        how = "on the last pass of the loop that sends it" if anchored else "once the steps reach their limit"
        value = assign.value
        if isinstance(value, cst.IfExp):
            if _dropped_when_last(ctx, value) and anchored:
                yield DroppedTools(statement, what, how)
            continue
        if not _dropped(ctx, value):
            continue
        guard = next((a for a in ctx.ancestors(assign) if isinstance(a, cst.If)), None)
        if anchored and _goes_round(ctx, statement, loop):
            yield DroppedTools(statement, what, "before the loop that sends it goes round for the next request")
            continue
        if guard is None or not last_pass(ctx, guard.test) or not ctx.contains(guard.body, assign):
            continue
        if (anchored and ctx.contains(loop, guard)) or (statement in guard.body.body and _kept_otherwise(ctx, guard, target)):
            yield DroppedTools(statement, what, how)


def _dropped_when_last(ctx: ModuleContext, value: cst.IfExp) -> bool:
    """`None if i == max_steps else tools`, `tools if step < self.max_steps - 1 else []`: nothing (or a few) on the
    last pass, the tools on the others."""
    if not (_dropped(ctx, value.body) or _dropped(ctx, value.orelse)):
        return False
    return last_pass(ctx, value.test) or _before_the_last(ctx, value.test)


def _before_the_last(ctx: ModuleContext, test: cst.BaseExpression) -> bool:
    """`step < max_steps - 1`, `rounds < self.max_rounds`, `not is_last_step`, `not last`: every pass but the last."""
    if isinstance(test, cst.UnaryOperation) and isinstance(test.operator, cst.Not):
        return last_pass(ctx, test.expression)
    if isinstance(test, cst.Comparison) and len(test.comparisons) == 1 \
            and isinstance(test.comparisons[0].operator, (cst.LessThan, cst.LessThanEqual)):
        return _counter_against_limit(test)
    return False


def _dropped_in_the_call(ctx: ModuleContext, sites) -> Iterator[DroppedTools]:
    """`client.chat.completions.create(..., tools=None if step == MAX_STEPS - 1 else TOOLS)` in a loop: the tools
    taken off the last pass in the request itself."""
    for site in sites:
        tools = site.arg("tools") if isinstance(site.node, cst.Call) else None
        if isinstance(tools, cst.IfExp) and ctx.loops_around(site.node) and _dropped_when_last(ctx, tools):
            yield DroppedTools(ctx.statement_of(site.node), f"tools={ctx.code(tools)}", "on the last pass of the loop that sends it")


def _sent_in_loops(ctx: ModuleContext, sites) -> dict[str, list[cst.CSTNode]]:
    """The names sent as a request's `tools=` inside a loop, with the innermost such loop of each request; a call of
    the app's own client with a conversation and the tools (`client.streaming_call(messages=messages,
    tools=current_tools)`) is such a request too."""
    found: dict[str, list[cst.CSTNode]] = {}
    calls = [(site.node, site.arg("tools")) for site in sites if isinstance(site.node, cst.Call)]
    for call in ctx.nodes(cst.Call):
        keywords = {a.keyword.value: a.value for a in call.args if a.keyword is not None}
        if "tools" in keywords and any(CONVERSATION_PARAM.fullmatch(k) for k in keywords) and isinstance(call.func, cst.Attribute) \
                and LLM_CLIENT.search(last_name(call.func.value) or ""):
            calls.append((call, keywords["tools"]))
    for call, tools in calls:
        loops = ctx.loops_around(call)
        if loops and isinstance(tools, cst.Name) and not any(ctx.contains(l, call) for l in found.get(tools.value, [])):
            found.setdefault(tools.value, []).append(loops[-1])
    return found


# what the app's own LLM client is called: client, active_client, llm, chat_model, provider (not an editor's .completion)
LLM_CLIENT = re.compile(r"(?:^|_)(?:client|llm|lm|model|provider|openai|anthropic|claude|gpt|router)s?$", re.I)


def _goes_round(ctx: ModuleContext, statement: cst.CSTNode, loop: cst.CSTNode) -> bool:
    """`current_tools = None`, then `continue`, in the block the statement is in, inside the loop that sends the
    tools: the loop's next pass sends the conversation (now with the tool results) without them."""
    block = ctx.parent(statement)
    if not isinstance(block, cst.IndentedBlock) or not ctx.contains(loop, block):
        return False
    if any(isinstance(a, cst.ExceptHandler) for a in ctx.ancestors(statement) if ctx.contains(loop, a)):
        return False  # the provider refused the tools (a model without tool support): every later request goes without
    after = list(block.body)[list(block.body).index(statement) + 1:]
    last = after[-1] if after else None
    return isinstance(last, cst.SimpleStatementLine) and any(isinstance(s, cst.Continue) for s in last.body) \
        and ctx.enclosing(block, (cst.For, cst.While, cst.FunctionDef)) is loop


def _dropped(ctx: ModuleContext, value: cst.BaseExpression) -> bool:
    """Nothing (`None`, `[]`), or a few of the tools picked by a filter (`[t for t in tools if t.name == "submit"]`)."""
    return _empty(value) or (isinstance(value, (cst.ListComp, cst.GeneratorExp)) and bool(value.for_in.ifs)
                             and TOOL_WORD.search(ctx.code(value.for_in.iter)) is not None)


# what holds the tools a request is sent with: tools, tool_definitions, functions, tool_list, tool
TOOLS_HOLDER = re.compile(r"^_?(?:\w+_)?(?:tools?|tool_definitions|tool_defs|tool_specs|functions|tool_list)$", re.I)


def _kept_otherwise(ctx: ModuleContext, branch: cst.If, target: cst.BaseExpression) -> bool:
    """The other branch of the test assigns the same name something else (all the tools)."""
    code = ctx.code(target)
    other = branch.orelse
    while other is not None:
        body = other.body.body if isinstance(other, (cst.If, cst.Else)) else []
        for statement in body:
            node = statement.body[0] if isinstance(statement, cst.SimpleStatementLine) and statement.body else None
            if isinstance(node, cst.Assign) and any(ctx.code(t.target) == code for t in node.targets) and not _empty(node.value):
                return True
        other = other.orelse if isinstance(other, cst.If) else None
    return False


# a step counter and its limit, by name: `i == max_steps`, `current_turn == self.max_tool_call_times - 1`,
# `self._tool_call_count >= self.tool_call_limit`
COUNTER = re.compile(r"^_?(?:i|j|n|k|idx|index|step|steps|turn|turns|round|rounds|iter|iteration|iterations|attempt|attempts|trial|trials|try_count|"
                     r"retries|loop|loops|count|\w*_(?:step|turn|round|iter|iteration|attempt|trial|count|counter|index|idx|num|number)s?)$", re.I)
LIMIT = re.compile(r"(?:^|_)(?:max|limit|maximum|budget|last|final)(?:$|_)|^max[A-Z]", re.I)
# a flag that the loop sets on its last pass: `is_last_step`, `final_iteration`
LAST_FLAG = re.compile(r"^_?(?:is_)?(?:last|final)_(?:step|turn|round|iter|iteration|pass|attempt|trial)$", re.I)


def last_pass(ctx: ModuleContext, test: cst.BaseExpression, depth: int = 0) -> bool:
    """`i == max_steps`, `step >= self.max_iterations - 1`, `count >= self.tool_call_limit`, `is_last_step`: a step
    counter against its limit, or a flag named for the last step, or a name the function binds once to such a test
    (`last = step == MAX_STEPS - 1`, then `tools = None if last else TOOLS`); a setting's value (`plan == "limited"`)
    is not."""
    if isinstance(test, cst.BooleanOperation):
        return last_pass(ctx, test.left, depth) or last_pass(ctx, test.right, depth)
    if isinstance(test, cst.Name) and depth < 2 and LAST_FLAG.match(test.value) is None:
        function = ctx.enclosing_function(test)
        value = ctx.sole_value(test)
        if function is not None and isinstance(value, (cst.Comparison, cst.BooleanOperation)) and ctx.enclosing_function(value) is function:
            return last_pass(ctx, value, depth + 1)
    if isinstance(test, cst.Comparison):
        if not any(isinstance(c.operator, (cst.Equal, cst.GreaterThanEqual, cst.GreaterThan)) for c in test.comparisons):
            return False
        return _counter_against_limit(test)  # `i == max_steps`, `count >= self.tool_call_limit`
    return isinstance(test, (cst.Name, cst.Attribute)) and LAST_FLAG.match(last_name(test) or "") is not None



# a call named for taking the tools (function calling) off the request settings
RESETS_TOOLS = re.compile(r"^_?(?:reset|clear|remove|disable|drop|unset)_(?:\w+_)?(?:tools?|functions?|function_choice|tool_choice)(?:_settings)?$", re.I)


def _tools_cleared(ctx: ModuleContext, statement: cst.CSTNode) -> cst.CSTNode | None:
    """`self.req.func_tool = None`, `request.tools = []`, `params["tools"] = None` in `statement` (under an `if`
    too): tools taken off what the next step sends."""
    for node in (statement, *descendants(statement)):
        if isinstance(node, cst.Call) and RESETS_TOOLS.search(last_name(node.func) or "") and isinstance(statement, cst.SimpleStatementLine):
            return statement.body[0]  # self._reset_function_choice_settings(settings): the tools taken off the settings
        if not isinstance(node, cst.Assign) or not _empty(node.value):
            continue
        for target in node.targets:
            t = target.target
            name = last_name(t) if isinstance(t, (cst.Attribute, cst.Name)) else None
            if isinstance(t, cst.Subscript) and isinstance(t.slice[0].slice, cst.Index):
                key = t.slice[0].slice.value
                name = key.raw_value if isinstance(key, cst.SimpleString) else None
            if name is not None and TOOL_WORD.search(name) and not isinstance(t, cst.Name) and not _guarded_by_itself(ctx, node, t):
                return node
    return None


def tools_none_beside_tools(ctx: ModuleContext) -> Iterator[DroppedTools]:
    """`self._build_request(spec, retry_messages, tools=None)` where `retry_messages` is the conversation the
    function is handed, while another call of the same function of the module passes real tools."""
    by_callee: dict[str, list[cst.Call]] = {}
    for call in ctx.nodes(cst.Call):
        if any(a.keyword is not None and a.keyword.value == "tools" for a in call.args):
            by_callee.setdefault(ctx.code(call.func), []).append(call)
    for callee, calls in by_callee.items():
        if not (callee.startswith("self.") or "." not in callee) or len(calls) < 2:
            continue
        tools = {id(c): next(a.value for a in c.args if a.keyword is not None and a.keyword.value == "tools") for c in calls}
        with_tools = [c for c in calls if not _empty(tools[id(c)])]
        if not with_tools:
            continue
        for call in calls:
            if _empty(tools[id(call)]) and _sends_handed_conversation(ctx, call):
                # reported at the empty tools argument: the request is the call, the cause is what it leaves out
                yield DroppedTools(tools[id(call)], f"{callee}(..., tools={ctx.code(tools[id(call)])})",
                                   f"beside {len(with_tools)} call(s) of `{callee}` with tools")


def _sends_handed_conversation(ctx: ModuleContext, call: cst.Call) -> bool:
    """A positional or `messages=` argument of the call is the conversation its function (or a function around it:
    a closure handed to a retry) is handed, or a list made from it (`retry = list(messages)`; `retry.append(...)`)."""
    functions = [f for f in ctx.ancestors(call) if isinstance(f, cst.FunctionDef)]
    if not functions:
        return False  # (a closure, `async def _final_call():`, sends what the functions around it were handed)
    handed = {p.name.value for f in functions for p in (*f.params.params, *f.params.kwonly_params) if CONVERSATION_PARAM.search(p.name.value)}
    if not handed:
        return False
    made = set(handed)
    for node in descendants(functions[-1].body):
        if isinstance(node, cst.Assign) and _copy_of(node.value, made):
            made |= {t.target.value for t in node.targets if isinstance(t.target, cst.Name)}
        elif isinstance(node, cst.AnnAssign) and node.value is not None and isinstance(node.target, cst.Name) \
                and _copy_of(node.value, made):
            made.add(node.target.value)  # `conversation: list[dict] = messages.copy() if messages else [...]`
    return any(isinstance(a.value, cst.Name) and a.value.value in made and (a.keyword is None or CONVERSATION_PARAM.search(a.keyword.value))
               for a in call.args)


def _copy_of(value: cst.BaseExpression, names: set[str]) -> bool:
    """`value` is one of the conversations `names`, or a list made of it: `list(messages)`, `messages.copy()`,
    `copy.deepcopy(messages)`, `messages[:]`, `[system] + messages`, `[*messages, note]`, either branch of `a if c else b`.
    Not a new list that only quotes a message of it (`[{"role": "user", "content": "Title for: " + messages[0]["content"]}]`)."""
    if isinstance(value, cst.Name):
        return value.value in names
    if isinstance(value, cst.IfExp):
        return _copy_of(value.body, names) or _copy_of(value.orelse, names)
    if isinstance(value, cst.Call):
        if isinstance(value.func, cst.Attribute) and value.func.attr.value == "copy" and not value.args:
            return _copy_of(value.func.value, names)
        return last_name(value.func) in ("list", "tuple", "deepcopy", "copy") and len(value.args) == 1 and _copy_of(value.args[0].value, names)
    if isinstance(value, cst.Subscript):
        return isinstance(value.slice[0].slice, cst.Slice) and _copy_of(value.value, names)
    if isinstance(value, cst.BinaryOperation) and isinstance(value.operator, cst.Add):
        return _copy_of(value.left, names) or _copy_of(value.right, names)
    if isinstance(value, cst.List):
        return any(isinstance(e, cst.StarredElement) and _copy_of(e.value, names) for e in value.elements)
    return False


def _guarded_by_itself(ctx: ModuleContext, assign: cst.Assign, target: cst.BaseExpression) -> bool:
    """`if self.tools is None: self.tools = []`: a list made ready to be filled, under a test of itself."""
    guard = ctx.enclosing(assign, (cst.If,))
    code = ctx.code(target)
    return isinstance(guard, cst.If) and any(ctx.code(n) == code for n in (guard.test, *descendants(guard.test)))


# a request's switch for its tools: enable_tools, use_tools, allow_tool_use, tools_enabled, with_tools
TOOLS_FLAG = re.compile(r"^(?:enable|use|allow|include|with|send)_tools?(?:_use)?$|^tools?_(?:enabled|allowed|on)$", re.I)


def tools_flag_off_past_a_limit(ctx: ModuleContext) -> Iterator[DroppedTools]:
    """`llm.generate(messages=history, enable_tools=enable_tools and loops <= self.max_loops)` in the loop that sends
    the tool results back: once the step count passes its limit, the same conversation goes out without its tools."""
    for call in ctx.nodes(cst.Call):
        if not ctx.loops_around(call):
            continue
        for arg in call.args:
            if arg.keyword is None or not TOOLS_FLAG.match(arg.keyword.value):
                continue
            tests = [n for n in (arg.value, *descendants(arg.value)) if isinstance(n, cst.Comparison)]
            if any(_counter_against_limit(test) for test in tests) and not _fresh_prompt(ctx, call):
                yield DroppedTools(arg, f"{arg.keyword.value}={ctx.code(arg.value)}", "once the loop's step count passes its limit")


def _counter_against_limit(test: cst.Comparison) -> bool:
    """`loops <= self.max_assistant_loops`, `step < max_steps`: a step counter compared with its limit."""
    sides = [test.left, *(c.comparator for c in test.comparisons)]
    names = [last_name(n) or "" for side in sides for n in (side, *descendants(side)) if isinstance(n, (cst.Name, cst.Attribute))]
    return any(COUNTER.match(n) for n in names) and any(LIMIT.search(n) for n in names)


def tools_flag_off_in_a_call(ctx: ModuleContext) -> Iterator[DroppedTools]:
    """`self._start_generating(allow_tool_use=False)` or `process_message(..., enable_tools=False)` where the function
    called (of this module, or imported from the linted tree) takes the switch with `True` as its default, and this
    module calls it elsewhere with the tools on: a greeting, a resume or the turn after an action's result sends the
    conversation without the tools every other turn sends it with."""
    calls = [c for c in ctx.nodes(cst.Call) if any(a.keyword is not None and TOOLS_FLAG.match(a.keyword.value) for a in c.args)]
    if not calls:
        return
    for call in calls:
        arg = next(a for a in call.args if a.keyword is not None and TOOLS_FLAG.match(a.keyword.value))
        if not (isinstance(arg.value, cst.Name) and arg.value.value == "False"):
            continue
        function = _switched_function(ctx, call)
        flag = arg.keyword.value
        param = next((p for p in function.params.params + function.params.kwonly_params if p.name.value == flag), None) \
            if function is not None else None
        if param is None or not (isinstance(param.default, cst.Name) and param.default.value == "True"):
            continue
        if not _steers_a_request(function, flag):
            continue  # `export(include_tools=False)`: a switch of what is written out, not of a request
        if _fresh_prompt(ctx, call):
            continue  # `self._complete(prompt, use_tools=False)` with a list made here: a one-shot side request
        callee = ctx.code(call.func)
        if any(ctx.code(other.func) == callee and other is not call and not _switch_off(other, flag)
               for other in ctx.calls_by_name.get(called_name(call), ())):
            yield DroppedTools(arg, f"{flag}=False", f"in a call of `{callee}()`, which this module calls elsewhere with the "
                               "tools on")


def _steers_a_request(function: cst.FunctionDef, flag: str) -> bool:
    """The function hands the switch on to a call (`process(..., enable_tools=enable_tools)`), makes a call with tools
    (`generate(messages=..., tools=tools)`), or hands a call the tools the switch decides (`tools = None; if ... and
    allow_tool_use: tools = make_tools()`, then `generate_response(messages, tools)`): it sends a request."""
    nodes = descendants(function.body)
    decided = {flag}  # the switch, and the tool lists set under a test of it
    for node in nodes:
        if isinstance(node, cst.If) and any(isinstance(n, cst.Name) and n.value == flag for n in descendants(node.test)):
            decided |= {t.target.value for a in descendants(node.body) if isinstance(a, cst.Assign) for t in a.targets
                        if isinstance(t.target, cst.Name) and TOOL_WORD.search(t.target.value)}
    for node in nodes:
        if isinstance(node, cst.Call):
            for arg in node.args:
                if arg.keyword is not None and TOOL_KEYWORD.search(arg.keyword.value):
                    return True
                if any(isinstance(n, cst.Name) and n.value in decided for n in (arg.value, *descendants(arg.value))):
                    return True
    return False


TOOL_KEYWORD = re.compile(r"^(?:tools|tool_schemas|tool_choice|functions|tool_config|toolConfig)$")


def _fresh_prompt(ctx: ModuleContext, call: cst.Call) -> bool:
    """An argument of the call is a list written here, or a name the function binds only to one: a new prompt."""
    function = ctx.enclosing_function(call)
    for arg in call.args:
        value = arg.value
        if isinstance(value, cst.List):
            return True
        if isinstance(value, cst.Name) and function is not None:
            bound = [v for b, v in ctx.assigned_values(value) if ctx.contains(function, b)]
            if bound and all(isinstance(v, cst.List) for v in bound):
                return True
    return False


def _switch_off(call: cst.Call, flag: str) -> bool:
    return any(a.keyword is not None and a.keyword.value == flag and not (isinstance(a.value, cst.Name) and a.value.value == "True")
               for a in call.args)


def _switched_function(ctx: ModuleContext, call: cst.Call) -> cst.FunctionDef | None:
    """The def a call runs: of this module, or imported by name from a module of the linted tree."""
    from cachelint.check.project import imported_function

    found = ctx.called_functions(call)
    if found:
        return found[0]
    imported = imported_function(ctx, call)
    return imported[1] if imported is not None else None


# a count of passes, recursion depth or steps, by name
PASS_COUNTER = re.compile(r"^_?(?:depth|level|recursion_depth|call_depth|i|step|step_index|iteration|iter|turn|round|attempt|n_calls|call_count|pass_index)$", re.I)


def tools_added_on_the_first_pass(ctx: ModuleContext) -> Iterator[DroppedTools]:
    """`if depth == 0: functions.append(DIRECT_ANSWER_TOOL)` (or `not depth`, `depth < 1`) in a function that calls
    itself again with the pass counter moved on (`self.chat(None, depth=depth + 1)`): the tools of the first request
    are not those of the requests that follow it."""
    for call in ctx.nodes(cst.Call):
        func = call.func
        if not (isinstance(func, cst.Attribute) and func.attr.value in ("append", "extend", "insert")
                and TOOLS_HOLDER.match(last_name(func.value) or "")):
            continue
        function = ctx.enclosing_function(call)
        guard = next((a for a in ctx.ancestors(call) if isinstance(a, (cst.If, cst.FunctionDef))), None)
        if function is None or not isinstance(guard, cst.If) or not ctx.contains(guard.body, call):
            continue
        counter = _first_pass(guard.test)
        if counter is None or counter not in {p.name.value for p in function.params.params + function.params.kwonly_params}:
            continue
        if any(_moves_on(again, counter) for again in ctx.calls_by_name.get(function.name.value, ())) \
                and _conversation_kept(ctx, function):  # in it, or in a helper it hands on to
            yield DroppedTools(ctx.statement_of(call), ctx.code(call).strip(), f"on the first pass only (`{ctx.code(guard.test)}`): "
                               f"`{function.name.value}` calls itself again with `{counter}` moved on, and those requests go without it")


def _conversation_kept(ctx: ModuleContext, function: cst.FunctionDef) -> bool:
    """The passes continue one conversation: the function sends a history kept on its object (`self.dialogue`,
    `self.messages`), not one it writes afresh (`messages = [system, user(task)]`: a sub-agent's new conversation,
    whose first request is its own)."""
    fresh = any(isinstance(n, cst.Assign) and isinstance(n.value, cst.List) and any(isinstance(t.target, cst.Name)
                and CONVERSATION_PARAM.search(t.target.value) for t in n.targets) for n in descendants(function.body))
    kept = re.search(r"\bself\.\w*(?:messages|history|dialog|conversation|convo|memory|chat)\w*", ctx.code(function), re.I)
    return kept is not None and not fresh


def _first_pass(test: cst.BaseExpression) -> str | None:
    """The counter of `depth == 0`, `not depth`, `depth < 1` (in an `and` with other tests)."""
    if isinstance(test, cst.BooleanOperation) and isinstance(test.operator, cst.And):
        return _first_pass(test.left) or _first_pass(test.right)
    if isinstance(test, cst.UnaryOperation) and isinstance(test.operator, cst.Not) and isinstance(test.expression, cst.Name):
        return test.expression.value if PASS_COUNTER.match(test.expression.value) else None
    if isinstance(test, cst.Comparison) and len(test.comparisons) == 1 and isinstance(test.left, cst.Name) \
            and PASS_COUNTER.match(test.left.value):
        comparison = test.comparisons[0]
        bound = comparison.comparator
        if isinstance(bound, cst.Integer) and ((isinstance(comparison.operator, (cst.Equal, cst.Is)) and bound.value == "0")
                                               or (isinstance(comparison.operator, cst.LessThan) and bound.value == "1")):
            return test.left.value
    return None


def _moves_on(call: cst.Call, counter: str) -> bool:
    """The call passes `counter + 1` (by keyword or position)."""
    return any(isinstance(a.value, cst.BinaryOperation) and isinstance(a.value.operator, cst.Add)
               and isinstance(a.value.left, cst.Name) and a.value.left.value == counter for a in call.args)

