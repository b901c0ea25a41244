"""History rewritten where the request is out of sight: the shapes real apps use to cut or edit a conversation in
a history class, a utility function or a message processor, found by the data's shape (confidence `likely`).

A conversation's earlier messages are the cached prefix of its next request. These shapes rewrite them:

- a front or middle cut that the function decides itself: `self.messages.pop(0)` in `truncate()`,
  `messages.pop(0)` in `while tokens > budget:`, `messages.remove(m)` for old image messages,
  `history[:1] + history[-n:]`, `items[-keep:]`;
- a copy of an earlier message whose content is replaced, under a condition on its position or on later
  messages (`data["content"] = "Old output omitted"` for all but the last n observations);
- a method whose caller chooses what to cut (`convo.trim(1, 2)`): reported at the call, when it sits in a loop;
- a history passed through a trimming function out of sight (`messages = tt.trim(messages, ...)`): at the call.

A list is a conversation when its name says so (messages, history, conversation, ...) or its elements are
read as messages (`m["role"]`, `m.role`, `m["content"]`). Bounded: each function is looked at once, a class
of another module of the tree is followed one hop (cachelint.check.project).
"""

from __future__ import annotations

import builtins
import re
from collections.abc import Iterator
from dataclasses import dataclass
from weakref import WeakKeyDictionary

import libcst as cst

from cachelint.check.callsites import call_arguments
from cachelint.check.depends import positional_index
from cachelint.check.module import (COUNTED_NAME, TOOL_WORD, ModuleContext, argument_for, bound_name, called_name, declared_outside, descendants, in_except_handler, is_model_tool,
                                    is_template, names_in, short_code)
from cachelint.check.module import last_name as _last_name
from cachelint.check.module import literal_int as _int
from cachelint.check.values import dict_entries, string_value

HISTORY_NAME = re.compile(r"(?:^|_)(?:messages|msgs|history|conversation|convo|chat|trajectory|transcript|turns|memory|dialog|dialogue)(?:$|_)|messages$|history$|(?:^|_)(?:message|msg)_?list$"
                          r"|^_?(?:runs|rounds|exchanges|interactions)$", re.I)  # a memory's stored runs, not `pending_tool_runs`
_LIST_METHODS = frozenset({"append", "extend", "insert", "pop", "remove", "index", "count", "get", "copy", "add", "update", "setdefault"})
# a function that replaces the history in one step (a summary), or cuts it only once the provider has refused it
# as too long (`_aggressive_trim_for_overflow`): what the rule recommends, or past the context window
COMPACTION = re.compile(r"compact|summar|overflow|context_length_exceeded", re.I)
SUMMARY_NAME = re.compile(r"compact|summar", re.I)  # one large step, whatever sets it off
TRIM_NAME = re.compile(r"^_?(?:trim|truncate|prune|shrink|clip|cut|drop_old|fit|limit)\w*$|_(?:trim|truncate|prune)\w*$|^\w*_(?:trim|truncate)$", re.I)
SCOPES = (cst.FunctionDef, cst.ClassDef, cst.Lambda)
# a cheap look at the text first: only modules with one of these shapes are parsed for them
QUICK = re.compile(r"\.glob\(|listdir\(|iterdir\(|list_tools|get_tools|get_function_tools|random\.choice\(\s*[\w.]*models|%\s*len\(\s*[\w.]*models|\.\w+\(\s*\d+\s*,\s*\d+\s*\)|\.pop\(\s*[012]\s*\)|\.popleft\(\)|=\s*[\w.]+\[\s*[12]\s*:\s*\]|\.pop\(\s*\w+\s*\)|\.pop\(\s*len\(|\bdel\s+[\w.]+\[|\.remove\(|\[\s*-\s*[\w.]+(?:\s*\*\s*\d+)?\s*:\s*\]|\[\s*:\s*:\s*-\s*1\s*\]|\b\w+\.(?:content|text|blocks|parts|tool_calls)\s*=(?!=)|len\(\s*[\w.]+\s*\)\s*-\s*1\s*:|\bis\s+[\w.]+\[\s*-1\s*\]|\bif\s+(?:is_)?(?:last|latest|newest)\b|\[\s*:\s*-\s*\w+\s*\]|>=\s*[\w.]+\s*-\s*\d+\s*:|role\s*(?:!=|==)\s*[\"']system[\"']\s*else"
                   r"|-\s*[\w.]+\s*\)?\s*:\s*\]|(?:trim|truncat|prune)\w*\(\s*[\w.]*(?:messages|history|msgs|conversation|convo)|\[[\"']content[\"']\]\s*="
                   r"|(?:messages|history)\s*=\s*self\.\w*summar"  # self.done_messages = self.summarizer.summarize(...)
                   r"|in\s+reversed\(\s*[\w.]*(?:memory|messages|history|view|events|observations)\b"  # for msg in reversed(memory):
                   r"|range\([^()\n]*-\s*1\s*,\s*-\s*1\s*,\s*-\s*1\s*\)"  # for i in range(len(history) - 1, -1, -1):
                   r"|\[\s*\w+\[\s*-\s*\w+\s*\]\s*:\s*\]"  # messages[human_indices[-rounds]:]
                   r"|(?P<dropped>[\w.]+)\s*=\s*(?P=dropped)\[\s*[12]\s*:\s*\]"  # history = history[1:] (in a loop until it fits)
                   r"|len\(\s*[\w.]+\s*\)\s*-\s*(?:[A-Za-z_][\w.]*|[3-9]|\d\d)"  # range(len(history) - n, len(history))
                   r"|deque\(.*maxlen"  # self.history = deque(maxlen=20)
                   r"|order_by\(.*(?:desc|[\"']-\w)"  # Message.objects.filter(...).order_by("-created")[:10]
                   r"|\b(?:n|limit|last_n|num_messages|max_messages|message_limit|count|k|lines|n_messages|max_history|history_limit)"
                   r"\s*=\s*(?:\d{1,2}|[A-Za-z_][\w.]*(?:\(\))?(?:\s*\+\s*1)?)\s*[,)]"  # repo.get(cid, n=10), store.read(lines=8)
                   r"|\.history\(\s*\n?\s*limit\s*="  # channel.history(limit=n): a chat platform's latest messages
                   r"|\.(?:conversations_history|iter_messages|get_chat_history)\("  # Slack's, Telethon's, Pyrogram's latest messages
                   r"|in\s+reversed\(\s*range\(\s*len\("  # for i in reversed(range(len(messages))):
                   r"|=\s*len\(\s*[\w.]+\s*\)\s*-\s*(?:1\s*-\s*\w+|\w+\s*-\s*1)\b"  # age = len(messages) - 1 - i
                   r"|while\s+(?P<down>\w+)\s*>=\s*0\s*:[ \t]*\n\s*\w+\s*=\s*[\w.]+\[\s*(?P=down)\s*\]"  # while i >= 0: m = h[i]
                   r"|[\"']content[\"']\s*:\s*[\w.\[\]\"']+\s*\+\s*\w+"  # {**msg, "content": content + block}
                   r"|\w+\s*=\s*len\(\s*[\w.]+\s*\)\s*-\s*1[ \t]*(?:#[^\n]*)?(?:\n|$)")  # i = len(self.messages) - 1, then `while i >= 0:`


@dataclass(slots=True)
class Rewrite:
    node: cst.CSTNode
    target: str  # the history's code: self.messages, messages
    what: str  # "removes the oldest message from"


HISTORY_WORD = re.compile(r"messages|history|conversation|convo|transcript|trajectory|\bchat|\bmemory\b|[\"']role[\"']", re.I)


LINE_WORD = re.compile(r"messages|history|conversation|convo|transcript|trajectory|chat|msgs|turns|memory|models|tools|functions"
                       r"|servers|clients|sessions|connections|content|data\[|copy\[|entry|item|\bruns\b|_runs\b|\brounds\b|_rounds\b|exchanges"
                       r"|interactions|dialog|\bview\b|events|observations|buffer|\bsteps\b|_steps\b", re.I)


RANDOM_MODEL = re.compile(r"""choice\(\s*[\[(]\s*["'](?:gpt|o[134]|claude|gemini|llama|mistral|qwen|deepseek)"""
                          r"""|scheduling_strategy\s*=\s*["'](?:random_model|round_robin)""", re.I)


def mentions_history_rewrite(source: str) -> bool:
    """A cheap text test before any metadata: one of the shapes on a line that also names a conversation, tools
    or models (`self.messages.pop(0)`, `for server in servers:` ... `list_tools()`, `random.choice(self.models)`)."""
    if RANDOM_MODEL.search(source):
        return True  # random.choice(["gpt-4o", "gpt-4o-mini"]): a model picked per request (model_switches)
    if not HISTORY_WORD.search(source) and not re.search(r"models|tools|functions|Observation|\bsteps\b|_steps\b", source):
        return False
    for match in QUICK.finditer(source):
        start = source.rfind("\n", 0, match.start()) + 1
        end = source.find("\n", match.end())
        if LINE_WORD.search(source, start, end if end >= 0 else len(source)):
            return True
    return False


def rewrites(ctx: ModuleContext) -> Iterator[Rewrite]:
    """Every rewrite of a conversation in this module, once per statement; a window of the newest few that a budget
    loop then grows back from the older messages (`kept = history[-k:]`, then `for m in reversed(history[:-k]): ...
    kept.insert(0, m)`) is one window, reported at the loop."""
    found = list(_rewrites(ctx))
    loops = [rewrite.node for rewrite in found if isinstance(rewrite.node, cst.For) and rewrite.what.startswith(BUDGET_WINDOW)]
    for rewrite in found:
        if not (loops and isinstance(rewrite.node, cst.Subscript) and any(_seeds(ctx, rewrite.node, loop) for loop in loops)):
            yield rewrite


BUDGET_WINDOW = "keeps only the newest messages that fit a budget"


def _grown_in(loop: cst.For) -> set[str]:
    """The names the loop's body adds to (`kept.insert(0, m)`, `kept.append(m)`)."""
    return {n.func.value.value for n in descendants(loop.body) if isinstance(n, cst.Call) and isinstance(n.func, cst.Attribute)
            and n.func.attr.value in ("insert", "append", "appendleft") and isinstance(n.func.value, cst.Name)}


def _seeds(ctx: ModuleContext, window: cst.Subscript, loop: cst.For) -> bool:
    """The window is bound, in the budget loop's function and before it, to the name the loop grows."""
    function = ctx.enclosing_function(loop)
    return function is not None and ctx.enclosing_function(window) is function and ctx.span(window).row < ctx.span(loop).row \
        and bound_name(ctx, window) in _grown_in(loop)


def _rewrites(ctx: ModuleContext) -> Iterator[Rewrite]:
    seen: set[int] = set()
    judged: list[cst.CSTNode] = []
    for node, function in _candidates(ctx):
        found = _judge(ctx, function, node)
        if found is not None:
            statement = ctx.statement_of(found.node)
            if id(statement) not in seen:
                seen.add(id(statement))
                judged.append(found.node)
                yield found
    for loop in ctx.nodes(cst.For):
        function = ctx.enclosing_function(loop)
        if function is None or any(ctx.contains(loop, node) for node in judged):
            continue  # an edit inside the walk is already reported (`short["content"] = "(omitted)"`): one place to fix
        found = _aged_out(ctx, function, loop)
        if found is not None and id(ctx.statement_of(found.node)) not in seen:
            seen.add(id(ctx.statement_of(found.node)))
            yield found
    for call in ctx.nodes(cst.Call):
        found = _trimming_call(ctx, call)
        if found is not None and (at_the_context_window(ctx, call) or cut_with_headroom(ctx, call)):
            continue  # trimmed only once the prompt no longer fits the context window (or the provider refused it)
        if found is not None and id(ctx.statement_of(call)) not in seen:
            seen.add(id(ctx.statement_of(call)))
            yield found
    for found in [*positional_windows(ctx), *system_replaced(ctx), *index_windows(ctx), *bounded_queues(ctx), *stored_windows(ctx),
                  *reducer_windows(ctx), *filtered_histories(ctx), *reworked_histories(ctx)]:
        if id(ctx.statement_of(found.node)) not in seen:
            seen.add(id(ctx.statement_of(found.node)))
            yield found


DISPLAY_FIELD = re.compile(r"^_?(?:status|log|logs|ui|progress|error|errors|debug|display|event|events|notification)_", re.I)


def reducer_windows(ctx: ModuleContext) -> Iterator[Rewrite]:
    """A graph state's messages merged by a reducer of this module that keeps the latest n (`messages:
    Annotated[Sequence[BaseMessage], merge]`, `def merge(left, right): ... return merged[-MAX_MESSAGES:]`): every
    update of the state past n drops the oldest message from the front of the conversation the nodes send."""
    for annotated in ctx.nodes(cst.AnnAssign):
        field = annotated.target
        annotation = annotated.annotation.annotation
        if not (isinstance(field, cst.Name) and HISTORY_NAME.search(field.value) and not DISPLAY_FIELD.match(field.value)
                and isinstance(annotation, cst.Subscript)
                and _last_name(annotation.value) == "Annotated" and len(annotation.slice) >= 2):
            continue
        reducer = annotation.slice[-1].slice
        name = reducer.value.value if isinstance(reducer, cst.Index) and isinstance(reducer.value, cst.Name) else None
        for function in ctx.functions.get(name or "", ()):
            for value in ctx.returns_of(function):
                if isinstance(value, cst.Subscript) and len(value.slice) == 1 and _late_slice(value):
                    yield Rewrite(value, field.value, "keeps only the latest messages of")


def index_windows(ctx: ModuleContext) -> Iterator[Rewrite]:
    """The latest n entries picked by index: `start = len(records) - n` then `[records[i] for i in range(max(start,
    0), len(records))]` (or a loop over that range). Once the history is longer than n, each new turn pushes the
    oldest entry out, so the window slides on every turn, the same as `records[-n:]`."""
    for call in ctx.calls_by_name.get("range", []):
        if not isinstance(call.func, cst.Name) or len(call.args) != 2:
            continue
        history = _len_of(call.args[1].value)
        function = ctx.enclosing_function(call)
        if history is None or function is None:
            continue
        start = _window_start(ctx, call.args[0].value)
        if start is None or not isinstance(start, cst.BinaryOperation) or not isinstance(start.operator, cst.Subtract):
            continue
        size = start.right
        if ctx.code(_len_of(start.left) or start.left) != ctx.code(history) or _len_of(start.left) is None:
            continue
        if isinstance(size, cst.Integer) and _int(size) <= 2:
            continue  # len(turns) - 1: the newest turn or two, no window
        if any(_len_of(n) is not None for n in descendants(size)):
            continue  # a share of the history's own length: cut in large steps
        if not _is_history(ctx, function, history) or not _indexes_into(ctx, call, history):
            continue
        if "cache_control" in ctx.code(function):
            continue  # breakpoints put on the latest n messages: what CL5xx recommends, not a window of what is sent
        yield Rewrite(call, ctx.code(history), "keeps only the latest entries of")


def stored_windows(ctx: ModuleContext) -> Iterator[Rewrite]:
    """The latest n messages of a conversation read back from a database: `Message.objects.filter(chat=c)
    .order_by("-created")[:10]`, `select(Msg).order_by(Msg.id.desc()).limit(n)`, turned into the messages of a
    request. Once the chat is longer than n, every new turn pushes the oldest message out of the window."""
    for call in ctx.calls_by_name.get("order_by", []):
        if not call.args or not all(_descending(ctx, a.value) for a in call.args[:1]):
            continue
        cut = _first_n(ctx, call)
        if cut is None or _large_count(ctx, cut):
            continue
        statement = ctx.statement_of(cut)
        names = [t.target.value for small in getattr(statement, "body", []) if isinstance(small, cst.Assign)
                 for t in small.targets if isinstance(t.target, cst.Name)]
        function = ctx.enclosing_function(cut)
        if names and function is not None and _rows_become_messages(ctx, function, names[0]):
            yield Rewrite(cut, names[0], "keeps only the latest stored messages of")
    yield from _latest_rows_asked_for(ctx)


def _latest_rows_asked_for(ctx: ModuleContext) -> Iterator[Rewrite]:
    """The latest n messages of a conversation asked of a store or a chat platform for each request, and made into
    the messages sent: `messages = await repo.get_by_conversation(session, conversation_id, n=10)` walked
    `reversed(...)`, `history = await self.message_history.read(lines=8)` where the store's own `read` reads newest
    first (`lrange` then `[::-1]`, a file read backwards), a Discord bot's `[m async for m in
    channel.history(limit=limit)]`. The query is in another module (or another service); the window slides as the
    conversation passes n messages. What says the rows are the latest: walked newest first here, asked newest first
    (`oldest_first=False`, a method named for the latest or recent rows, a channel's `history`), or a definition of
    the method in the tree that reads them newest first. A count that is a setting is taken as small; a literal above
    LARGE_WINDOW is not."""
    for assign in ctx.nodes(cst.Assign):
        if len(assign.targets) != 1 or not isinstance(assign.targets[0].target, cst.Name):
            continue
        call = _asked_rows(assign.value)
        if call is None or not isinstance(call.func, cst.Attribute):
            continue
        keywords = call_arguments(ctx, call)  # `**params` too: `params = {"channel": c, "limit": n}`
        count = next((keywords[k] for k in keywords if k in LATEST_COUNT), None)
        if count is None or _a_large_number(ctx, count):
            continue
        if keywords.keys() & PAGED or not STORED_CONVERSATION.search(ctx.code(call.func)):
            continue  # a page of rows (`offset=`, `page=`), not the newest of them
        rows = assign.targets[0].target.value
        function = ctx.enclosing_function(assign)
        if function is None:
            continue
        if _shown_by_a_web_route(ctx, function):
            continue  # `@router.get(".../messages")` hands the latest messages to a page: nothing is sent to a model
        if _rows_become_messages(ctx, function, rows, newest_first=True):
            yield Rewrite(count, rows, "keeps only the latest stored messages of")
        elif _asked_newest_first(ctx, call, keywords) and any(_rows_become_messages(ctx, function, name, into_conversation=True)
                                                              for name in (rows, *_rows_taken_from(ctx, function, rows))):
            yield Rewrite(count, rows, "keeps only the latest stored messages of")
    yield from _latest_rows_walked(ctx)


def _rows_taken_from(ctx: ModuleContext, function: cst.FunctionDef, reply: str) -> list[str]:
    """The names bound to the rows inside a reply: `messages = response["messages"]` (Slack's Web API)."""
    def taken(value: cst.BaseExpression) -> bool:
        if isinstance(value, cst.Subscript) and isinstance(value.value, cst.Name) and value.value.value == reply:
            return string_value(value.slice[0].slice.value if isinstance(value.slice[0].slice, cst.Index) else None) == "messages"
        return isinstance(value, cst.Call) and isinstance(value.func, cst.Attribute) and value.func.attr.value == "get" \
            and ctx.code(value.func.value) == reply and bool(value.args) and string_value(value.args[0].value) == "messages"

    return [t.target.value for n in ctx.nodes_in(cst.Assign, function) for t in n.targets if isinstance(t.target, cst.Name) and taken(n.value)]


def _latest_rows_walked(ctx: ModuleContext) -> Iterator[Rewrite]:
    """`async for message in channel.history(limit=limit + 1): chat_messages.append(ChatMessage(...))`: the latest n
    messages of a chat platform's channel, walked straight from the call that asks for them into the messages sent."""
    for loop in ctx.nodes(cst.For):
        call = _asked_rows(loop.iter)
        if call is None or not isinstance(call.func, cst.Attribute) or ctx.enclosing_function(loop) is None:
            continue
        keywords = call_arguments(ctx, call)
        count = next((keywords[k] for k in keywords if k in LATEST_COUNT), None)
        if count is None or _a_large_number(ctx, count) or keywords.keys() & PAGED or not STORED_CONVERSATION.search(ctx.code(call.func)):
            continue
        if _shown_by_a_web_route(ctx, ctx.enclosing_function(loop)) or not _asked_newest_first(ctx, call, keywords):
            continue
        if _messages_collected(ctx, loop):
            chat = call.args[0].value if call.func.attr.value in NEWEST_FIRST_PLATFORM and call.args and call.args[0].keyword is None \
                else call.func.value  # Telethon's `client.iter_messages(chat, limit=n)`: the chat, not the client
            yield Rewrite(count, ctx.code(chat), "keeps only the latest stored messages of")


def _messages_collected(ctx: ModuleContext, loop: cst.For) -> bool:
    """The loop adds a chat message to a list, made in the call (`chat_messages.append(ChatMessage(...))`) or bound in
    the body first: the rows become one conversation, not each a request of its own."""
    made = {t.target.value for n in descendants(loop.body) if isinstance(n, cst.Assign) and _makes_a_message(n.value)
            for t in n.targets if isinstance(t.target, cst.Name)}
    return any(isinstance(n, cst.Call) and isinstance(n.func, cst.Attribute) and n.func.attr.value in ("append", "insert", "appendleft")
               and n.args and (_makes_a_message(n.args[-1].value) or (isinstance(n.args[-1].value, cst.Name) and n.args[-1].value.value in made))
               for n in descendants(loop.body))


def _a_large_number(ctx: ModuleContext, count: cst.BaseExpression) -> bool:
    """A count above LARGE_WINDOW: a literal, or a name bound only to such literals (`MAX_HISTORY = 2000`)."""
    if isinstance(count, cst.Name):
        values = [v for _, v in ctx.assigned_values(count)]
        count = values[0] if len(values) == 1 and values[0] is not None else count
    return isinstance(count, cst.Integer) and int(count.value.replace("_", ""), 0) > LARGE_WINDOW


WEB_ROUTE = frozenset({"get", "post", "put", "route", "api_route", "websocket", "patch"})


def _shown_by_a_web_route(ctx: ModuleContext, function: cst.FunctionDef) -> bool:
    """A web framework's route (`@router.get(...)`, `@app.route(...)`) that sends no request itself."""
    routed = any(isinstance(d.decorator, cst.Call) and _last_name(d.decorator.func) in WEB_ROUTE for d in function.decorators)
    return routed and not any(isinstance(n, cst.Arg) and n.keyword is not None and n.keyword.value == "messages"
                              for n in descendants(function))


LATEST_COUNT = frozenset({"n", "limit", "last_n", "num_messages", "max_messages", "message_limit", "count", "k", "lines",
                          "n_messages", "max_history", "history_limit"})
PAGED = frozenset({"offset", "page", "skip", "cursor", "page_token", "start"})
STORED_CONVERSATION = re.compile(r"messag|histor|conversation|chat|turns", re.I)
LARGE_WINDOW = 50  # messages: a window this long slides only in chats longer than most ever get
LATEST_METHOD = re.compile(r"latest|recent|last|newest|tail", re.I)
# chat platforms' calls that hand back a channel's messages newest first, the first `limit` of them
NEWEST_FIRST_PLATFORM = frozenset({"conversations_history", "iter_messages", "get_chat_history"})


def _asked_rows(value: cst.BaseExpression) -> cst.Call | None:
    """The call that asks for the rows: `await store.read(...)`, or the iterable of a comprehension over them
    (`[m async for m in channel.history(limit=n)]`)."""
    if isinstance(value, cst.Await):
        value = value.expression
    if isinstance(value, (cst.ListComp, cst.GeneratorExp)) and value.for_in.inner_for_in is None:
        value = value.for_in.iter
        if isinstance(value, cst.Await):
            value = value.expression
    if isinstance(value, cst.Call) and isinstance(value.func, cst.Attribute) and value.func.attr.value == "flatten" \
            and isinstance(value.func.value, cst.Call):
        value = value.func.value  # discord.py 1.x: await channel.history(limit=15).flatten()
    return value if isinstance(value, cst.Call) else None


def _asked_newest_first(ctx: ModuleContext, call: cst.Call, keywords: dict[str, cst.BaseExpression]) -> bool:
    """The rows asked for are the newest: `oldest_first=False`, a method named for them (`get_recent_messages`), a chat
    platform channel's `history(limit=n)` (newest first unless asked otherwise), or the method's definition in the
    tree reads them newest first."""
    from cachelint.check.tree import reads_newest_first

    order = keywords.get("oldest_first")
    if order is not None:
        return isinstance(order, cst.Name) and order.value == "False"
    method = call.func.attr.value  # type: ignore[attr-defined]
    if LATEST_METHOD.search(method):
        return True
    if method == "history" and "limit" in keywords:  # discord.py's `channel.history(limit=n)` (a channel, a DM, a context)
        return "after" not in keywords  # newest first, unless `after=` turns it oldest first
    if method in NEWEST_FIRST_PLATFORM:  # Slack's conversations.history, Telethon's get_messages, Pyrogram's get_chat_history
        return not keywords.keys() & {"reverse", "oldest_first", "after", "min_id", "offset_date"}
    keyword = next((k for k in keywords if k in LATEST_COUNT), None)
    return reads_newest_first(ctx.filename, method, keyword)


def _large_count(ctx: ModuleContext, cut: cst.CSTNode) -> bool:
    """The n of `[:n]` / `.limit(n)` is a literal (or a parameter's default) above LARGE_WINDOW."""
    if isinstance(cut, cst.Subscript):
        n = cut.slice[0].slice.upper  # type: ignore[union-attr]
    else:
        n = cut.args[0].value  # type: ignore[union-attr]
    if isinstance(n, cst.Name):
        defaults = [b.default for b, _ in ctx.assigned_values(n) if isinstance(b, cst.Param) and b.default is not None]
        n = defaults[0] if len(defaults) == 1 else n
    return isinstance(n, cst.Integer) and int(n.value.replace("_", ""), 0) > LARGE_WINDOW


def _descending(ctx: ModuleContext, key: cst.BaseExpression) -> bool:
    """`"-created_at"`, `Msg.id.desc()`, `desc(Msg.created)`."""
    text = string_value(key)
    if text is not None:
        return text.startswith("-")
    return isinstance(key, cst.Call) and _last_name(key.func) == "desc"


def _first_n(ctx: ModuleContext, order_by: cst.Call) -> cst.CSTNode | None:
    """The `[:n]` or `.limit(n)` applied to the ordered rows (further along the same chain)."""
    node: cst.CSTNode = order_by
    for _ in range(6):
        parent = ctx.parent(node)
        if isinstance(parent, cst.Subscript) and parent.value is node:
            element = parent.slice[0].slice
            return parent if isinstance(element, cst.Slice) and element.lower is None and element.upper is not None else None
        if isinstance(parent, cst.Attribute) and parent.value is node:
            call = ctx.parent(parent)
            if not isinstance(call, cst.Call):
                return None
            if parent.attr.value == "limit" and call.args:
                return call
            node = call
            continue
        if isinstance(parent, (cst.Arg, cst.Call)):
            node = parent  # session.execute(select(...).order_by(...).limit(n))
            continue
        return None
    return None


def _rows_become_messages(ctx: ModuleContext, function: cst.FunctionDef, rows: str, newest_first: bool = False,
                          into_conversation: bool = False) -> bool:
    """The rows are walked (`for r in reversed(rows)`, a comprehension) into dicts with a `role`, or into
    message objects of a chat framework (`newest_first`: only walked through `reversed(rows)`); `into_conversation`:
    also into a list or object the function keeps the conversation in, whatever each row is converted by
    (`message_run.append(active_cell_string(row))` where `message_run` opens with a `SystemMessage(...)`,
    `await conversation.prepend(entry)`)."""
    if into_conversation and _walked_into_conversation(ctx, function, rows):
        return True
    reversed_in_place = newest_first and any(
        isinstance(c.func, cst.Attribute) and c.func.attr.value == "reverse" and ctx.code(c.func.value) == rows
        for c in ctx.nodes_in(cst.Call, function))  # `messages.reverse()`, then walked
    for node in descendants(function):
        if newest_first and not reversed_in_place and not (isinstance(node, (cst.For, cst.CompFor)) and _walked_backwards(node.iter)):
            continue
        if isinstance(node, (cst.For, cst.CompFor)) and rows in {n.value for n in descendants(node.iter) if isinstance(n, cst.Name)}:
            body = node.body if isinstance(node, cst.For) else ctx.parent(node)
            if any(_makes_a_message(n) for n in descendants(body)):
                return True
    return False


def _makes_a_message(value: cst.CSTNode) -> bool:
    """A chat message made here: a dict with a `role`, or a `...Message(...)` of a chat framework."""
    return _chat_message(value) or (isinstance(value, cst.Call) and (_last_name(value.func) or "").endswith("Message"))


def _walked_into_conversation(ctx: ModuleContext, function: cst.FunctionDef, rows: str) -> bool:
    for node in descendants(function):
        if not (isinstance(node, cst.For) and rows in {n.value for n in descendants(node.iter) if isinstance(n, cst.Name)}):
            continue
        for call in (n for n in descendants(node.body) if isinstance(n, cst.Call) and isinstance(n.func, cst.Attribute)):
            if call.func.attr.value not in ("append", "prepend", "insert", "appendleft", "add_message"):
                continue
            target = ctx.code(call.func.value)
            if CONVERSATION_HOLDER.search(target) or _holds_a_message(ctx, function, target):
                return True
    return False


CONVERSATION_HOLDER = re.compile(r"(?:^|[_.])(?:messages|history|conversation|dialog(?:ue)?|chat_history|msgs)$", re.I)


def _holds_a_message(ctx: ModuleContext, function: cst.FunctionDef, target: str) -> bool:
    """Elsewhere in the function the list is given a chat message: `message_run.append(SystemMessage(content=...))`,
    `message_run = [{"role": "system", ...}]`."""
    for call in ctx.nodes_in(cst.Call, function):
        if isinstance(call.func, cst.Attribute) and call.func.attr.value in ("append", "insert") and ctx.code(call.func.value) == target:
            if any(_makes_a_message(arg.value) for arg in call.args):
                return True
    for assign in ctx.nodes_in(cst.Assign, function):
        if isinstance(assign.value, cst.List) and any(ctx.code(t.target) == target for t in assign.targets) \
                and any(isinstance(e, cst.Element) and _makes_a_message(e.value) for e in assign.value.elements):
            return True
    return False


def _walked_backwards(iterated: cst.BaseExpression) -> bool:
    """`reversed(rows)`, `rows[::-1]`: newest first turned oldest first."""
    if isinstance(iterated, cst.Call):
        return _last_name(iterated.func) == "reversed"
    if isinstance(iterated, cst.Subscript) and isinstance(iterated.slice[0].slice, cst.Slice):
        step = iterated.slice[0].slice.step
        return isinstance(step, cst.UnaryOperation) and isinstance(step.operator, cst.Minus) and isinstance(step.expression, cst.Integer)
    return False


def _chat_message(node: cst.CSTNode) -> bool:
    """`{"role": r.role, "content": r.content}`: a role and a content and little else (a search result that
    carries a role among ids and previews is no message)."""
    keys = {key for key, _ in dict_entries(node)}
    return {"role", "content"} <= keys and len(keys) <= 4


def bounded_queues(ctx: ModuleContext) -> Iterator[Rewrite]:
    """`self.history = deque(maxlen=20)`: a queue of fixed length that holds the conversation drops its oldest
    message by itself on every append once it is full, so the window slides on every turn."""
    for call in ctx.calls_by_name.get("deque", []):
        size = next((a.value for a in call.args if a.keyword is not None and a.keyword.value == "maxlen"), None)
        if size is None and len(call.args) == 2 and call.args[1].keyword is None:
            size = call.args[1].value
        if size is None or (isinstance(size, cst.Name) and size.value == "None"):
            continue
        assign = ctx.parent(call)
        if not isinstance(assign, (cst.Assign, cst.AnnAssign)) or assign.value is not call:
            continue
        target = assign.targets[0].target if isinstance(assign, cst.Assign) else assign.target
        scope = ctx.enclosing(call, (cst.ClassDef,)) or ctx.module
        if _is_history(ctx, scope, target) and _read_as_messages(ctx, scope, ctx.code(target)):
            # a queue is as often the code's own bookkeeping (hashes, frames, timings): only one that holds messages
            yield Rewrite(call, ctx.code(target), "keeps only the latest messages of")


def _len_of(node) -> cst.BaseExpression | None:
    if isinstance(node, cst.Call) and isinstance(node.func, cst.Name) and node.func.value == "len" and len(node.args) == 1:
        return node.args[0].value
    return None


def _window_start(ctx: ModuleContext, node) -> cst.BaseExpression | None:
    """The start of a range, seen through `max(0, x)`, `x if x > 0 else 0` and a local name bound once."""
    for _ in range(4):
        if isinstance(node, cst.Call) and isinstance(node.func, cst.Name) and node.func.value == "max" and len(node.args) == 2:
            zero = [a.value for a in node.args if isinstance(a.value, cst.Integer) and a.value.value == "0"]
            rest = [a.value for a in node.args if not (isinstance(a.value, cst.Integer) and a.value.value == "0")]
            if len(zero) != 1 or len(rest) != 1:
                return None
            node = rest[0]
        elif isinstance(node, cst.IfExp):
            branches = [b for b in (node.body, node.orelse) if not isinstance(b, cst.Integer)]
            if len(branches) != 1:
                return None
            node = branches[0]
        elif isinstance(node, cst.Name):
            values = [v for _, v in ctx.assigned_values(node)]
            if len(values) != 1 or values[0] is None:
                return None
            node = values[0]
        else:
            return node
    return None


def _indexes_into(ctx: ModuleContext, call: cst.Call, history) -> bool:
    """The range drives a loop or comprehension whose variable indexes the history: `history[i]`."""
    parent = ctx.parent(call)
    if not isinstance(parent, (cst.For, cst.CompFor)) or parent.iter is not call or not isinstance(parent.target, cst.Name):
        return False
    index, code = parent.target.value, ctx.code(history)
    scope = ctx.parent(parent) if isinstance(parent, cst.CompFor) else parent.body
    return any(isinstance(n, cst.Subscript) and ctx.code(n.value) == code and isinstance(n.slice[0].slice, cst.Index)
               and ctx.code(n.slice[0].slice.value) == index for n in descendants(scope))


def system_replaced(ctx: ModuleContext) -> Iterator[Rewrite]:
    """`chat.messages = [m if m.role != "system" else Message(role="system", content=NEW) for m in chat.messages]`: the
    system message of a conversation already under way is swapped for another, so nothing after it is read from
    cache on the next request (and the turns were answered under other instructions)."""
    for assign in ctx.nodes(cst.Assign):
        value = assign.value
        if len(assign.targets) != 1 or not isinstance(value, cst.ListComp) or not isinstance(value.elt, cst.IfExp):
            continue
        target = ctx.code(assign.targets[0].target)
        if ctx.code(value.for_in.iter) != target or not isinstance(value.for_in.target, cst.Name):
            continue
        function = ctx.enclosing_function(assign)
        if function is None or not _is_history(ctx, function, assign.targets[0].target):
            continue
        element = value.for_in.target.value
        branches = (value.elt.body, value.elt.orelse)
        kept = [b for b in branches if isinstance(b, cst.Name) and b.value == element]
        new = [b for b in branches if isinstance(b, (cst.Call, cst.Dict)) and "system" in ctx.code(b)]
        if kept and new and "system" in ctx.code(value.elt.test):
            yield Rewrite(assign, target, "replaces the system message of")


LOADING = re.compile(r"^_?(?:__init__|__post_init__|load|restore|resume|from_|reload|open|setup|init)", re.I)


API_ROLES = frozenset({"system", "developer", "user", "assistant", "tool", "function", "tool_use", "tool_result", "function_call",
                       "function_call_output", "message", "text", "image", "reasoning"})


def _rebound(ctx: ModuleContext, function: cst.FunctionDef, name: str) -> bool:
    return any(isinstance(n, cst.Assign) and any(isinstance(t.target, cst.Name) and t.target.value == name for t in n.targets)
               for n in descendants(function.body))


def filtered_histories(ctx: ModuleContext) -> Iterator[Rewrite]:
    """`conn.dialogue.messages = [m for m in conn.dialogue.messages if m.role not in ("tool", "function")]` (directly or
    through a local name): a kept conversation replaced by a copy without the messages of a kind (tool calls and
    their results). The first message dropped is in the middle of the cached prefix: the next request reads nothing
    after it, and it happens again each time such messages have been added."""
    for assign in ctx.nodes(cst.Assign):
        if len(assign.targets) != 1 or not isinstance(target := assign.targets[0].target, cst.Attribute):
            continue  # an object's history, kept between requests
        function = ctx.enclosing_function(assign)
        if function is None or COMPACTION.search(function.name.value) or LOADING.match(function.name.value):
            continue  # (a session loaded and cleaned once, when the object is made or restored, is no repeated cut)
        value = assign.value
        if isinstance(value, cst.Name):
            bound = [v for _, v in ctx.assigned_values(value)]
            value = bound[0] if len(bound) == 1 else None
        if not isinstance(value, cst.ListComp) or not value.for_in.ifs or not isinstance(value.for_in.target, cst.Name) \
                or ctx.code(value.for_in.iter) != ctx.code(target) or not isinstance(value.elt, cst.Name) \
                or value.elt.value != value.for_in.target.value:
            continue
        test = " ".join(ctx.code(i.test) for i in value.for_in.ifs)
        element = value.for_in.target.value
        if not re.search(rf"\b{re.escape(element)}(?:\.(?:role|type)\b|\[[\"'](?:role|type)[\"']\]|\.get\([\"'](?:role|type|tool_calls)[\"'])", test):
            continue  # dropped by their kind: role or type
        kinds = set(re.findall(r"[\"'](\w+)[\"']", test)) - {"role", "type", "tool_calls"}
        if kinds - API_ROLES:
            continue  # `m.role != "status"`: a screen's own entries, not the roles a provider is sent
        root = target
        while isinstance(root, cst.Attribute):
            root = root.value
        if target.attr.value.startswith("tool_") or not isinstance(root, cst.Name) \
                or (root.value != "self" and (root.value not in _params(function) or _rebound(ctx, function, root.value))):
            continue  # kept on the object or handed in (not a copy made here: `state = deepcopy(state)`), and a conversation
        if re.search(r"[\"']system[\"']", test) and not re.search(r"[\"'](?:tool|function|assistant|user)[\"']", test):
            continue  # the system message taken out to put a new one in (system_replaced judges that)
        if not _is_history(ctx, function, target) or at_the_context_window(ctx, assign):
            continue  # (the costly tests last)
        yield Rewrite(assign, ctx.code(target), "drops messages of a kind (by their role or type) from the middle of")


def reworked_histories(ctx: ModuleContext) -> Iterator[Rewrite]:
    """`self._messages = self._truncate_tool_results(self._messages, max_chars=2048)` at the start of a turn, before a
    loop that appends to `self._messages` and sends it: a function of the module (or a method of the class) that
    rebuilds every message with the parts of a kind rewritten (`replace(part, content=_truncate(part.content))`,
    `{**m, "content": m["content"][:n]}`, an image put in place of a note). The loop sends what it added as it came;
    the next turn rewrites those messages, in the middle of the cached prefix. The same rewrite made inside the loop
    too, with the same arguments, changes nothing that was sent, and neither does a cap the loop already applied to
    what it adds (`self._messages.append(Msg("tool", out[:MAX_TOOL_CHARS]))`): both are quiet."""
    if "self." not in ctx.source or not re.search(r"\breplace\(|model_copy\(|\*\*\w+", ctx.source):
        return
    for assign in ctx.nodes(cst.Assign):
        if len(assign.targets) != 1 or not isinstance(target := assign.targets[0].target, cst.Attribute) \
                or not isinstance(call := assign.value, cst.Call) or not call.args or call.args[0].keyword is not None:
            continue
        code = ctx.code(target)
        if ctx.code(call.args[0].value) != code:
            continue
        function = ctx.enclosing_function(assign)
        helpers = _helpers_called(ctx, assign, call.func)
        if function is None or len(helpers) != 1 or not _rewrites_parts(ctx, helpers[0]) or ctx.loops_around(assign):
            continue
        loops = [loop for loop in _own_nodes_of_kind(function, cst.While) + _own_nodes_of_kind(function, cst.For)
                 if _grows_and_sends(ctx, loop, code)]
        if not loops or any(isinstance(n, cst.Call) and ctx.code(n) == ctx.code(call) for loop in loops for n in descendants(loop)):
            continue
        caps = {ctx.code(a.value) for a in call.args[1:]}
        if caps and any(_adds_capped(ctx, loop, code, caps) for loop in loops):
            continue  # what the loop adds is cut to the same cap already: the rewrite changes nothing that was sent
        if _is_history(ctx, function, target):
            yield Rewrite(assign, code, "rewrites parts of earlier messages (a turn after they were sent) of")


def _helpers_called(ctx: ModuleContext, assign: cst.Assign, func: cst.BaseExpression) -> list[cst.FunctionDef]:
    """The function `func` names: a method of the class (`self._truncate(...)`) or a function of the module."""
    if isinstance(func, cst.Attribute) and ctx.code(func.value) == "self":
        cls = ctx.enclosing(assign, (cst.ClassDef,))
        return ctx.functions.get(f"{cls.name.value}.{func.attr.value}", []) if cls is not None else []
    if isinstance(func, cst.Name):
        return [f for f in ctx.functions.get(func.value, []) if ctx.enclosing(f, (cst.ClassDef,)) is None]
    return []


def _adds_capped(ctx: ModuleContext, loop: cst.CSTNode, code: str, caps: set[str]) -> bool:
    for node in descendants(loop):
        if isinstance(node, cst.Call) and isinstance(node.func, cst.Attribute) and ctx.code(node.func.value) == code \
                and node.func.attr.value in ("append", "extend") and node.args:
            added = ctx.code(node.args[0].value)
            if any(re.search(rf"(?<![\w.]){re.escape(cap)}(?!\w)", added) for cap in caps):
                return True
    return False


def _rewrites_parts(ctx: ModuleContext, helper: cst.FunctionDef) -> bool:
    """The function walks the list it is handed and builds a new one, with some part's content replaced by a function
    of it: `parts.append(replace(p, content=_truncate(p.content)))`, `p.model_copy(update={"content": ...})`,
    `{**m, "content": m["content"][:n]}`; in a loop (`for m in messages`, `for i, m in enumerate(messages)`) or a
    comprehension."""
    params = [p.name.value for p in helper.params.params if p.name.value not in ("self", "cls")]
    if not params:
        return False

    def over_the_list(iterable: cst.BaseExpression) -> bool:
        if isinstance(iterable, cst.Call) and _last_name(iterable.func) == "enumerate" and iterable.args:
            iterable = iterable.args[0].value
        return isinstance(iterable, cst.Name) and iterable.value == params[0]

    walks = any((isinstance(loop, cst.For) or isinstance(loop, cst.CompFor)) and over_the_list(loop.iter)
                for loop in descendants(helper.body))
    if not walks:
        return False
    for node in descendants(helper.body):
        if isinstance(node, cst.Call) and _last_name(node.func) in ("replace", "model_copy", "copy"):
            for arg in node.args:
                if arg.keyword is not None and arg.keyword.value in ("content", "update") and not isinstance(arg.value, cst.Name):
                    return True
        if isinstance(node, cst.Dict) and any(isinstance(e, cst.StarredDictElement) for e in node.elements):
            if any(isinstance(e, cst.DictElement) and string_value(e.key) == "content" and not isinstance(e.value, cst.Name)
                   for e in node.elements):
                return True
    return False


def _grows_and_sends(ctx: ModuleContext, loop: cst.CSTNode, code: str) -> bool:
    """The loop appends to the history and hands it to a call (the request, or a method that makes it)."""
    appends = hands = False
    for node in descendants(loop):
        if isinstance(node, cst.Call) and isinstance(node.func, cst.Attribute) and ctx.code(node.func.value) == code \
                and node.func.attr.value in ("append", "extend"):
            appends = True
        elif isinstance(node, cst.Arg) and ctx.code(node.value) == code:
            call = ctx.parent(node)
            if isinstance(call, cst.Call) and (_last_name(call.func) or "") not in MEASURES and not NOT_SENT.match(_last_name(call.func) or ""):
                hands = True  # not `len(self._messages)`, `logger.debug(...)`
    return appends and hands


NOT_SENT = re.compile(r"^(?:print|repr|str|log\w*|debug|info|warning|error|exception|dumps|dump|save\w*|write\w*|copy|deepcopy)$")


def positional_windows(ctx: ModuleContext) -> Iterator[Rewrite]:
    """A history rendered with its latest N entries in full and the older ones another way: `for t in turns[:-4]:
    out.append(short(t))` beside `for t in turns[-4:]: out.append(full(t))`, or `if i >= len(turns) - 4:` inside
    `for i, t in enumerate(turns)`. Each new turn pushes one entry out of the window, so an entry that earlier
    requests sent in full is rendered differently from then on, in the middle of the prefix."""
    for loop in ctx.nodes(cst.For):
        function = ctx.enclosing_function(loop)
        if function is None:
            continue
        iterable = loop.iter
        if isinstance(iterable, cst.Subscript) and _window_split(iterable) and _is_history(ctx, function, iterable.value):
            history = ctx.code(iterable.value)
            if _appends(loop) and any(isinstance(other, cst.For) and other is not loop and isinstance(other.iter, cst.Subscript)
                                      and ctx.code(other.iter.value) == history and _late_slice(other.iter) and _appends(other)
                                      for other in _own_nodes_of_kind(function, cst.For)):
                yield Rewrite(loop, history, "renders the entries older than the latest few differently from the newest, one more each turn, in")
        elif isinstance(iterable, cst.Call) and _last_name(iterable.func) == "enumerate" and iterable.args \
                and isinstance(loop.target, cst.Tuple) and isinstance(loop.target.elements[0].value, cst.Name):
            history = iterable.args[0].value
            if not _is_history(ctx, function, history):
                continue
            index = loop.target.elements[0].value.value
            for branch in (n for n in descendants(loop.body) if isinstance(n, cst.If)):
                if _tail_position_test(ctx, function, branch.test, index, ctx.code(history)) and branch.orelse is not None \
                        and _appends(branch.body) and _appends(branch.orelse):
                    yield Rewrite(branch, ctx.code(history), "renders the entries older than the latest few differently from the newest, one more each turn, in")
                    break


def _window_split(sub: cst.Subscript) -> bool:
    """`turns[:-4]` (all but the latest few; `turns[:-1]` is all but the newest turn, which is no window)."""
    index = sub.slice[0].slice
    if not isinstance(index, cst.Slice) or index.lower is not None or index.upper is None:
        return False
    upper = index.upper
    if isinstance(upper, cst.UnaryOperation) and isinstance(upper.operator, cst.Minus):
        return not isinstance(upper.expression, cst.Integer) or _int(upper.expression) >= 2
    return False


def _appends(node: cst.CSTNode) -> bool:
    return any(isinstance(n, cst.Call) and isinstance(n.func, cst.Attribute) and n.func.attr.value in ("append", "extend")
               for n in descendants(node))


def _own_nodes_of_kind(function: cst.FunctionDef, kind: type) -> list[cst.CSTNode]:
    return [n for n in descendants(function) if isinstance(n, kind)]


def _tail_position_test(ctx: ModuleContext, function: cst.FunctionDef, test: cst.BaseExpression, index: str, history: str) -> bool:
    """`i >= len(turns) - 4` (or `i >= total - 4` with `total = len(turns)`): the index against the end of the list."""
    if not isinstance(test, cst.Comparison) or len(test.comparisons) != 1:
        return False
    left, right = test.left, test.comparisons[0].comparator
    if not (isinstance(left, cst.Name) and left.value == index and isinstance(right, cst.BinaryOperation)
            and isinstance(right.operator, cst.Subtract)):
        return False
    if isinstance(right.right, cst.Integer) and _int(right.right) < 2:
        return False  # `i >= len(turns) - 1`: the newest turn, no window
    measured = right.left
    if isinstance(measured, cst.Name):
        values = [a.value for a in _own_nodes_of_kind(function, cst.Assign) if any(
            isinstance(t.target, cst.Name) and t.target.value == measured.value for t in a.targets)]  # type: ignore[attr-defined]
        measured = values[0] if len(values) == 1 else measured
    return isinstance(measured, cst.Call) and _last_name(measured.func) == "len" and bool(measured.args) \
        and ctx.code(measured.args[0].value) == history


# --- which lists are conversations -------------------------------------------------------------------------


def _read_as_messages(ctx: ModuleContext, scope: cst.CSTNode, target: str) -> bool:
    """Elements of `target` read as messages in `scope`: `for m in target: m["role"]` / `target[0].content`."""
    elements = {target}
    for node in (*ctx.nodes_in(cst.For, scope), *ctx.nodes_in(cst.CompFor, scope)):
        if isinstance(node.target, cst.Name) and ctx.code(node.iter).split("[")[0] == target:
            elements.add(node.target.value)
    for node in ctx.nodes_in(cst.Subscript, scope):
        if isinstance(node.slice[0].slice, cst.Index):
            key = node.slice[0].slice.value
            if isinstance(key, cst.SimpleString) and key.value.strip("'\"") in ("role", "content") and ctx.code(node.value).split("[")[0] in elements:
                return True
    for node in ctx.nodes_in(cst.Attribute, scope):
        if node.attr.value in ("role", "content") and ctx.code(node.value).split("[")[0] in elements:
            return True
        if node.attr.value == "messages" and ctx.code(node.value) in elements - {target}:
            return True  # for run in runs: run.messages: stored runs (turns), each holding its messages
    for node in ctx.nodes_in(cst.Call, scope):
        if not isinstance(node.func, cst.Attribute) or not node.args:
            continue
        if node.func.attr.value == "get":
            key = node.args[0].value
            if isinstance(key, cst.SimpleString) and key.value.strip("'\"") in ("role", "content", "message_type") and ctx.code(node.func.value) in elements:
                return True
        elif node.func.attr.value in ("append", "extend") and ctx.code(node.func.value) == target and _role_message(node.args[0].value):
            return True  # session.append({"role": "user", "content": text}): the list holds messages
    return False


def _role_message(value: cst.BaseExpression) -> bool:
    """`{"role": ..., ...}` (or a list of them): a chat message written as a dict."""
    if isinstance(value, cst.List):
        return any(_role_message(e.value) for e in value.elements)
    return any(key == "role" for key, _ in dict_entries(value))


def _is_history(ctx: ModuleContext, scope: cst.CSTNode, target: cst.BaseExpression) -> bool:
    if isinstance(target, cst.Subscript):
        return _keyed_history(ctx, target)
    keyed = _keys_of(ctx, target)
    if keyed is not None:
        return _is_history(ctx, scope, keyed)  # `sorted_keys = sorted(chat_history.keys(), key=int)`: the turns, by their keys
    name = _last_name(target)
    if name is None:
        return False
    if name.endswith(("_tokens", "_counts", "_ids", "_indices", "_idxs", "_sizes", "_summaries", "_titles")):
        return False  # bookkeeping beside the history (token counts per message, past sessions' summaries), not the messages
    if LOG_NAME.search(name):
        return False  # `LOG_MESSAGES.append(f"[{timestamp}] {message}")`: lines a UI or a log shows, not turns sent to a model
    if STORE_OF_MANY.search(name) and not _read_as_messages(ctx, ctx.module, ctx.code(target)):
        return False  # `_conversation_cache`, `sessions`: many conversations by key; evicting one cuts none of them
    if HISTORY_NAME.search(name):
        return not _holds_records(ctx, target) and not _read_as_records(ctx, name)
    return _read_as_messages(ctx, scope, ctx.code(target))


def _keys_of(ctx: ModuleContext, target: cst.BaseExpression) -> cst.BaseExpression | None:
    """`keys` bound once to the keys of a dict, in order (`sorted(history.keys(), key=int)`, `list(history.keys())`):
    the dict."""
    if not isinstance(target, cst.Name):
        return None
    call = ctx.sole_value(target)
    if not isinstance(call, cst.Call) or _last_name(call.func) not in ("sorted", "list") or not call.args:
        return None
    inner = call.args[0].value
    if not (isinstance(inner, cst.Call) and isinstance(inner.func, cst.Attribute) and inner.func.attr.value == "keys" and not inner.args):
        return None  # `list(self._items)`, `sorted(self.sessions, key=...)`: a copy, or whole conversations by key
    inner = inner.func.value
    return inner if isinstance(inner, (cst.Name, cst.Attribute)) and ctx.code(inner) != ctx.code(target) else None


# what a message (or a stored turn holding messages) is read by
MESSAGE_KEYS = frozenset({"role", "content", "text", "parts", "messages", "message", "tool_calls", "tool_call_id", "name", "type",
                          "input", "output", "query", "response", "answer", "question", "user", "assistant", "prompt", "completion"})


def _read_as_records(ctx: ModuleContext, name: str) -> bool:
    """`_records_read`, worked out once per module and name."""
    memo = ctx.memo.setdefault("read_as_records", {})
    if name not in memo:
        memo[name] = _records_read(ctx, name)
    return memo[name]


def _records_read(ctx: ModuleContext, name: str) -> bool:
    """The module walks the list (`for run in reversed(runs):`) and reads its items only by keys no message has, two
    or more of them (`run["summary"]`, `run["timestamp"]`, `run["results"]`): a list of records (a CI script's
    validation runs kept for a trend report), not a conversation's turns."""
    items: set[str] = set()
    for loop in (*ctx.nodes(cst.For), *ctx.nodes(cst.CompFor)):
        walked = loop.iter.args[0].value if isinstance(loop.iter, cst.Call) and _last_name(loop.iter.func) == "reversed" and loop.iter.args \
            else loop.iter
        if isinstance(loop.target, cst.Name) and _last_name(walked) == name and isinstance(walked, (cst.Name, cst.Attribute)):
            items.add(loop.target.value)
    if not items:
        return False
    keys: set[str] = set()
    for node in ctx.nodes(cst.Subscript):
        if isinstance(node.value, cst.Name) and node.value.value in items and isinstance(node.slice[0].slice, cst.Index):
            key = string_value(node.slice[0].slice.value)
            if key is None:
                return False  # read by position or by a variable key: nothing to tell
            keys.add(key)
    for node in ctx.nodes(cst.Attribute):
        if isinstance(node.value, cst.Name) and node.value.value in items:
            if node.attr.value == "get":
                continue
            keys.add(node.attr.value)
    for call in ctx.calls_by_name.get("get", []):
        if isinstance(call.func, cst.Attribute) and isinstance(call.func.value, cst.Name) and call.func.value.value in items and call.args:
            key = string_value(call.args[0].value)
            if key is not None:
                keys.add(key)
    return len(keys) >= 2 and not keys & MESSAGE_KEYS


# the key of one conversation in a store of many: a chat, user, channel, thread or session id
CONVERSATION_KEY = re.compile(r"(?:^|_|\.)(?:id|key)$|chat|user|channel|session|thread|conv|guild|room|author|sender|peer|sid$|uid$", re.I)
# a store of many conversations, one list of messages per key
PER_KEY_STORE = re.compile(r"^_?(?:conversations|sessions|histories|chats|dialogs|threads|chat_logs)$", re.I)


def _keyed_history(ctx: ModuleContext, target: cst.Subscript) -> bool:
    """`self.messages[chat_id]`, `histories[user.id]`: one conversation of a store that keeps one per chat, user or
    channel (a bot's usual shape). Cutting it cuts that conversation as much as cutting a list of its own. A store
    indexed by position (`messages[i]`, one message) is not one."""
    if len(target.slice) != 1 or not isinstance(target.slice[0].slice, cst.Index):
        return False
    key = target.slice[0].slice.value
    if not isinstance(key, (cst.Name, cst.Attribute, cst.SimpleString, cst.FormattedString)) \
            or (isinstance(key, (cst.Name, cst.Attribute)) and not CONVERSATION_KEY.search(ctx.code(key))):
        return False
    store = _last_name(target.value)
    if store is None or LOG_NAME.search(store) or store.endswith(("_tokens", "_counts", "_ids", "_summaries", "_titles")):
        return False
    return bool(HISTORY_NAME.search(store) or PER_KEY_STORE.search(store)) and not _holds_records(ctx, target)


# messages a program logs or shows (`log_messages`, `status_messages`, `ui_messages`), not a conversation with a model
LOG_NAME = re.compile(r"^_*(?:log|logs|logged|debug|status|console|ui|display|progress|toast|notification|error|warning)_(?:messages|msgs|lines|history)$",
                      re.IGNORECASE)


# a store that holds many conversations (or anything else) by key, not one conversation's messages
STORE_OF_MANY = re.compile(r"(?:^|_)(?:cache|caches|store|stores|registry|lookup|pool|by_\w+)$|^_?(?:conversations|sessions|histories|chats)$",
                           re.IGNORECASE)


ROLE_WORDS = frozenset({"user", "assistant", "system", "developer", "human", "ai", "tool", "function"})


def _holds_records(ctx: ModuleContext, target: cst.BaseExpression) -> bool:
    """Every append to the list adds a tuple that is not a (role, text) message (`self.tool_failure_history.append(
    (tool_name, args_hash, success))`) or a value named for a record (`history.append(call_hash)`): the list keeps
    records for the code, not turns of a conversation."""
    code = ctx.code(target)
    appended = _added_to(ctx, "append").get(code, [])
    extended = _added_to(ctx, "extend").get(code, [])
    # an extend by an earlier list of the same kind (`history.extend(previous["history"][-8:])`) adds no other kind
    # of entry: the appends say what the list holds
    carried = [v for v in extended if HISTORY_NAME.search(_last_name(v.value if isinstance(v, cst.Subscript) else v) or "")]
    return bool(appended or extended) and all(_a_record(ctx, v) for v in appended) \
        and all(BOOKKEEPING_VALUE.search(_last_name(v) or "") is not None or (v in carried and appended) for v in extended)


# what an agent's step is read by: the next prompt shows it
STEP_KEYS = frozenset({"action", "observation", "thought", "result", "reflection", "feedback", "tool", "tool_input", "tool_output",
                       "args", "arguments", "step", "reasoning", "plan", "summary", "reply", "request", "error", "code", "output",
                       # and a chat message under other names: who sent it and what it says
                       "sender", "author", "speaker", "from", "who", "by", "body", "msg", "utterance", "said", "says"})
# a record's stamp: when it was made
RECORD_STAMP = re.compile(r"_at$|^(?:time|date|when|created|updated|applied|recorded)(?:_|$)")


def _added_to(ctx: ModuleContext, method: str) -> dict[str, list[cst.BaseExpression]]:
    """What the module's `X.append(v)` (or `X.extend(v)`) calls add, by the code of `X`: indexed once per module."""
    memo = ctx.memo.setdefault("added_to", {})
    if method not in memo:
        index: dict[str, list[cst.BaseExpression]] = {}
        for call in ctx.calls_by_name.get(method, []):
            if isinstance(call.func, cst.Attribute) and call.args:
                index.setdefault(ctx.code(call.func.value), []).append(call.args[0].value)
        memo[method] = index
    return memo[method]


def _kept_in_records(ctx: ModuleContext, node: cst.Subscript) -> bool:
    """The window is handed to `extend` of a list that keeps records of the code's own (`_holds_records`): an
    overlay's change log kept to its latest entries, not a conversation."""
    arg = ctx.parent(node)
    call = ctx.parent(arg) if isinstance(arg, cst.Arg) else None
    return isinstance(call, cst.Call) and isinstance(call.func, cst.Attribute) and call.func.attr.value == "extend" \
        and _holds_records(ctx, call.func.value)


def _a_record(ctx: ModuleContext, value: cst.BaseExpression) -> bool:
    """A tuple that is not a (role, text) message, or a value named for a record; a name bound only to such tuples
    (`entry: LimitChangeRecord = (time.time(), name, old, new)`) too."""
    if isinstance(value, cst.Dict):
        # `{"applied_at": ..., "origin": ..., "payload": ...}`: a record of the code's own, keyed by nothing a message
        # or an agent's step is read by (a role, a content, an observation, a sender ...) and stamped with when or
        # which (`applied_at`, `timestamp`, `id`)
        keys = [string_value(e.key) for e in value.elements if isinstance(e, cst.DictElement)]
        if any(string_value(e.value) in ROLE_WORDS for e in value.elements if isinstance(e, cst.DictElement)):
            return False  # {"who": "user", ...}: a turn, whatever its keys are called
        return len(keys) >= 2 and len(keys) == len(value.elements) and all(k is not None and k not in MESSAGE_KEYS | STEP_KEYS for k in keys) \
            and any(RECORD_STAMP.search(k) or BOOKKEEPING_VALUE.search(k) for k in keys if k is not None)
    if isinstance(value, cst.Tuple):
        if any(_turn_text(e.value) for e in value.elements):
            return False  # (expires, f"Step {n}, Feedback: {fb}, Your response: {reply}"): a turn's text with a tag
        return bool(value.elements) and string_value(value.elements[0].value) not in ROLE_WORDS
    if _last_name(value) is not None and BOOKKEEPING_VALUE.search(_last_name(value) or "") is not None:
        return True
    if isinstance(value, cst.Name):
        bound = [v for _, v in ctx.assigned_values(value)]
        return bool(bound) and all(isinstance(v, cst.Tuple) and _a_record(ctx, v) and _bookkeeping_tuple(v) for v in bound)
    return False


def _turn_text(value: cst.BaseExpression) -> bool:
    """An f-string with a few words of its own around its values: the text of a turn as the prompt will show it."""
    if not isinstance(value, cst.FormattedString):
        return False
    words = " ".join(p.value for p in value.parts if isinstance(p, cst.FormattedStringText))
    return len(re.findall(r"[^\W\d_]{2,}", words)) >= 3


def _bookkeeping_tuple(value: cst.Tuple) -> bool:
    """Three or more fields, or a number or clock among them: a record, not a (user, bot) pair of a chat UI."""
    return len(value.elements) >= 3 or any(
        isinstance(e.value, (cst.Integer, cst.Float)) or (isinstance(e.value, cst.Call) and "time" in (_last_name(e.value.func) or ""))
        for e in value.elements)


# what a list of the code's own records holds: `history.append(call_hash)`, `self._history.append(handle)`
# a value named for a record (appended), or for many (`self.token_history.extend(token_ids)`: a buffer of token ids)
BOOKKEEPING_VALUE = re.compile(r"(?:^|_)(?:hash(?:es)?|ids?|keys?|digests?|signatures?|fingerprints?|handles?|idx|index|indices"
                               r"|counts?|scores?|ts|time|timestamps?|tokens)$", re.IGNORECASE)


# --- cuts and edits decided inside a function ---------------------------------------------------------------


def _params(function: cst.FunctionDef) -> set[str]:
    params = function.params
    return {p.name.value for p in [*params.params, *params.kwonly_params, *params.posonly_params]} - {"self", "cls"}


def _uses(node: cst.CSTNode | None, names: set[str]) -> bool:
    return node is not None and any(isinstance(n, cst.Name) and n.value in names for n in descendants(node))


def _reads(node: cst.BaseExpression, names: set[str]) -> bool:
    """`node` is one of `names`, or reads one."""
    return (isinstance(node, cst.Name) and node.value in names) or _uses(node, names)


def _own_nodes(function: cst.FunctionDef) -> list[cst.CSTNode]:
    """The nodes of `function`, nested functions included (a local helper such as `remove_pair()`), nested
    classes not."""
    found: list[cst.CSTNode] = []

    class Collect(cst.CSTVisitor):
        def on_visit(self, node: cst.CSTNode) -> bool:
            if isinstance(node, cst.ClassDef):
                return False
            found.append(node)
            return True

    function.body.visit(Collect())
    return found


def _candidates(ctx: ModuleContext) -> Iterator[tuple[cst.CSTNode, cst.FunctionDef]]:
    """(node, the outermost function around it) for the nodes that can be a cut, from the module's index (no
    walk of its own); a nested helper (`def drop_pair(): ...`) counts as part of the function that holds it."""
    for kind in (cst.Call, cst.Del, cst.Subscript, cst.Assign, cst.For, cst.While):
        for node in ctx.nodes(kind):
            if kind is cst.For and _backward_source(node) is None and _walked_back_by_index(ctx, node) is None \
                    and _newest_by_index(ctx, node) is None:
                continue
            if kind is cst.While and _walked_back_by_while(ctx, node) is None:
                continue
            if kind is cst.Call and not (isinstance(node.func, cst.Attribute) and node.func.attr.value in ("pop", "popleft", "remove")):
                continue
            if kind is cst.Subscript and not isinstance(node.slice[0].slice, cst.Slice):
                continue
            if kind is cst.Assign and not (isinstance(node.targets[0].target, cst.Subscript) or (
                    isinstance(node.targets[0].target, cst.Attribute) and node.targets[0].target.attr.value in CONTENT_ATTRS)):
                continue
            outer = None
            for ancestor in ctx.ancestors(node):
                if isinstance(ancestor, cst.FunctionDef):
                    outer = ancestor
                elif isinstance(ancestor, cst.ClassDef) and outer is not None:
                    break
            if outer is not None:
                yield node, outer


def _in_function(ctx: ModuleContext, function: cst.FunctionDef) -> Iterator[Rewrite]:
    """Every cut in `function` (a method another module calls: its own cuts)."""
    for node in _own_nodes(function):
        found = _judge(ctx, function, node)
        if found is not None:
            yield found


# what a provider raises when it refuses a request (too long, too many tokens, too fast)
PROVIDER_REFUSAL = re.compile(r"openai|anthropic|litellm|BadRequest|InvalidRequest|RateLimit|ContextWindow|ContextLength|TokenLimit"
                              r"|Overflow|TooLong|APIError|APIStatusError|ContextTooLong|PromptTooLong", re.I)
# a budget that is the model's context window: trimming there is what must happen, not a window that slides early
# (or the model's input limit, litellm's `max_input_tokens`)
CONTEXT_WINDOW = re.compile(r"context_(?:length|window|len|size)|max_context|n_ctx|max_model_len|model_max_length|max_position"
                            r"|max_input_tokens", re.I)


def at_the_context_window(ctx: ModuleContext, node: cst.CSTNode, whole_function: bool = True) -> bool:
    """`while total >= context_length: msgs.pop(1)`: messages dropped only once the prompt no longer fits the
    model's context window (the loop's or test's budget is named for it), or in an `except` handler for the provider's
    refusal: a recovery once it refused a request (`except openai.BadRequestError: history = history[-5:]`), not a cut
    on every turn. (`except Exception:` after a summary failed is a fallback that runs whenever the summary does not.)"""
    function = ctx.enclosing_function(node)
    budgets = context_budgets(ctx, function) if function is not None else frozenset()
    for ancestor in ctx.ancestors(node):
        if isinstance(ancestor, (cst.While, cst.If)) and _compared_with_the_window(ctx, ancestor.test, budgets):
            return True  # `if count(messages) > limit:` after `limit = self.context_length`
        if isinstance(ancestor, cst.ExceptHandler) and ancestor.type is not None and PROVIDER_REFUSAL.search(ctx.code(ancestor.type)):
            return True
        if isinstance(ancestor, cst.FunctionDef):
            return (whole_function and _fit_to_the_context_window(ctx, ancestor, node)) or _returned_early_while_it_fits(ctx, ancestor, node)
    return False


def _returned_early_while_it_fits(ctx: ModuleContext, function: cst.FunctionDef, node: cst.CSTNode,
                                  passed: frozenset[str] = frozenset()) -> bool:
    """`if total_tokens <= max_tokens: return messages` before the cut: the function hands back the history it was
    given, untouched, while it fits the context window, so the cut below runs only once it no longer does. (A guard
    that leaves when the text is over the window, `if n > self.context_length: return "too long"`, says nothing of
    the cut after it.) `passed`: parameters the call being judged passes the window to."""
    budgets = context_budgets(ctx, function) | passed
    params = _params(function)
    for guard in _guards_before(ctx, node):
        last = guard.body.body[-1].body  # type: ignore[attr-defined]
        returned = next((small.value for small in last if isinstance(small, cst.Return)), None)
        if isinstance(returned, cst.Name) and returned.value in params and _fits_under(ctx, guard.test, budgets):
            return True
    return False


def _fits_under(ctx: ModuleContext, test: cst.BaseExpression, budgets: frozenset[str]) -> bool:
    """`size <= window` (or `window >= size`, `size < window - reserve`): the test holds while the size fits."""
    if not isinstance(test, cst.Comparison) or len(test.comparisons) != 1:
        return False
    operator, right = test.comparisons[0].operator, test.comparisons[0].comparator

    def window(side: cst.BaseExpression) -> bool:
        return bool(CONTEXT_WINDOW.search(ctx.code(side))) or any(
            isinstance(n, cst.Name) and n.value in budgets for n in (side, *descendants(side)))

    if isinstance(operator, (cst.LessThan, cst.LessThanEqual)):
        return window(right) and not window(test.left)
    if isinstance(operator, (cst.GreaterThan, cst.GreaterThanEqual)):
        return window(test.left) and not window(right)
    return False


def _compared_with_the_window(ctx: ModuleContext, test: cst.BaseExpression, budgets: frozenset[str]) -> bool:
    """The test compares a size with the context window or a budget computed from it (`total >= self.context_length`,
    `count(msgs) > limit`); a test of whether the window is set at all (`if self.context_window and self.max_tokens:`)
    is not one: the cut under it runs on every request."""
    if isinstance(test, cst.BooleanOperation) and isinstance(test.operator, cst.Or):
        # `len(h) > MAX_TURNS or size > context_window`: the count cap alone fires every turn
        return _compared_with_the_window(ctx, test.left, budgets) and _compared_with_the_window(ctx, test.right, budgets)
    for comparison in (test, *descendants(test)):
        if not isinstance(comparison, cst.Comparison):
            continue
        sides = (comparison.left, *(c.comparator for c in comparison.comparisons))
        if any(isinstance(side, cst.Name) and side.value == "None" or (isinstance(side, cst.Integer) and _int(side) == 0) for side in sides):
            continue  # `if self.max_context_length is not None:`: whether the window is set
        if any(isinstance(side, cst.Call) and called_name(side) == "len" and side.args and HISTORY_NAME.search((_last_name(side.args[0].value) or ""))
               and not MEASURE_NAME.search((_last_name(side.args[0].value) or "")) for side in sides):
            continue  # `len(self.messages) > self._MAX_CONTEXT`: a count of messages, which no model's window is measured in
        if any(CONTEXT_WINDOW.search(ctx.code(side)) or (isinstance(side, cst.Name) and side.value in budgets) for side in sides):
            return True
    return False


MEASURE_NAME = re.compile(r"(?:tokens|token_ids|ids|text|texts|chars|str|string|bytes|encoded)$", re.I)  # `len(history_tokens)`: a size


def _fit_to_the_context_window(ctx: ModuleContext, function: cst.FunctionDef, node: cst.CSTNode) -> bool:
    """`max_size = self.max_context_size - reserve`, then `while keep >= 0: prompt = history[-keep:]; if count(prompt)
    <= max_size: break; keep -= 1`, and `return history[-keep:]`: the newest messages that fit the model's context
    window, searched for in a loop that stops once the prompt fits a budget named for (or computed from) the context
    window. The cut happens only once the whole history no longer fits, where the request would otherwise fail."""
    searches, counts = _fit_searches(ctx, function)
    if not searches:
        return False
    if any(loop is node or ctx.contains(loop, node) for loop in searches):  # the search itself: keeps the newest that fit
        return True
    if not isinstance(node, cst.Subscript):
        return False
    bounds = {n.value for n in descendants(node.slice[0]) if isinstance(n, cst.Name)}
    return bool(bounds & counts)


_FIT_SEARCHES: WeakKeyDictionary[ModuleContext, dict[int, tuple[list[cst.CSTNode], set[str]]]] = WeakKeyDictionary()
# a budget computed from the context window through a plain function of numbers: `int(window * 0.9)`, `min(a, b)`
NUMERIC_CALLS = frozenset({"int", "float", "round", "min", "max", "floor", "ceil"})


def _fit_searches(ctx: ModuleContext, function: cst.FunctionDef) -> tuple[list[cst.CSTNode], set[str]]:
    """(the loops of `function` that search for what fits a context-window budget, the names those loops count the
    kept messages with), computed once per function: a loop whose test compares with the budget, or that breaks under a
    test that does (a loop that only logs the budget is no search)."""
    memo = _FIT_SEARCHES.setdefault(ctx, {})
    found = memo.get(id(function))
    if found is not None:
        return found
    budgets = context_budgets(ctx, function)

    def against_budget(test: cst.BaseExpression) -> bool:
        return any(isinstance(c, cst.Comparison) and any(isinstance(side, cst.Name) and side.value in budgets
                                                         for side in (c.left, *(t.comparator for t in c.comparisons)))
                   for c in (test, *descendants(test)))

    searches: list[cst.CSTNode] = []
    if budgets:
        for loop in descendants(function.body):
            if isinstance(loop, cst.While) and against_budget(loop.test):
                searches.append(loop)
            elif isinstance(loop, (cst.While, cst.For)) and any(
                    isinstance(branch, cst.If) and against_budget(branch.test) and any(isinstance(b, cst.Break) for b in descendants(branch.body))
                    for branch in descendants(loop.body)):
                searches.append(loop)
    counts = {t.value for loop in searches for a in descendants(loop) if isinstance(a, (cst.Assign, cst.AugAssign))
              for t in _bound_names(a) if isinstance(t, cst.Name)}
    memo[id(function)] = (searches, counts)
    return searches, counts


_BUDGETS: WeakKeyDictionary[ModuleContext, dict[int, frozenset[str]]] = WeakKeyDictionary()


def context_budgets(ctx: ModuleContext, function: cst.FunctionDef) -> frozenset[str]:
    """The names of `function` that hold a budget of the model's context window: a parameter named for it, or a
    number computed from it (`limit = self.context_length`, `max_size = int(self.max_context * 0.9) - reserve`)."""
    memo = _BUDGETS.setdefault(ctx, {})
    found = memo.get(id(function))
    if found is None:
        params = [p for p in (*function.params.params, *function.params.kwonly_params)]
        names = {p.name.value for p in params if CONTEXT_WINDOW.search(p.name.value)}
        names |= _window_passed_by_callers(ctx, function, [p.name.value for p in params])
        assigns = [a for a in descendants(function.body) if isinstance(a, cst.Assign) and _numeric(a.value)]
        grew = True
        while grew:  # `budget = max_tokens`, `available = budget - reserve`: a number computed from a budget is one too
            grew = False
            for assign in assigns:
                window = CONTEXT_WINDOW.search(ctx.code(assign.value)) and not any(
                    _apps_own_budget(size) for size in _attribute_defaults(ctx, function, assign.value))
                if window or any(isinstance(n, cst.Name) and n.value in names for n in (assign.value, *descendants(assign.value))):
                    new = {t.target.value for t in assign.targets if isinstance(t.target, cst.Name)} - names
                    if new:
                        names |= new
                        grew = True
        found = memo[id(function)] = frozenset(names)
    return found


def _window_passed_by_callers(ctx: ModuleContext, function: cst.FunctionDef, params: list[str]) -> set[str]:
    """The parameters of `function` that every call of it in the module passes the context window to
    (`truncate_message_content(self.message_history, self.context_window - 2000)`, `trim_messages(messages,
    self.max_tokens)` after `self.max_tokens = max_tokens or settings.max_input_tokens`)."""
    from cachelint.check.depends import positional_index
    from cachelint.check.module import argument_for

    name = function.name.value
    method = ctx.enclosing(function, (cst.ClassDef,)) is not None
    calls = [c for c in ctx.nodes(cst.Call) if (isinstance(c.func, cst.Name) and c.func.value == name and not method)
             or (method and isinstance(c.func, cst.Attribute) and c.func.attr.value == name)]  # `agent.trim(3000)` too
    return {param for param in params if param not in ("self", "cls") and calls and all(
        (arg := argument_for(call, param, positional_index(function, param))) is not None and _a_window_value(ctx, arg)
        for call in calls)}


def _shrunk(value: cst.BaseExpression) -> bool:
    """`min(self.context_window, 4000)`, `max(window - 120000, 2000)`, `window // 10`, `window * 0.2`: a budget the
    app cut far below the window (a bound of its own), not the window."""
    for node in (value, *descendants(value)):
        if isinstance(node, cst.Call) and _last_name(node.func) in ("min", "max") and any(
                isinstance(a.value, cst.Integer) and _int(a.value) is not None and _int(a.value) < 32_000 for a in node.args):
            return True
        if isinstance(node, cst.BinaryOperation) and isinstance(node.operator, (cst.FloorDivide, cst.Divide)) \
                and isinstance(node.right, cst.Integer) and (_int(node.right) or 0) >= 2:
            return True
        if isinstance(node, cst.BinaryOperation) and isinstance(node.operator, cst.Multiply) and isinstance(node.right, cst.Float) \
                and float(node.right.value) < 0.5:
            return True
    return False


def _a_window_value(ctx: ModuleContext, value: cst.BaseExpression, depth: int = 0) -> bool:
    """The context window or a number computed from it (less a reserve), written out, kept on `self` (`self.max_tokens
    = max_tokens or settings.max_input_tokens`) or in a local name every assignment of which is one."""
    if depth > 3:
        return False
    if CONTEXT_WINDOW.search(ctx.code(value)):
        return (_numeric(value) or isinstance(value, cst.BooleanOperation)) and not _shrunk(value)
    if isinstance(value, cst.BinaryOperation) and isinstance(value.operator, (cst.Subtract, cst.Multiply, cst.FloorDivide)):
        return _a_window_value(ctx, value.left, depth + 1)  # `self.max_tokens - count_tokens(system)`
    if isinstance(value, cst.Attribute) and ctx.code(value.value) == "self":
        cls = ctx.enclosing(value, (cst.ClassDef,))
        assigned = ctx.self_assignments(cls).get(value.attr.value, []) if cls is not None else []
        return bool(assigned) and all(isinstance(a, cst.Assign) and CONTEXT_WINDOW.search(ctx.code(a.value)) for a in assigned)
    if isinstance(value, cst.Name):
        function = ctx.enclosing_function(value)
        values = [v for b, v in ctx.assigned_values(value)]
        return bool(values) and function is not None and all(
            v is not None and ctx.enclosing_function(v) is function and _a_window_value(ctx, v, depth + 1) for v in values)
    return False


def _numeric(value: cst.BaseExpression) -> bool:
    """A number computed from names and attributes: arithmetic, or a plain numeric function of them (not an object
    made with the window, `llm = LLM(..., context_length)`)."""
    return all(not isinstance(n, (cst.Await, cst.Lambda, cst.Slice, cst.List, cst.ListComp, cst.SimpleString, cst.FormattedString))
               and not (isinstance(n, cst.Call) and _last_name(n.func) not in NUMERIC_CALLS)
               for n in (value, *descendants(value)))


def _bound_names(statement: cst.CSTNode) -> list[cst.CSTNode]:
    if isinstance(statement, cst.AugAssign):
        return [statement.target]
    return [t.target for t in statement.targets] if isinstance(statement, cst.Assign) else []


def _rebuilt_each_pass(ctx: ModuleContext, node: cst.CSTNode, receiver: cst.BaseExpression) -> bool:
    """`for _ in range(retries): msgs, err = fit(prompt, history); ask(msgs); msgs.pop(0)`: the list is bound anew
    in each pass of the loop around the cut, so what the cut removes is not in the next request."""
    loops = ctx.loops_around(node)
    return bool(loops) and bound_anew_in(ctx, loops[0], ctx.code(receiver))


def bound_anew_in(ctx: ModuleContext, loop: cst.CSTNode, target: str) -> bool:
    """An assignment inside `loop` binds `target` (alone, or in a tuple: `msgs, err = fit(...)`) to a value that
    does not read it (`msgs = [system, *history]`, not `msgs = msgs[1:]`): the list is made anew in each pass.
    Memoized per loop and target: every call on the list in the loop asks it again."""
    memo = ctx.__dict__.setdefault("_bound_anew_in", {})
    key = (id(loop), target)
    if key not in memo:
        memo[key] = _bound_anew_in(ctx, loop, target)
    return memo[key]


def _bound_anew_in(ctx: ModuleContext, loop: cst.CSTNode, target: str) -> bool:
    for node in descendants(loop):
        if isinstance(node, cst.Assign):
            bounds, value = [t.target for t in node.targets], node.value
        elif isinstance(node, cst.AnnAssign) and node.value is not None:
            bounds, value = [node.target], node.value
        else:
            continue
        attrs = {id(n.attr) for n in descendants(value) if isinstance(n, cst.Attribute)}  # the `msgs` of `self.msgs` is no read of `msgs`
        for bound in bounds:
            names = [e.value for e in bound.elements] if isinstance(bound, (cst.Tuple, cst.List)) else [bound]
            if any(ctx.code(n) == target for n in names) and not any(
                    isinstance(n, (cst.Name, cst.Attribute)) and id(n) not in attrs and ctx.code(n) == target for n in descendants(value)):
                return True
    return False


def _judge(ctx: ModuleContext, function: cst.FunctionDef, node: cst.CSTNode) -> Rewrite | None:
    """The cut `node` makes in `function`, if it is one and it is made before the prompt reaches the model's
    context window: whatever its form (pop, del, slice, edit), a cut made only there is what must happen."""
    inner = ctx.enclosing_function(node)
    if inner is not None and is_model_tool(inner) and _local_root(node):
        return None  # `@tool def transcript(lines): return "\n".join(all_lines[-lines:])`: a tool result, kept as it was sent
    found = _cut(ctx, function, node)
    # a walk that stops at a count of turns beside the context window's test is a window whatever else the function fits
    counted = isinstance(node, cst.For) and found is not None and found.what == LATEST_TURNS
    return None if found is None or at_the_context_window(ctx, node, whole_function=not counted) or cut_with_headroom(ctx, node) \
        or cut_after_a_failed_attempt(ctx, node) or cut_in_large_steps(ctx, node) else found


def cut_in_large_steps(ctx: ModuleContext, node: cst.CSTNode) -> bool:
    """`if len(memory) > 100: memory = memory[-50:]`: the stored list itself is cut once it passes one bound, down to
    far fewer entries (three quarters or less, MIN_STEP fewer at the least), so many turns pass between cuts: one cache
    miss per cut, as with compaction, not a window that slides on every turn."""
    kept = next((n for n in (node, *descendants(node)) if isinstance(n, cst.Subscript) and len(n.slice) == 1
                 and isinstance(n.slice[0].slice, cst.Slice) and n.slice[0].slice.upper is None
                 and isinstance(n.slice[0].slice.lower, cst.UnaryOperation) and isinstance(n.slice[0].slice.lower.operator, cst.Minus)), None)
    if kept is None:
        return False
    stored = ctx.parent(kept)  # `memory = memory[-50:]`: the list itself is cut (not a window taken to send)
    if not (isinstance(stored, cst.Assign) and len(stored.targets) == 1 and stored.value is kept
            and ctx.code(stored.targets[0].target) == ctx.code(kept.value)):
        return False
    size = _integer(ctx, kept.slice[0].slice.lower.expression)  # type: ignore[union-attr]
    guard = next((a for a in ctx.ancestors(node) if isinstance(a, (cst.If, cst.FunctionDef))), None)
    if size is None or not isinstance(guard, cst.If) or not isinstance(guard.test, cst.Comparison) or len(guard.test.comparisons) != 1 \
            or not isinstance(guard.test.comparisons[0].operator, (cst.GreaterThan, cst.GreaterThanEqual)):
        return False
    if not ctx.contains(guard.body, node):
        return False  # cut in the `else:` of the bound: on every turn below it
    measured = _len_of(guard.test.left)
    bound = _integer(ctx, guard.test.comparisons[0].comparator)
    return measured is not None and ctx.code(measured) == ctx.code(kept.value) and bound is not None \
        and size <= bound * 3 // 4 and bound - size >= MIN_STEP


MIN_STEP = 10  # entries (five exchanges) between two cuts at the least


def _integer(ctx: ModuleContext, node: cst.BaseExpression) -> int | None:
    """An integer written here or a name the module binds only to one (`MAX_TURNS = 100`)."""
    return _int(ctx.sole_value(node) if isinstance(node, cst.Name) else node)


def cut_after_a_failed_attempt(ctx: ModuleContext, node: cst.CSTNode) -> bool:
    """`while True: reply = self._try_send(...); if isinstance(reply, Message): return reply; ... history.pop(1)`:
    the loop goes on past the request only when it failed, so the cut is made only once the provider refused the
    prompt (too long for the model), as at the context window, not on every turn."""
    loop = next((a for a in ctx.ancestors(node) if isinstance(a, (cst.While, cst.For, cst.FunctionDef, cst.ClassDef))), None)
    if not isinstance(loop, (cst.While, cst.For)) or not isinstance(loop.body, cst.IndentedBlock):
        return False
    attempts: set[str] = set()
    for index, statement in enumerate(loop.body.body):
        if ctx.contains(statement, node):
            return False
        if isinstance(statement, cst.SimpleStatementLine):
            for small in statement.body:
                if isinstance(small, cst.Assign) and len(small.targets) == 1 and isinstance(small.targets[0].target, cst.Name) \
                        and isinstance(small.value, (cst.Call, cst.Await)):
                    attempts.add(small.targets[0].target.value)
        elif isinstance(statement, cst.If) and statement.orelse is None and isinstance(statement.body, cst.IndentedBlock) \
                and names_in(statement.test) & attempts:
            last = statement.body.body[-1] if statement.body.body else None
            if isinstance(last, cst.SimpleStatementLine) and any(isinstance(small, cst.Return) and small.value is not None
                                                                 and names_in(small.value) & attempts for small in last.body):
                # the attempt's result is returned once it is good: what follows runs only after a failure, unless it
                # uses the result (an agent step that returns a final answer and appends a tool call's reply goes on)
                after = loop.body.body[index + 1:]
                return not any(names_in(later) & attempts for later in after)
    return False


def cut_with_headroom(ctx: ModuleContext, node: cst.CSTNode) -> bool:
    """`if total > limit - 1000: while total > limit * 0.5: del history[:2]`: the cut runs once the history passes
    one bound and goes on down to a lower one, so many turns pass before the next cut (one cache miss per cut, as
    with compaction), not a window that slides on every turn."""
    loop = next((a for a in ctx.ancestors(node) if isinstance(a, (cst.While, cst.FunctionDef))), None)
    if not isinstance(loop, cst.While):
        return False
    guard = next((a for a in ctx.ancestors(loop) if isinstance(a, (cst.If, cst.FunctionDef))), None)
    if not isinstance(guard, cst.If):
        return False
    bounds = [_greater_than(ctx, test) for test in (guard.test, loop.test)]
    if None in bounds or bounds[0][0] != bounds[1][0] or bounds[0][1] == bounds[1][1]:
        return False
    lower = _greater_than_node(loop.test)  # down to a fraction of the bound: `limit * 0.5`, `limit // 2`
    return lower is not None and isinstance(lower, cst.BinaryOperation) and isinstance(lower.operator, (cst.Multiply, cst.Divide, cst.FloorDivide))


def _greater_than_node(test: cst.BaseExpression) -> cst.BaseExpression | None:
    while isinstance(test, cst.BooleanOperation):
        test = test.left
    if isinstance(test, cst.Comparison) and test.comparisons and isinstance(test.comparisons[0].operator, (cst.GreaterThan, cst.GreaterThanEqual)):
        return test.comparisons[0].comparator
    return None


def _greater_than(ctx: ModuleContext, test: cst.BaseExpression) -> tuple[str, str] | None:
    """(measured, bound) of the first `measured > bound` in a test (`a > b and ...`)."""
    while isinstance(test, cst.BooleanOperation):
        test = test.left
    if isinstance(test, cst.Comparison) and test.comparisons and isinstance(test.comparisons[0].operator, (cst.GreaterThan, cst.GreaterThanEqual)):
        return ctx.code(test.left), ctx.code(test.comparisons[0].comparator)
    return None


def _dropped_by_a_setting(ctx: ModuleContext, function: cst.FunctionDef, node: cst.CSTNode, receiver: cst.BaseExpression) -> bool:
    """`if self.is_no_prompt: dialogue.pop(0)` on the list a caller hands in for this request: a setting of the
    object, not the history's length, decides, and the same leading message (a system prompt the endpoint does not
    take) goes from every request, once; no window slides."""
    if not isinstance(receiver, cst.Name) or receiver.value not in _params(function) or ctx.loops_around(node):
        return False
    guard = next((a for a in ctx.ancestors(node) if isinstance(a, (cst.If, cst.FunctionDef))), None)
    if not isinstance(guard, cst.If):
        return False
    tests = [guard.test, *descendants(guard.test)]
    settings = [n for n in tests if isinstance(n, cst.Attribute) and isinstance(n.value, cst.Name) and n.value.value == "self"]
    cls = ctx.enclosing(function, (cst.ClassDef,))
    computed = {f.name.value for f in cls.body.body if isinstance(f, cst.FunctionDef)} if isinstance(cls, cst.ClassDef) else set()
    if any(a.attr.value in computed for a in settings):
        return False  # `if self.memory_full:`, a property that measures the history: a window after all
    read = {n.value for n in tests if isinstance(n, cst.Name)} - {"self"} - {a.attr.value for a in settings}
    return bool(settings) and not read and not any(isinstance(n, (cst.Call, cst.Comparison, cst.Subscript)) for n in tests)


def _cut(ctx: ModuleContext, function: cst.FunctionDef, node: cst.CSTNode) -> Rewrite | None:
    """The cut `node` makes in `function`, if it is one."""
    if COMPACTION.search(function.name.value) and not (SUMMARY_NAME.search(function.name.value) is None
                                                       and _message_count_cap(ctx, function, node)):
        return None  # a summary that replaces the history in one step: what the rule recommends, not a sliding cut
    if _summary_made_in(ctx, function) and not _message_count_cap(ctx, function, node):
        return None  # `def truncate(self): summary = summarize(history) ... [summary, *history[cut:]]`: compaction too
    params = _params(function)
    if isinstance(node, cst.Call) and isinstance(node.func, cst.Attribute):
        receiver, method = node.func.value, node.func.attr.value
        front = (method == "pop" and node.args and _front_index(node.args[0].value)) or (
            method == "popleft" and not node.args and _popped_past_a_cap(ctx, node, receiver))
        if front and _is_history(ctx, function, _history_of(receiver)):  # a deque's `popleft()` is its `pop(0)`
            if not (node.args and _uses(node.args[0].value, params)) and not _drains_a_queue(ctx, node, receiver) and not _moved(ctx, node) \
                    and not _orphan_tool_result(ctx, node) and not _rebuilt_each_pass(ctx, node, receiver) \
                    and not _dropped_by_a_setting(ctx, function, node, receiver):
                return Rewrite(node, ctx.code(_history_of(receiver)), "removes the oldest messages from")
        elif method == "pop" and node.args and _is_history(ctx, function, receiver) and _pops_until_it_fits(ctx, node, receiver):
            return Rewrite(node, ctx.code(receiver), "removes messages from the middle of")
        elif method == "pop" and node.args and isinstance(node.args[0].value, cst.Name) and _is_history(ctx, function, receiver):
            loop = ctx.enclosing(node, (cst.For,))
            if isinstance(loop, cst.For) and _front_slice_of(ctx, loop.iter) and not _uses(loop.iter, params - {ctx.code(receiver)}):
                return Rewrite(node, ctx.code(receiver), "removes the oldest entries from")  # for key in keys[:4]: d.pop(key)
            if _beyond_a_cap(ctx, function, node):
                return Rewrite(node, ctx.code(receiver), "removes the oldest entries beyond a fixed count from")
        elif method == "remove" and _is_history(ctx, function, receiver):
            loop = ctx.enclosing(node, (cst.For,))
            if isinstance(loop, cst.For) and _middle_or_front_slice(loop.iter):
                return Rewrite(node, ctx.code(receiver), "removes earlier messages from")
    elif isinstance(node, cst.Del):
        for target in _targets(node.target):
            if isinstance(target, cst.Subscript) and _front_subscript(target) and _is_history(ctx, function, target.value) \
                    and not _uses(target.slice[0].slice, params) and not up_to_the_newest_turn(ctx, function, target):
                return Rewrite(node, ctx.code(target.value), "deletes the oldest messages from")
            root = _subscript_root(target)
            if isinstance(target, cst.Subscript) and root is not None and _is_history(ctx, function, root) and _beyond_a_cap(ctx, function, node):
                return Rewrite(node, ctx.code(root), "deletes the oldest entries beyond a fixed count from")
    elif isinstance(node, cst.Subscript) and _drops_front_until_it_fits(ctx, function, node) and _is_history(ctx, function, node.value):
        return Rewrite(node, ctx.code(node.value), "removes the oldest messages from")
    elif isinstance(node, cst.Subscript) and ((_late_slice(node) and _tail_of_itself(ctx, node)) or _computed_tail_start(ctx, function, node)) \
            and _is_history(ctx, function, node.value):
        if _proportional_cut(ctx, function, node):
            return None  # `turns[-(len(turns) // 2):]`: half goes at once, then many turns pass before the next cut
        if _kept_in_records(ctx, node):
            return None  # `history.extend(existing["history"][-8:])` then `history.append({"applied_at": ...})`: records
        if _accessor(ctx, function, node, params):
            return None  # `def get_recent_messages(self, count): return self.messages[-count:]`: a read for its caller
        if _rendered_behind_the_question(ctx, function):
            return None  # "Question: {question}\n\nChat History: {chat_history}": the history was never a reused prefix
        if (SIDE_TASK.search(function.name.value) and not _sends_in(function)) or _side_class(ctx, function):
            return None  # `def _build_debug_trace(self): tail = self.history[-20:]`: a view for a log or a screen, not a request
        if LOADER.match(function.name.value) and ctx.enclosing(node, (cst.For,)) is not None and not _sends_in(function):
            return None  # every stored conversation trimmed once as the app loads them: the cache is cold then anyway
        if _session_shorter_than_window(ctx, function, node):
            return None  # a session capped at MAX_ITERATIONS = 6 passes of two messages never fills `history[-12:]`
        if not _in_for_header(ctx, node) and _kept_as_history(ctx, node) and _window_passed_on(ctx, function, node):
            # history[-keep:]: a window, whoever sets its size
            return Rewrite(node, ctx.code(_keys_of(ctx, node.value) or node.value), "keeps only the latest messages of")
        if _in_for_header(ctx, node) and _window_collected(ctx, function, node):
            # for turn in history[-keep:]: out.append(...) ... return out: a window, converted item by item
            return Rewrite(node, ctx.code(_keys_of(ctx, node.value) or node.value), "keeps only the latest messages of")
        if _rendered_window(ctx, function, node):
            return Rewrite(node, ctx.code(_keys_of(ctx, node.value) or node.value), "renders the first and only the latest items of")
    elif isinstance(node, cst.Assign):
        found = _copy_edit(ctx, function, node)
        return found
    elif isinstance(node, cst.While):
        return _newest_that_fit(ctx, function, node)
    elif isinstance(node, cst.For):
        found = _newest_that_fit(ctx, function, node) or _older_than_window_replaced(ctx, function, node)
        if found is None and (history := _newest_by_index(ctx, node)) is not None and _is_history(ctx, function, history) \
                and _collected_by(ctx, node) and not _after_a_whole_history(ctx, function, node):
            return Rewrite(node, ctx.code(history), LATEST_TURNS)  # for idx in range(max(0, n - k), n): prompt += ...
        return found
    return None


def _collected_by(ctx: ModuleContext, loop: cst.For) -> bool:
    """The loop's body builds something from what it walks: `prompt += ...`, `lines.append(...)`; not a count or a
    size summed up (`recent_tokens += len(history[idx]["content"])`)."""
    for n in descendants(loop.body):
        if isinstance(n, cst.AugAssign) and isinstance(n.operator, cst.AddAssign) and not COUNTED_NAME.search(_last_name(n.target) or "") \
                and not (isinstance(n.value, (cst.Integer, cst.Float)) or (isinstance(n.value, cst.Call) and _last_name(n.value.func) in MEASURES)):
            return True
        if isinstance(n, cst.Call) and isinstance(n.func, cst.Attribute) and n.func.attr.value in ("append", "extend") \
                and PROMPT_PARTS.search(_last_name(n.func.value) or ""):
            return True
    return False


# a list a prompt is built in: prompt_parts, messages, lines, context (not `candidates` for breakpoints, `ids`)
PROMPT_PARTS = re.compile(r"prompt|messages|msgs|history|context|lines|parts|text|content|steps|transcript|conversation|turns|sections", re.I)


def _after_a_whole_history(ctx: ModuleContext, function: cst.FunctionDef, loop: cst.For) -> bool:
    """What the loop adds to was made, before it, with a whole conversation in it (`prompt = [Message(...), ...,
    *task_state.messages]`, then `prompt += [...]` for each of the newest steps): the window is a tail rendered after an
    append-only history, which stays the cached prefix."""
    grown = {_last_name(n.target) for n in descendants(loop.body) if isinstance(n, cst.AugAssign)} | _grown_in(loop)
    for name in filter(None, grown):
        for assign in _own_nodes_of_kind(function, cst.Assign):
            if ctx.span(assign).row < ctx.span(loop).row and any(isinstance(t.target, cst.Name) and t.target.value == name for t in assign.targets) \
                    and isinstance(assign.value, cst.List) and any(isinstance(e, cst.StarredElement) and HISTORY_NAME.search(_last_name(e.value) or "")
                                                                for e in assign.value.elements):
                return True
    return False


MEASURES = frozenset({"len", "count_tokens", "num_tokens", "token_count", "count", "sum"})


SESSION_CAP = re.compile(r"^MAX_\w*(?:ITERATIONS|TURNS|ROUNDS|EXCHANGES|STEPS)$")


def _session_shorter_than_window(ctx: ModuleContext, function: cst.FunctionDef, sub: cst.Subscript) -> bool:
    """`session.message_history = session.message_history[-12:]`, in a function that appends two messages to it and
    counts the pass on the session (`session.iteration_count += 1`), in a module that caps a session's passes
    (`MAX_ITERATIONS = 6`): the history never grows past the window, so the cut never removes a message."""
    window = _int(sub.slice[0].slice.lower) if isinstance(sub.slice[0].slice, cst.Slice) else None
    history = ctx.code(sub.value)
    root = _subscript_root(sub.value) if isinstance(sub.value, cst.Subscript) else sub.value
    while isinstance(root, cst.Attribute):
        root = root.value
    if window is None or window >= 0 or not isinstance(root, cst.Name):
        return False
    appends = sum(1 for call in _own_nodes_of_kind(function, cst.Call) if isinstance(call.func, cst.Attribute)
                  and call.func.attr.value == "append" and ctx.code(call.func.value) == history)
    counters = [aug.target.attr.value for aug in _own_nodes_of_kind(function, cst.AugAssign) if isinstance(aug.target, cst.Attribute)
                and ctx.code(aug.target).split(".")[0] == root.value and isinstance(aug.operator, cst.AddAssign) and _int(aug.value) == 1]
    caps = [(statement.targets[0].target.value, _int(statement.value)) for line in ctx.module.body if isinstance(line, cst.SimpleStatementLine)
            for statement in line.body if isinstance(statement, cst.Assign) and len(statement.targets) == 1
            and isinstance(statement.targets[0].target, cst.Name) and SESSION_CAP.match(statement.targets[0].target.value)]
    # the cap bounds the counter it is named like (`MAX_PLANNING_ITERATIONS` and `planning_iteration_count`), not another
    # limit of the module (`MAX_TOOL_STEPS` beside `message_count`)
    return bool(appends) and any(value is not None and 0 < value * appends <= -window and _named_alike(cap, counter)
                                 for cap, value in caps for counter in counters)


def _named_alike(cap: str, counter: str) -> bool:
    """A word of the counter (`iteration` of `iteration_count`) begins a word of the cap (`ITERATIONS`)."""
    cap_words = [w for w in cap.lower().split("_") if w and w != "max"]
    return any(len(word) > 3 and any(c.startswith(word) for c in cap_words) for word in counter.lower().split("_"))


def window_never_fills(ctx: ModuleContext, node: cst.CSTNode) -> bool:
    """The cut at `node` (a slice, or the statement that makes one) keeps a window its session never fills."""
    function = ctx.enclosing_function(node)
    return function is not None and any(isinstance(sub, cst.Subscript) and isinstance(sub.slice[0].slice, cst.Slice)
                                        and _session_shorter_than_window(ctx, function, sub) for sub in (node, *descendants(node)))


def _summary_made_in(ctx: ModuleContext, function: cst.FunctionDef) -> bool:
    """The function asks for a summary and keeps it on the object with what it keeps of the history
    (`response = _summarize_message_history(...)`, `summary = _extract(response)`, `new = [Message(summary),
    *recent]`, `self.history = new`): whatever the function is called, it replaces the older part of the history in
    one step and the history grows again from there, as compaction does. A summary made again on every request from
    the whole history the caller keeps (and returned, with the latest turns) is a window behind a summary."""
    per_function = _SUMMARIES.setdefault(ctx, {})
    found = per_function.get(id(function))
    if found is None:
        found = per_function[id(function)] = _kept_summary(ctx, function)
    return found


_SUMMARIES: WeakKeyDictionary[ModuleContext, dict[int, bool]] = WeakKeyDictionary()


def _kept_summary(ctx: ModuleContext, function: cst.FunctionDef) -> bool:
    bindings: list[tuple[list[cst.BaseExpression], cst.BaseExpression]] = []  # (targets, value) of the function's own
    for node in [*ctx.nodes_in(cst.Assign, function), *ctx.nodes_in(cst.AnnAssign, function)]:
        if ctx.enclosing_function(node) is not function or node.value is None:
            continue
        targets = [t.target for t in node.targets] if isinstance(node, cst.Assign) else [node.target]
        bindings.append((targets, node.value))
    made: set[str] = set()  # names bound to the summary, or to what is built from it
    for targets, value in bindings:
        value = value.expression if isinstance(value, cst.Await) else value
        if isinstance(value, cst.Call) and SUMMARY_NAME.search(_last_name(value.func) or ""):
            made |= {t.value for t in targets if isinstance(t, cst.Name)}
    if not made:
        return False
    for _ in range(3):  # summary = _extract(response); new = [Message(content=summary)]; then self.history = new
        for targets, value in bindings:
            if _uses(value, made):
                made |= {t.value for t in targets if isinstance(t, cst.Name)}
    return any(isinstance(t, cst.Attribute) and ctx.code(t.value) == "self" and HISTORY_NAME.search(t.attr.value) and _uses(value, made)
               for targets, value in bindings for t in targets)  # the history itself, not `self.last_prompt` for a debug panel


def _message_count_cap(ctx: ModuleContext, function: cst.FunctionDef, node: cst.CSTNode) -> bool:
    """`def _manage_overflow(self): while len(self.history) > self.max_messages: self.history.pop(0)`, called from
    `add_message`: whatever the function is called, a cut made whenever the list holds more than a number of
    messages, on the normal path of the code (a caller in the module, not in an `except` handler), drops the oldest
    on every turn once the cap is reached (a window), unlike a summary or a recovery once the provider refused."""
    calls = ctx.calls_by_name.get(function.name.value, [])
    if not any(ctx.enclosing(call, (cst.ExceptHandler,)) is None for call in calls):
        return False
    for ancestor in ctx.ancestors(node):
        if ancestor is function:
            return False
        if isinstance(ancestor, (cst.While, cst.If)) and _count_of(ctx, ancestor.test) is not None:
            return True
    return False


# `len(self.history) > self.max_messages`: a count of messages against a bound
TOKEN_WORD = re.compile(r"token|char|byte", re.I)


def _grouped_from_history(ctx: ModuleContext, function: cst.FunctionDef, name: cst.BaseExpression) -> bool:
    """`segments.append([msgs[i], msgs[i + 1]])`: a list filled with a history's messages, grouped (tool pairs)."""
    code = ctx.code(name)
    return any(isinstance(n, cst.Call) and isinstance(n.func, cst.Attribute) and n.func.attr.value == "append"
               and ctx.code(n.func.value) == code and n.args
               and any(isinstance(x, cst.Subscript) and _is_history(ctx, function, x.value) for x in descendants(n.args[0].value))
               for n in descendants(function))


def _newest_that_fit(ctx: ModuleContext, function: cst.FunctionDef, loop: cst.For | cst.While) -> Rewrite | None:
    """`for m in reversed(history): if total + count(m) > budget: break; kept.insert(0, m)`: the newest messages
    that fit a budget, collected from the end. Once the history is over the budget, each new turn pushes the oldest
    kept message out: a window that slides on every turn. A budget of 32k tokens or more (a literal) is the
    context window's, compaction where it must happen, and is left alone. The same walk by hand (`i = len(h) - 1;
    while i >= 0: m = h[i] ... i -= 1`) is reported at the test that stops it, as its header says nothing of a cut."""
    if isinstance(loop, cst.While):
        by_index, source = _walked_back_by_while(ctx, loop), None
        if by_index is None:
            return None
    else:
        by_index = _walked_back_by_index(ctx, loop)
        source = _backward_source(loop) if by_index is None else None
        if (source is None and by_index is None) or not isinstance(loop.target, cst.Name):
            return None
    if by_index is not None:
        history, element = by_index  # for i in range(len(h) - 1, -1, -1): message = h[i]
    else:
        history = source.value if isinstance(source, cst.Subscript) else source
        history = _copied_from(ctx, function, history) or history  # ordered = list(turns); for t in reversed(ordered)
        element = loop.target.value
    if not _is_history(ctx, function, history) and not _grouped_from_history(ctx, function, history):
        return None
    counted = [n for n in descendants(loop.body) if isinstance(n, cst.If) and _stops_at_budget(n, loop)]
    stops = [n for n in counted if TOKEN_BUDGET.search(ctx.code(n.test))]  # a size against a budget, not `seen > n` turns of one role
    if stops and all(_context_window_stop(ctx, function, stop) for stop in stops):
        # `if tokens + new >= max_context: break` (max_context = context_window - max_tokens): the model's limit, where
        # a cut must happen; a count beside it (`if counter >= max_messages: break`) is still a window
        counted, stops = [n for n in counted if n not in stops], []
    if not stops:
        if counted and SIDE_TASK.search(function.name.value) is None and _window_replaces(ctx, function, loop, history, element):
            return Rewrite(loop, ctx.code(history), LATEST_TURNS)
        return None
    chars = all(CHAR_BUDGET.search(ctx.code(stop.test)) and not TOKEN_WORD.search(ctx.code(stop.test)) for stop in stops)
    if any(_window_sized(stop.test, chars) for stop in stops):
        return None
    if any(_window_sized(v, chars) for v in _budget_values(function, {n.value for stop in stops for n in descendants(stop.test) if isinstance(n, cst.Name)})):
        return None  # `remaining = 128_000`, `def fit(self, max_tokens=128_000)`: the context window's budget
    side_task = SIDE_TASK.search(function.name.value) is not None  # `def search_query(history, max_chars)`: a retrieval query
    kept = any(_element_added(n, element) is not None or (_made_from_element_added(n, element) and not side_task)
               or (isinstance(n, cst.Assign) and isinstance(n.value, cst.BinaryOperation) and isinstance(n.value.operator, cst.Add)
                   and element in {x.value for x in descendants(n.value.left) if isinstance(x, cst.Name)})
               for n in descendants(loop.body))
    if not kept or _older_part_returned(ctx, function, history):
        return None
    return Rewrite(stops[0] if isinstance(loop, cst.While) else loop, ctx.code(history), f"{BUDGET_WINDOW} of")


def _older_part_returned(ctx: ModuleContext, function: cst.FunctionDef, history: cst.BaseExpression) -> bool:
    """`return messages[:cutoff], selected`: the walk splits the history and hands back the older part too, for its
    caller to fold into a summary (compaction, in one step), not a window that drops it: where the module makes one
    (a call named for summarizing, compacting or condensing), not where the older part is only counted or logged."""
    if not re.search(r"\b\w*(?:summar|compact|condens)\w*\(", ctx.source, re.I):
        return False
    code = ctx.code(history)
    for value in ctx.returns_of(function):
        if isinstance(value, cst.Tuple):
            for element in value.elements:
                item = element.value
                if isinstance(item, cst.Subscript) and ctx.code(item.value) == code and _front_subscript(item):
                    return True
    return False


def _context_window_stop(ctx: ModuleContext, function: cst.FunctionDef, stop: cst.If) -> bool:
    """The walk's size test measures against the model's context window: the budget it compares with is made from the
    window the function is handed (`max_context = context_window - max_tokens`), not a number of the app's choosing
    (`max_context_tokens=3000`, whatever its name)."""
    bounds: list[cst.BaseExpression] = []  # the side of each comparison the size is held against
    for comparison in (n for n in (stop.test, *descendants(stop.test)) if isinstance(n, cst.Comparison)):
        for target in comparison.comparisons:
            if isinstance(target.operator, (cst.GreaterThan, cst.GreaterThanEqual)):
                bounds.append(target.comparator)
            elif isinstance(target.operator, (cst.LessThan, cst.LessThanEqual)):
                bounds.append(comparison.left)
    names = {n.value for b in bounds for n in (b, *descendants(b)) if isinstance(n, cst.Name)}
    values = _budget_values(function, names, steps=1)  # `max_context = context_window - max_tokens`, not what those are made of
    if any(_apps_own_budget(size) for v in values for size in _attribute_defaults(ctx, function, v)):
        return False  # `self.max_input_tokens - used` where `__init__(..., max_input_tokens: int = 10000)`: the app's own budget
    return any(CONTEXT_WINDOW.search(ctx.code(v)) for v in values) \
        and not any(isinstance(n, cst.Integer) for v in values for n in (v, *descendants(v)))


def _apps_own_budget(size: int | None) -> bool:
    """A default below 32k tokens that is no model's context window: windows come in powers of two (4096, 8192,
    16384); a round number (4000, 10000) is a budget the app picked."""
    return size is not None and 0 < size < 32_000 and size & (size - 1) != 0


def _attribute_defaults(ctx: ModuleContext, function: cst.FunctionDef, value: cst.BaseExpression) -> Iterator[int | None]:
    """The literal defaults of the `self.x` a value reads, where a method of the class sets `self.x = x` from a parameter
    (`def __init__(self, max_input_tokens: int = 10000)`) or the class body declares `x: int = 10000`."""
    cls = ctx.enclosing(function, (cst.ClassDef,))
    if not isinstance(cls, cst.ClassDef):
        return
    assigned = ctx.self_assignments(cls)
    for read in (n for n in (value, *descendants(value)) if isinstance(n, cst.Attribute) and isinstance(n.value, cst.Name)
                 and n.value.value == "self"):
        name = read.attr.value
        for statement in cls.body.body:
            if isinstance(statement, cst.SimpleStatementLine) and isinstance(statement.body[0], cst.AnnAssign) \
                    and isinstance(statement.body[0].target, cst.Name) and statement.body[0].target.value == name \
                    and statement.body[0].value is not None:
                yield _int(statement.body[0].value)
        for assign in assigned.get(name, []):
            method = ctx.enclosing_function(assign)
            if isinstance(assign, cst.Assign) and isinstance(assign.value, cst.Name) and method is not None:
                params = {p.name.value: p.default for p in (*method.params.params, *method.params.kwonly_params)}
                if params.get(assign.value.value) is not None:
                    yield _int(params[assign.value.value])


LATEST_TURNS = "keeps only the latest turns of"
# a function that reads the newest turns for a side task: a retrieval query, an embedding, a title, a log entry
LOADER = re.compile(r"^_?(?:async_)?(?:load|restore|rehydrate)(?:_|$)", re.I)
def _rendered_behind_the_question(ctx: ModuleContext, function: cst.FunctionDef) -> bool:
    """The function renders the history as text (it returns `"\\n".join(...)`), and every template of the module with a
    slot for a history puts this turn's question itself ahead of it (`"Question: {question}\\n\\nChat History: {chat_history}"`,
    a constant or an f-string): the history sits behind a value that changes every turn, so no request ever read it
    from cache, and cutting it loses nothing. (The order itself is CL104's business.)"""
    returns = ctx.returns_of(function)
    joined = [r for r in returns if isinstance(r, cst.Call) and isinstance(r.func, cst.Attribute) and r.func.attr.value == "join"
              and isinstance(r.func.value, cst.SimpleString)]
    if not joined or not all(r in joined or string_value(r) == "" for r in returns):
        return False
    found = _HISTORY_BEHIND.get(ctx)
    if found is None:
        found = _HISTORY_BEHIND[ctx] = _every_history_slot_behind_the_question(ctx)
    return found


_HISTORY_BEHIND: WeakKeyDictionary[ModuleContext, bool] = WeakKeyDictionary()


def _every_history_slot_behind_the_question(ctx: ModuleContext) -> bool:
    import string as _string

    from cachelint.check.text_history import HISTORY, NEWEST_INPUT

    def per_turn(name: str) -> bool:  # the question itself (`{question}`, `{query.text}`), not any value of the turn
        return any(NEWEST_INPUT.match(part) for part in name.split("."))

    templates = 0
    for literal in [*ctx.nodes(cst.SimpleString), *ctx.nodes(cst.FormattedString)]:
        if isinstance(literal, cst.FormattedString):
            fields = [ctx.code(p.expression) for p in literal.parts if isinstance(p, cst.FormattedStringExpression)]
        else:
            text = string_value(literal)
            if not text or "{" not in text:
                continue
            try:
                fields = [name for _, name, _, _ in _string.Formatter().parse(text) if name]
            except ValueError:
                continue
        at = next((i for i, name in enumerate(fields) if HISTORY.search(name)), None)
        if at is None:
            continue
        templates += 1
        if not any(per_turn(name) for name in fields[:at]):
            return False
    return templates > 0


def _side_class(ctx: ModuleContext, function: cst.FunctionDef) -> bool:
    """The class the function belongs to is named for a side task (`class QueryRewriter`, `class QueryDecomposer`):
    the recent turns it reads feed a short request of its own (a standalone question, sub-queries, a title), sent
    here or not, never the conversation's."""
    cls = ctx.enclosing(function, (cst.ClassDef,))
    if cls is None:
        return False
    name = re.sub(r"(?<=[a-z0-9])(?=[A-Z])", "_", cls.name.value)
    return SIDE_CLASS.search(name) is not None or (SIDE_TOPIC.search(name) is not None and ACTOR_CLASS.search(name) is None)


# a class named for a side task by its role (`QueryRewriter`, `QueryDecomposer`, `TitleGenerator`, `IntentClassifier`)
SIDE_CLASS = re.compile(r"(?:^|_)(?:rewriter|decomposer|condenser|rephraser|expander|classifier|titler)$"
                        r"|^query_(?:transformer|generator|analy[sz]er|planner|expander|builder)$|^title_generator$", re.I)
# or by its topic (`SearchTool`, `QueryProcessor`, `EmbeddingService`), unless the name makes it an actor that holds
# the conversation (`SearchAgent`, `QueryAssistant`, `SearchChatEngine`, `QuerySession`)
SIDE_TOPIC = re.compile(r"(?:^|_)(?:query|search|embed\w*|title)(?:$|_)", re.I)
ACTOR_CLASS = re.compile(r"(?:^|_)(?:agent|assistant|bot|chat\w*|copilot|companion|session|conversation|dialog\w*|engine|memory"
                         r"|manager|runner|orchestrator)s?(?:$|_)", re.I)


SIDE_TASK = re.compile(r"(?:^|_)(?:query|search|embed\w*|title|log|audit|preview|display|debug|trace|telemetry)(?:$|_)", re.I)


def _bound_once(ctx: ModuleContext, node: cst.BaseExpression) -> cst.BaseExpression:
    """The value a name is bound to, when it is bound once (`n = len(history)`); else the node itself."""
    if isinstance(node, cst.Name):
        values = [v for _, v in ctx.assigned_values(node)]
        if len(values) == 1 and values[0] is not None:
            return values[0]
    return node


def _newest_by_index(ctx: ModuleContext, loop: cst.For) -> cst.BaseExpression | None:
    """The history of `for idx in range(max(0, n - k), n): prompt += render(history[idx])` (`n` is `len(history)`,
    written or bound to a name first): only its newest k entries are walked, by index, into the text being built."""
    it = loop.iter
    if not (isinstance(loop.target, cst.Name) and isinstance(it, cst.Call) and _last_name(it.func) == "range" and len(it.args) == 2):
        return None
    start, end = _window_start(ctx, it.args[0].value), it.args[1].value  # through max(0, x) and a name bound once
    if not (isinstance(start, cst.BinaryOperation) and isinstance(start.operator, cst.Subtract) and ctx.code(start.left) == ctx.code(end)):
        return None
    if isinstance(start.right, cst.Integer) and int(start.right.value, 0) <= 1:
        return None  # the last one, not a window
    history = _len_of(_bound_once(ctx, end))
    if history is None:
        return None
    indexed = any(isinstance(n, cst.Subscript) and ctx.code(n.value) == ctx.code(history) and isinstance(n.slice[0].slice, cst.Index)
                  and ctx.code(n.slice[0].slice.value) == loop.target.value for n in descendants(loop.body))
    return history if indexed else None


def _walked_back_by_index(ctx: ModuleContext, loop: cst.For) -> tuple[cst.BaseExpression, str] | None:
    """(history, element) for `for i in range(len(h) - 1, -1, -1): message = h[i]` (or `range(n - 1, -1, -1)` after
    `n = len(h)`): the history walked from its newest message by index, the message bound first thing in the body."""
    measured = _index_walked_from_the_end(ctx, loop)
    element = _element_bound_first(ctx, loop, measured, loop.target.value) if measured is not None else None  # type: ignore[union-attr]
    return (measured, element) if measured is not None and element is not None else None


def _element_bound_first(ctx: ModuleContext, loop: cst.For | cst.While, history: cst.BaseExpression, index: str) -> str | None:
    """The name the loop's first statement binds to `history[index]` (`message = h[i]`)."""
    body = loop.body.body if isinstance(loop.body, cst.IndentedBlock) else []
    first = body[0] if body else None
    if not isinstance(first, cst.SimpleStatementLine) or not isinstance(first.body[0], cst.Assign):
        return None
    assign = first.body[0]
    value, target = assign.value, assign.targets[0].target
    if isinstance(target, cst.Name) and isinstance(value, cst.Subscript) and ctx.code(value.value) == ctx.code(history) \
            and ctx.code(value.slice[0].slice) == index:
        return target.value
    return None


def _walked_back_by_while(ctx: ModuleContext, loop: cst.While) -> tuple[cst.BaseExpression, str] | None:
    """(history, element) for `i = len(h) - 1` then `while i >= 0: message = h[i] ... i -= 1`: the history walked from
    its newest message by an index the loop counts down by hand, the message bound first thing in the body."""
    test = loop.test
    if not (isinstance(test, cst.Comparison) and len(test.comparisons) == 1 and isinstance(test.left, cst.Name)
            and (isinstance(test.comparisons[0].operator, cst.GreaterThanEqual) and ctx.code(test.comparisons[0].comparator) == "0"
                 or isinstance(test.comparisons[0].operator, cst.GreaterThan) and ctx.code(test.comparisons[0].comparator) == "-1")):
        return None
    index = test.left.value
    starts = [v for _, v in ctx.assigned_values(test.left) if v is not None and ctx.span(v).row < ctx.span(loop).row]
    if len(starts) != 1 or not (isinstance(starts[0], cst.BinaryOperation) and isinstance(starts[0].operator, cst.Subtract)
                                and ctx.code(starts[0].right) == "1"):
        return None
    measured = _len_of(_bound_once(ctx, starts[0].left))
    element = _element_bound_first(ctx, loop, measured, index) if measured is not None else None
    if measured is None or element is None:
        return None
    steps_back = any((isinstance(n, cst.AugAssign) and isinstance(n.operator, cst.SubtractAssign) and isinstance(n.target, cst.Name)
                      and n.target.value == index)
                     or (isinstance(n, cst.Assign) and len(n.targets) == 1 and ctx.code(n.targets[0].target) == index
                         and ctx.code(n.value).replace(" ", "") == f"{index}-1") for n in descendants(loop.body))
    return (measured, element) if steps_back else None


def _copied_from(ctx: ModuleContext, function: cst.FunctionDef, name: cst.BaseExpression) -> cst.BaseExpression | None:
    """`turns` where the function's only binding of `name` copies it: `ordered = list(turns)`, `turns.copy()`,
    `turns[:]`."""
    if not isinstance(name, cst.Name):
        return None
    values = [v for b, v in ctx.assigned_values(name) if ctx.contains(function, b)]
    if len(values) != 1 or values[0] is None:
        return None
    value = values[0]
    if isinstance(value, cst.Call) and _last_name(value.func) == "list" and len(value.args) == 1:
        return value.args[0].value
    if isinstance(value, cst.Call) and isinstance(value.func, cst.Attribute) and value.func.attr.value == "copy" and not value.args:
        return value.func.value
    if isinstance(value, cst.Subscript) and isinstance(value.slice[0].slice, cst.Slice) \
            and value.slice[0].slice.lower is None and value.slice[0].slice.upper is None:
        return value.value
    return None


def _made_from_element_added(node: cst.CSTNode, element: str) -> bool:
    """`parts.insert(0, message.as_format(fmt))`: the loop's message, rendered, added to the list kept."""
    return isinstance(node, cst.Call) and isinstance(node.func, cst.Attribute) and node.func.attr.value in ("insert", "append", "appendleft") \
        and bool(node.args) and any(isinstance(n, cst.Name) and n.value == element for n in descendants(node.args[-1].value))


def _element_added(node: cst.CSTNode, element: str) -> cst.BaseExpression | None:
    """The list `node` adds the loop's element to (`kept.insert(0, m)`, `kept.append(m)`), if it does."""
    if isinstance(node, cst.Call) and isinstance(node.func, cst.Attribute) and node.func.attr.value in ("insert", "append", "appendleft") \
            and any(isinstance(a.value, cst.Name) and a.value.value == element for a in node.args):
        return node.func.value
    return None


def _window_replaces(ctx: ModuleContext, function: cst.FunctionDef, loop: cst.For | cst.While, history: cst.BaseExpression,
                     element: str) -> bool:
    """`for m in reversed(conv.messages): if rounds >= max_rounds: break; kept.append(m)` and then `conv.messages =
    kept[::-1]` (or a trim function that returns what it kept): the latest n turns, collected from the end by a count,
    become the history itself. Once the conversation has n turns, every new turn pushes the oldest out: a window that
    slides on every turn. (A count of the latest turns read for a side task, a title or a search, replaces nothing.)"""
    kept = {found.value for n in descendants(loop.body) if isinstance(found := _element_added(n, element), cst.Name)}
    # `converted = message.to_openai(); kept += converted[::-1]`: the element, converted, added to the list kept
    derived = {element} | {t.target.value for n in descendants(loop.body) if isinstance(n, cst.Assign) and _uses(n.value, {element})
                           for t in n.targets if isinstance(t.target, cst.Name)}
    kept |= {n.target.value for n in descendants(loop.body) if isinstance(n, cst.AugAssign) and isinstance(n.operator, cst.AddAssign)
             and isinstance(n.target, cst.Name) and isinstance(n.value, (cst.List, cst.Subscript, cst.Name)) and _reads(n.value, derived)}
    kept |= {n.func.value.value for n in descendants(loop.body) if isinstance(n, cst.Call) and isinstance(n.func, cst.Attribute)
             and n.func.attr.value in ("append", "extend", "insert", "appendleft") and isinstance(n.func.value, cst.Name)
             and n.args and _reads(n.args[-1].value, derived)}  # `selected.append(message.to_openai())`
    if not kept:
        return False
    after = [n for n in _own_nodes(function) if isinstance(n, cst.Assign) and ctx.span(n).row > ctx.span(loop).row]
    for assign in after:  # retained = list(reversed(kept))[-100:]: one step from the collected list
        if all(isinstance(t.target, cst.Name) for t in assign.targets) and _uses(assign.value, kept):
            kept |= {t.target.value for t in assign.targets}  # type: ignore[union-attr]
    target = ctx.code(history)
    if any(ctx.code(t.target) == target and _uses(a.value, kept) for a in after for t in a.targets):
        return True
    return TRIM_NAME.search(function.name.value) is not None and any(_uses(r, kept) for r in ctx.returns_of(function))


def _window_sized(value: cst.BaseExpression, chars: bool = False) -> bool:
    """A literal of 32k tokens or more in the value (128k, about as many tokens, where the budget counts characters)."""
    least = 128_000 if chars else 32_000
    return any(isinstance(n, cst.Integer) and int(n.value.replace("_", ""), 0) >= least for n in (value, *descendants(value)))


def _budget_values(function: cst.FunctionDef, names: set[str], steps: int = 2) -> list[cst.BaseExpression]:
    """The values the function gives `names` (and, with two steps, the names those are made of): assignments, items of
    a tuple assignment, parameter defaults."""
    found: list[cst.BaseExpression] = []
    for _ in range(steps):
        for param in (*function.params.params, *function.params.kwonly_params):
            if param.name.value in names and param.default is not None:
                found.append(param.default)
        for node in descendants(function.body):
            if not isinstance(node, cst.Assign) or len(node.targets) != 1:
                continue
            target, value = node.targets[0].target, node.value
            if isinstance(target, cst.Name) and target.value in names:
                found.append(value)
            elif isinstance(target, cst.Tuple) and isinstance(value, cst.Tuple) and len(target.elements) == len(value.elements):
                found += [v.value for t, v in zip(target.elements, value.elements) if isinstance(t.value, cst.Name) and t.value.value in names]
        names = names | {n.value for v in found for n in (v, *descendants(v)) if isinstance(n, cst.Name)}
    return found


def _backward_source(loop: cst.For) -> cst.BaseExpression | None:
    """What a loop walks from its end: `reversed(history)` or `history[::-1]`."""
    it = loop.iter
    if isinstance(it, cst.Call) and _last_name(it.func) == "reversed" and it.args:
        return it.args[0].value
    if isinstance(it, cst.Subscript) and len(it.slice) == 1 and isinstance(it.slice[0].slice, cst.Slice) \
            and it.slice[0].slice.lower is None and it.slice[0].slice.upper is None and _int(it.slice[0].slice.step) == -1:
        return it.value
    return None


def _stops_at_budget(branch: cst.If, loop: cst.For | cst.While) -> bool:
    """`if total + n > budget: break`, or the same test going on to the next (`continue`), or turned round
    (`if n <= remaining: kept.insert(0, m) else: continue`), or the budget left run down (`remaining -= n` ... `if
    remaining <= 20: break`): the walk stops taking messages once the budget is spent. Going on to the next needs a
    running total in the test (`total`, `remaining` changed in the loop); a test of one message's own size skips that
    message on every request alike."""
    running = {n.target.value for n in descendants(loop.body) if isinstance(n, cst.AugAssign) and isinstance(n.target, cst.Name)}
    if not _uses(branch.test, running):
        return any(isinstance(b, cst.Break) for b in descendants(branch.body)) and _compares(branch.test, (cst.GreaterThan, cst.GreaterThanEqual))
    over = _compares(branch.test, (cst.GreaterThan, cst.GreaterThanEqual))
    under = _compares(branch.test, (cst.LessThan, cst.LessThanEqual))
    leaves = (cst.Break, cst.Continue)
    if over and any(isinstance(b, leaves) for b in descendants(branch.body)):
        return True
    run_down = {n.target.value for n in descendants(loop.body) if isinstance(n, cst.AugAssign) and isinstance(n.target, cst.Name)
                and isinstance(n.operator, cst.SubtractAssign)}
    if under and isinstance(branch.test, cst.Comparison) and isinstance(branch.test.left, cst.Name) and branch.test.left.value in run_down \
            and any(isinstance(b, cst.Break) for b in descendants(branch.body)):
        return True
    return under and branch.orelse is not None and any(isinstance(b, leaves) for b in descendants(branch.orelse))


def _compares(test: cst.BaseExpression, operators: tuple[type, ...]) -> bool:
    return any(isinstance(c, cst.Comparison) and any(isinstance(t.operator, operators) for t in c.comparisons)
               for c in (test, *descendants(test)))


EVENT_LIST = re.compile(r"^(?:view|events|observations|steps)$")


def _older_than_window_replaced(ctx: ModuleContext, function: cst.FunctionDef, loop: cst.For) -> Rewrite | None:
    """`for msg in reversed(memory): if is_result(msg): seen += 1; if seen > keep: msg = Stub(...)` then
    `new.append(msg)`: every entry of a kind (an editor result, a browser page) older than the latest `keep` is
    replaced by a stub. Each new entry of that kind pushes the one `keep` places back out of the window, rewriting a
    message in the middle of the history that earlier requests sent in full."""
    if not isinstance(loop.target, cst.Name) or not isinstance(loop.iter, cst.Call) or not loop.iter.args:
        return None
    history = loop.iter.args[0].value
    name = _last_name(history)
    if name is None or not (EVENT_LIST.match(name) or _is_history(ctx, function, history)):
        return None
    body = descendants(loop.body)
    counters = {n.target.value for n in body if isinstance(n, cst.AugAssign) and isinstance(n.target, cst.Name)
                and isinstance(n.operator, cst.AddAssign)}
    element = loop.target.value
    for branch in (n for n in body if isinstance(n, cst.If)):
        tests = [c for c in descendants(branch.test) if isinstance(c, cst.Comparison) and _uses(c, counters)]
        if not tests or not any(_past_the_count(c, counters) for c in tests):
            continue  # `if seen > keep:` or `if is_page(e) and seen >= self.window:`, not `if seen < 1:` (the newest)
        inside = descendants(branch.body)
        replaced = any(isinstance(n, cst.Assign) and any(isinstance(t.target, cst.Name) and t.target.value == element for t in n.targets)
                       and isinstance(n.value, cst.Call) for n in inside)
        stub = any(isinstance(n, cst.Call) and isinstance(n.func, cst.Attribute) and n.func.attr.value in ("append", "insert")
                   and n.args and isinstance(n.args[-1].value, cst.Call) for n in inside)
        if replaced or stub:
            return Rewrite(branch, ctx.code(history), "replaces every entry older than the latest few, one more each turn, in")
    return None


# what counts the conversation's progress: its length, the current step or round
PROGRESS = re.compile(r"(?:^|_)(?:step|steps|round|rounds|turn|turns|iteration|iter|idx|index|n|count|len|length|num_messages|cur|curr|current)$", re.I)
AGED_OUT = "drops or replaces the entries older than a window that moves on every turn in"


def _ages(ctx: ModuleContext, loop: cst.For) -> set[str]:
    """Names the walk binds to an entry's distance from the newest: `age = len(messages) - 1 - i`."""
    positions = {n.value for n in descendants(loop.target) if isinstance(n, cst.Name)}

    def subtracted(value: cst.BaseExpression) -> set[str]:  # the names taken away in `len(m) - 1 - i`, `len(m) - i - 1`
        if isinstance(value, cst.BinaryOperation) and isinstance(value.operator, cst.Subtract):
            right = {value.right.value} if isinstance(value.right, cst.Name) else set()
            return right | subtracted(value.left)
        return set()

    def from_length(value: cst.BaseExpression) -> bool:
        while isinstance(value, cst.BinaryOperation) and isinstance(value.operator, cst.Subtract):
            value = value.left
        return isinstance(value, cst.Call) and _last_name(value.func) == "len"

    return {t.target.value for n in descendants(loop.body) if isinstance(n, cst.Assign) and from_length(n.value)
            and subtracted(n.value) & positions for t in n.targets if isinstance(t.target, cst.Name)}


def _older_by_age(comparison: cst.Comparison, ages: set[str]) -> bool:
    """`age > self.TRUNCATE_AFTER`: the entries further back than a number of the newest."""
    return isinstance(comparison.left, cst.Name) and comparison.left.value in ages and len(comparison.comparisons) == 1 \
        and isinstance(comparison.comparisons[0].operator, (cst.GreaterThan, cst.GreaterThanEqual))


def _aged_out(ctx: ModuleContext, function: cst.FunctionDef, loop: cst.For) -> Rewrite | None:
    """A walk over the history that drops or stubs out the entries older than a window that moves with the
    conversation: `trunc_before = self.round - self.len_observations` then `for m in self.all_messages: if m.index <=
    trunc_before: continue`; `if curr_step - idx > last_observation_step: prompt += "<Done>"`; `recent_start = max(0,
    n - RECENT) ; for i in range(recent_start): history[i] = truncate(history[i])`. Each turn moves the cut one entry
    on, so an entry sent in full by earlier requests is sent changed (or not at all) by the next: the cached prefix
    ends there. Only a walk whose result the function hands back (returned or yielded) or sends, and not one for a
    screen or a log (`print_recent`, `render_html`)."""
    ranged = isinstance(loop.iter, cst.Call) and _last_name(loop.iter.func) == "range"
    branches = [n for n in descendants(loop.body) if isinstance(n, cst.If)]
    if not branches and not ranged:
        return None  # cheap: most loops have neither
    cutoffs = _moving_cutoffs(ctx, function)
    ages = _ages(ctx, loop)
    tests = [c for b in branches for c in descendants(b.test) if isinstance(c, cst.Comparison)
             and (_uses(c, cutoffs) or _older_by_age(c, ages) or any(_moving(ctx, n) for n in descendants(c) if isinstance(n, cst.BinaryOperation)))]
    bounded = ranged and len(loop.iter.args) in (1, 2) and (_uses(loop.iter.args[-1].value, cutoffs) or _moving(ctx, loop.iter.args[-1].value))
    if not tests and not bounded:
        return None  # no point that moves with the conversation: judged before the history is looked for
    memo = ctx.memo.setdefault("aged_out_functions", {})
    if id(function) not in memo:  # once per function: a function of many loops asks it of each
        sends = _sends_in(function)
        memo[id(function)] = (sends or not (SIDE_TASK.search(function.name.value) or VIEW_TASK.search(function.name.value))) \
            and (sends or _hands_back(function))
    if not memo[id(function)]:
        return None  # a view for a screen, a log or an archive, or a walk whose result the function neither hands back nor sends
    history, walked = _walked_history(ctx, function, loop)
    if history is None:
        return None
    if bounded:
        # for i in range(recent_start): the older part alone, each entry rewritten
        if any(isinstance(n, cst.Assign) and any(isinstance(t.target, cst.Subscript) and ctx.code(t.target.value) == ctx.code(history)
                                                 for t in n.targets) for n in descendants(loop.body)):
            return Rewrite(loop, ctx.code(history), AGED_OUT)
        return None
    for branch in branches:
        older = [c for c in descendants(branch.test) if isinstance(c, cst.Comparison) and ((_uses(c, walked)
                 and _older_side(ctx, c, walked, cutoffs)) or _older_by_age(c, ages))]
        if not older:
            continue
        inside = list(descendants(branch.body))
        skipped = any(isinstance(n, cst.Continue) for n in inside)
        cut_short = any(isinstance(n, cst.Assign) and len(n.targets) == 1 and isinstance(n.targets[0].target, cst.Name)
                        and isinstance(n.value, cst.BinaryOperation) and isinstance(n.value.operator, cst.Add)
                        and isinstance(n.value.left, cst.Subscript) and ctx.code(n.value.left.value) == n.targets[0].target.value
                        and isinstance(n.value.left.slice[0].slice, cst.Slice) for n in inside)  # content = content[:2000] + "…"
        if cut_short and ages:
            return Rewrite(branch, ctx.code(history), AGED_OUT)
        stubbed = any((isinstance(n, cst.AugAssign) and isinstance(n.value, (cst.SimpleString, cst.ConcatenatedString)))  # += "<Done>"
                      or (isinstance(n, cst.Yield) and isinstance(n.value, (cst.Call, cst.Dict)))  # yield replace(m, tool_data=None)
                      or (isinstance(n, cst.Assign) and isinstance(n.value, (cst.Call, cst.Dict))
                          and any(isinstance(t.target, cst.Subscript) for t in n.targets))  # history[i] = stub(history[i])
                      or (isinstance(n, cst.Call) and isinstance(n.func, cst.Attribute) and n.func.attr.value in ("append", "insert")
                          and n.args and isinstance(n.args[-1].value, (cst.Call, cst.Dict)))  # kept.append(Stub(m)), {"content": "[elided]"}
                      for n in inside)
        if skipped or stubbed:
            return Rewrite(branch, ctx.code(history), AGED_OUT)
    return None


# a walk for a screen, a file or an archive, not for a request
VIEW_TASK = re.compile(r"(?:^|_)(?:print|show|render|html|archive|export|dump|save|write|format_for)(?:$|_)", re.I)


def _hands_back(function: cst.FunctionDef) -> bool:
    """The function returns a value or yields: what it builds goes on to its caller."""
    return any((isinstance(n, cst.Return) and n.value is not None) or isinstance(n, cst.Yield) for n in descendants(function.body))


def _older_side(ctx: ModuleContext, test: cst.Comparison, walked: set[str], cutoffs: set[str]) -> bool:
    """The comparison holds for the entries older than the moving point: `m.index <= trunc_before`, `cutoff > m.turn`,
    `curr_step - idx > keep` (the entry's age past the window); not `m["round"] > cutoff` (the newer ones)."""
    if len(test.comparisons) != 1:
        return False
    operator, right = test.comparisons[0].operator, test.comparisons[0].comparator
    less = isinstance(operator, (cst.LessThan, cst.LessThanEqual))
    greater = isinstance(operator, (cst.GreaterThan, cst.GreaterThanEqual))

    def age(node: cst.BaseExpression) -> bool:  # curr_step - idx: how far back the entry is
        return isinstance(node, cst.BinaryOperation) and isinstance(node.operator, cst.Subtract) and _uses(node.right, walked) \
            and not _uses(node.left, walked)

    def point(node: cst.BaseExpression) -> bool:
        return _uses(node, cutoffs) or _moving(ctx, node)

    if age(test.left):
        return greater
    if age(right):
        return less
    if _uses(test.left, walked) and point(right) and not _uses(right, walked):
        return less
    if point(test.left) and not _uses(test.left, walked) and _uses(right, walked):
        return greater
    return False


def _walked_history(ctx: ModuleContext, function: cst.FunctionDef, loop: cst.For) -> tuple[cst.BaseExpression | None, set[str]]:
    """The history a loop walks and the names it walks it by: `for m in self.all_messages` (m), `for i, m in
    enumerate(history)` (i and m), `for idx in range(...)` reading `self.history_steps[idx]` (idx)."""
    names = {n.value for n in descendants(loop.target) if isinstance(n, cst.Name)} if isinstance(loop.target, (cst.Name, cst.Tuple)) else set()
    if not names:
        return None, set()
    iterated = loop.iter.args[0].value if isinstance(loop.iter, cst.Call) and _last_name(loop.iter.func) in ("enumerate", "reversed", "list") \
        and loop.iter.args else loop.iter
    if isinstance(iterated, (cst.Name, cst.Attribute)) and _is_history_once(ctx, function, iterated):
        return iterated, names
    if isinstance(loop.iter, cst.Call) and _last_name(loop.iter.func) == "range" and isinstance(loop.target, cst.Name):
        for n in descendants(loop.body):
            if isinstance(n, cst.Subscript) and isinstance(n.value, (cst.Name, cst.Attribute)) and len(n.slice) == 1 \
                    and isinstance(n.slice[0].slice, cst.Index) and ctx.code(n.slice[0].slice.value) == loop.target.value \
                    and _is_history_once(ctx, function, n.value):
                return n.value, names
    return None, set()


def _is_history_once(ctx: ModuleContext, function: cst.FunctionDef, target: cst.BaseExpression) -> bool:
    """`_is_history`, asked once per function and list (it reads every append of the module)."""
    memo = ctx.memo.setdefault("is_history", {})
    key = (id(function), ctx.code(target))
    if key not in memo:
        memo[key] = _is_history(ctx, function, target)
    return memo[key]


def _moving(ctx: ModuleContext, node: cst.BaseExpression) -> bool:
    """`n - self.RECENT_WINDOW`, `self.round - self.len_observations`, `curr_step - idx`, `len(history) - keep`
    (also inside `max(0, ...)`): the conversation's progress less a count, a point that moves on every turn."""
    if isinstance(node, cst.Call) and _last_name(node.func) in ("max", "min"):
        return any(_moving(ctx, a.value) for a in node.args)
    if not (isinstance(node, cst.BinaryOperation) and isinstance(node.operator, cst.Subtract)):
        return False
    left, right = node.left, node.right
    if isinstance(right, cst.Integer) and right.value in ("0", "1"):
        return False  # len(history) - 1: the last entry, not a window
    progress = (isinstance(left, cst.Call) and _last_name(left.func) == "len") or PROGRESS.search(_last_name(left) or "") is not None
    return progress and not isinstance(left, cst.Integer)


def _moving_cutoffs(ctx: ModuleContext, function: cst.FunctionDef) -> set[str]:
    """The names the function binds to a moving point (`_moving`), worked out once per function."""
    memo = ctx.memo.setdefault("moving_cutoffs", {})
    if id(function) not in memo:
        memo[id(function)] = {n.targets[0].target.value for n in descendants(function.body)
                              if isinstance(n, cst.Assign) and len(n.targets) == 1 and isinstance(n.targets[0].target, cst.Name)
                              and _moving(ctx, n.value)}
    return memo[id(function)]


def _past_the_count(test: cst.Comparison, counters: set[str]) -> bool:
    """`seen > keep`, `keep <= seen`: true once the walk from the end has passed the latest few (the older entries);
    `seen < 1` holds for the newest only (a breakpoint put on the last user message)."""
    if len(test.comparisons) != 1:
        return False
    operator, right = test.comparisons[0].operator, test.comparisons[0].comparator
    if _uses(test.left, counters) and not _uses(right, counters):
        return isinstance(operator, (cst.GreaterThan, cst.GreaterThanEqual))
    if _uses(right, counters) and not _uses(test.left, counters):
        return isinstance(operator, (cst.LessThan, cst.LessThanEqual))
    return False


def _moved(ctx: ModuleContext, pop: cst.Call) -> bool:
    """`parts.append(messages.pop(0).content)` under `while messages[0].role == "system"`: leading system messages
    moved into the system parameter (a format conversion, done alike on every request), not dropped. Also the head
    taken to be kept (`main = chunks.pop(0)`, then `main.merge(other)` and `out.append(main)`): moved, not cut."""
    if _kept_after_pop(ctx, pop):
        return True
    for ancestor in ctx.ancestors(pop):
        if isinstance(ancestor, cst.Call) and isinstance(ancestor.func, cst.Attribute) and ancestor.func.attr.value in ("append", "extend", "add", "insert"):
            return True
        if isinstance(ancestor, (cst.List, cst.Tuple, cst.Dict, cst.Set)):
            return True  # system = [messages.pop(0)["content"]]
        if isinstance(ancestor, (cst.SimpleStatementLine, *SCOPES)):
            break
    return under_system_role_test(ctx, pop)


def _kept_after_pop(ctx: ModuleContext, pop: cst.Call) -> bool:
    """`head = group.pop(0)` where nothing is dropped: the list is a group the loop is iterating (`for chunks in
    by_id.values(): main = chunks.pop(0)`, then the rest merged into it), or the head moves to a sibling list of
    the object the function returns (`part.input.append(part.conversation.pop(0))`, ... `return part`: one request's
    messages partitioned). A head moved to an archive, or bound to be measured, is still cut from the history."""
    statement = ctx.parent(pop)
    if not (isinstance(statement, cst.Assign) and len(statement.targets) == 1 and isinstance(statement.targets[0].target, cst.Name)):
        return False
    receiver = pop.func.value if isinstance(pop.func, cst.Attribute) else None
    function = ctx.enclosing_function(pop)
    if receiver is None or function is None:
        return False
    if isinstance(receiver, cst.Name) and any(isinstance(loop.target, cst.Name) and loop.target.value == receiver.value
                                              and ctx.contains(loop, pop) for loop in ctx.nodes_in(cst.For, function)):
        return True
    if not isinstance(receiver, cst.Attribute):
        return False
    owner = ctx.code(receiver.value)
    name = statement.targets[0].target.value
    moved = any(isinstance(call.func, cst.Attribute) and call.func.attr.value in ("append", "insert") and call.args
                and ctx.code(call.args[-1].value) == name and isinstance(call.func.value, cst.Attribute)
                and ctx.code(call.func.value.value) == owner for call in ctx.nodes_in(cst.Call, function))
    returned = any(ret.value is not None and ctx.code(ret.value) == owner for ret in ctx.nodes_in(cst.Return, function))
    return moved and returned


def under_system_role_test(ctx: ModuleContext, node: cst.CSTNode) -> bool:
    """Whether `node` runs under `if messages[0]["role"] == "system":` / `while ... .role == "system"`, or after a
    guard that leaves the function otherwise (`if messages[0].get("role") != "system": return None`): the leading
    system message is taken out of the list (into the system parameter) alike on every request, not dropped."""
    test = getattr(ctx.enclosing(node, (cst.While, cst.If)), "test", None)
    if test is not None and _names_system_role(test):
        return True
    return any(_names_system_role(guard.test) and _negative(guard.test) for guard in _guards_before(ctx, node))


def _names_system_role(test: cst.BaseExpression) -> bool:
    return any(isinstance(n, cst.SimpleString) and n.value.strip("'\"") in ("system", "developer") for n in descendants(test))


def _negative(test: cst.BaseExpression) -> bool:
    """`a != "system"`, `not ...`, `"system" not in ...`: a guard that leaves when the first message is not one."""
    return any(isinstance(n, (cst.NotEqual, cst.NotIn)) or (isinstance(n, cst.UnaryOperation) and isinstance(n.operator, cst.Not))
               for n in descendants(test))


def _guards_before(ctx: ModuleContext, node: cst.CSTNode) -> Iterator[cst.If]:
    """The `if ...: return` / `raise` statements of the function's own body that run before the statement holding
    `node` (guard clauses: past them, their test is known false)."""
    function = ctx.enclosing(node, (cst.FunctionDef,))
    if not isinstance(function, cst.FunctionDef) or not isinstance(function.body, cst.IndentedBlock):
        return
    for statement in function.body.body:
        if ctx.contains(statement, node):
            return
        if isinstance(statement, cst.If) and statement.orelse is None and isinstance(statement.body, cst.IndentedBlock) \
                and statement.body.body and _leaves(statement.body.body[-1]):
            yield statement


def _leaves(statement: cst.BaseStatement) -> bool:
    return isinstance(statement, cst.SimpleStatementLine) and any(isinstance(s, (cst.Return, cst.Raise)) for s in statement.body)


BUILTINS = frozenset(dir(builtins))  # `isinstance(content, str)`: a test of the message itself, not of state
TOOL_RESULT = re.compile(r"[\"']tool[\"']|[\"']function[\"']|Tool\w*(?:Message|Result)|Function\w*(?:Message|Result)")
BUDGET_WORD = re.compile(r"token|limit|budget|max_|remaining|context|window|size", re.I)


def _orphan_tool_result(ctx: ModuleContext, pop: cst.Call) -> bool:
    """`while messages and messages[0].role == "tool": messages.pop(0)`: a leading tool result whose call was cut away
    is dropped so the history starts with a valid turn; the cut that left it behind is the change (reported where it
    is made), this repair alone removes nothing a request had sent as its first message."""
    test = getattr(ctx.enclosing(pop, (cst.While, cst.If)), "test", None)
    return (test is not None and bool(TOOL_RESULT.search(ctx.code(test))) and any(
        isinstance(n, cst.Subscript) and _front_subscript(n) for n in descendants(test))) or leading_repair(ctx, pop, ctx.code(pop.func.value))  # type: ignore[attr-defined]


KIND_FIELDS = frozenset({"role", "type", "kind", "author"})


def _kind_of(ctx: ModuleContext, front: cst.Subscript) -> bool:
    """The test reads the first message's role or kind: `m[0]["role"]`, `m[0].type`, `m[0].get("role")`,
    `isinstance(m[0], UserMessage)`."""
    parent = ctx.parent(front)
    if isinstance(parent, cst.Subscript) and len(parent.slice) == 1 and isinstance(parent.slice[0].slice, cst.Index):
        return string_value(parent.slice[0].slice.value) in KIND_FIELDS
    if isinstance(parent, cst.Attribute) and parent.value is front:
        if parent.attr.value in KIND_FIELDS:
            return True
        call = ctx.parent(parent)
        return parent.attr.value == "get" and isinstance(call, cst.Call) and bool(call.args) and string_value(call.args[0].value) in KIND_FIELDS
    arg = ctx.parent(parent) if isinstance(parent, cst.Arg) else None
    return isinstance(arg, cst.Call) and _last_name(arg.func) == "isinstance"


def leading_repair(ctx: ModuleContext, node: cst.CSTNode, code: str) -> bool:
    """`while result and result[0]["role"] != "user": result.pop(0)` (or `result = result[1:]`): messages are dropped
    from the front only while the first one is of the wrong kind (a role, a type, a class), so the list a cut left
    starts with a valid turn. On a history that starts right it removes nothing; the cut above it is the change, and
    is reported where it is made. A loop that measures a length or a size is a cut itself."""
    loop = ctx.enclosing(node, (cst.While, cst.For, cst.FunctionDef))
    if not isinstance(loop, cst.While):
        return False
    front = [n for n in descendants(loop.test) if isinstance(n, cst.Subscript) and ctx.code(n.value) == code and _front_subscript(n)
             and isinstance(n.slice[0].slice, cst.Index) and _kind_of(ctx, n)]
    def not_empty(n: cst.CSTNode) -> bool:  # `len(result) > 0`: the list is not empty, no size
        return isinstance(n, cst.Comparison) and len(n.comparisons) == 1 and ctx.code(n.left).replace(" ", "") == f"len({code})" \
            and (ctx.code(n.comparisons[0].comparator), type(n.comparisons[0].operator)) in (("0", cst.GreaterThan), ("1", cst.GreaterThanEqual), ("0", cst.NotEqual))

    checks = [n for n in (loop.test, *descendants(loop.test)) if not any(not_empty(a) for a in (n, *ctx.ancestors(n)) if ctx.contains(loop.test, a))]
    measured = any(isinstance(n, cst.Call) and _last_name(n.func) not in ("isinstance", "get") for n in checks) or any(
        isinstance(n, cst.Comparison) and any(isinstance(c.operator, (cst.GreaterThan, cst.GreaterThanEqual, cst.LessThan, cst.LessThanEqual))
                                              for c in n.comparisons) for n in checks)
    return bool(front) and not measured


CAP_WORD = re.compile(r"max|limit|keep|cap\b|_cap|allowed", re.I)
CHAR_BUDGET = re.compile(r"char", re.I)  # a budget in characters, about four to a token
TOKEN_WORD = re.compile(r"token", re.I)
TOKEN_BUDGET = re.compile(r"token|context|window|char|size|budget", re.I)


def _beyond_a_cap(ctx: ModuleContext, function: cst.FunctionDef, node: cst.CSTNode) -> bool:
    """The removal runs under a test against a fixed number of items to keep (`if img_count > max_images:`, `while
    removed < images_to_remove` with `images_to_remove = image_count - self.max_history_images`): once the cap is
    reached, every new item removes an old one, a window that slides on every turn."""
    history = ctx.code(_subscript_root(node.target) if isinstance(node, cst.Del) else node.func.value)  # type: ignore[attr-defined]
    walks = [a for a in ctx.ancestors(node) if isinstance(a, (cst.For, cst.While)) and ctx.contains(function, a)
             and history in ctx.code(a.iter if isinstance(a, cst.For) else a.test)]
    if not walks:
        return False  # removed while walking the history (`for i in range(len(messages))`), not in a run bounded by max_steps
    tests = [a.test for a in ctx.ancestors(node) if isinstance(a, (cst.If, cst.While)) and ctx.contains(function, a)]
    for test in tests:
        for comparison in [test, *descendants(test)]:
            if not isinstance(comparison, cst.Comparison):
                continue
            sides = [comparison.left, *(c.comparator for c in comparison.comparisons)]
            if any(TOKEN_BUDGET.search(ctx.code(side)) for side in sides):
                continue  # trimmed to fit a token budget: judged by where that budget sits, not here
            if any(CAP_WORD.search(ctx.code(side)) for side in sides) and any(_counts_items(function, side) for side in sides) and not any(
                    isinstance(c.operator, (cst.Equal, cst.NotEqual, cst.In, cst.NotIn, cst.Is, cst.IsNot)) for c in comparison.comparisons):
                return True
            names = {n.value for side in sides for n in [side, *descendants(side)] if isinstance(n, cst.Name)}
            if any(_excess(function, name) for name in names):
                return True
    return False


def _counts_items(function: cst.FunctionDef, side: cst.BaseExpression) -> bool:
    """`len(...)`, or a counter the function increments (`img_count += 1`): a number of items, not a step bound."""
    if isinstance(side, cst.Call) and isinstance(side.func, cst.Name) and side.func.value == "len":
        return True
    if not isinstance(side, cst.Name):
        return False
    return any(isinstance(small, cst.AugAssign) and isinstance(small.operator, cst.AddAssign) and isinstance(small.target, cst.Name)
               and small.target.value == side.value
               for node in _own_nodes(function) if isinstance(node, cst.SimpleStatementLine) for small in node.body)


def _excess(function: cst.FunctionDef, name: str) -> bool:
    """`name = count - LIMIT`: how many items are over a cap."""
    for node in _own_nodes(function):
        if isinstance(node, cst.SimpleStatementLine):
            for small in node.body:
                if isinstance(small, cst.Assign) and any(isinstance(t.target, cst.Name) and t.target.value == name for t in small.targets) \
                        and isinstance(small.value, cst.BinaryOperation) and isinstance(small.value.operator, cst.Subtract):
                    right = small.value.right
                    text = right.attr.value if isinstance(right, cst.Attribute) else right.value if isinstance(right, cst.Name) else ""
                    if CAP_WORD.search(text) and not TOKEN_BUDGET.search(text):
                        return True
    return False


def _subscript_root(node: cst.BaseExpression) -> cst.BaseExpression | None:
    """`agent.messages` of `agent.messages[i]["content"][j]`."""
    while isinstance(node, cst.Subscript):
        node = node.value
    return node if isinstance(node, (cst.Name, cst.Attribute)) else None


def _pops_until_it_fits(ctx: ModuleContext, pop: cst.Call, receiver: cst.BaseExpression) -> bool:
    """`while count_tokens(messages) > limit: messages.pop(len(messages) // 2)`: messages taken out of the middle (an
    index computed from the list's length, not its end) until the history fits a budget; as the conversation grows a
    different message goes every turn, right after the part that stays."""
    index = pop.args[0].value
    if _int(index) is not None or _front_index(index):
        return False
    loop = ctx.enclosing(pop, (cst.While,))
    if not isinstance(loop, cst.While) or not BUDGET_WORD.search(ctx.code(loop.test)):
        return False
    target = ctx.code(receiver)
    if isinstance(index, cst.Name):  # middle_index = len(messages) // 2
        values = [a.value for a in descendants(loop.body) if isinstance(a, cst.Assign)
                  and any(isinstance(t.target, cst.Name) and t.target.value == index.value for t in a.targets)]
    else:
        values = [index]
    return any(isinstance(v, cst.BinaryOperation) and isinstance(v.operator, (cst.FloorDivide, cst.Divide))
               and any(isinstance(n, cst.Call) and _last_name(n.func) == "len" and n.args and ctx.code(n.args[0].value) == target
                       for n in descendants(v.left)) for v in values)


# a deque of what is not a turn: tool names counted for loop detection, request times of a rate limiter, pending input
BOOKKEEPING_QUEUE = re.compile(r"(?:^|_)(?:tool|name|request|call|action|error|time|timestamp|pending|inbound|outbound|queue)s?(?:_history|_messages)?$", re.I)


def _popped_past_a_cap(ctx: ModuleContext, pop: cst.Call, receiver: cst.BaseExpression) -> bool:
    """`if len(self.short_term_memory) > self.capacity: self.short_term_memory.popleft()`: a deque is most often a
    queue (work taken in order, a rate limiter's window of times); its `popleft()` cuts a history only under a test of
    that deque's length against a count."""
    name = _last_name(receiver) or ""
    if BOOKKEEPING_QUEUE.search(name.lstrip("_")) or _drains_a_queue(ctx, pop, receiver):
        return False
    test = getattr(ctx.enclosing(pop, (cst.If, cst.While)), "test", None)
    return test is not None and any(_length_past(ctx, n, receiver) for n in (test, *descendants(test)))


def _length_past(ctx: ModuleContext, test: cst.CSTNode, receiver: cst.BaseExpression) -> bool:
    """`len(q) > cap`, `len(q) >= cap`, `len(q) == cap`, or the same written the other way round (`cap <= len(q)`)."""
    if not isinstance(test, cst.Comparison) or len(test.comparisons) != 1:
        return False
    operator, right = test.comparisons[0].operator, test.comparisons[0].comparator
    def is_len(side) -> bool:
        return _len_of(side) is not None and ctx.code(_len_of(side)) == ctx.code(receiver)
    return (is_len(test.left) and isinstance(operator, (cst.GreaterThan, cst.GreaterThanEqual, cst.Equal))) or (
        is_len(right) and isinstance(operator, (cst.LessThan, cst.LessThanEqual, cst.Equal)))


def _drains_a_queue(ctx: ModuleContext, pop: cst.Call, receiver: cst.BaseExpression) -> bool:
    """`while queue: item = queue.pop(0)`: work items taken one by one until none is left, not a history cut. Also
    two queues merged until both are empty (`while len(messages) > 0 or len(extra) > 0:` ... `extra.pop(0)`)."""
    loop = ctx.enclosing(pop, (cst.While,))
    if not isinstance(loop, cst.While):
        return False
    tests, alternatives = [loop.test], []
    while tests:
        test = tests.pop()
        if isinstance(test, cst.BooleanOperation) and isinstance(test.operator, cst.Or):
            tests += [test.left, test.right]
        else:
            alternatives.append(test)
    return any(ctx.code(_drained(test)) == ctx.code(receiver) for test in alternatives)


def _drained(test: cst.BaseExpression) -> cst.BaseExpression:
    """The list a loop test says is not empty yet: `queue`, `len(queue)`, `len(queue) > 0`."""
    if isinstance(test, cst.Call) and isinstance(test.func, cst.Name) and test.func.value == "len" and test.args:
        return test.args[0].value
    if isinstance(test, cst.Comparison) and isinstance(test.left, cst.Call) and isinstance(test.left.func, cst.Name) \
            and test.left.func.value == "len" and test.left.args and _int(test.comparisons[0].comparator) == 0:
        return test.left.args[0].value  # `while len(queue) > 0`: until none is left (`len(messages) > limit` cuts to a size)
    return test


def up_to_the_newest_turn(ctx: ModuleContext, function: cst.FunctionDef | None, target: cst.Subscript) -> bool:
    """`del messages[1:last_user_index]` (the index of the newest user message, found walking back), `del
    messages[1:-1]`: everything but the system message and the newest turn deleted at once, a reset of the
    conversation that then grows again (one miss, as with compaction), not a window that slides every turn."""
    index = target.slice[0].slice
    if not isinstance(index, cst.Slice) or index.upper is None or index.step is not None:
        return False
    upper = index.upper
    if isinstance(upper, cst.UnaryOperation) and isinstance(upper.operator, cst.Minus) and _int(upper.expression) == 1:
        return True
    if not isinstance(upper, cst.Name) or function is None:
        return False
    for loop in ctx.nodes_in(cst.For, function):
        walks_back = isinstance(loop.iter, cst.Call) and _last_name(loop.iter.func) == "reversed"
        looks_for_user = any(isinstance(c, cst.Comparison) and any(string_value(side) == "user" for side in (c.left, *(x.comparator for x in c.comparisons)))
                             for c in descendants(loop.body))
        if walks_back and looks_for_user and any(isinstance(a, cst.Assign) and any(isinstance(t.target, cst.Name) and t.target.value == upper.value for t in a.targets)
                                                 for a in descendants(loop.body)) and any(isinstance(b, cst.Break) for b in descendants(loop.body)):
            return True  # for i in reversed(range(len(messages))): if messages[i]["role"] == "user": last = i; break
    return False


def _local_root(node: cst.CSTNode) -> bool:
    """The list a cut works on is a local name (`lines[-n:]`, `lines.pop(0)`), not an object's (`self.history`)."""
    if isinstance(node, cst.Call) and isinstance(node.func, cst.Attribute):
        node = node.func.value
    while isinstance(node, (cst.Subscript, cst.Attribute)):
        node = node.value
    return isinstance(node, cst.Name) and node.value not in ("self", "cls")


def _history_of(receiver: cst.BaseExpression) -> cst.BaseExpression:
    """`messages[0].content` -> `messages` (a part of the oldest message cut: `messages[0].content.pop(0)`)."""
    node = receiver
    while isinstance(node, (cst.Attribute, cst.Subscript)):
        if isinstance(node, cst.Subscript) and _front_subscript(node):
            return node.value
        node = node.value
    return receiver


def _front_index(expr: cst.BaseExpression) -> bool:
    """pop(0), pop(1): the oldest message (or the one after the system prompt)."""
    value = _int(expr)
    return value is not None and 0 <= value <= 2


def _front_subscript(sub: cst.Subscript) -> bool:
    index = sub.slice[0].slice
    if isinstance(index, cst.Index):
        return _front_index(index.value)
    if isinstance(index, cst.Slice):
        return index.lower is None or _front_index(index.lower) if index.upper is not None else False
    return False


def _front_slice_of(ctx: ModuleContext, expr: cst.BaseExpression) -> bool:
    return isinstance(expr, cst.Subscript) and isinstance(expr.slice[0].slice, cst.Slice) and expr.slice[0].slice.lower is None \
        and expr.slice[0].slice.upper is not None


def _middle_or_front_slice(expr: cst.BaseExpression) -> bool:
    """image_messages[:-2], images[1:-2]: all but the newest."""
    if not isinstance(expr, cst.Subscript) or not isinstance(expr.slice[0].slice, cst.Slice):
        return False
    upper = _int(expr.slice[0].slice.upper)
    return upper is not None and upper < 0


def _late_slice(sub: cst.Subscript) -> bool:
    """history[-n:] or history[len(history) - k:]: only the latest part is kept (history[1:] is not: that
    skips the system prompt)."""
    index = sub.slice[0].slice
    if not isinstance(index, cst.Slice) or index.lower is None or index.upper is not None:
        return False
    lower = index.lower
    if isinstance(lower, cst.UnaryOperation) and isinstance(lower.operator, cst.Minus):
        if _length_of_other(lower.expression, sub.value):
            return False  # messages[-len(results):]: the items just added for `results`, read back; not a window
        return not isinstance(lower.expression, cst.Integer) or _int(lower.expression) > 2
    if _scaled_negative(lower):
        return True  # history[window_size * -2:]: the last window_size turns, two messages each
    return any(isinstance(n, cst.Call) and isinstance(n.func, cst.Name) and n.func.value == "len" for n in descendants(lower))


def _scaled_negative(expr: cst.BaseExpression | None) -> bool:
    """`n * -2`, `-2 * n` or `-n * 2`: a count of turns made negative and scaled (two messages a turn), the start of
    the last n turns."""
    if not (isinstance(expr, cst.BinaryOperation) and isinstance(expr.operator, cst.Multiply)):
        return False
    sides = (expr.left, expr.right)
    return any(isinstance(side, cst.UnaryOperation) and isinstance(side.operator, cst.Minus) for side in sides) \
        and any(isinstance(side, cst.Integer) or (isinstance(side, cst.UnaryOperation) and isinstance(side.expression, cst.Integer)) for side in sides)


def _drops_front_until_it_fits(ctx: ModuleContext, function: cst.FunctionDef, sub: cst.Subscript) -> bool:
    """`while len(chat_history) > 0: if count(chat_history) > budget: chat_history = chat_history[1:]`: the oldest
    message dropped again and again, in a loop, until the rest fits (one `history[1:]` alone skips a system
    prompt and is no cut)."""
    index = sub.slice[0].slice
    if not (isinstance(index, cst.Slice) and index.upper is None and isinstance(index.lower, cst.Integer)
            and 1 <= _int(index.lower) <= 2):
        return False
    assign = ctx.parent(sub)
    if not (isinstance(assign, cst.Assign) and len(assign.targets) == 1 and ctx.code(assign.targets[0].target) == ctx.code(sub.value)):
        return False
    for ancestor in ctx.ancestors(sub):
        if ancestor is function:
            return False
        if isinstance(ancestor, (cst.While, cst.For)):
            return not leading_repair(ctx, sub, ctx.code(sub.value))
        if isinstance(ancestor, cst.If) and _count_of(ctx, ancestor.test) == ctx.code(sub.value) and _a_history_handed_on(ctx, sub.value):
            return True  # if len(self.history) > self.max_turns: self.history = self.history[1:]: a window over a count cap
    return False


def _a_history_handed_on(ctx: ModuleContext, target: cst.BaseExpression) -> bool:
    """The capped list is a conversation: named for one (`self.history`), or handed on as one (returned by a method
    named for it, `def messages(self): return self.buffer`, or sent as `messages=`). A list of role messages kept for
    display (`self.shown`, toasts) is capped as often, and never sent."""
    name = _last_name(target)
    if name is not None and HISTORY_NAME.search(name):
        return True
    code = ctx.code(target)
    for function in ctx.nodes(cst.FunctionDef):
        if HISTORY_NAME.search(function.name.value) and any(ctx.code(r) == code for r in ctx.returns_of(function)):
            return True
    return any(isinstance(arg, cst.Arg) and arg.keyword is not None and arg.keyword.value in SENT_KEYWORDS and ctx.code(arg.value) == code
               for call in ctx.nodes(cst.Call) for arg in call.args)


def _count_of(ctx: ModuleContext, test: cst.BaseExpression) -> str | None:
    """`len(self.history) > self.max_turns` -> "self.history": a list's count of items held against a bound (not a
    budget of tokens or characters, nor the context window)."""
    found = count_bound(ctx, test, above=True)
    return found[0] if found is not None else None


def count_bound(ctx: ModuleContext, test: cst.BaseExpression, above: bool, budgets_too: bool = False) -> tuple[str, cst.BaseExpression] | None:
    """(the list, the bound) of a count of a list's items tested against a bound: `len(history) > max_turns` (above)
    or `len(messages) < max_messages` (below); not a budget of tokens or characters, nor the context window, unless
    `budgets_too` (a chain walk's `len(messages) < self.max_context_messages` is a count all the same)."""
    if not (isinstance(test, cst.Comparison) and len(test.comparisons) == 1 and isinstance(test.left, cst.Call)
            and _last_name(test.left.func) == "len" and len(test.left.args) == 1):
        return None
    operator = test.comparisons[0].operator
    wanted = (cst.GreaterThan, cst.GreaterThanEqual) if above else (cst.LessThan, cst.LessThanEqual)
    code = ctx.code(test)
    if not isinstance(operator, wanted) or (not budgets_too and (CONTEXT_WINDOW.search(code) or TOKEN_WORD.search(code))):
        return None
    return ctx.code(test.left.args[0].value), test.comparisons[0].comparator


def _length_of_other(expr: cst.BaseExpression, listed: cst.BaseExpression) -> bool:
    """`len(results)` where `results` is not the sliced list itself."""
    if not (isinstance(expr, cst.Call) and isinstance(expr.func, cst.Name) and expr.func.value == "len" and expr.args):
        return False
    return not expr.args[0].value.deep_equals(listed)


def _proportional_cut(ctx: ModuleContext, function: cst.FunctionDef, sub: cst.Subscript) -> bool:
    """The kept tail is a fraction of the list's length (`history[len(history) // 2:]`, `turns[-keep:]` with `keep =
    len(turns) - len(turns) // 2`): a large cut made once, after which the list grows for many turns before it is
    cut again, unlike a window of fixed size that slides on every turn."""
    lower = sub.slice[0].slice.lower  # type: ignore[union-attr]
    assigned: dict[str, list[cst.BaseExpression]] = {}
    for node in _own_nodes(function):
        if isinstance(node, cst.Assign):
            for target in node.targets:
                if isinstance(target.target, cst.Name):
                    assigned.setdefault(target.target.value, []).append(node.value)
    parts: list[cst.CSTNode] = [lower]
    frontier: list[cst.CSTNode] = [lower]
    for _ in range(3):  # keep = len(turns) - removed; removed = len(turns) // 2
        names = [n.value for e in frontier for n in [e, *descendants(e)] if isinstance(n, cst.Name)]
        frontier = [v for name in names for v in assigned.get(name, [])]
        parts += frontier
    nodes = [n for part in parts for n in [part, *descendants(part)]]
    halves = any(isinstance(n, cst.BinaryOperation) and isinstance(n.operator, (cst.FloorDivide, cst.Divide)) for n in nodes)
    target = ctx.code(sub.value)
    measured = any(isinstance(n, cst.Call) and _last_name(n.func) == "len" and n.args and ctx.code(n.args[0].value) == target for n in nodes)
    return halves and measured


# a getter named for the few latest items it returns (`get_recent_messages`, `last_turns`, `preview_history`); a memory's
# `get_messages(limit=None)` is what it hands the model, and stays judged
ACCESSOR = re.compile(r"(?:^|_)(?:recent|last|latest|tail|peek|preview|display|show)(?:_|$)", re.I)


def _sends_in(function: cst.FunctionDef) -> bool:
    """The function passes messages to a call itself (`messages=`, `input=`): it may send the window it cuts."""
    return any(isinstance(n, cst.Arg) and n.keyword is not None and n.keyword.value in ("messages", "input") for n in descendants(function))


def _accessor(ctx: ModuleContext, function: cst.FunctionDef, sub: cst.Subscript, params: set[str]) -> bool:
    """A getter named for the latest items that returns the latest `n`, `n` given by its caller
    (`get_recent_messages(self, count)`): it reads the history and leaves it whole; what a caller does with the window
    is the caller's."""
    lower = sub.slice[0].slice.lower  # type: ignore[union-attr]
    if not ACCESSOR.search(function.name.value) or not _uses(lower, params):
        return False
    statement = ctx.statement_of(sub)
    assign = statement.body[0] if isinstance(statement, cst.SimpleStatementLine) and statement.body else None
    names = {t.target.value for t in assign.targets if isinstance(t.target, cst.Name)} if isinstance(assign, cst.Assign) else set()
    return any(ctx.contains(r, sub) or r is sub or _uses(r, names) for r in ctx.returns_of(function))


def _tail_of_itself(ctx: ModuleContext, sub: cst.Subscript) -> bool:
    """`history[-n:]`, or `history[len(history) - n:]`: the tail of the list itself; `log[len(system_msgs):]` skips a
    head of known length (the system messages), which is no window."""
    lower = sub.slice[0].slice.lower  # type: ignore[union-attr]
    if isinstance(lower, cst.UnaryOperation) or _scaled_negative(lower):
        return True
    target = ctx.code(sub.value)
    return any(isinstance(n, cst.Call) and isinstance(n.func, cst.Name) and n.func.value == "len" and n.args
               and ctx.code(n.args[0].value) == target for n in descendants(lower))


def _computed_tail_start(ctx: ModuleContext, function: cst.FunctionDef, sub: cst.Subscript) -> bool:
    """`messages[trim_index:]` where the function computed `trim_index = len(messages) - self.window_size` (or
    `max(0, len(history) - keep)`, either branch of a conditional) beforehand: the tail of the list, its start set in
    a statement of its own. The list cut in two at that index (`h[:i] + h[i:]`) is kept whole."""
    index = sub.slice[0].slice
    if isinstance(index, cst.Slice) and index.upper is None and isinstance(index.lower, cst.Subscript) \
            and ctx.enclosing_function(sub) is function:
        return _nth_last_position(ctx, function, index.lower, ctx.code(sub.value))  # messages[human_indices[-rounds]:]
    if isinstance(index, cst.Slice) and index.upper is None and _index_plus_one(index.lower) is not None \
            and ctx.enclosing_function(sub) is function:
        return _index_walked_back(ctx, function, index.lower, ctx.code(sub.value))  # h = h[i + 1:] in the walk back
    if not isinstance(index, cst.Slice) or index.upper is not None or not isinstance(index.lower, cst.Name):
        return False
    target = ctx.code(sub.value)
    if any(isinstance(n, cst.Subscript) and ctx.code(n.value) == target and isinstance(n.slice[0].slice, cst.Slice)
           and isinstance(n.slice[0].slice.upper, cst.Name) and n.slice[0].slice.upper.value == index.lower.value for n in descendants(function)):
        return False
    return any(value is not None and ctx.enclosing_function(value) is function
               and (_length_less(ctx, value, target) or _index_walked_back(ctx, function, value, target)
                    or _nth_last_position(ctx, function, value, target) or _start_from_helper(ctx, function, value, target))
               for _, value in ctx.assigned_values(index.lower))


def _start_from_helper(ctx: ModuleContext, function: cst.FunctionDef, value: cst.BaseExpression, target: str) -> bool:
    """`start = self.find_nth_human_message_from_end(messages, n)` where that function of the module (a method of the
    class, or a module-level one) returns the position of the n-th last message of the list it is handed
    (`return human_indices[-n]`, `return len(messages) - n`): the start of the latest n rounds, worked out apart."""
    if not isinstance(value, cst.Call):
        return False
    name = _last_name(value.func)
    cls = ctx.enclosing(function, (cst.ClassDef,))
    helpers = [n for n in (cls.body.body if isinstance(cls, cst.ClassDef) and isinstance(value.func, cst.Attribute) else ctx.module.body)
               if isinstance(n, cst.FunctionDef) and n.name.value == name]
    if len(helpers) != 1 or helpers[0] is function:
        return False
    helper = helpers[0]
    params = [p.name.value for p in helper.params.params if p.name.value not in ("self", "cls")]
    handed = [params[i] for i, arg in enumerate(value.args) if arg.keyword is None and not arg.star and i < len(params)
              and ctx.code(arg.value) == target]
    handed += [arg.keyword.value for arg in value.args if arg.keyword is not None and ctx.code(arg.value) == target]
    returns = [n.value for n in descendants(helper.body) if isinstance(n, cst.Return) and n.value is not None]
    return any(_nth_last_position(ctx, helper, r, param) or _length_less(ctx, r, param) for param in handed for r in returns)


def _nth_last_position(ctx: ModuleContext, function: cst.FunctionDef, value: cst.BaseExpression, target: str) -> bool:
    """`start = human_indices[-rounds]` where `human_indices` collects the positions of the list's messages (`for i, m
    in enumerate(messages): if m["type"] == "human": human_indices.append(i)`): the start of the latest n rounds."""
    if not (isinstance(value, cst.Subscript) and isinstance(value.value, cst.Name) and len(value.slice) == 1):
        return False
    index = value.slice[0].slice
    if not (isinstance(index, cst.Index) and isinstance(index.value, cst.UnaryOperation) and isinstance(index.value.operator, cst.Minus)):
        return False
    if isinstance(index.value.expression, cst.Integer) and index.value.expression.value == "1":
        return False  # positions[-1]: from the latest user message on, this turn alone
    positions = value.value.value
    for made in (n.value for n in descendants(function.body) if isinstance(n, cst.Assign) and len(n.targets) == 1
                 and isinstance(n.targets[0].target, cst.Name) and n.targets[0].target.value == positions):
        # human_indices = [i for i, m in enumerate(messages) if isinstance(m, HumanMessage)]
        if isinstance(made, cst.ListComp) and isinstance(made.elt, cst.Name) and isinstance(made.for_in.target, cst.Tuple) \
                and isinstance(made.for_in.target.elements[0].value, cst.Name) and made.for_in.target.elements[0].value.value == made.elt.value \
                and isinstance(made.for_in.iter, cst.Call) and _last_name(made.for_in.iter.func) == "enumerate" and made.for_in.iter.args \
                and ctx.code(made.for_in.iter.args[0].value) == target:
            return True
    for loop in (n for n in descendants(function.body) if isinstance(n, cst.For)):
        if not (isinstance(loop.iter, cst.Call) and _last_name(loop.iter.func) == "enumerate" and loop.iter.args
                and ctx.code(loop.iter.args[0].value) == target and isinstance(loop.target, cst.Tuple)
                and isinstance(loop.target.elements[0].value, cst.Name)):
            continue
        position = loop.target.elements[0].value.value
        if any(isinstance(n, cst.Call) and isinstance(n.func, cst.Attribute) and n.func.attr.value == "append"
               and ctx.code(n.func.value) == positions and n.args and ctx.code(n.args[0].value) == position for n in descendants(loop.body)):
            return True
    return False


def _index_walked_back(ctx: ModuleContext, function: cst.FunctionDef, value: cst.BaseExpression, target: str) -> bool:
    """`for idx in range(len(messages) - 1, -1, -1): ... if turns >= keep: keep_from = idx; break`: a start found by
    walking the list's indices from its end (the latest few turns counted back), or the one after it (`cutoff = i + 1`
    once the count or the size is past its bound)."""
    value = _index_plus_one(value) or value
    if not isinstance(value, cst.Name):
        return False
    for loop in (n for n in descendants(function.body) if isinstance(n, cst.For)):
        if not (isinstance(loop.target, cst.Name) and loop.target.value == value.value and ctx.contains(loop, value)):
            continue
        walked = _backward_source(loop)  # reversed(range(len(messages)))
        backward, walked = walked is not None, walked or loop.iter
        if not (isinstance(walked, cst.Call) and _last_name(walked.func) == "range" and walked.args):
            continue
        backward = backward or (len(walked.args) == 3 and ctx.code(walked.args[2].value).replace(" ", "") == "-1")
        counters = {n.target.value for n in descendants(loop.body) if isinstance(n, cst.AugAssign) and isinstance(n.target, cst.Name)}
        if not any(isinstance(c, cst.Comparison) and _uses(c, counters) for c in descendants(loop.body)):
            continue  # the first user message from the end (this turn's start), not the latest few turns counted
        start = walked.args[0].value
        if backward and any(isinstance(n, cst.Call) and _last_name(n.func) == "len" and n.args and ctx.code(n.args[0].value) == target
                            for n in (start, *descendants(start))):
            return True
    return False


def _index_plus_one(value: cst.BaseExpression | None) -> cst.Name | None:
    """The `i` of `i + 1`."""
    if isinstance(value, cst.BinaryOperation) and isinstance(value.operator, cst.Add) and isinstance(value.left, cst.Name) \
            and _int(value.right) == 1:
        return value.left
    return None


def _length_less(ctx: ModuleContext, value: cst.BaseExpression, target: str) -> bool:
    """`len(target) - n`, as the value, an argument of `max` / `min`, or a branch of a conditional."""
    if isinstance(value, cst.IfExp):
        return _length_less(ctx, value.body, target) or _length_less(ctx, value.orelse, target)
    if isinstance(value, cst.Call) and _last_name(value.func) in ("max", "min"):
        return any(_length_less(ctx, a.value, target) for a in value.args)
    if not (isinstance(value, cst.BinaryOperation) and isinstance(value.operator, cst.Subtract)):
        return False
    left, right = value.left, value.right
    if isinstance(right, cst.Integer) and _int(right) <= 2:
        return False  # `start = len(messages) - 1` before this turn's messages are added: a mark, read back after
    if isinstance(left, cst.Name):  # `n = len(messages)` ... `start = n - max_messages`
        bound = ctx.sole_value(left)
        if bound is not None and ctx.enclosing_function(bound) is ctx.enclosing_function(value):
            left = bound
    return isinstance(left, cst.Call) and isinstance(left.func, cst.Name) and left.func.value == "len" and bool(left.args) \
        and ctx.code(left.args[0].value) == target


TEXT_METHODS = frozenset({"strip", "lstrip", "rstrip", "split", "splitlines", "lower", "upper", "replace", "encode", "decode"})


def _window_passed_on(ctx: ModuleContext, function: cst.FunctionDef, sub: cst.Subscript) -> bool:
    """The window is what the code keeps or sends on: stored on an object or in a container, returned, or passed to a
    call. A window bound to a local name that is only looked at (iterated for display or a log line, measured,
    joined into a search query) rewrites nothing that is sent, and neither does the tail of a text (`.strip()`)."""
    parent = ctx.parent(sub)
    if isinstance(parent, cst.Attribute) and parent.attr.value in TEXT_METHODS:
        return False
    if _looked_up_with(ctx, sub):
        return False  # memory.get_relevant_documents(str(messages[-10:])): a search query made of the latest turns
    assign = ctx.parent(parent) if isinstance(parent, cst.IfExp) else parent
    if not isinstance(assign, cst.Assign):
        return True
    names = {t.target.value for t in assign.targets if isinstance(t.target, cst.Name)}
    if len(names) < len(assign.targets):
        return True  # self.messages = ..., state["messages"] = ...
    if names & declared_outside(function):
        return True  # global history; history = history[-20:]: the module's history, kept for the next call
    keys = _keys_of(ctx, sub.value) is not None  # {k: history[k] for k in kept_keys}: the dict's window, made from its keys
    return handed_on(ctx, _own_nodes(function), names, ctx.span(assign).row, comprehended=keys)


def handed_on(ctx: ModuleContext, nodes: list[cst.CSTNode], names: set[str], after: int, outside: cst.CSTNode | None = None,
              comprehended: bool = False) -> bool:
    """A use of one of `names` below line `after` (and not inside `outside`) that keeps or sends what it holds: passed
    to a call that is no measure or look-up (`len`, `print`, a retrieval query), returned, put in a container or a
    text, added to another list, iterated to be collected, or stored on an object or in a table; with `comprehended`,
    also a comprehension made of it (`[{"role": "user", "content": m["text"]} for m in kept]`)."""
    for node in nodes:
        if not (isinstance(node, cst.Name) and node.value in names and ctx.span(node).row > after):
            continue
        if outside is not None and ctx.contains(outside, node):
            continue
        holder = ctx.parent(node)
        call = ctx.parent(holder) if isinstance(holder, cst.Arg) else None
        if isinstance(call, cst.Call) and _last_name(call.func) in ("enumerate", "reversed"):
            node, holder = call, ctx.parent(call)  # for i, m in enumerate(kept): out.append(m): walked as the name itself
            call = ctx.parent(holder) if isinstance(holder, cst.Arg) else None
        if isinstance(call, cst.Call) and _last_name(call.func) not in MEASURES and not _looked_up_with(ctx, node):
            return True
        if comprehended and (isinstance(holder, cst.From) or (isinstance(holder, cst.Assign) and holder.value is node)):
            return True  # yield from kept; history = kept
        if isinstance(holder, (cst.Return, cst.Yield, cst.Element, cst.StarredElement, cst.DictElement, cst.BinaryOperation)):
            return True
        if isinstance(holder, cst.AugAssign) and holder.value is node:
            return True  # messages += window
        if isinstance(holder, cst.For) and holder.iter is node and _collects(holder):
            return True  # for run in runs: history.extend(run.messages): the window becomes the history
        if comprehended and isinstance(holder, cst.CompFor) and holder.iter is node:
            return True
        if isinstance(holder, cst.CompFor) and holder.iter is node and isinstance(ctx.parent(holder), (cst.ListComp, cst.GeneratorExp)) \
                and isinstance(ctx.parent(ctx.parent(holder)), (cst.Return, cst.BinaryOperation, cst.Element, cst.StarredElement)):
            return True  # return [system] + [m.model_dump() for m in recent] + [user]: converted into what is sent
        if isinstance(holder, cst.Assign) and any(not isinstance(t.target, cst.Name) for t in holder.targets):
            return True
    return False


# calls that only look at a list: its size, a log line, a walk
MEASURES = frozenset({"len", "print", "enumerate", "reversed", "any", "all"})


# a look-up made with the latest turns (a retrieval query, an embedding, a token count), not a request that sends them
LOOKUP_CALL = re.compile(r"^(?:get_relevant_documents|aget_relevant_documents|similarity_search\w*|max_marginal_relevance_search|retrieve"
                         r"|aretrieve|embed_query|embed_documents|embed|encode|count_tokens|num_tokens\w*|token_count|get_num_tokens\w*)$")
CONVERSIONS = frozenset({"str", "repr", "list", "tuple", "dumps", "join", "format"})
# a side task handed the latest turns: the question made standalone, split into sub-queries, classified, titled
SIDE_CALL = re.compile(r"^a?(?:decompose|rewrite|rephrase|condense_question|classify\w*|generate_title|make_title|route_query)$")
SIDE_RECEIVER = re.compile(r"(?:^|_)(?:query_?(?:rewriter|decomposer|transformer|expander|condenser|generator)|title_?\w*|intent_?\w*"
                           r"|router|classifier|decomposer|rewriter|rephraser|condenser)$", re.I)  # not `query_engine`: the chat itself


def _looked_up_with(ctx: ModuleContext, node: cst.CSTNode) -> bool:
    """The first call that takes `node` (through conversions to text: `str(...)`, `json.dumps(...)`) is a look-up of
    a library, not a function of this module: `memory.get_relevant_documents(str(history[-10:]))`."""
    for ancestor in ctx.ancestors(node):
        if isinstance(ancestor, cst.Call):
            name = _last_name(ancestor.func) or ""
            if name in CONVERSIONS:
                continue
            if SIDE_CALL.match(name) or (isinstance(ancestor.func, cst.Attribute) and SIDE_RECEIVER.search(_last_name(ancestor.func.value) or "")):
                return True  # `self.query_decomposer.decompose(query, history[-5:])`: a side task's own short request
            return LOOKUP_CALL.match(name) is not None and not _defined_here(ctx, name)
        if isinstance(ancestor, (cst.BaseSmallStatement, cst.BaseCompoundStatement, cst.Lambda)):
            return False
    return False


def _window_collected(ctx: ModuleContext, function: cst.FunctionDef, node: cst.Subscript) -> bool:
    """The loop over the window builds what the function returns: `for role, m in self.history[-n:]:
    convs.append({...})` then `return convs`, or `return [render(m) for m in self._messages[-limit:]]`. Each item
    is converted and kept, so the window is the history handed on (a loop that prints or checks is not)."""
    returned = set()  # names returned as they are: `return convs`, `return "\n".join(lines)`, `return [*head, *convs]`
    for value in ctx.returns_of(function):
        if isinstance(value, cst.Call) and isinstance(value.func, cst.Attribute) and value.func.attr.value == "join" and value.args:
            value = value.args[0].value
        parts = [e.value for e in value.elements] if isinstance(value, (cst.List, cst.Tuple)) else [value]
        returned |= {p.value for p in parts if isinstance(p, cst.Name)}
    returned |= _sent_names(ctx, function)
    target = ctx.code(node.value)
    if any(isinstance(n, cst.Subscript) and ctx.code(n.value) == target and _window_split(n) for n in descendants(function)):
        return False  # turns[:-4] beside turns[-4:]: the split is judged as one (positional_windows)
    for ancestor in ctx.ancestors(node):
        if isinstance(ancestor, cst.For):
            return any((isinstance(n, cst.Call) and isinstance(n.func, cst.Attribute) and n.func.attr.value in ("append", "extend")
                        and isinstance(n.func.value, cst.Name) and n.func.value.value in returned)
                       or (isinstance(n, cst.AugAssign) and isinstance(n.target, cst.Name) and n.target.value in returned
                           and isinstance(n.value, (cst.List, cst.ListComp)))  # messages += [...]; text += "..." renders
                       for n in descendants(ancestor.body))
        if isinstance(ancestor, cst.CompFor):
            comprehension = ctx.parent(ancestor)
            holder = ctx.parent(comprehension) if comprehension is not None else None
            if isinstance(holder, cst.Return):
                return True
            if isinstance(holder, cst.Assign):
                return any(isinstance(t.target, cst.Name) and t.target.value in returned for t in holder.targets)
            if isinstance(holder, cst.AugAssign):  # messages += [{"role": m.role, ...} for m in self.history[-n:]]
                return isinstance(holder.target, cst.Name) and holder.target.value in returned
            return False
        if isinstance(ancestor, (cst.SimpleStatementLine, *SCOPES)):
            return False
    return False


SENT_KEYWORDS = frozenset({"messages", "input", "contents", "chat_history", "history"})


def _sent_names(ctx: ModuleContext, function: cst.FunctionDef) -> set[str]:
    """Names the function sends as a request's messages: `create(..., messages=messages)`, `llm.invoke(messages)`,
    or hands to a function of the module that sends them (`self._complete(messages)`, `ask_llm(messages)`)."""
    per_function = _SENT_NAMES.setdefault(ctx, {})
    found = per_function.get(id(function))
    if found is None:
        found = per_function[id(function)] = (_sent_directly(function) | _handed_to_senders(ctx, function, sending_parameters(ctx))
                                              | _handed_on_elsewhere(ctx, function))
    return found


def _sent_directly(function: cst.FunctionDef, keywords: frozenset[str] = SENT_KEYWORDS) -> set[str]:
    sent = set()
    for call in descendants(function):
        if not isinstance(call, cst.Call):
            continue
        for position, arg in enumerate(call.args):
            if not isinstance(arg.value, cst.Name):
                continue
            if (arg.keyword is not None and arg.keyword.value in keywords) or (
                    arg.keyword is None and position == 0 and _last_name(call.func) in REQUEST_METHODS):
                sent.add(arg.value.value)
    return sent


# what a wrapper must send its parameter as to count as a sender: `input=` and `history=` also name embeddings,
# moderations and templates (`render_template("chat.html", history=msgs)`)
WRAPPED_KEYWORDS = frozenset({"messages", "contents", "chat_history"})
# the name of a hook left to subclasses that makes the request (`_chat_completion`, `generate`, `ask_llm`)
REQUEST_HOOK = re.compile(r"chat|complet|generat|llm|ask|invoke|request|respond|call_model|send", re.I)

_SENDERS: WeakKeyDictionary[ModuleContext, dict[int, set[str]]] = WeakKeyDictionary()
_SENT_NAMES: WeakKeyDictionary[ModuleContext, dict[int, set[str]]] = WeakKeyDictionary()  # per function, asked once per window
_FROM_IMPORTS: WeakKeyDictionary[ModuleContext, dict[str, cst.ImportFrom]] = WeakKeyDictionary()
WRAPPER_DEPTH = 4  # wrappers of wrappers followed


def sending_parameters(ctx: ModuleContext) -> dict[int, set[str]]:
    """The parameters each function of the module sends as a request's messages (by id of the function): itself,
    or through other functions of the module that do, up to WRAPPER_DEPTH levels (`def _complete(self, msgs):
    return client.chat.completions.create(messages=msgs)`; `def ask(self, msgs): return self._complete(msgs)`).
    An overridable hook handed a history (`def _chat_completion(self, history): raise NotImplementedError`) sends
    it too: its overrides, in other modules, are the requests."""
    found = _SENDERS.get(ctx)
    if found is not None:
        return found
    found = {}
    functions = [f for group in ctx.functions.values() for f in group]
    for function in functions:
        params = _params(function)
        sent = _sent_directly(function, WRAPPED_KEYWORDS) & params
        if _abstract(function) and REQUEST_HOOK.search(function.name.value):
            sent |= {p for p in params if HISTORY_NAME.search(p)}
        if sent:
            found[id(function)] = sent
    for _ in range(WRAPPER_DEPTH - 1):
        grown = False
        for function in functions:
            new = (_handed_to_senders(ctx, function, found) & _params(function)) - found.get(id(function), set())
            if new:
                found.setdefault(id(function), set()).update(new)
                grown = True
        if not grown:
            break
    _SENDERS[ctx] = found
    return found


def _handed_to_senders(ctx: ModuleContext, function: cst.FunctionDef, senders: dict[int, set[str]]) -> set[str]:
    """Names the function passes to a function of the module at a parameter that one sends."""
    handed = set()
    for call in descendants(function):
        if not isinstance(call, cst.Call):
            continue
        for callee in ctx.called_functions(call):
            for param in senders.get(id(callee), ()):
                passed = argument_for(call, param, positional_index(callee, param))
                if isinstance(passed, cst.Name):
                    handed.add(passed.value)
    return handed


def _handed_on_elsewhere(ctx: ModuleContext, function: cst.FunctionDef) -> set[str]:
    """Names the function passes to a function or method of another module of the tree that sends them: an
    imported function (`from .llm import ask`; `ask(messages)`), a method inherited from a base class there
    (`self._chat_completion(messages)`), or one of an object whose class is known (`self.llm = LLM()`)."""
    handed = set()
    for call in descendants(function):
        if not isinstance(call, cst.Call) or ctx.called_functions(call) or not any(isinstance(a.value, cst.Name) for a in call.args):
            continue
        found = foreign_callee(ctx, call)
        if found is None:
            continue
        other, callee = found
        for param in sending_parameters(other).get(id(callee), ()):
            passed = argument_for(call, param, positional_index(callee, param))
            if isinstance(passed, cst.Name):
                handed.add(passed.value)
    return handed


def foreign_callee(ctx: ModuleContext, call: cst.Call) -> tuple[ModuleContext, cst.FunctionDef] | None:
    from cachelint.check.project import imported_definition, star_imported_definition

    func = call.func
    if isinstance(func, cst.Attribute) and isinstance(func.value, cst.Name) and func.value.value in ("self", "cls"):
        cls = ctx.enclosing(call, (cst.ClassDef,))
        return _method_of(ctx, cls.name.value, func.attr.value, 2) if isinstance(cls, cst.ClassDef) else None
    if isinstance(func, cst.Attribute):
        return _resolved_method(ctx, call)
    if not isinstance(func, cst.Name):
        return None
    node = _from_imports(ctx).get(func.value)
    try:
        if node is not None:
            found = imported_definition(ctx, node, func.value, 1)
        elif "import *" in ctx.source and not _defined_here(ctx, func.value):
            found = star_imported_definition(ctx, func.value)  # from inference import *; query_model(...)
        else:
            return None
    except (RecursionError, ValueError, OSError):
        return None
    return found if found is not None and isinstance(found[1], cst.FunctionDef) else None


def _from_imports(ctx: ModuleContext) -> dict[str, cst.ImportFrom]:
    """The module's top-level `from ... import name` statements by the name they bind (built once per module)."""
    found = _FROM_IMPORTS.get(ctx)
    if found is None:
        found = {}
        for stmt in ctx.module.body:
            for small in stmt.body if isinstance(stmt, cst.SimpleStatementLine) else ():
                if isinstance(small, cst.ImportFrom) and not isinstance(small.names, cst.ImportStar):
                    for alias in small.names:
                        bound = alias.asname.name if alias.asname is not None else alias.name
                        if isinstance(bound, cst.Name):
                            found[bound.value] = small
        _FROM_IMPORTS[ctx] = found
    return found


def _abstract(function: cst.FunctionDef) -> bool:
    """A method left for subclasses: `@abstractmethod`, or a body that only raises `NotImplementedError` (after a
    docstring); a body of `pass` or `...` is as likely a no-op default (`def save(self, messages): pass`)."""
    if any(_last_name(d.decorator) == "abstractmethod" for d in function.decorators):
        return True
    body = function.body.body if isinstance(function.body, cst.IndentedBlock) else [function.body]
    for statement in body:
        smalls = statement.body if isinstance(statement, cst.SimpleStatementLine) else [statement]
        for small in smalls:
            if isinstance(small, cst.Expr) and isinstance(small.value, (cst.SimpleString, cst.ConcatenatedString)):
                continue
            return isinstance(small, cst.Raise) and small.exc is not None and _last_name(
                small.exc.func if isinstance(small.exc, cst.Call) else small.exc) == "NotImplementedError"
    return False


def _collects(loop: cst.For) -> bool:
    """The loop's body appends to a conversation (`messages.append(m)`, `history.extend(run.messages)`, `messages +=
    [...]`)."""
    for n in descendants(loop.body):
        if isinstance(n, cst.Call) and isinstance(n.func, cst.Attribute) and n.func.attr.value in ("append", "extend") \
                and (name := _last_name(n.func.value)) is not None and HISTORY_NAME.search(name):
            return True
        if isinstance(n, cst.AugAssign) and isinstance(n.operator, cst.AddAssign) and (name := _last_name(n.target)) is not None \
                and HISTORY_NAME.search(name):
            return True
    return False


def _in_for_header(ctx: ModuleContext, node: cst.CSTNode) -> bool:
    """`for m in history[-5:]`: read, not kept."""
    for ancestor in ctx.ancestors(node):
        if isinstance(ancestor, (cst.For, cst.CompFor)):
            return ctx.contains(ancestor.iter, node) or ancestor.iter is node
        if isinstance(ancestor, (cst.SimpleStatementLine, *SCOPES)):
            return False
    return False


OMITTED = re.compile(r"\b(?:omitted|truncated|elided|skipped)\b", re.I)  # "[... 12 previous steps omitted ...]"


def _rendered_window(ctx: ModuleContext, function: cst.FunctionDef, node: cst.Subscript) -> bool:
    """`[first.render(), "[... 12 steps omitted ...]", *(i.render() for i in items[-n:])]`: a text renderer that keeps
    the first item (or an omission marker) and the latest n of a growing history (a comprehension over the late
    slice, kept). Once the list is longer than the window, every new item shifts it: the rendered history changes
    right after its head. A comprehension that only reads the latest items (for a check, a log line) keeps no
    head and writes no omission marker, and stays quiet."""
    comp = ctx.parent(node)
    if not isinstance(comp, cst.CompFor) or comp.iter is not node:
        return False
    expression = ctx.parent(comp)
    if not isinstance(expression, (cst.ListComp, cst.GeneratorExp)) or not _kept_as_history(ctx, expression):
        return False
    target = ctx.code(node.value)
    statement = ctx.statement_of(node)
    used = {n.value for n in descendants(statement) if isinstance(n, cst.Name)} if statement is not None else set()

    def beside(head: cst.CSTNode) -> bool:  # the head kept in the same text: in the statement, or in a name it uses
        own = ctx.statement_of(head)
        if own is statement:
            return True
        small = own.body[0] if isinstance(own, cst.SimpleStatementLine) and own.body else own
        if isinstance(small, cst.Expr) and isinstance(small.value, cst.Call) and isinstance(small.value.func, cst.Attribute):
            grown = small.value.func  # `lines.append(steps[0].describe())` / `lines.insert(0, "... omitted")`, then `lines.extend(...)`
            return grown.attr.value in ("append", "insert", "extend") and isinstance(grown.value, cst.Name) and grown.value.value in used
        return isinstance(small, cst.Assign) and any(isinstance(t.target, cst.Name) and t.target.value in used for t in small.targets)

    keeps_head = any(isinstance(n, cst.Subscript) and ctx.code(n.value) == target and _front_subscript(n) and n is not node
                     and beside(n) for n in ctx.nodes(cst.Subscript) if ctx.contains(function, n))
    marker = any(OMITTED.search(ctx.code(n)) for n in _own_nodes(function) if isinstance(n, (cst.SimpleString, cst.FormattedString))
                 and beside(n))
    return keeps_head or marker


def _kept_as_history(ctx: ModuleContext, node: cst.BaseExpression) -> bool:
    """The cut list is stored, returned, written or sent: not a look at the last few messages for a check."""
    for ancestor in ctx.ancestors(node):
        if isinstance(ancestor, (cst.Assign, cst.AnnAssign, cst.Return, cst.AugAssign)):
            return True
        if isinstance(ancestor, cst.Call) and isinstance(ancestor.func, cst.Attribute) and ancestor.func.attr.value in ("extend", "dump", "dumps", "write"):
            return True
        if isinstance(ancestor, cst.Call) and isinstance(ancestor.func, cst.Name) and ancestor.func.value in ("len", "any", "all", "sum", "print", "reversed", "enumerate"):
            return False
        if isinstance(ancestor, (cst.SimpleStatementLine, cst.If, cst.While, *SCOPES)):
            return False
    return False


CONTENT_ATTRS = frozenset({"content", "text", "blocks", "parts", "tool_calls"})


# a function (or its class) that repairs a malformed conversation: Validator.assistant_tool_calls_followed_by_tool,
# repair_tool_pairs, sanitize_messages
REPAIRS = re.compile(r"valid|repair|sanitiz|heal|fixup|(?:^|_)fix_", re.I)


def _repairs_a_broken_history(ctx: ModuleContext, function: cst.FunctionDef, target: cst.BaseExpression) -> bool:
    """Tool calls without their results taken out by a validator (`message.tool_calls = None` in
    `Validator.assistant_tool_calls_followed_by_tool`): the provider refuses such a conversation as it is, and once
    repaired it stays repaired, so nothing a cache holds is rewritten turn by turn. Only the tool calls: a
    `sanitize_messages` that blanks old tool outputs is a rewrite."""
    edited = target.attr.value if isinstance(target, cst.Attribute) else ""
    if isinstance(target, cst.Subscript) and isinstance(target.slice[0].slice, cst.Index) \
            and isinstance(target.slice[0].slice.value, cst.SimpleString):
        edited = target.slice[0].slice.value.value.strip("'\"")
    if edited != "tool_calls":
        return False
    cls = ctx.enclosing(function, (cst.ClassDef,))
    names = [function.name.value, *([cls.name.value] if isinstance(cls, cst.ClassDef) else [])]
    return any(REPAIRS.search(name) for name in names)


def _copy_edit(ctx: ModuleContext, function: cst.FunctionDef, node: cst.Assign) -> Rewrite | None:
    """`data = entry.copy(); data["content"] = "(omitted)"` in a loop over the history, under a condition on the
    entry's position or on later entries (not a format conversion applied to every message alike); or a message
    object's content set (`msg.content = "(omitted)"`, on the message itself or on a copy)."""
    if len(node.targets) != 1:
        return None
    target = node.targets[0].target
    if isinstance(target, cst.Attribute) and isinstance(target.value, cst.Name) and target.attr.value in CONTENT_ATTRS:
        copy_name = target.value.value  # m.content = ..., msg.blocks = [...]: a message object's content
    elif isinstance(target, cst.Subscript) and isinstance(target.value, cst.Name) and isinstance(target.slice[0].slice, cst.Index):
        key = target.slice[0].slice.value
        if not (isinstance(key, cst.SimpleString) and key.value.strip("'\"") == "content"):
            return None
        copy_name = target.value.value
    else:
        return None
    loop = ctx.enclosing(node, (cst.For,))
    if not isinstance(loop, cst.For) or not ctx.contains(function, loop):
        return None
    if _repairs_a_broken_history(ctx, function, target):
        return None
    params = _params(function)
    history = loop.iter.args[0].value if isinstance(loop.iter, cst.Call) and loop.iter.args and _last_name(loop.iter.func) in ("enumerate", "reversed") else loop.iter
    older = _older_than_the_latest(ctx, function, history)
    if older is not None and _is_history(ctx, function, older) and copy_name in {n.value for n in descendants(loop.target) if isinstance(n, cst.Name)}:
        # for msg in messages[:len(messages) - keep]: msg["content"] = PLACEHOLDER: every entry older than the latest few,
        # one more each turn as the cut moves
        return Rewrite(node, ctx.code(older), "replaces the content of the entries older than the latest few, one more each turn, in")
    if not _is_history(ctx, function, history):
        return None
    element = {n.value for n in descendants(loop.target) if isinstance(n, cst.Name)}
    if isinstance(loop.iter, cst.Call) and _last_name(loop.iter.func) == "enumerate" and isinstance(loop.target, cst.Tuple) \
            and isinstance(loop.target.elements[0].value, cst.Name):
        element.discard(loop.target.elements[0].value.value)  # the position: a condition on it is positional
    in_body = {t.value for stmt in descendants(loop.body) if isinstance(stmt, (cst.Assign, cst.AugAssign, cst.AnnAssign))
               for target in (stmt.targets if isinstance(stmt, cst.Assign) else [stmt])
               for t in descendants(target.target) if isinstance(t, cst.Name)}
    # the stored message object itself, edited: only in a list named as a conversation (a list of search results
    # or snippets also has `.content`)
    copied = isinstance(target, cst.Attribute) and copy_name in element and HISTORY_NAME.search(_last_name(history) or "") is not None
    for stmt in descendants(loop.body):
        if isinstance(stmt, cst.Assign) and any(isinstance(t.target, cst.Name) and t.target.value == copy_name for t in stmt.targets):
            value = stmt.value
            if isinstance(value, cst.Call) and isinstance(value.func, cst.Attribute) and value.func.attr.value in ("copy", "model_copy") \
                    and ctx.code(value.func.value) in element:
                copied = True
            elif isinstance(value, cst.Call) and _last_name(value.func) in ("dict", "deepcopy") and value.args and ctx.code(value.args[0].value) in element:
                copied = True
    # `for i, msg in enumerate(messages_copy): if i not in keep: msg["content"] = "(omitted)"`: the loop's own
    # message edited, judged like a message object below (only under a test of its place)
    direct = not copied and isinstance(target, cst.Subscript) and copy_name in element
    if not copied and not direct:
        return None
    conditions = []
    child: cst.CSTNode = node
    for ancestor in ctx.ancestors(node):
        if ancestor is loop:
            break
        if isinstance(ancestor, cst.If) and child is not ancestor.test:
            conditions.append(ancestor.test)
        child = ancestor
    # a condition on the message's position, or on state kept from message to message (a set made before the
    # loop and filled in it), not one on the message's own content (read into names in the loop body)
    positional = [c for c in conditions if any(isinstance(n, cst.Name) and n.value not in element and n.value not in in_body
                                               and n.value not in (copy_name, "self") and n.value not in BUILTINS
                                               and n.value not in params  # an option of the call: every message alike
                                               and not (isinstance(ctx.parent(n), cst.Attribute) and ctx.parent(n).attr is n)
                                               and not (isinstance(ctx.parent(n), cst.Call) and ctx.parent(n).func is n)  # a predicate
                                               for n in descendants(c))]
    if not positional:
        return None
    if isinstance(target, cst.Attribute) or direct:  # a message object edited: only under a test of its place (`i < n - keep`)
        counters = {n.target.value for n in descendants(loop.body) if isinstance(n, cst.AugAssign) and isinstance(n.target, cst.Name)}
        place = _position_names(loop) | counters
        listed = ctx.code(history)
        if not any((isinstance(n, cst.Name) and n.value in place) or (isinstance(n, cst.Call) and _last_name(n.func) == "len" and n.args
                                                                     and ctx.code(n.args[0].value) == listed)
                   for c in positional for n in descendants(c)):
            return None
    return Rewrite(node, ctx.code(history), "replaces the content of earlier messages of")


def _older_than_the_latest(ctx: ModuleContext, function: cst.FunctionDef, walked: cst.BaseExpression) -> cst.BaseExpression | None:
    """The list whose older part `walked` is: `messages[:len(messages) - keep]`, or `messages[:cutoff]` after
    `cutoff = len(messages) - keep` in the function."""
    if not (isinstance(walked, cst.Subscript) and len(walked.slice) == 1 and isinstance(walked.slice[0].slice, cst.Slice)):
        return None
    index = walked.slice[0].slice
    if index.lower is not None or index.upper is None or index.step is not None:
        return None
    target = ctx.code(walked.value)
    upper = index.upper
    if _length_less(ctx, upper, target):
        return walked.value
    if isinstance(upper, cst.Name) and any(value is not None and ctx.enclosing_function(value) is function and _length_less(ctx, value, target)
                                           for _, value in ctx.assigned_values(upper)):
        return walked.value
    return None


def _targets(node: cst.BaseExpression) -> list[cst.BaseExpression]:
    if isinstance(node, (cst.Tuple, cst.List)):
        return [e.value for e in node.elements]
    return [node]


# --- cuts decided by the caller, and trimming functions out of sight -----------------------------------------


def _trimming_call(ctx: ModuleContext, call: cst.Call) -> Rewrite | None:
    """`messages = tt.trim(messages, ...)` (a function of an imported package whose name says it cuts), or
    `convo.trim(1, 2)` in a loop, where `trim` is a method of a class of the tree that cuts at the positions it
    is given (a method that decides its cut itself is reported where it cuts, not at its callers)."""
    name = _last_name(call.func)
    if name is None:
        return None
    parent = ctx.parent(call)
    if TRIM_NAME.search(name) and isinstance(parent, cst.Assign) and call.args:
        first = call.args[0].value
        keeps_start = any(string_value(a.value) in KEEP_START for a in call.args[1:])  # trim_to_tokens(text, n, direction="start")
        if any(ctx.code(t.target) == ctx.code(first) for t in parent.targets) and _is_history(ctx, ctx.module, first) \
                and not _defined_here(ctx, name) and _is_external(ctx, call) and not keeps_start \
                and not _defined_in_the_tree(ctx, call):
            return Rewrite(call, ctx.code(first), f"cuts (with {ctx.code(call.func)}())")
    if isinstance(call.func, cst.Attribute) and isinstance(call.func.value, cst.Name) and HISTORY_NAME.search(call.func.value.value) \
            and name not in _LIST_METHODS and any(isinstance(a.value, cst.Integer) for a in call.args) and ctx.loops_around(call):
        method = _resolved_method(ctx, call)  # convo.trim(1, 2): only a conversation object is resolved (names cost scopes)
        if method is not None:
            other, function = method
            if _cuts_at_params(other, function, _params(function)):
                return Rewrite(call, ctx.code(call.func.value), f"cuts messages out of the middle of (with {ctx.code(call.func)}())")
    return None


KEEP_START = frozenset({"start", "first", "head", "beginning", "left"})  # a cut that keeps the start: the prefix stays


def _defined_here(ctx: ModuleContext, name: str) -> bool:
    return any(key == name or key.endswith(f".{name}") for key in ctx.functions)


def _defined_in_the_tree(ctx: ModuleContext, call: cst.Call) -> bool:
    """`from docetl.operations.utils import truncate_messages`: a trimming function imported from a module of the
    linted tree. Its body is in sight, so what it cuts is judged where it cuts (a helper that returns the history
    untouched while it fits the context window, or edits only the newest messages, cuts nothing a cache holds);
    only a package out of sight is judged by its name."""
    from cachelint.check.project import imported_function

    found = imported_function(ctx, call)
    if found is None:
        return False
    other, function = found
    body = function.body.body if isinstance(function.body, cst.IndentedBlock) else []
    return bool(body) and (_removes_nothing(other, function) or _returned_early_while_it_fits(
        other, function, body[-1], _window_arguments(ctx, call, function)))


def _window_arguments(ctx: ModuleContext, call: cst.Call, function: cst.FunctionDef) -> frozenset[str]:
    """The parameters of `function` (of another module) that this call passes the context window to:
    `truncate_messages_to_fit(conversation, max_input_tokens)` makes the callee's `max_tokens` the window here."""
    from cachelint.check.depends import positional_index
    from cachelint.check.module import argument_for

    names = [p.name.value for p in (*function.params.params, *function.params.kwonly_params) if p.name.value not in ("self", "cls")]
    return frozenset(name for name in names if (arg := argument_for(call, name, positional_index(function, name))) is not None
                     and _a_window_value(ctx, arg))


def _removes_nothing(ctx: ModuleContext, function: cst.FunctionDef) -> bool:
    """The function never drops an item of the list it is given: no slice of it, no pop / remove / del, no list
    made anew and returned (mito's trim_old_messages edits the metadata of old messages in place and returns the
    list)."""
    params = [p.name.value for p in function.params.params if p.name.value not in ("self", "cls")]
    if not params:
        return False
    first = params[0]
    for node in _own_nodes(function):
        if isinstance(node, cst.Subscript) and ctx.code(node.value) == first and isinstance(node.slice[0].slice, cst.Slice):
            return False
        if isinstance(node, cst.Call) and isinstance(node.func, cst.Attribute) and ctx.code(node.func.value) == first \
                and node.func.attr.value in ("pop", "remove", "clear", "insert"):
            return False
        if isinstance(node, cst.Del) or (isinstance(node, cst.Return) and node.value is not None and ctx.code(node.value) != first):
            return False
    return True


def _is_external(ctx: ModuleContext, call: cst.Call) -> bool:
    """A module-level function of an imported package (`tt.trim`, `tokentrim.trim`), not a method of a local object."""
    func = call.func
    root = func
    while isinstance(root, cst.Attribute):
        root = root.value
    if not isinstance(root, cst.Name):
        return False
    return any(isinstance(binding, (cst.Import, cst.ImportFrom)) for binding, _ in ctx.assigned_values(root))


def _cuts_at_params(ctx: ModuleContext, function: cst.FunctionDef, params: set[str]) -> bool:
    """`self.messages = self.messages[:i] + self.messages[i + n:]`, `del self.messages[i:i + n]`: a cut at positions
    the caller gives."""
    for node in _own_nodes(function):
        if isinstance(node, cst.Assign) and isinstance(node.value, cst.BinaryOperation):
            target = ctx.code(node.targets[0].target)
            slices = [n for n in descendants(node.value) if isinstance(n, cst.Subscript) and ctx.code(n.value) == target
                      and isinstance(n.slice[0].slice, cst.Slice)]
            if len(slices) >= 2 and any(_uses(s.slice[0].slice, params) for s in slices) and _is_history(ctx, function, node.targets[0].target):
                return True
        if isinstance(node, cst.Del):
            for target in _targets(node.target):
                if isinstance(target, cst.Subscript) and _uses(target.slice[0].slice, params) and _is_history(ctx, function, target.value):
                    return True
    return False


def _resolved_method(ctx: ModuleContext, call: cst.Call) -> tuple[ModuleContext, cst.FunctionDef] | None:
    """The method a call `x.m(...)` runs, when the class of `x` is known: bound to `Cls(...)`, to a chain that
    starts there (`Cls(a).template(b)`), to what a method of this class returns, or annotated `Cls`; `Cls` a class
    of this module or of an imported module of the tree (its bases followed once)."""
    func = call.func
    if isinstance(func, cst.Attribute) and isinstance(func.value, cst.Attribute) and isinstance(func.value.value, cst.Name) \
            and func.value.value.value == "self":
        return _attribute_method(ctx, call, func.value.attr.value, func.attr.value)
    if not isinstance(func, cst.Attribute) or not isinstance(func.value, cst.Name):
        return None
    cls_name = _class_of(ctx, func.value, 0)
    if cls_name is None:
        return None
    return _method_of(ctx, cls_name, func.attr.value, 2)


def _attribute_method(ctx: ModuleContext, call: cst.Call, attribute: str, method: str) -> tuple[ModuleContext, cst.FunctionDef] | None:
    """`self.llm.acall(...)`: the method of the class an attribute of the object is set to in its class
    (`self.llm = LLM(model)`, or a parameter annotated with the class)."""
    from cachelint.check.callsites import _self_assignments

    cls = ctx.enclosing(call, (cst.ClassDef,))
    if not isinstance(cls, cst.ClassDef):
        return None
    for value in _self_assignments(ctx, cls, attribute)[:4]:
        cls_name = _class_of(ctx, value, 1)
        found = _method_of(ctx, cls_name, method, 2) if cls_name is not None else None
        if found is not None:
            return found
    return None


def _class_of(ctx: ModuleContext, expr: cst.BaseExpression, depth: int) -> str | None:
    """The name of the class `expr` evaluates to an instance of, where the code says so (bounded)."""
    if depth > 4:
        return None
    if isinstance(expr, cst.Await):
        return _class_of(ctx, expr.expression, depth + 1)
    if isinstance(expr, cst.IfExp):  # `LLM(model) if isinstance(model, str) else model`
        return _class_of(ctx, expr.body, depth + 1) or _class_of(ctx, expr.orelse, depth + 1)
    if isinstance(expr, cst.Name):
        for binding, value in ctx.assigned_values(expr):
            if isinstance(binding, cst.Param) and binding.annotation is not None:
                annotation = binding.annotation.annotation
                if isinstance(annotation, cst.Name):
                    return annotation.value
            if value is not None and value is not expr:
                found = _class_of(ctx, value, depth + 1)
                if found is not None:
                    return found
        return None
    if not isinstance(expr, cst.Call):
        return None
    func = expr.func
    if isinstance(func, cst.Name):
        return func.value if func.value[:1].isupper() else None  # Cls(...)
    if not isinstance(func, cst.Attribute):
        return None
    if isinstance(func.value, cst.Name) and func.value.value == "self":
        cls = ctx.enclosing(expr, (cst.ClassDef,))
        for method in ctx.functions.get(f"{cls.name.value}.{func.attr.value}", []) if isinstance(cls, cst.ClassDef) else []:
            for value in ctx.returns_of(method):
                found = _class_of(ctx, value, depth + 1)
                if found is not None:
                    return found
        return None
    if isinstance(func.value, cst.Call) and isinstance(func.value.func, cst.Name):
        head = func.value  # Cls(a).template(b): a builder returning itself
        return _class_of(ctx, head, depth + 1)
    inner = _class_of(ctx, func.value, depth + 1)
    if inner is None:
        return None
    found = _method_of(ctx, inner, func.attr.value, 2)
    if found is not None:
        other, method = found
        returns = method.returns.annotation if method.returns is not None else None
        name = returns.value if isinstance(returns, cst.Name) else string_value(returns)
        if name == inner or any(isinstance(v, cst.Name) and v.value == "self" for v in other.returns_of(method)):
            return inner  # convo = convo.template(...): the same conversation, returned by its method
    return None


def _method_of(ctx: ModuleContext, cls_name: str, method: str, hops: int) -> tuple[ModuleContext, cst.FunctionDef] | None:
    from cachelint.check.project import imported_definition

    for cls in ctx.nodes(cst.ClassDef):
        if cls.name.value == cls_name and isinstance(ctx.parent(cls), cst.Module):
            for stmt in cls.body.body:
                if isinstance(stmt, cst.FunctionDef) and stmt.name.value == method:
                    return ctx, stmt
            for base in cls.bases:  # an inherited method
                if isinstance(base.value, cst.Name) and hops > 0:
                    found = _method_of(ctx, base.value.value, method, hops - 1)
                    if found is not None:
                        return found
            return None
    if hops <= 0:
        return None
    for stmt in ctx.module.body:
        if isinstance(stmt, cst.SimpleStatementLine):
            for small in stmt.body:
                if isinstance(small, cst.ImportFrom):
                    try:
                        found = imported_definition(ctx, small, cls_name, 1)
                    except (RecursionError, ValueError, OSError):
                        found = None
                    if found is not None and isinstance(found[1], cst.ClassDef):
                        return _method_of(found[0], cls_name, method, hops - 1)
    return None


# --- the prefix re-rendered from current state on every request ----------------------------------------------


@dataclass(slots=True)
class Rerender:
    node: cst.CSTNode  # where the current state enters the prefix
    what: str  # a sentence: what is re-rendered, from what, and where the state changes


STATE_MUTATORS = frozenset({"update", "setdefault", "pop", "popitem", "clear", "append", "extend", "add", "insert", "remove", "discard"})
SETUP_METHODS = frozenset({"__init__", "__post_init__", "model_post_init", "setup", "__enter__"})
PREDICATES = frozenset({"callable", "isinstance", "len", "bool", "hasattr", "getattr", "type", "id"})


def rerendered_instructions(ctx: ModuleContext) -> Iterator[Rerender]:
    """The system prompt (a `{"role": "system"}` message, `system=` or `instructions=`) rendered on every request by a
    call from a dict or list that the loop sending the conversation updates between requests: swarm-style callable
    instructions `agent.instructions(context_variables)` with tool results merged into `context_variables`, or a
    template `SYSTEM.format(**state)` with `state[key] = ...` in the agent loop. Each update that changes the text
    changes the leading system message, and every cached message after it is prefilled again.

    Reported only where the loop also grows a conversation (a history appended to in it): a batch of independent
    one-shot requests whose system prompt differs per item is another problem (per-request data, CL104)."""
    seen: set[int] = set()
    for function, value in _system_values(ctx):
        for render, state in _renders_from(ctx, function, value):
            if id(render) in seen:
                continue
            for loop, state_code in _loops_sending(ctx, function, render, state):
                mutation = _mutation_in(ctx, loop, state_code)
                if mutation is None or not grows_a_conversation(ctx, loop):
                    continue
                seen.add(id(render))
                line = ctx.span(mutation).row
                yield Rerender(render, f"the system prompt is rendered by `{short_code(ctx, render)}` on every request from `{state}`, which the "
                               f"loop that continues the conversation updates between its requests (line {line}: `{short_code(ctx, mutation)}`)")
                break


def _system_values(ctx: ModuleContext) -> Iterator[tuple[cst.FunctionDef, cst.BaseExpression]]:
    """(function, value) for the system prompts built inside a function: the content of a system message and the
    `system=` / `instructions=` argument of a call."""
    for node in ctx.nodes(cst.Dict):
        fields = {}
        for element in node.elements:
            if isinstance(element, cst.DictElement) and isinstance(element.key, cst.SimpleString):
                fields[element.key.value.strip("'\"")] = element.value
        role = fields.get("role")
        if isinstance(role, cst.SimpleString) and role.value.strip("'\"") in ("system", "developer") and "content" in fields:
            function = ctx.enclosing_function(node)
            if function is not None:
                yield function, fields["content"]
    for call in ctx.nodes(cst.Call):
        for arg in call.args:
            if arg.keyword is not None and arg.keyword.value in ("system", "instructions", "system_prompt"):
                function = ctx.enclosing_function(call)
                if function is not None:
                    yield function, arg.value


def _renders_from(ctx: ModuleContext, function: cst.FunctionDef, value: cst.BaseExpression) -> Iterator[tuple[cst.Call, str]]:
    """(call, name) for the calls that compute the system prompt from a name of this function: the value itself, or
    what the function assigned to it (one hop)."""
    expressions = [value]
    if isinstance(value, cst.Name):  # read syntactically: scope metadata costs more than this whole check
        expressions += [n.value for n in descendants(function) if isinstance(n, cst.Assign)
                        and any(isinstance(t.target, cst.Name) and t.target.value == value.value for t in n.targets)]
    for expression in expressions:
        for call in [expression, *descendants(expression)]:
            if not isinstance(call, cst.Call) or _last_name(call.func) in PREDICATES:
                continue
            for arg in call.args:
                names = [arg.value] if isinstance(arg.value, cst.Name) else []
                for name in names:
                    yield call, name.value


def _loops_sending(ctx: ModuleContext, function: cst.FunctionDef, render: cst.Call, state: str) -> Iterator[tuple[cst.CSTNode, str]]:
    """(loop, the state's name there) for each loop that sends requests rendered from `state`: a loop around the
    render itself, or a loop of this module that calls `function` with the state as an argument."""
    loops = ctx.loops_around(render)
    if loops:
        yield loops[0], state
    params = list(function.params.params) + list(function.params.kwonly_params)
    names = [p.name.value for p in params]
    if state not in names:
        return
    method = ctx.enclosing(function, (cst.ClassDef,)) is not None and names[:1] == ["self"]
    index = names.index(state) - (1 if method else 0)
    for call in ctx.calls_by_name.get(function.name.value, []):
        if ctx.contains(function, call):
            continue
        around = ctx.loops_around(call)
        if not around:
            continue
        for position, arg in enumerate(call.args):
            keyword = arg.keyword.value if arg.keyword is not None else None
            if (keyword == state or (keyword is None and arg.star == "" and position == index)) and isinstance(arg.value, (cst.Name, cst.Attribute)):
                yield around[0], ctx.code(arg.value)


def _mutation_in(ctx: ModuleContext, region: cst.CSTNode, target: str) -> cst.CSTNode | None:
    """The first statement in `region` that changes the dict or list named `target` in place, where the value outlives
    one pass of the loop: a name bound anew in the loop (`text = base` then `text += extra`, `ctx = {}` then
    `ctx[k] = v`) is rebuilt alike for every request."""
    nodes = descendants(region)
    rebound = {ctx.code(t.target) for n in nodes if isinstance(n, cst.Assign) for t in n.targets} \
        | {ctx.code(n.target) for n in nodes if isinstance(n, cst.AnnAssign)}
    if target in rebound:
        return None
    for node in nodes:
        if isinstance(node, cst.Call) and isinstance(node.func, cst.Attribute) and node.func.attr.value in STATE_MUTATORS \
                and ctx.code(node.func.value) == target:
            return node
        if isinstance(node, cst.Assign) and any(isinstance(t.target, cst.Subscript) and _root(ctx, t.target) == target for t in node.targets):
            return node
        if isinstance(node, cst.AugAssign) and ctx.code(node.target) == target:
            return node
    return None


def grows_a_conversation(ctx: ModuleContext, loop: cst.CSTNode) -> bool:
    """The loop appends to a conversation (`history.append(...)`, `messages += [...]`): its requests are turns of one.
    Memoized per loop: every request made in the loop (or in closures its pass runs) asks it again."""
    memo = ctx.__dict__.setdefault("_grows_a_conversation", {})
    if id(loop) not in memo:
        memo[id(loop)] = _grows_a_conversation(ctx, loop)
    return memo[id(loop)]


def _grows_a_conversation(ctx: ModuleContext, loop: cst.CSTNode) -> bool:
    function = ctx.enclosing_function(loop) or ctx.module
    for node in descendants(loop):
        if isinstance(node, cst.Call) and isinstance(node.func, cst.Attribute) and node.func.attr.value in ("append", "extend") \
                and _is_history(ctx, function, node.func.value):
            return True
        if isinstance(node, cst.AugAssign) and _is_history(ctx, function, node.target):
            return True
    return False


def _root(ctx: ModuleContext, node: cst.BaseExpression) -> str:
    while isinstance(node, cst.Subscript):
        node = node.value
    return ctx.code(node)


def rerendered_past_messages(ctx: ModuleContext) -> Iterator[Rerender]:
    """A conversion run over the whole history on every request that builds each earlier message with the object's
    current state (`self._previous_thinking_blocks`, `self.tools`) set by another method after each response: every
    past message of that kind changes content whenever the state does, and the history after it is prefilled again.
    State set only at construction (`__init__`) is the same for every request and stays quiet, as does state that
    only enters the newest message (after the loop, or under a condition on the position)."""
    state = run_time_attributes(ctx)
    if not state:
        return
    names = {attr for _, attr in state}
    reported: set[int] = set()
    for use in ctx.nodes(cst.Attribute):
        if use.attr.value not in names or not (isinstance(use.value, cst.Name) and use.value.value == "self") \
                or _is_call_target(ctx, use) or _assigned_to(ctx, use):
            continue
        cls = ctx.enclosing(use, (cst.ClassDef,))
        setter = state.get((id(cls), use.attr.value))
        function = ctx.enclosing_function(use)
        if setter is None or function is None:
            continue
        for loop in ctx.loops_around(use):
            if not isinstance(loop, cst.For) or id(loop) in reported:
                continue
            history = loop.iter.args[0].value if isinstance(loop.iter, cst.Call) and loop.iter.args \
                and _last_name(loop.iter.func) in ("enumerate", "reversed") else loop.iter
            if _in_message_content(ctx, loop, use) and not _under_position_test(ctx, loop, use, _position_names(loop)) \
                    and _is_history(ctx, function, history):
                reported.add(id(loop))
                yield Rerender(use, f"every earlier message of `{ctx.code(history)}` is rebuilt on each request with `{ctx.code(use)}`, "
                               f"the object's current state (set again at line {ctx.span(setter).row})")
                break


NEWEST_FLAG = re.compile(r"^is_(?:last|latest|newest)(?:_\w+)?$")


def newest_rendered_apart(ctx: ModuleContext) -> Iterator[Rerender]:
    """A conversion over the history that renders the newest message unlike the others (`if i == len(steps) - 1:
    content = TOOL_RESPONSE.format(obs=obs)`, the output in full for the newest and its summary for the rest): on
    the next turn that message is no longer the newest and is rendered the other way, so the text the previous
    request ended with changes and is prefilled again, with everything after it. Text added after the newest
    message's own (a screenshot, `+ self.screen`) and a breakpoint on it (`cache_control`) change nothing the next
    request had in common with it; a loop that builds nothing (a display, a check) is left alone."""
    for loop in ctx.nodes(cst.For):
        function = ctx.enclosing_function(loop)
        if function is None or not isinstance(loop.target, (cst.Name, cst.Tuple)):
            continue
        iterated = loop.iter
        if isinstance(iterated, cst.Call) and _last_name(iterated.func) in ("enumerate", "reversed") and iterated.args:
            iterated = iterated.args[0].value
        name = _last_name(iterated) or ""
        steps = EVENT_LIST.match(name.lstrip("_")) is not None or name.endswith("_steps")  # an agent's scratchpad (`intermediate_steps`)
        if not (steps or (HISTORY_NAME.search(name) and _is_history(ctx, function, iterated))) or not _builds(loop):
            continue
        if not _builds_messages(loop) or not _hands_on(ctx, function):
            continue  # lines of a display, not messages handed on for a request
        history = ctx.code(iterated)
        positions = _position_names(loop)
        elements = {n.value for n in descendants(loop.target) if isinstance(n, cst.Name)} - positions
        for branch in (n for n in descendants(loop.body) if isinstance(n, (cst.If, cst.IfExp))):
            if _newest_test(ctx, branch.test, positions, elements, history) and _renders_content(ctx, branch) \
                    and not re.search(r"cache|ephemeral", ctx.code(branch), re.I):  # a breakpoint (`cache_control`, `**EPHEMERAL`)
                yield Rerender(branch, f"the newest message of `{history}` is rendered unlike the earlier ones "
                               f"(`{short_code(ctx, branch.test, 40)}`)")
                break


def context_on_the_last_user_message(ctx: ModuleContext) -> Iterator[Rerender]:
    """`for i in range(len(out) - 1, -1, -1): if out[i]["role"] != "user": continue; ... out[i] = {**msg, "content": content
    + block}; break`: a block made for this request (the workspace's state, a mode reminder) added to the newest user
    message of the copy sent, past the assistant and tool messages that follow it. The turn's tool loop is cached after
    that block; on the next user turn the block moves to the new message, the earlier one goes out without it, and every
    tool call and result of the previous turn is prefilled again. (Added to the newest message itself, with nothing after
    it, only the block is new: `newest_rendered_apart` leaves that alone.)"""
    for loop in ctx.nodes(cst.For):
        function = ctx.enclosing_function(loop)
        found = _walked_back_by_position(ctx, loop)
        if function is None or found is None:
            continue
        history, position = found
        body = loop.body.body if isinstance(loop.body, cst.IndentedBlock) else []
        skip = body[0] if body else None
        if not (isinstance(skip, cst.If) and re.search(r"(?:!=|not\s+in)\s*\(?\s*[\"']user[\"']", ctx.code(skip.test))
                and any(isinstance(n, cst.Continue) for n in descendants(skip.body))):
            continue
        written = [n for n in descendants(loop.body) if isinstance(n, cst.Assign) and any(
            isinstance(t.target, cst.Subscript) and ctx.code(t.target.value) == history and ctx.code(t.target.slice[0].slice) == position
            for t in n.targets)]
        stops = any(isinstance(n, cst.Break) for n in descendants(loop.body))
        added = [n for n in descendants(loop.body) if isinstance(n, cst.BinaryOperation) and isinstance(n.operator, cst.Add)
                 or isinstance(n, cst.List) and any(isinstance(e, cst.StarredElement) for e in n.elements)]
        if written and stops and added and _hands_on(ctx, function):
            # reported where the block is made, when it is made before the walk (`block = f"<system-context>{context}..."`)
            reads = {n.value: n for a in added for n in descendants(a) if isinstance(n, cst.Name)}
            made = {id(b): b for name in reads.values() for b, v in ctx.assigned_values(name) if v is not None
                    and isinstance(v, (cst.FormattedString, cst.BinaryOperation, cst.Call)) and ctx.contains(function, b)
                    and not ctx.contains(loop, b)}
            at = ctx.statement_of(next(iter(made.values()))) if len(made) == 1 else written[0]
            yield Rerender(at, f"a block made for this request is added to the newest user message of `{history}`")


def _walked_back_by_position(ctx: ModuleContext, loop: cst.For) -> tuple[str, str] | None:
    """(history, position) of `for i in range(len(h) - 1, -1, -1)` or `for i in reversed(range(len(h)))`."""
    measured = _index_walked_from_the_end(ctx, loop)
    return (ctx.code(measured), loop.target.value) if measured is not None else None  # type: ignore[union-attr]


def _index_walked_from_the_end(ctx: ModuleContext, loop: cst.For) -> cst.BaseExpression | None:
    """The `h` of `for i in reversed(range(len(h)))` or `for i in range(len(h) - 1, -1, -1)` (`n` bound once to
    `len(h)` counts too)."""
    it = loop.iter
    if not isinstance(loop.target, cst.Name) or not isinstance(it, cst.Call):
        return None
    if _last_name(it.func) == "reversed" and len(it.args) == 1 and isinstance(it.args[0].value, cst.Call) \
            and _last_name(it.args[0].value.func) == "range" and len(it.args[0].value.args) == 1:
        length = it.args[0].value.args[0].value
    elif _last_name(it.func) == "range" and len(it.args) == 3 and ctx.code(it.args[1].value).replace(" ", "") == "-1" \
            and ctx.code(it.args[2].value).replace(" ", "") == "-1" and isinstance(it.args[0].value, cst.BinaryOperation) \
            and isinstance(it.args[0].value.operator, cst.Subtract) and ctx.code(it.args[0].value.right) == "1":
        length = it.args[0].value.left
    else:
        return None
    return _len_of(_bound_once(ctx, length))


def messages_made_of(ctx: ModuleContext, function: cst.FunctionDef, history: str, besides: cst.CSTNode | None = None) -> bool:
    """A loop of `function` (not `besides`) over `history` (the list's code; also through `enumerate(...)`) makes
    messages of it, and the function hands what it built on: the list is rendered into a prompt there."""
    if not _hands_on(ctx, function):
        return False
    for loop in ctx.nodes_in(cst.For, function):
        source = loop.iter.args[0].value if isinstance(loop.iter, cst.Call) and loop.iter.args else loop.iter
        if loop is not besides and ctx.code(source) == history and _builds(loop) and _builds_messages(loop):
            return True
    return False


def _builds(loop: cst.For) -> bool:
    """The loop adds to a list (`out.append(...)`, `parts.extend(...)`, `msgs += [...]`) or yields: a conversion."""
    return any((isinstance(n, cst.Call) and isinstance(n.func, cst.Attribute) and n.func.attr.value in ("append", "extend", "insert"))
               or (isinstance(n, cst.AugAssign) and isinstance(n.operator, cst.AddAssign) and isinstance(n.value, (cst.List, cst.ListComp)))
               or isinstance(n, cst.Yield) for n in descendants(loop.body))


def _builds_messages(loop: cst.For) -> bool:
    """The loop makes messages, or the text of one: a dict with a `role`, a call given `role=` or `content=`, a
    `...Message(...)`; or, over an agent's steps, text joined after the loop (a scratchpad)."""
    for n in descendants(loop.body):
        if isinstance(n, cst.Dict) and any(isinstance(e, cst.DictElement) and isinstance(e.key, cst.SimpleString)
                                           and e.key.value.strip("'\"") == "role" for e in n.elements):
            return True
        if isinstance(n, cst.Arg) and n.keyword is not None and n.keyword.value in ("role", "content"):
            return True
        if isinstance(n, cst.Call) and (_last_name(n.func) or "").endswith("Message"):
            return True
    name = _last_name(loop.iter.args[0].value if isinstance(loop.iter, cst.Call) and loop.iter.args else loop.iter) or ""
    return EVENT_LIST.match(name) is not None or name.endswith("_steps")


def _hands_on(ctx: ModuleContext, function: cst.FunctionDef) -> bool:
    """The function returns what it built, or sends it: not a display that only draws (`st.markdown(...)`)."""
    return any(v is not None for v in ctx.returns_of(function)) or any(
        isinstance(n, cst.Arg) and n.keyword is not None and n.keyword.value in ("messages", "input", "contents")
        for n in descendants(function))


def _newest_test(ctx: ModuleContext, test: cst.BaseExpression, positions: set[str], elements: set[str], history: str) -> bool:
    """`i == len(history) - 1`, `i < len(history) - 1`, `idx + 1 == len(history)`, `msg is history[-1]`, `is_last`."""
    code = ctx.code(test).replace(" ", "")
    names = {n.value for n in (test, *descendants(test)) if isinstance(n, cst.Name)}
    if names & elements and re.search(r"(?<![\w.])" + re.escape(history.replace(" ", "")) + r"\[-1\]", code):
        return True
    if names & positions and (re.search(r"len\(" + re.escape(history.replace(" ", "")) + r"\)-1\b", code)
                              or re.search(r"\+1(?:==|!=|<|>=)len\(" + re.escape(history.replace(" ", "")) + r"\)", code)):
        return True
    return any(NEWEST_FLAG.match(n) for n in names - elements - positions) and not names & {"len"}


def _renders_content(ctx: ModuleContext, branch: cst.If | cst.IfExp) -> bool:
    """The newest message's text does not start with what it becomes once older: the observation wrapped in a
    template (`TOOL_RESPONSE.format(obs=obs)` against `obs`), or one text for the newest and another for the rest (the
    output in full against its summary). An addition after the same text (`m["content"] + self.screen`, a part
    appended to the newest only) is left alone: the next request still matches up to the end of that text, and what
    follows it is new in any case."""
    if isinstance(branch, cst.IfExp):
        return _renders_apart(ctx, branch.body, branch.orelse)
    if branch.orelse is None:  # the newest only: a text replaced (`content = TEMPLATE.format(obs=obs)`), not one added to
        return any(isinstance(n, cst.Assign) and _text_made(n.value) for n in descendants(branch.body))
    other = branch.orelse.body if isinstance(branch.orelse, cst.Else) else branch.orelse
    return _renders_apart(ctx, _rendered(branch.body), _rendered(other))


def _rendered(block: cst.CSTNode) -> cst.BaseExpression | None:
    """The first value a branch makes: assigned (`content = ...`) or added (`out.append(...)`)."""
    for n in descendants(block):
        if isinstance(n, cst.Assign):
            return n.value
        if isinstance(n, cst.Call) and isinstance(n.func, cst.Attribute) and n.func.attr.value in ("append", "extend", "insert") and n.args:
            return n.args[-1].value
    return None


def _renders_apart(ctx: ModuleContext, one: cst.BaseExpression | None, other: cst.BaseExpression | None) -> bool:
    one, other = _made_from(ctx, one), _made_from(ctx, other)
    if isinstance(one, cst.SimpleString) and isinstance(other, cst.SimpleString):
        return one.evaluated_value != other.evaluated_value  # `parts.append("Current Observation:")` / `"Observation:"`
    if one is None or other is None or not (_text_made(one) or _text_made(other)):
        return False
    a, b = _content_of(one), _content_of(other)
    if a is None or b is None:
        return False
    return not (_extends(ctx, a, b) or _extends(ctx, b, a))


def _made_from(ctx: ModuleContext, value: cst.BaseExpression | None) -> cst.BaseExpression | None:
    """A name bound once to a template (`tool_response = TEMPLATE.format(observation=obs)`): that template."""
    if isinstance(value, cst.Name):
        bound = [v for _, v in ctx.assigned_values(value)]
        if len(bound) == 1 and bound[0] is not None and is_template(bound[0]):
            return bound[0]
    return value


def _content_of(value: cst.BaseExpression) -> cst.BaseExpression | None:
    """`{"role": ..., "content": X}` -> X; any other value is its own content."""
    if isinstance(value, cst.Dict):
        for element in value.elements:
            if isinstance(element, cst.DictElement) and isinstance(element.key, cst.SimpleString) and element.key.value.strip("'\"") == "content":
                return element.value
        return None
    return value


def _extends(ctx: ModuleContext, longer: cst.BaseExpression, shorter: cst.BaseExpression) -> bool:
    """`longer` is `shorter` with something after it: `shorter + x`, or the same expression."""
    def same(a: cst.CSTNode) -> bool:
        return ctx.code(a).replace("'", '"') == ctx.code(shorter).replace("'", '"')

    while True:
        if same(longer):
            return True
        if isinstance(longer, cst.FormattedString) and longer.parts and isinstance(longer.parts[0], cst.FormattedStringExpression) \
                and same(longer.parts[0].expression):
            return True  # f"{m['content']} ▌": the same text with something after it
        if not (isinstance(longer, cst.BinaryOperation) and isinstance(longer.operator, cst.Add)):
            return False
        longer = longer.left


TEXT_KEYS = frozenset({"content", "text", "type", "image_url", "source"})


def _text_made(value: cst.CSTNode) -> bool:
    """A template, an f-string or a message part (`{"type": "text", ...}`); not a record of bookkeeping."""
    return any(isinstance(n, cst.FormattedString) or (isinstance(n, cst.BaseExpression) and is_template(n))
               or (isinstance(n, cst.Dict) and bool(TEXT_KEYS & set(_literal_keys(n))))
               for n in (value, *descendants(value)))


def _literal_keys(node: cst.Dict) -> list[str]:
    return [e.key.value.strip("'\"") for e in node.elements if isinstance(e, cst.DictElement) and isinstance(e.key, cst.SimpleString)]


def run_time_attributes(ctx: ModuleContext) -> dict[tuple[int, str], cst.CSTNode]:
    """{(id of the class, x): the assignment} for `self.x` assigned by a method other than the constructor: state that
    changes while the object runs (one pass over the module's assignments)."""
    found: dict[tuple[int, str], cst.CSTNode] = {}
    for node in ctx.nodes(cst.Assign):
        for target in node.targets:
            t = target.target
            if not (isinstance(t, cst.Attribute) and isinstance(t.value, cst.Name) and t.value.value == "self"):
                continue
            function = ctx.enclosing_function(node)
            if function is None or function.name.value in SETUP_METHODS:
                continue
            cls = ctx.enclosing(function, (cst.ClassDef,))
            if cls is not None:
                found.setdefault((id(cls), t.attr.value), node)
    return found


def _is_call_target(ctx: ModuleContext, node: cst.Attribute) -> bool:
    parent = ctx.parent(node)
    return isinstance(parent, cst.Call) and parent.func is node


def _assigned_to(ctx: ModuleContext, node: cst.Attribute) -> bool:
    parent = ctx.parent(node)
    return isinstance(parent, (cst.AssignTarget, cst.AugAssign, cst.AnnAssign)) and getattr(parent, "target", None) is node


def _position_names(loop: cst.For) -> set[str]:
    """`i` of `for i, m in enumerate(history)`."""
    if isinstance(loop.iter, cst.Call) and _last_name(loop.iter.func) == "enumerate" and isinstance(loop.target, cst.Tuple) \
            and isinstance(loop.target.elements[0].value, cst.Name):
        return {loop.target.elements[0].value.value}
    return set()


def _under_position_test(ctx: ModuleContext, loop: cst.For, node: cst.CSTNode, positions: set[str]) -> bool:
    """Only the newest message gets the state: `if i == len(history) - 1:`, `if message is history[-1]:`."""
    for ancestor in ctx.ancestors(node):
        if ancestor is loop:
            return False
        if isinstance(ancestor, (cst.If, cst.IfExp)):
            names = {n.value for n in descendants(ancestor.test) if isinstance(n, cst.Name)}
            if names & (positions | {"len"}) or "[-1]" in ctx.code(ancestor.test):
                return True
    return False


def _in_message_content(ctx: ModuleContext, loop: cst.For, node: cst.CSTNode) -> bool:
    """`node` is part of a message's content built in the loop: `{"content": [... node ...]}`, `Message(content=...)`,
    or a name assigned from it there and used as content."""
    holders: list[str] = []
    for ancestor in ctx.ancestors(node):
        if ancestor is loop:
            break
        if isinstance(ancestor, cst.DictElement) and isinstance(ancestor.key, cst.SimpleString) \
                and ancestor.key.value.strip("'\"") in ("content", "text", "thinking"):
            return True
        if isinstance(ancestor, cst.Arg) and ancestor.keyword is not None and ancestor.keyword.value in ("content", "text"):
            return True
        if isinstance(ancestor, cst.Assign):
            holders = [t.target.value for t in ancestor.targets if isinstance(t.target, cst.Name)]
            break
    for name in holders:
        for use in descendants(loop.body):
            if isinstance(use, cst.DictElement) and isinstance(use.key, cst.SimpleString) and use.key.value.strip("'\"") == "content" \
                    and isinstance(use.value, cst.Name) and use.value.value == name:
                return True
            if isinstance(use, cst.Arg) and use.keyword is not None and use.keyword.value == "content" and isinstance(use.value, cst.Name) \
                    and use.value.value == name:
                return True
    return False


# --- compaction at a small budget: a summary that fires every few turns --------------------------------------

# A history summarized once it passes this many tokens, or fewer, is summarized every few turns: an agent or coding
# chat adds one to a few thousand tokens a turn (file contents, tool output), so a budget of a few thousand tokens is
# crossed again a few turns after each summary, far below any current model's context window (128k tokens and up),
# where compaction belongs. Each summary rewrites the cached history and everything after it.
SMALL_SUMMARY_BUDGET = 16_384
BUDGET_PARAM = re.compile(r"max_tokens|token_limit|tokens_limit|max_history_tokens|threshold|budget|limit", re.I)


def small_budget_summaries(ctx: ModuleContext) -> Iterator[Rerender]:
    """`self.done_messages = self.summarizer.summarize(self.done_messages)` (or through an attribute the summary was
    kept in) where the summarizer is built by a class of the tree whose token budget is bounded by a few thousand
    tokens: the budget is the constructor's argument (or its default), bounded through literals, `min(...)` /
    `max(...)` and the attribute's assignments in this module and the tree modules it imports. A budget that is
    unknown or large (near the context window) is compaction done right and stays quiet. A summary kept in an
    attribute first and moved into the history later is reported where it replaces the history."""
    found: list[tuple[cst.Assign, Rerender]] = []
    for assign in ctx.nodes(cst.Assign):
        target = assign.targets[0].target
        if len(assign.targets) != 1 or not isinstance(target, cst.Attribute) or not HISTORY_NAME.search(target.attr.value):
            continue
        cls = ctx.enclosing(assign, (cst.ClassDef,))
        if not isinstance(cls, cst.ClassDef):
            continue
        summary = _summary_call(ctx, cls, assign.value)
        if summary is None or not isinstance(summary.func, cst.Attribute):
            continue
        budget = _summarizer_budget(ctx, cls, summary.func.value)
        if budget is None:
            continue
        code, bound = budget
        limit = f"{bound} tokens" if code.replace("_", "") == str(bound) else f"`{code}` tokens, at most {bound} tokens where the code sets it"
        found.append((assign, Rerender(assign, f"replaces the history `{ctx.code(target)}` with a summary whenever it passes {limit}: a "
                                       "budget that small is crossed again every few turns, and each summary rewrites the cached history "
                                       "and everything after it")))
    moved = {ctx.code(assign.value) for assign, _ in found}
    for assign, rerender in found:
        if ctx.code(assign.targets[0].target) not in moved:
            yield rerender


def _summary_call(ctx: ModuleContext, cls: cst.ClassDef, value: cst.BaseExpression) -> cst.Call | None:
    """The summarizer's call whose result `value` is: the call itself, or `self.x` assigned from it in the class."""
    if isinstance(value, cst.Call) and COMPACTION.search(_last_name(value.func) or ""):
        return value
    if isinstance(value, cst.Attribute) and ctx.code(value.value) == "self":
        for assign in ctx.nodes(cst.Assign):
            if ctx.contains(cls, assign) and any(ctx.code(t.target) == ctx.code(value) for t in assign.targets) \
                    and isinstance(assign.value, cst.Call) and COMPACTION.search(_last_name(assign.value.func) or ""):
                return assign.value
    return None


def _summarizer_budget(ctx: ModuleContext, cls: cst.ClassDef, receiver: cst.BaseExpression) -> tuple[str, int] | None:
    """(the budget's code, its upper bound) of the summarizer `self.summarizer`, when it is small."""
    if ctx.code(receiver).split(".")[0] != "self":
        return None
    for assign in ctx.nodes(cst.Assign):
        if not ctx.contains(cls, assign) or not any(ctx.code(t.target) == ctx.code(receiver) for t in assign.targets):
            continue
        for build in [assign.value, *descendants(assign.value)]:
            if isinstance(build, cst.Call) and isinstance(build.func, cst.Name) and build.func.value[:1].isupper():
                found = _method_of(ctx, build.func.value, "__init__", 2)
                if found is None:
                    continue
                other, init = found
                params = [p for p in init.params.params if p.name.value not in ("self", "cls")]
                for index, param in enumerate(params):
                    if not BUDGET_PARAM.search(param.name.value):
                        continue
                    arg = next((a.value for a in build.args if a.keyword is not None and a.keyword.value == param.name.value), None)
                    if arg is None and index < len(build.args) and build.args[index].keyword is None and not build.args[index].star:
                        arg = build.args[index].value
                    where, expr = (ctx, arg) if arg is not None else (other, param.default)
                    bound = _upper_bound(where, expr, 0) if expr is not None else None
                    if bound is not None and bound <= SMALL_SUMMARY_BUDGET:
                        return where.code(expr), bound
    return None


def _upper_bound(ctx: ModuleContext, expr: cst.BaseExpression, depth: int) -> int | None:
    """The largest value `expr` can take, where the code bounds it: an integer, `min(x, 8192)`, `max(a, b)` of bounded
    values, or an attribute whose every assignment (here and in the tree modules this one imports) is bounded."""
    if depth > 3:
        return None
    value = _int(expr)
    if value is not None:
        return value
    if isinstance(expr, cst.Call) and isinstance(expr.func, cst.Name) and expr.func.value in ("min", "max", "int") and expr.args:
        bounds = [_upper_bound(ctx, a.value, depth + 1) for a in expr.args]
        if expr.func.value == "min":
            known = [b for b in bounds if b is not None]
            return min(known) if known else None
        return max(bounds) if None not in bounds else None  # type: ignore[type-var]
    if isinstance(expr, cst.Attribute):
        return _attribute_bound(ctx, expr.attr.value, depth)
    return None


def _attribute_bound(ctx: ModuleContext, attr: str, depth: int) -> int | None:
    """The largest value assigned to `<obj>.attr` in this module and in the tree modules it imports that mention it."""
    from pathlib import Path

    from cachelint.check.project import dependencies, module_context

    bounds: list[int | None] = []
    modules = [ctx]
    for path in dependencies(ctx.source, ctx.filename)[:32]:
        try:
            if attr not in Path(path).read_text(encoding="utf-8", errors="replace"):
                continue
        except OSError:
            continue
        other = module_context(path)
        if other is not None:
            modules.append(other)
    for module in modules:
        for assign in module.nodes(cst.Assign):
            if any(isinstance(t.target, cst.Attribute) and t.target.attr.value == attr for t in assign.targets):
                bounds.append(_upper_bound(module, assign.value, depth + 1))
    if not bounds or None in bounds:
        return None
    return max(b for b in bounds if b is not None)


# --- a model chosen anew for each request of one conversation (CL401) --------------------------------------

MODELS_NAME = re.compile(r"(?:^|_)(?:models|llms|model_list|model_pool|engines)(?:$|_for_)", re.I)


def _unwrapped_pool(pool: cst.BaseExpression) -> cst.BaseExpression:
    """`list(self.llms_for_routing.keys())`, `tuple(models)`: the pool the choice is made from."""
    for _ in range(3):
        if isinstance(pool, cst.Call) and isinstance(pool.func, cst.Name) and pool.func.value in ("list", "tuple", "sorted") and pool.args:
            pool = pool.args[0].value
        elif isinstance(pool, cst.Call) and isinstance(pool.func, cst.Attribute) and pool.func.attr.value in ("keys", "values") and not pool.args:
            pool = pool.func.value
    return pool


@dataclass(slots=True)
class Switch:
    node: cst.CSTNode
    pool: str  # self.models
    how: str  # "at random" / "in turn, by a call counter"


MODEL_NAME = re.compile(r"^(?:gpt|o[134]\b|o[134]-|claude|gemini|llama|mistral|mixtral|qwen|deepseek|command|sonnet|opus|haiku)", re.I)


def _model_names(pool: cst.BaseExpression) -> bool:
    """A literal list of at least two model names: `["gpt-3.5-turbo", "gpt-3.5-turbo-16k", ...]`."""
    if not isinstance(pool, (cst.List, cst.Tuple)):
        return False
    names = [string_value(e.value) for e in pool.elements]
    return len(names) >= 2 and all(n is not None and MODEL_NAME.match(n) for n in names)


def model_switches(ctx: ModuleContext) -> Iterator[Switch]:
    """`random.choice(self.models)` or `self.models[self.calls % len(self.models)]`: a router that sends each
    request of a conversation to another model, so none of them reads the cache the previous request wrote."""
    for call in ctx.nodes(cst.Call):
        func = call.func
        name = ctx.code(func)
        if name in ("random.choice", "choice", "rng.choice", "self.rng.choice", "self._rng.choice") and call.args:
            pool = _unwrapped_pool(call.args[0].value)
            if (_last_name(pool) is not None and MODELS_NAME.search(_last_name(pool) or "")) or _model_names(pool):
                yield Switch(call, ctx.code(pool) if len(ctx.code(pool)) <= 60 else "a list of models", "at random")
    for call in ctx.calls_by_name.get("__init__", []) + ctx.calls_by_name.get("ChatAgent", []) + ctx.calls_by_name.get("ModelManager", []):
        found = _scheduled_models(ctx, call)
        if found is not None:
            yield found
    for op in ctx.nodes(cst.BinaryOperation):
        if isinstance(op.operator, cst.Modulo) and isinstance(op.right, cst.Call) and isinstance(op.right.func, cst.Name) \
                and op.right.func.value == "len" and op.right.args:
            pool = op.right.args[0].value
            if MODELS_NAME.search(_last_name(pool) or "") and not isinstance(op.left, (cst.Integer, cst.SimpleString)) \
                    and not _on_failure(ctx, op):
                yield Switch(op, ctx.code(pool), "in turn, by a call counter")


SCHEDULES = {"random_model": "at random", "round_robin": "in turn"}


def _scheduled_models(ctx: ModuleContext, call: cst.Call) -> Switch | None:
    """camel's `ChatAgent(model=models, scheduling_strategy="random_model")` (or `super().__init__(...)` of a subclass,
    or a `ModelManager`): each step of the agent's conversation goes to another of the backends it is given. Only
    where it is given several: a list, a pool named for models, or a parameter typed as a list of them."""
    schedule = next((string_value(a.value) for a in call.args if a.keyword is not None and a.keyword.value == "scheduling_strategy"), None)
    if schedule not in SCHEDULES:
        return None
    given = next((a.value for a in call.args if a.keyword is not None and a.keyword.value in ("model", "models")), None)
    if given is None and call.args and call.args[0].keyword is None and called_name(call) == "ModelManager":
        given = call.args[0].value
    if given is None:
        return None
    several = isinstance(given, cst.List) and len(given.elements) > 1
    if isinstance(given, cst.Name) and not several:
        several = bool(MODELS_NAME.search(given.value))
        function = ctx.enclosing_function(call)
        param = next((p for p in (*function.params.params, *function.params.kwonly_params) if p.name.value == given.value), None) \
            if function is not None else None
        if param is not None and param.annotation is not None and re.search(r"\b(?:List|list|Sequence)\[", ctx.code(param.annotation.annotation)):
            several = True
    if not several:
        return None
    where = next(a for a in call.args if a.keyword is not None and a.keyword.value == "scheduling_strategy")
    return Switch(where, ctx.code(given) if len(ctx.code(given)) <= 60 else "the model backends it is given", f"{SCHEDULES[schedule]} ({schedule})")


def _on_failure(ctx: ModuleContext, node: cst.CSTNode) -> bool:
    """The next model is picked only when a request failed: in an `except` block, or in a function that is called
    only from `except` blocks of this module (`next_model = self._get_next_model(current_model)` after an error)."""
    if in_except_handler(ctx, node):
        return True
    function = ctx.enclosing_function(node)
    callers = ctx.calls_by_name.get(function.name.value, []) if function is not None else []
    return bool(callers) and all(in_except_handler(ctx, call) for call in callers)


# --- tools loaded from a directory listing (CL201) ---------------------------------------------------------

@dataclass(slots=True)
class Merge:
    node: cst.CSTNode
    tools: str  # the list the tools are loaded into
    servers: str  # the listing they come from


LISTINGS = ("glob", "rglob", "iterdir", "listdir", "scandir", "walk", "iglob")


def tools_from_listings(ctx: ModuleContext) -> Iterator[Merge]:
    """`functions = [Function(p) for p in folder.glob("*.py")]`: tools loaded from a directory listing, in the
    file system's order (which differs between machines and file systems), never sorted."""
    for comp in ctx.nodes(cst.ListComp):
        target = ctx.parent(comp)
        if not isinstance(target, cst.Assign) or len(target.targets) != 1:
            continue
        name = _last_name(target.targets[0].target) or ""
        if not (TOOL_WORD.search(name) or name.endswith("functions")):
            continue
        listing = comp.for_in.iter
        if isinstance(listing, cst.Call) and _last_name(listing.func) in LISTINGS and not _sorted_later_name(ctx, target, name):
            yield Merge(listing, name, ctx.code(listing))


def _sorted_later_name(ctx: ModuleContext, assign: cst.CSTNode, name: str) -> bool:
    scope = ctx.enclosing_function(assign) or ctx.module
    return any(isinstance(n, cst.Call) and (ctx.code(n.func) in (f"{name}.sort",) or (ctx.code(n.func) == "sorted" and n.args and ctx.code(n.args[0].value) == name))
               for n in descendants(scope))


# --- a side request of the same conversation sent in another output format ----------------------------------

FORMAT_QUICK = re.compile(r"tool_choice\s*=\s*[\"']none[\"']|json_output\s*=|response_format\s*=|(?:result|output)_type\s*=")
REQUEST_METHODS = frozenset({"create", "create_stream", "acreate", "chat", "achat", "complete", "acomplete", "completion",
                             "acompletion", "generate", "agenerate", "invoke", "ainvoke"})
FORMAT_KEYS = ("tools", "tool_choice", "json_output", "response_format", "result_type", "output_type")
SIDE_KEYS = ("json_output", "response_format", "result_type", "output_type")  # an output format of its own


@dataclass(slots=True)
class FormatSwitch:
    node: cst.Call
    history: str  # the conversation's code: llm_messages
    how: str  # "with `json_output=RetryDecision`, which the request on line 821 does not send"


def format_switches(ctx: ModuleContext) -> Iterator[FormatSwitch]:
    """`model_client.create(messages, json_output=Decision)` or `tool_choice="none"` beside the turn's own
    `model_client.create(messages, tools=tools)`: a side question (a reflection, a retry decision, a recovery turn)
    sent with the conversation's messages, from the same store, but with another output format or without the tools.
    The tools and the format are rendered before the messages (or key the provider's cache), so the side request
    reads nothing the turns cached, and the turn after it reads nothing the side request cached. Found by shape:
    confidence `likely`. Two calls in exclusive branches with the same format (a stream and a plain call) are alike."""
    if not FORMAT_QUICK.search(ctx.source):
        return
    calls = [c for c in ctx.nodes(cst.Call) if isinstance(c.func, cst.Attribute) and (
        c.func.attr.value in REQUEST_METHODS or any(a.keyword is not None and a.keyword.value == "message_history" for a in c.args))]
    if len(calls) < 2 or len(calls) > 40:
        return
    requests = []
    for call in calls:
        history = _messages_arg(call)
        if history is None or _last_name(history) is None or not HISTORY_NAME.search(_last_name(history) or ""):
            continue
        function = ctx.enclosing_function(call)
        requests.append((call, history, _format_of(ctx, call), _origins(ctx, function, history)))
    for call, history, fmt, origins in requests:
        side = fmt.get("tool_choice") in ('"none"', "'none'") or any(k in fmt for k in SIDE_KEYS)
        if not side or not origins or _continues_history(ctx, call, history):
            continue
        receiver = _last_name(call.func.value)  # type: ignore[attr-defined]
        for other, _, other_fmt, other_origins in requests:
            if other is call or _last_name(other.func.value) != receiver or not origins & other_origins:  # type: ignore[attr-defined]
                continue
            if _exclusive(ctx, call, other) or _chosen_by_caller(ctx, call, other):
                continue  # an adapter's `if output_format is None: create(...) else: create(..., response_format=...)`
            differing = [k for k in FORMAT_KEYS if fmt.get(k) != other_fmt.get(k) and (k in fmt or k == "tools")]
            if "tools" in differing and "tools" not in other_fmt:
                differing.remove("tools")  # neither sends tools
            if differing:
                what = ", ".join(f"`{k}={fmt[k]}`" if k in fmt else f"no `{k}`" for k in differing)
                yield FormatSwitch(call, ctx.code(history), f"with {what}, unlike the request on line {ctx.span(other).row}")
                break


def _continues_history(ctx: ModuleContext, call: cst.Call, history: cst.BaseExpression) -> bool:
    """The conversation goes on from this request's reply (`response = agent.run(..., message_history=history,
    result_type=Step)` then `history = response.all_messages()`): it is the turn itself, not a side request."""
    statement = ctx.enclosing(call, (cst.Assign,))
    if not isinstance(statement, cst.Assign) or statement.value is not call and not ctx.contains(statement.value, call):
        return False
    replies = {t.target.value for t in statement.targets if isinstance(t.target, cst.Name)}
    function = ctx.enclosing_function(call)
    target = ctx.code(history)
    return bool(replies) and function is not None and any(
        isinstance(n, cst.Assign) and ctx.span(n).row > ctx.span(call).row and any(ctx.code(t.target) == target for t in n.targets)
        and _uses(n.value, replies) for n in descendants(function))


def _exclusive(ctx: ModuleContext, first: cst.CSTNode, second: cst.CSTNode) -> bool:
    """`first` and `second` sit in the two branches of one `if` (or a `try` and its handler): one request or the
    other is sent, chosen by the caller's arguments, not two requests of one conversation."""
    child: cst.CSTNode = first
    for ancestor in ctx.ancestors(first):
        if isinstance(ancestor, cst.If):
            branches = [ancestor.body, ancestor.orelse]
        elif isinstance(ancestor, cst.Try):
            branches = [ancestor.body, *ancestor.handlers]
        elif isinstance(ancestor, SCOPES):
            return False
        else:
            child = ancestor
            continue
        mine = next((b for b in branches if b is not None and (b is child or ctx.contains(b, first))), None)
        if mine is not None and any(b is not None and b is not mine and ctx.contains(b, second) for b in branches):
            return True
        child = ancestor
    return False


def _chosen_by_caller(ctx: ModuleContext, call: cst.Call, other: cst.Call) -> bool:
    """Both requests in one function, one of them under an `if` on the function's parameters (`if output_format is
    None: return create(...)`): a provider adapter sending what its caller asked for, one request per call."""
    function = ctx.enclosing_function(call)
    if function is None or ctx.enclosing_function(other) is not function:
        return False
    params = _params(function)
    return any(isinstance(a, cst.If) and _uses(a.test, params) and ctx.contains(function, a)
               for node in (call, other) for a in ctx.ancestors(node))


def _messages_arg(call: cst.Call) -> cst.BaseExpression | None:
    for arg in call.args:
        if arg.keyword is not None and arg.keyword.value in ("messages", "message_history"):
            return arg.value
    if call.args and call.args[0].keyword is None and call.args[0].star == "":
        return call.args[0].value
    return None


def _format_of(ctx: ModuleContext, call: cst.Call) -> dict[str, str]:
    found = {a.keyword.value: " ".join(ctx.code(a.value).split()) for a in call.args
             if a.keyword is not None and a.keyword.value in FORMAT_KEYS}
    if found.get("tools") in ("[]", "()", "None"):
        del found["tools"]  # no tools sent, as without the argument
    return found


STORE_NAME = re.compile(r"messages|history|context|conversation|memory|transcript", re.I)


def _origins(ctx: ModuleContext, function: cst.FunctionDef | None, expr: cst.BaseExpression) -> set[str]:
    """Where the messages come from: the store's names (`get_messages`, `self._history`) read by the value, following
    the function's local assignments a few hops (`llm_messages = fit(system + await model_context.get_messages())`)."""
    found: set[str] = set()
    todo, seen, looked = [expr], set(), 0
    while todo and looked < 16:  # nearest first: the value's own assignments before those of the names they read
        value, looked = todo.pop(0), looked + 1
        for node in descendants(value):
            if isinstance(node, cst.Attribute) and STORE_NAME.search(node.attr.value):
                found.add(node.attr.value)
            elif isinstance(node, cst.Name) and function is not None and node.value not in seen and len(seen) < 24:
                seen.add(node.value)
                for assign in (n for n in descendants(function.body) if isinstance(n, cst.Assign)):
                    if any(isinstance(t.target, cst.Name) and t.target.value == node.value for t in assign.targets):
                        todo.append(assign.value)
    return found
