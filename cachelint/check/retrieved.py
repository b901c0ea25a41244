"""Data retrieved for the newest turn, put into the system prompt ahead of the conversation (CL104).

A chat with retrieval (RAG, memories, a knowledge base) looks up what is relevant to the latest user message and
often adds it to the system message: `messages[0]["content"] += knowledge`, `[{"role": "system", "content":
f"{INSTRUCTIONS}\\n{docs}"}] + history`. The system message opens the prefix, and what was retrieved differs on
every turn, so the whole history behind it is prefilled again on every request. Put retrieved context in the
newest user message instead (after the history), where it is new text anyway.

Recognized by names, in one function: a value looked up there (assigned from a call named for retrieval,
`retriever.search(query)`, or to a name that says it holds retrieved text, `knowledge = ...`), followed through
the names built from it, reaching the text of a system message that has a history after it (a history
parameter or list it is joined to, the list whose first message is edited, or the request's `messages`).

A system prompt built here and handed on (`system_prompt += f"...{hits}"`, `return system_prompt + section`)
has the conversation after it wherever it is sent; there only a value that a retrieval call returned counts
(not a name alone), followed through loops over it, `+=`, and the arguments of this module's own functions
(`hits = self._prefetch_memory(prompt)` ... `self._build_system_prompt(memory=hits)`), from a function or from a
script's statements that run once a turn (a Streamlit app, or the script's own chat loop:
`context = get_context(prompt, table)` ... `get_chat_response(st.session_state.messages, context)`).
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass

import libcst as cst

from cachelint.check.conversation import CONVERSATION_NAME as CONVERSATION_WORD
from cachelint.check.module import LITERAL_ARGS, ModuleContext, called_name, descendants, last_name
from cachelint.check.renderers import SYSTEM_NAME, system_message_text
from cachelint.check.values import assigned_once, string_value

# a name that holds text looked up for this turn
RETRIEVED_NAME = re.compile(r"knowledge|retriev|relevant|memories|memory_(?:context|prompt|text|hits|results)|rag_?(?:context|text|results?|chunks|docs|documents)"
                            r"|snippets|search_results|related_(?:docs|documents)|context_(?:docs|documents|chunks)|chunks", re.I)
# a call that looks something up for this turn
RETRIEVAL_CALL = re.compile(r"^_?a?(?:retrieve|search|similarity_search|get_relevant|recall|query_(?:knowledge|memory|memories|index|vector)"
                            r"|lookup|(?:pre)?fetch_(?:context|knowledge|memor)|get_(?:context|knowledge|memories))(?!\w*(?:size|length|limit|window|tokens))\w*$"
                            # `query_course_rag(q)`, `rag_search(q)`, `run_rag(q)`: a verb of looking up and RAG (not `get_rag_prompt`,
                            # `should_use_rag`, `build_rag_index`)
                            r"|^_?a?(?:(?:query|search|run|ask|call|perform|retrieve|fetch|do|get)_(?:\w+_)?rag|rag_(?:search|query|retriev\w*|lookup|fetch|context|results?|answer)|rag)"
                            r"(?!\w*(?:size|length|limit|window|tokens|config|setting|enabled|prompt|instruction|template|index|mode|flag))(?:_\w+)?$", re.I)
# a vector index or retriever asked by a generic method: `index.query(q)`, `collection.query(...)`, `retriever.invoke(q)`
RETRIEVER_RECEIVER = re.compile(r"(?:^|_)(?:index|collection|vector_?store|vectordb|vector_?db|store|retriever|kb|knowledge_?base|rag|memory|chroma|qdrant|pinecone|faiss)$", re.I)
REGEX_RECEIVER = re.compile(r"^(?:re|regex)$|(?:^|_)(?:pattern|regex|re|rx)$|^[A-Z][A-Z0-9_]*_(?:RE|PATTERN|REGEX)$", re.I)
GENERIC_LOOKUPS = frozenset({"query", "aquery", "invoke", "ainvoke", "get_relevant_documents", "search"})
# a name that holds the system prompt or its parts: `system_prompt_list`, `system_prompt_join`, `sys_parts`
SYSTEM_PART = re.compile(r"(?:^|_)sys(?:tem)?(?:_|$)|system", re.I)
MAX_ROUNDS = 4  # names built from names built from the retrieved value


def retrieval_call(call: cst.Call) -> bool:
    """A call that looks something up for this turn: named for it (`retrieve(q)`, `similarity_search(q)`), or a generic
    method of a vector index or retriever (`index.query(q, top_k=5)`, `retriever.invoke(q)`)."""
    if call.args and called_name(call).startswith("get_") and all(_a_setting(arg.value) for arg in call.args):
        return False  # `ContextRegistry.get_context(config.context)`: the entry the app is configured with, not this turn's
    func = call.func
    if isinstance(func, cst.Attribute) and REGEX_RECEIVER.search(last_name(func.value) or ""):
        return False  # `re.search(pattern, template)`, `PATTERN.search(text)`: a match in a text, not a lookup
    if RETRIEVAL_CALL.match(called_name(call)):
        return True
    if not isinstance(func, cst.Attribute) or func.attr.value not in GENERIC_LOOKUPS:
        return False
    receiver = func.value.attr.value if isinstance(func.value, cst.Attribute) else func.value.value if isinstance(func.value, cst.Name) else ""
    return bool(RETRIEVER_RECEIVER.search(receiver))
SETTINGS_ROOT = re.compile(r"^_?(?:config|configs|settings|cfg|conf|app_config)$", re.I)
COUNT_WORD = re.compile(r"max|limit|top|count|num|size|(?:^|_)[kn]$", re.I)


def _a_setting(value: cst.BaseExpression) -> bool:
    """A key the app is configured with: a string, or an attribute of its settings object (`config.context`,
    `settings.KB_NAME`); not a count (`recall_memories(MAX_MEMORIES)` still returns this turn's newest)."""
    if isinstance(value, (cst.SimpleString, cst.ConcatenatedString)):
        return True
    if isinstance(value, cst.Attribute) and not COUNT_WORD.search(value.attr.value):
        root = value
        while isinstance(root, cst.Attribute):
            root = root.value
        return isinstance(root, cst.Name) and bool(SETTINGS_ROOT.match(root.value))
    return False


# a list of the conversation's messages (it may hold a retrieved message; it is not the retrieved text)
CONVERSATION_NAME = re.compile(r"(?:^|_)(?:messages|msgs|history|conversation|convo|transcript|turns|dialog|dialogue)$", re.I)
MAX_CALL_LEVELS = 3  # functions of the module a looked-up value is passed down through


@dataclass(frozen=True, slots=True)
class Retrieved:
    node: cst.CSTNode  # where the retrieved text enters the system prompt
    value: str  # the name that carries it: `knowledge_prompt`
    source: str  # where it was looked up: `self.mem.run(...)`
    history: str  # the conversation after the system message: `messages`


def retrieved_in_system(ctx: ModuleContext, sites: list) -> Iterator[Retrieved]:
    if ctx.is_test:
        return  # a test's prompt is a fixture: no conversation runs through it
    for function in _functions_that_retrieve(ctx):
        # at module level a name alone (`knowledge = open(...).read()`) is loaded once: only a retrieval call counts
        tainted = _retrieved_names(ctx, function, by_name=not isinstance(function, cst.Module))
        if not tainted:
            continue
        reported: set[str] = set()
        for node, text, history in _system_texts(ctx, function, sites):
            name = next((n.value for part in text for n in descendants(part) if isinstance(n, cst.Name) and n.value in tainted), None)
            if name is not None and history is not None and history not in reported:
                reported.add(history)  # one finding per conversation: `if str: ... += text else: ... += [block]` is one
                entry, name = _entry(ctx, function, name, tainted) or (node, name)
                yield Retrieved(entry, name, tainted[name], history)


def _entry(ctx: ModuleContext, function: cst.FunctionDef | cst.Module, name: str, tainted: dict[str, str]) -> tuple[cst.CSTNode, str] | None:
    """Where the looked-up text first goes into what becomes the system prompt, and the name it goes in by: the list
    of its sections it is appended to (`system_prompt_list.append(memories)`, joined later) or the text built from
    it, followed back from the name the system message holds through the names that hold the system prompt or its
    parts (`system_prompt_join` from `system_prompt_list`, a list of sections `parts = [RULES]`), in the function's
    own statements. None where that name holds a section of its own (`knowledge_prompt`): the message is where it
    goes in."""
    if isinstance(function, cst.Module):
        return None
    steps: dict[str, tuple[cst.CSTNode, str]] = {}  # name -> (the first statement that fills it from another, that name)
    lists: set[str] = set()  # names bound to a list literal here: the prompt's sections (`parts = [RULES]`)
    for node in descendants(function):
        if ctx.enclosing_function(node) is not function:
            continue  # a nested function's own names
        if isinstance(node, cst.Assign) and isinstance(node.value, cst.List):
            lists.update(_target_names(node))
        if isinstance(node, cst.Call) and isinstance(node.func, cst.Attribute) and node.func.attr.value in ("append", "extend") \
                and isinstance(node.func.value, cst.Name):
            targets, values = [node.func.value.value], [arg.value for arg in node.args]
        elif isinstance(node, (cst.Assign, cst.AnnAssign, cst.AugAssign)) and node.value is not None:
            targets, values = _target_names(node), [node.value]
        else:
            continue
        source = next((found for value in values if (found := _text_of(ctx, value, tainted)) is not None), None)
        for target in targets:
            if source is not None and source != target and target not in steps:
                steps[target] = (node, source)
    entry = None
    for _ in range(MAX_ROUNDS):
        # the system prompt's own names, and the list of sections one of them is joined from (not a list the
        # system text only counts, `num_obs=len(user_query_list)`, where the message is where the value goes in)
        step = steps.get(name) if SYSTEM_PART.search(name) or (entry is not None and name in lists) else None
        if step is None:
            break
        entry = step
        name = step[1]
    return entry


def retrieved_in_built_system(ctx: ModuleContext) -> Iterator[Retrieved]:
    """A looked-up value added to a system prompt that a function builds and hands on: assigned or `+=` to a
    name that says it is the system prompt, or returned joined to one (one finding per function)."""
    for function, looked_up in _looked_up_by_function(ctx):
        # the prompt itself is not what was added, nor a conversation that merely holds a retrieved message
        texts = {n: source for n, source in looked_up.items() if not SYSTEM_NAME.match(n.lower()) and not CONVERSATION_NAME.search(n)}
        for node in descendants(function):
            name = _system_joined(ctx, node, texts)
            if name is not None:
                if not _sent_alone(function, node):
                    # reported where the looked-up text goes in (`f"Course Content:\n{context}"`), not where the prompt starts
                    entry, name = _entry(ctx, function, name, looked_up) \
                        or (next((n for n in descendants(node) if isinstance(n, cst.Name) and n.value == name and _read_here(ctx, n)), node), name)
                    yield Retrieved(entry, name, looked_up[name], "the conversation it is sent with")
                break


def _read_here(ctx: ModuleContext, name: cst.Name) -> bool:
    """The name read as a value: not the attribute of `self.context`, nor the keyword of `format(context=...)`."""
    parent = ctx.parent(name)
    return not (isinstance(parent, cst.Attribute) and parent.attr is name) and not (isinstance(parent, cst.Arg) and parent.keyword is name)


def _sent_alone(function: cst.FunctionDef, joined: cst.CSTNode) -> bool:
    """The system prompt built at `joined` goes out in a fresh list with one new message and nothing else
    (`self.messages = [system_message, human_message]`, or the same with message dicts): a one-off request, with no
    history behind it to lose."""
    target = joined.targets[0].target if isinstance(joined, cst.Assign) else getattr(joined, "target", None)
    if not isinstance(target, (cst.Name, cst.Attribute)):
        return False
    leaf = target.value if isinstance(target, cst.Name) else target.attr.value
    handed = [call for call in descendants(function) if isinstance(call, cst.Call)
              and any(_names_leaf(a.value, leaf) for a in call.args if a.keyword is not None and a.keyword.value.startswith("system"))]
    if handed and all(_one_user_text(call) for call in handed):
        return True  # `call_llm(model, system_prompt=system_prompt, user_prompt=message)`: the new message alone follows it
    for node in descendants(function):
        if isinstance(node, cst.List) and 1 <= len(node.elements) <= 2 and not any(isinstance(e, cst.StarredElement) for e in node.elements):
            first = node.elements[0].value
            if isinstance(first, cst.Dict):  # [{"role": "system", "content": system_prompt}, {"role": "user", ...}]
                first = next((e.value for e in first.elements if isinstance(e, cst.DictElement)
                              and isinstance(e.key, cst.SimpleString) and e.key.value.strip("'\"") == "content"), first)
            if (isinstance(first, cst.Name) and first.value == leaf) or (isinstance(first, cst.Attribute) and first.attr.value == leaf):
                return True
    return False


# the keywords a sender takes the one new message by, and those that hand it a conversation
USER_TEXT_KEYWORDS = frozenset({"user_prompt", "user_message", "user_input", "prompt", "message", "query", "question"})
HISTORY_KEYWORD = re.compile(CONVERSATION_WORD.pattern + r"|turns|memory|context", re.I)


def _names_leaf(value: cst.BaseExpression, leaf: str) -> bool:
    return (isinstance(value, cst.Name) and value.value == leaf) or (isinstance(value, cst.Attribute) and value.attr.value == leaf)


def _one_user_text(call: cst.Call) -> bool:
    """The call takes the system prompt with one new message and no conversation (nor `**kwargs` that may hold one)."""
    keywords = [a.keyword.value for a in call.args if a.keyword is not None]
    if any(a.star for a in call.args):
        return False  # `**kwargs`: what else goes out is not known
    texts = [a.value for a in call.args if a.keyword is not None and a.keyword.value in USER_TEXT_KEYWORDS]
    # what the message and the positional arguments read (`call_llm(url, key, model_id, ...)`, not `self.history`)
    read_by = [*texts, *(a.value for a in call.args if a.keyword is None)]
    read = {n.value for text in read_by for n in (text, *descendants(text)) if isinstance(n, cst.Name)} \
        | {n.attr.value for text in read_by for n in (text, *descendants(text)) if isinstance(n, cst.Attribute)}
    return bool(texts) and not any(HISTORY_KEYWORD.search(k) for k in keywords) and not any(HISTORY_KEYWORD.search(n) for n in read)


def _system_joined(ctx: ModuleContext, node: cst.CSTNode, looked_up: dict[str, str]) -> str | None:
    """The looked-up name that `node` joins to the system prompt: `system_prompt += ...`, `self.system_prompt =
    ...`, `return system_prompt + ...` (not one passed on to a function of this module: that one is judged there)."""
    value = None
    if isinstance(node, (cst.AugAssign, cst.AnnAssign)) or (isinstance(node, cst.Assign) and len(node.targets) == 1):
        target = node.targets[0].target if isinstance(node, cst.Assign) else node.target
        leaf = target.attr.value if isinstance(target, cst.Attribute) else target.value if isinstance(target, cst.Name) else ""
        value = node.value if SYSTEM_NAME.match(leaf.lower()) else None
    elif isinstance(node, cst.Return) and isinstance(node.value, (cst.BinaryOperation, cst.FormattedString)):
        if any(isinstance(n, cst.Name) and SYSTEM_NAME.match(n.value.lower()) for n in descendants(node.value)):
            value = node.value
    if value is None:
        return None
    followed = [a for c in descendants(value) if isinstance(c, cst.Call) and ctx.called_functions(c) for a in c.args]
    return next((n.value for n in descendants(value) if isinstance(n, cst.Name) and n.value in looked_up
                 and not any(ctx.contains(a, n) for a in followed)), None)


def _looked_up_by_function(ctx: ModuleContext) -> list[tuple[cst.FunctionDef, dict[str, str]]]:
    """(function, {name: where its value was looked up}) for the functions that call a retrieval function, and
    for this module's functions such a value is passed to (bounded)."""
    seeds: dict[int, tuple[cst.FunctionDef | cst.Module, dict[str, str]]] = {}
    for assign in [*ctx.nodes(cst.Assign), *ctx.nodes(cst.AnnAssign)]:
        value = assign.value
        if value is None or not any(isinstance(c, cst.Call) and retrieval_call(c) for c in descendants(value)):
            continue
        function = ctx.enclosing_function(assign)
        if function is not None:
            seeds.setdefault(id(function), (function, {}))
        elif _script_turn(ctx, assign) and any(_asks_a_question(c) for c in descendants(value) if isinstance(c, cst.Call)):
            seeds.setdefault(id(ctx.module), (ctx.module, {}))  # a script's look-up, passed on to its functions
    found: dict[int, tuple[cst.FunctionDef, dict[str, str]]] = {}
    pending = [(function, names, 0) for function, names in seeds.values()]
    while pending:
        function, passed, level = pending.pop()
        names = _retrieved_names(ctx, function, by_name=False, passed=passed)
        known = found.get(id(function))
        if known is not None and set(names) <= set(known[1]):
            continue
        found[id(function)] = (function, {**names, **(known[1] if known else {})})
        if level >= MAX_CALL_LEVELS:
            continue
        for call in (n for n in _own_nodes(ctx, function) if isinstance(n, cst.Call)):
            for callee in ctx.called_functions(call):
                params = _params_passed(call, callee, names)
                if params:
                    pending.append((callee, params, level + 1))
    # the script itself is judged by retrieved_in_system; only the functions it hands the text to are judged here
    return [entry for entry in found.values() if entry[1] and not isinstance(entry[0], cst.Module)]  # type: ignore[misc]


def _asks_a_question(call: cst.Call) -> bool:
    """A look-up whose question (its first argument) is not written in the code: `get_context(prompt, table)`, not
    `get_context("handbook", table)`."""
    return retrieval_call(call) and bool(call.args) and not isinstance(call.args[0].value, LITERAL_ARGS)


def _script_turn(ctx: ModuleContext, node: cst.CSTNode) -> bool:
    """A statement of the module itself that runs once per turn: in a Streamlit app (the script runs again on
    every message), or in a loop of the script's own (`while True: question = input(); ...`)."""
    if ctx.reruns_per_turn:
        return True
    return any(isinstance(a, (cst.While, cst.For)) and ctx.enclosing_function(a) is None for a in ctx.ancestors(node))


def _params_passed(call: cst.Call, callee: cst.FunctionDef, names: dict[str, str]) -> dict[str, str]:
    """{parameter of `callee`: where its value was looked up} for the arguments of `call` that hold looked-up text."""
    params = [p for p in callee.params.params if p.name.value not in ("self", "cls")]
    by_name = {p.name.value for p in [*params, *callee.params.kwonly_params]}
    passed: dict[str, str] = {}
    for position, arg in enumerate(call.args):
        if arg.star:
            break
        source = _mentions(arg.value, names)
        if source is None:
            continue
        if arg.keyword is not None and arg.keyword.value in by_name:
            passed[arg.keyword.value] = names[source]
        elif arg.keyword is None and position < len(params):
            passed[params[position].name.value] = names[source]
    return passed


def _document_text(value: cst.CSTNode | None) -> bool:
    """The text of retrieved documents: `d.page_content` / `d["page_content"]` (a LangChain `Document`)."""
    if value is None:
        return False
    for node in [value, *descendants(value)]:
        if isinstance(node, cst.Attribute) and node.attr.value == "page_content":
            return True
        if isinstance(node, cst.SimpleString) and node.value.strip("'\"") == "page_content":
            return True
    return False


def _functions_that_retrieve(ctx: ModuleContext) -> list[cst.FunctionDef | cst.Module]:
    """The outermost functions with an assignment that looks something up (from the module's index of
    assignments: no walk of functions that have none), and the module itself when its own statements do."""
    found: dict[int, cst.FunctionDef] = {}
    documents = "page_content" in ctx.source
    for assign in ctx.nodes(cst.Assign):
        names = _target_names(assign)
        if not any(RETRIEVED_NAME.search(n) for n in names) and not any(
                isinstance(c, cst.Call) and retrieval_call(c) for c in descendants(assign.value)) \
                and not (documents and _document_text(assign.value)):
            continue
        function = ctx.enclosing_function(assign)
        while function is not None and ctx.enclosing_function(function) is not None:
            function = ctx.enclosing_function(function)  # a nested helper is part of its outer function's walk
        scope = function if function is not None else ctx.module  # a script (a Streamlit app) retrieves at module level
        found.setdefault(id(scope), scope)
    return list(found.values())


def _retrieved_names(ctx: ModuleContext, function: cst.FunctionDef | cst.Module, by_name: bool = True,
                     passed: dict[str, str] | None = None) -> dict[str, str]:
    """{name: where its value was looked up} for the names of `function` that hold retrieved text: assigned from
    a retrieval call, named for retrieved text (`by_name`), or parameters passed such a value (`passed`), and the
    names built from them (assignments, `+=`, loops over them, appends)."""
    tainted: dict[str, str] = dict(passed or {})
    documents = "page_content" in ctx.source  # asked once, not per assignment
    body = _own_nodes(ctx, function)
    assigns = [n for n in body if isinstance(n, (cst.Assign, cst.AnnAssign, cst.AugAssign, cst.For)) and _flow_value(n) is not None]
    for assign in assigns:  # in source order: a name built from an earlier one keeps where that was looked up
        value = _flow_value(assign)
        value = value.expression if isinstance(value, cst.Await) else value
        earlier = _mentions(value, tainted)
        call = next((c for c in descendants(value) if isinstance(c, cst.Call) and retrieval_call(c)), None)
        for name in _target_names(assign):
            if earlier is not None:
                tainted.setdefault(name, tainted[earlier])
            elif call is not None:
                tainted.setdefault(name, f"{ctx.code(call.func)}()")
            elif by_name and isinstance(assign, cst.Assign) and RETRIEVED_NAME.search(name) and not _literal(value):
                tainted.setdefault(name, f"`{name} = {_short(ctx.code(value))}`")
            elif documents and _document_text(value):
                tainted.setdefault(name, "the documents' `page_content`")
    for _ in range(MAX_ROUNDS):
        grown = False
        for assign in assigns:
            source = _mentions(_flow_value(assign), tainted)
            for name in _target_names(assign):
                if source is not None and name not in tainted:
                    tainted[name] = tainted[source]
                    grown = True
        for call in (n for n in body if isinstance(n, cst.Call) and isinstance(n.func, cst.Attribute)):
            if call.func.attr.value not in ("append", "extend") or not isinstance(call.func.value, cst.Name):
                continue
            target = call.func.value.value
            source = _mentions(call, tainted) or next((_mentions(loop.iter, tainted) for loop in ctx.loops_around(call)
                                                       if isinstance(loop, cst.For) and _mentions(loop.iter, tainted)), None)
            if source is not None and target not in tainted:
                tainted[target] = tainted[source]
                grown = True
        if not grown:
            break
    return tainted


def _system_texts(ctx: ModuleContext, function: cst.FunctionDef | cst.Module,
                  sites: list) -> Iterator[tuple[cst.CSTNode, tuple[cst.CSTNode, ...], str | None]]:
    """(where, the text, the history after it) for each system prompt `function` builds or edits."""
    for node in _own_nodes(ctx, function):
        if isinstance(node, cst.AugAssign) and isinstance(node.operator, cst.AddAssign):
            head = _first_message_of(node.target)  # messages[0]["content"] += knowledge
            if head is not None:
                yield node, (node.value,), ctx.code(head)
        elif isinstance(node, (cst.Dict, cst.Call)):
            text = system_message_text(node)
            if text is not None:
                yield node, _resolved(ctx, text), _joined_history(ctx, node)
        elif isinstance(node, (cst.Assign, cst.AugAssign)):
            history = _request_key_history(ctx, function, node)
            if history is not None:
                yield node, (node.value,), history
    for site in sites:
        if not isinstance(site.node, cst.Call) or not ctx.contains(function, site.node) \
                or (isinstance(function, cst.Module) and ctx.enclosing_function(site.node) is not None):
            continue
        system = site.arg("system") or site.arg("instructions")
        messages = site.arg("messages")
        if system is not None and messages is not None and not _fresh(ctx, messages):
            yield system, _resolved(ctx, system), ctx.code(messages)


# the key of a request's arguments that holds its instructions -> the key of the conversation sent after them
INSTRUCTION_KEYS = {"system": "messages", "instructions": "input"}


def _request_key_history(ctx: ModuleContext, scope: cst.FunctionDef | cst.Module, node: cst.Assign | cst.AugAssign) -> str | None:
    """`kwargs["system"] = kwargs.get("system", "") + context` (or `instructions` of the Responses API), in a function
    that reads the same dict's conversation (`kwargs["messages"]`, `kwargs.get("input")`): the request's arguments,
    whose system prompt is sent ahead of that conversation. The conversation's code, or None."""
    targets = [t.target for t in node.targets] if isinstance(node, cst.Assign) else [node.target]
    if len(targets) != 1 or not isinstance(targets[0], cst.Subscript) or len(targets[0].slice) != 1 \
            or not isinstance(targets[0].slice[0].slice, cst.Index):
        return None
    key = string_value(targets[0].slice[0].slice.value)
    conversation = INSTRUCTION_KEYS.get(key or "")
    if conversation is None:
        return None
    holder = ctx.code(targets[0].value)
    for read in descendants(scope):
        if isinstance(read, cst.Subscript) and ctx.code(read.value) == holder and len(read.slice) == 1 \
                and isinstance(read.slice[0].slice, cst.Index) and string_value(read.slice[0].slice.value) == conversation:
            return f'{holder}["{conversation}"]'
        if isinstance(read, cst.Call) and isinstance(read.func, cst.Attribute) and read.func.attr.value == "get" \
                and ctx.code(read.func.value) == holder and read.args and string_value(read.args[0].value) == conversation:
            return f'{holder}["{conversation}"]'
        if isinstance(read, cst.Comparison) and string_value(read.left) == conversation and any(
                isinstance(c.operator, cst.In) and ctx.code(c.comparator) == holder for c in read.comparisons):
            return f'{holder}["{conversation}"]'  # `if "input" in kwargs:`
    return None


def _own_nodes(ctx: ModuleContext, scope: cst.FunctionDef | cst.Module) -> list[cst.CSTNode]:
    """The nodes of a function, or of a module's own statements (not those of its functions)."""
    if not isinstance(scope, cst.Module):
        return descendants(scope)
    nodes: list[cst.CSTNode] = []
    for statement in scope.body:
        if isinstance(statement, (cst.FunctionDef, cst.ClassDef)):
            continue
        below = descendants(statement)
        functions = [n for n in below if isinstance(n, cst.FunctionDef)]  # a def under `if __name__ == ...`
        if functions:
            inside = {id(n) for f in functions for n in descendants(f)}
            below = [n for n in below if id(n) not in inside]
        nodes += below
    return nodes


def _first_message_of(target: cst.BaseExpression) -> cst.BaseExpression | None:
    """`messages` of `messages[0]["content"]` / `messages[0].content`."""
    node = target
    while isinstance(node, (cst.Subscript, cst.Attribute)):
        inner = node.value
        if isinstance(node, cst.Subscript) and isinstance(node.slice[0].slice, cst.Index) \
                and isinstance(node.slice[0].slice.value, cst.Integer) and node.slice[0].slice.value.value == "0" and node is not target:
            return inner
        node = inner
    return None


def _joined_history(ctx: ModuleContext, message: cst.CSTNode) -> str | None:
    """The history a system message is put in front of: `[system] + messages`, `[system, *history]`,
    `messages.insert(0, system)`, `messages[0] = system`, `msgs = [system]` then `msgs.extend(history)`."""
    parent = ctx.parent(message)
    if isinstance(parent, cst.Element):
        listing = ctx.parent(parent)
        if isinstance(listing, cst.List):
            starred = next((e.value for e in listing.elements if isinstance(e, cst.StarredElement)), None)
            if starred is not None:
                return ctx.code(starred)
            outer = ctx.parent(listing)
            if isinstance(outer, cst.BinaryOperation) and isinstance(outer.operator, cst.Add) and outer.left is listing \
                    and isinstance(outer.right, (cst.Name, cst.Attribute)):
                return ctx.code(outer.right)
        if isinstance(listing, cst.List) and listing.elements and listing.elements[0] is parent:
            return _history_added_to(ctx, listing)
    if isinstance(parent, cst.Assign) and len(parent.targets) == 1:  # messages[0] = {"role": "system", ...}
        target = parent.targets[0].target
        if isinstance(target, cst.Subscript) and isinstance(target.slice[0].slice, cst.Index) \
                and isinstance(target.slice[0].slice.value, cst.Integer) and target.slice[0].slice.value.value == "0":
            return ctx.code(target.value)
    if isinstance(parent, cst.Arg):
        call = ctx.parent(parent)
        if isinstance(call, cst.Call) and isinstance(call.func, cst.Attribute) and call.func.attr.value == "insert" \
                and call.args and ctx.code(call.args[0].value) == "0":
            return ctx.code(call.func.value)
    return None


def _history_added_to(ctx: ModuleContext, listing: cst.List) -> str | None:
    """`msgs = [system]` and then, in the same function, `msgs.extend(history)`, `msgs += history` or `for turn
    in session.turns: msgs.append(...)`: the conversation, added after the system message."""
    assign = ctx.parent(listing)
    if not isinstance(assign, cst.Assign) or len(assign.targets) != 1 or not isinstance(assign.targets[0].target, cst.Name):
        return None
    name = assign.targets[0].target.value
    scope = ctx.enclosing_function(assign) or ctx.module
    for node in _own_nodes(ctx, scope):
        added = None
        if isinstance(node, cst.AugAssign) and isinstance(node.operator, cst.AddAssign) and ctx.code(node.target) == name:
            added = node.value
        elif isinstance(node, cst.Call) and isinstance(node.func, cst.Attribute) and ctx.code(node.func.value) == name and node.args:
            if node.func.attr.value == "extend":
                added = node.args[0].value
            elif node.func.attr.value == "append":
                loop = next((a for a in ctx.loops_around(node) if isinstance(a, cst.For)), None)
                added = loop.iter if loop is not None else None
        if added is not None and _conversation(added):
            return ctx.code(added)
    return None


def _conversation(value: cst.BaseExpression) -> bool:
    """`history`, `self.chat_history`, `session.turns`, `history[-10:]`: a value named for the conversation."""
    while isinstance(value, (cst.Subscript, cst.Call)):
        if isinstance(value, cst.Subscript):
            value = value.value
        elif isinstance(value.func, cst.Name) and value.args:  # list(history), reversed(turns)
            value = value.args[0].value
        else:  # memory.get_messages()
            value = value.func
    leaf = value.attr.value if isinstance(value, cst.Attribute) else value.value if isinstance(value, cst.Name) else ""
    return bool(CONVERSATION_NAME.search(leaf))


def _fresh(ctx: ModuleContext, messages: cst.BaseExpression) -> bool:
    """A list of at most one new message: a one-off request with no history behind its system prompt."""
    if isinstance(messages, cst.Name):
        values = [v for _, v in ctx.assigned_values(messages)]
        if len(values) != 1 or values[0] is None:
            return False
        messages = values[0]
    return isinstance(messages, cst.List) and len(messages.elements) <= 1 and not any(isinstance(e, cst.StarredElement) for e in messages.elements)


def _resolved(ctx: ModuleContext, text: cst.BaseExpression) -> tuple[cst.BaseExpression, ...]:
    """The text, and what it holds when it is a name assigned once (`system = RULES + memories`)."""
    value = assigned_once(ctx, text)
    return (text,) if value is text else (text, value)


def _flow_value(node: cst.CSTNode) -> cst.BaseExpression | None:
    """What a statement puts into its target names: an assignment's value, a loop's iterable."""
    return node.iter if isinstance(node, cst.For) else node.value  # type: ignore[attr-defined]


def _target_names(assign: cst.Assign | cst.AnnAssign | cst.AugAssign | cst.For) -> list[str]:
    targets = [t.target for t in assign.targets] if isinstance(assign, cst.Assign) else [assign.target]
    names = []
    for target in targets:
        names += [n.value for n in descendants(target) if isinstance(n, cst.Name)] if isinstance(target, (cst.Name, cst.Tuple, cst.List)) else []
    return names


def _text_of(ctx: ModuleContext, node: cst.CSTNode, names: dict[str, str]) -> str | None:
    """The first of `names` whose text `node` takes in: not one only counted (`num_obs=len(user_query_list)`)."""
    for n in descendants(node):
        if isinstance(n, cst.Name) and n.value in names:
            parent = ctx.parent(ctx.parent(n))
            if not (isinstance(parent, cst.Call) and isinstance(parent.func, cst.Name) and parent.func.value == "len"):
                return n.value
    return None


def _mentions(node: cst.CSTNode, names: dict[str, str]) -> str | None:
    return next((n.value for n in descendants(node) if isinstance(n, cst.Name) and n.value in names), None)


def _literal(value: cst.BaseExpression) -> bool:
    return isinstance(value, (cst.SimpleString, cst.ConcatenatedString, cst.Integer, cst.Float, cst.Name)) \
        or (isinstance(value, (cst.List, cst.Dict, cst.Tuple)) and not any(True for _ in getattr(value, "elements", ())))


def _short(code: str, limit: int = 40) -> str:
    code = " ".join(code.split())
    return code if len(code) <= limit else code[: limit - 3] + "..."
