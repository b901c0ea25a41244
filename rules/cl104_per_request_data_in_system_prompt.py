"""CL104 per-request-data-in-system-prompt."""

from __future__ import annotations

import os

import libcst as cst

from cachelint.check.finding import Fix
from cachelint.check.fixes import replace_node
from cachelint.check.prefix import minimum_tokens
from cachelint.check.values import Landing, ValueWalker, assigned_once, string_value
from cachelint.rules.base import Invalid, Report, Rule

MIN_STATIC_CHARS = 80
MAX_REPEAT = 1000  # "text" * n: at most this many copies are counted


class PerRequestDataInSystemPrompt(Rule):
    code = "CL104"
    what = """
Finds per-user or per-request data (a parameter of the function that makes the request) placed in the
system prompt or instructions *ahead of* the static instructions; and text retrieved for the newest turn
(`knowledge = retriever.search(query)`, memories, RAG context) added to a system message that has the
conversation after it (`messages[0]["content"] += knowledge`, `[system] + history`, `msgs = [system]` then
`msgs.extend(history)`, the request's history, or the request's own arguments: `kwargs["system"] = existing +
recalled` where the function reads `kwargs["messages"]`, `instructions` with `input`), found by the names the code
uses (`likely`; not a system prompt the function hands on by keyword with the new message alone,
`call_llm(model, system_prompt=system_prompt, user_prompt=message)`, where nothing is unpacked into the call and
neither its keywords nor the names the message and the positional arguments read speak of a history, memory or
context: nothing cached follows it), in a function or a
script's own statements (a Streamlit app), whether or not the request is sent in the same module; framework set-ups
that do the same on every turn (`likely`): LangChain's conversational RAG prompt (`("system", "...{context}")`
followed by a `MessagesPlaceholder` for the history, in a module that retrieves) and LlamaIndex's context chat
engines (`chat_mode="context"` or `"condense_plus_context"`, `ContextChatEngine`); state an agent object adds
to while its conversation runs (`self.notes.append(...)` in the method that sends, or one it calls), rendered into
the system prompt of a request whose history is another attribute of the same object (`likely`); and a prompt
template whose per-call data comes before at least about 1,024 tokens of static instructions (an f-string or a
constant `.format` template in a message: `f"<INPUT>{doc}</INPUT>\n{4,000 characters of rules}"`; a section the
function binds to a long default literal, replaced only by a setting, counts as that literal; in a function named
for the prompt it builds, a section it makes from its parameters, `{perspective_section}`, is per-call data; or a
template kept as a module constant, `EDIT_PROMPT = "...{original_query}...<rules>..."` (a long triple-quoted string; in
lower case, `summarizer_instructions = r'''...'''`, where the filling module imports it by that name), that another module of the
tree fills with `.format(...)`, reported in the prompts module at its first per-call placeholder (once: not again
where a module fills it, unless it fills it right into a message's content, imports it under another name or reads
it from a class, which are judged there; a lower-case one only for the modules that import it from there), the app's tools,
schema, format, examples, name or persona not counted as one, nor any slot of a fill made as an object is set up
(in `__init__`, `setup_prompts`) or only from the object's own settings (`**self._domain_map`)), where
none of the static part is ever a shared prefix (`likely`); and a conversation rendered into one prompt text after a value of
the newest turn (`f"<NOTES>{scratchpad}</NOTES>...<HISTORY>{history}</HISTORY>"`,
`TEMPLATE.format(summary=..., chat_history=..., query=...)` with the template written here or in a module of the
tree), found by the names of the placeholders (`likely`): the history grows by appending, but behind a value
that changes every turn none of it is read from cache. A parameter of the function that renders it counts as this
turn's value when every caller in the module passes a value made in its loop's pass (`self._select(next_gap, query)`:
`gap`), and does not when every caller passes it unchanged through the loop (`query`); the standing instructions a
request object carries (`{question.system_context}`, `.instructions`, `.persona`) are no value of the turn. A system prompt given as a list of content
blocks is judged by its first block's text; when that block carries `cache_control` and its static text is
shorter than the model's minimum cacheable length, moving the value would cache nothing, so it is not reported; nor
is a prompt whose static text, all of it together, is shorter than that minimum (`"rule. " * 40` counts as forty
copies): no order of it is ever cached.

The prompt a function named for it returns is judged the same way, whoever sends it (`def rag_prompt(context,
question): return f"Context: {context}..." + HANDBOOK`, `likely`), as is a `+` of an f-string and a constant, and the
prompt a builder of the module returns to the function that sends it (`prompt = build_prompt(query, results)`), when
the builder's first value is one of its parameters (a setting, `self.name` or a parameter's default is the same on
every call, and so is a mode: a parameter typed `bool`, `Literal[...]` or an Enum class of the tree, which gives a
few prompts, each cached on its own). So is a system prompt handed to a function of the tree that sends it as the system prompt
(`query_model(system_prompt=f"...{reviewer_type}\n" + REVIEW_FORM, prompt=paper)`, imported by name or with `*`),
and a text the function builds once and splices in (`sys = f"...{kind}" + form` where `form` holds the long part).
Retrieved text is also what a vector index or a retriever answers to a generic method (`index.query(q, top_k=5)`,
`collection.query(...)`, `retriever.invoke(q)`). And state the agent observes anew on every turn of the loop that
sends the history (`page = browser.snapshot()` beside `browser.run(action)`: a method that reads the current state,
not `get_schema()` or `describe_tools()`; or a value made from the model's reply in that loop), rendered into the
system prompt ahead of that history (`likely`): show it in the newest message. A builder's static rules appended
after its per-call values (`prompt = f"Playground: {ctx.name}"` then `prompt += RULES`, in the same block) count as
its tail, and a mode ahead of them (`{language_name}`) does not hide the per-call values after it; a lookup named
for RAG (`query_course_rag(question)`) is a retrieval, a lookup of the entry the app is configured with
(`registry.get_context(config.context)`) is not. And the newest question written ahead of the history in one list
(`[system, Message.user(question), *message_history]`, `likely`): every request differs from the last right after
the system prompt, so none of the history is read from cache. The user's question ahead of the database's
description in a template (`Question: {user_instructions} ... {all_sql_database_summary}`, `likely`): the
description is the same for every question of a database and usually the largest part, so it belongs before the
question (quiet where the description is retrieved, filtered or ranked for the question). And a retry that puts a
note ahead of the prompt a request of the same function has just sent (`retry = "THIS IS A RETRY..."; retry +=
prompt`, `likely`): behind the note none of the prompt the first request cached is read.
"""
    why = """
The static instructions are the part every user shares. Put a user's name in front of them and no two users
share a prefix: each conversation writes its own copy of the same instructions to the cache, and the first
request of every conversation pays full price.
"""
    example = """
def answer(user_name: str, question: str):
    system = f"The user is {user_name}.\\n{LONG_INSTRUCTIONS}"
    return client.messages.create(model="claude-sonnet-4-5", max_tokens=1024, system=system,
                                  messages=[{"role": "user", "content": question}])
"""
    instead = """
def answer(user_name: str, question: str):
    system = f"{LONG_INSTRUCTIONS}\\nThe user is {user_name}."  # or put it in the user message
    return client.messages.create(model="claude-sonnet-4-5", max_tokens=1024, system=system,
                                  messages=[{"role": "user", "content": question}])
"""
    fix_safety = "unsafe (with --unsafe-fixes, for an f-string: moves the per-request part behind the static text; the order of instructions can change the model's behaviour)."

    VALID = [
        # a number about the dialogue (how many exchanges to write), not the dialogue itself
        """
def narrative_prompt(world_state, minutes, llm):
    min_dialogue = max(3, minutes // 5)
    prompt = f'''World state now: {world_state}
Include at least {min_dialogue} separate dialogue exchanges.'''
    return llm.complete(prompt)
""",
        # a cached block whose static text is shorter than the model's minimum: moving the value gains nothing
        """
from anthropic import Anthropic
client = Anthropic()
def edit(file_text, request):
    prompt = f"File:\\n{file_text}\\nYou are an expert editor. Return SEARCH/REPLACE blocks only, keep indentation, change nothing else, explain nothing."
    return client.messages.create(model="claude-sonnet-4-5", max_tokens=10, system=[{"type": "text", "text": prompt, "cache_control": {"type": "ephemeral"}}],
        messages=[{"role": "user", "content": request}])
""",
        """
from anthropic import Anthropic
client = Anthropic()
INSTRUCTIONS = "You are the support assistant of Acme Corp. Answer politely, cite the manual, never promise refunds, and escalate legal questions."
def answer(user_name, question):
    return client.messages.create(model="claude-sonnet-4-5", max_tokens=10, system=f"{INSTRUCTIONS}\\nThe user is {user_name}.", messages=[{"role": "user", "content": question}])
""",
        # all of the static text together is below the minimum cacheable length: no order of it is ever cached
        """
from anthropic import Anthropic
client = Anthropic()
INSTRUCTIONS = "You are the support assistant of Acme Corp. Answer politely, cite the manual, never promise refunds, and escalate legal questions."
def answer(user_name, question):
    return client.messages.create(model="claude-sonnet-4-5", max_tokens=10, system=f"The user is {user_name}.\\n{INSTRUCTIONS}", messages=[{"role": "user", "content": question}])
""",
        # the schema is retrieved for the question: both vary, and no order shares more
        """
def ask(llm, store, question):
    schema = store.relevant_tables(question)
    prompt = f\"\"\"You are a SQL expert. Write one query in the dialect of the database below that answers the user's question.
Use only the tables and columns listed; never modify data, never create tables, and return the query in a sql block.
Quote names that contain spaces, prefer explicit joins, and keep the query readable with one clause per line.

Question: {question}

Database schema:
{schema}
\"\"\"
    return llm.invoke(prompt)
""",
    ]
    INVALID = [
        # a history rendered by a call that takes a count (`max_turns`) is still the history
        Invalid("""
from openai import OpenAI
client = OpenAI()

class Bot:
    def __init__(self, max_turns=20):
        self.history = []
        self.max_turns = max_turns

    def ask(self, question, docs):
        prompt = f"Context:\\n{docs}\\n\\nConversation:\\n{format_history(self.history, self.max_turns)}\\n\\nQuestion: {question}"
        r = client.chat.completions.create(model="gpt-4o", messages=[{"role": "user", "content": prompt}])
        return r.choices[0].message.content

def ask2(question, docs, history, cfg):
    prompt = f"Context:\\n{docs}\\n\\nConversation:\\n{render_history(history, n_turns=cfg.n_turns)}\\n\\nQuestion: {question}"
    return client.chat.completions.create(model="gpt-4o", messages=[{"role": "user", "content": prompt}])
""", line=11, message="comes before"),
        Invalid("""
from anthropic import Anthropic
client = Anthropic()
INSTRUCTIONS = "You are the support assistant of Acme Corp. Answer politely, cite the manual, never promise refunds, and escalate legal questions. " * 60
def answer(user_name, question):
    return client.messages.create(model="claude-sonnet-4-5", max_tokens=10, system=f"The user is {user_name}.\\n{INSTRUCTIONS}", messages=[{"role": "user", "content": question}])
""", line=6, message="user_name"),
        Invalid("""
from anthropic import Anthropic
client = Anthropic()
RULES = "You are the support assistant of Acme Corp. Answer politely, cite the manual, never promise refunds, and escalate legal questions. " * 60
def answer(user_name, question):
    return client.messages.create(model="claude-sonnet-4-5", max_tokens=10, system=f"The user is {user_name}.\\n{RULES}", messages=[{"role": "user", "content": question}])
""", line=6, fixed="""
from anthropic import Anthropic
client = Anthropic()
RULES = "You are the support assistant of Acme Corp. Answer politely, cite the manual, never promise refunds, and escalate legal questions. " * 60
def answer(user_name, question):
    return client.messages.create(model="claude-sonnet-4-5", max_tokens=10, system=f"{RULES}\\nThe user is {user_name}.", messages=[{"role": "user", "content": question}])
"""),
        # the system prompt as a list of content blocks
        Invalid("""
from anthropic import Anthropic
client = Anthropic()
RULES = "Return SEARCH/REPLACE blocks only, keep indentation, change nothing else, explain nothing. " * 80
def edit(file_text, request):
    prompt = f"File:\\n{file_text}\\nYou are an expert editor. {RULES}"
    return client.messages.create(model="claude-sonnet-4-5", max_tokens=10, system=[{"type": "text", "text": prompt}],
        messages=[{"role": "user", "content": request}])
""", line=6, message="file_text"),
        Invalid("""
from openai import OpenAI
client = OpenAI()
RULES = "You are a meticulous reviewer. Point out correctness bugs first, then security problems, then style. " * 60
def review(repo_name, diff):
    instructions = "Repository: " + repo_name + ". " + RULES
    return client.responses.create(model="gpt-5", instructions=instructions, input=diff)
""", line=6),
        Invalid("""
from openai import OpenAI
client = OpenAI()
def answer(history, question, store):
    docs = store.similarity_search(question, k=4)
    system = "Answer from the context.\\n\\n" + "\\n".join(d.page_content for d in docs)
    return client.chat.completions.create(model="gpt-4.1", messages=[{"role": "system", "content": system}, *history])
""", line=6, message="looked up for this turn"),
        Invalid("""
from langchain_core.prompts import ChatPromptTemplate, MessagesPlaceholder
from langchain.chains.combine_documents import create_stuff_documents_chain
prompt = ChatPromptTemplate.from_messages([("system", "Answer from the retrieved context:\\n{context}"), MessagesPlaceholder("chat_history"), ("human", "{input}")])
chain = create_stuff_documents_chain(llm, prompt)
""", line=4, message="MessagesPlaceholder"),
        # a text-to-SQL template that asks the question before the database's description (likely)
        Invalid("""
SQL_PROMPT = \"\"\"You are a SQL expert. Write one query in the dialect of the database below that answers the user's question.
Use only the tables and columns listed; never modify data, never create tables, and return the query in a sql block.
Quote names that contain spaces, prefer explicit joins, and keep the query readable with one clause per line.

Question: {question}

Database schema:
{schema}
\"\"\"
def ask(llm, question, schema):
    return llm.invoke(SQL_PROMPT.format(question=question, schema=schema))
""", line=6, message="before the database's description"),
    ]

    without_sites = True  # retrieved data put into a system message that another module sends

    def check(self, analysis):
        from cachelint.check.class_state import class_state_in_system
        from cachelint.check.framework_rag import framework_rag
        from cachelint.check.retrieved import retrieved_in_built_system, retrieved_in_system
        from cachelint.check.static_tail import static_tails, templates_filled_elsewhere, text_pieces
        from cachelint.check.gate import opened_alone
        from cachelint.check.question_first import questions_before_history
        from cachelint.check.retry_notes import retry_notes
        from cachelint.check.schema_after_question import schemas_after_questions
        from cachelint.check.tree import root_of
        from cachelint.check.turn_state import turn_state_in_system
        from cachelint.check.text_history import describe as describe_late
        from cachelint.check.text_history import late_histories

        ctx = analysis.ctx
        alone = not analysis.sites and opened_alone(ctx.source)  # a prompts module, analysed for its templates alone
        for tail in static_tails(ctx) if not alone else ():
            yield Report(tail.node, f"{tail.chars:,} characters of static prompt come after the per-call value `{tail.value}`: no two calls "
                         "share them as a prefix, so they are prefilled on every call; put the static instructions first and the "
                         "per-call data last", confidence="likely")
        for template in templates_filled_elsewhere(ctx):
            where = os.path.relpath(template.where, root_of(ctx.filename))
            yield Report(template.node, f"{template.chars:,} characters of this template's static instructions come after its per-call "
                         f"value `{template.value}` ({where} fills it): no two calls share them as a prefix, so they are prefilled on "
                         "every call; put the static instructions first and the per-call data last", confidence="likely",
                         position=template.position)
        for late in schemas_after_questions(ctx):
            yield Report(late.node, f"the user's question (`{late.question}`) comes before the database's description (`{late.schema}`) "
                         "in this prompt: the description is the same for every question of the database, but behind the question it "
                         "is prefilled again for each one; put the description first and the question last", confidence="likely",
                         position=late.position)
        for note in retry_notes(ctx):
            yield Report(note.node, f"the retry puts a note ahead of `{note.prompt}`, which the request on line {note.first} has just sent: "
                         "that request cached the prompt, but behind the note none of it is read and the retry prefills all of it "
                         f"again; put the note after the prompt in `{note.retry}` (or send it as a new message)", confidence="likely")
        for first in questions_before_history(ctx):
            yield Report(first.node, f"the newest question (`{first.question}`) is sent ahead of the history `{first.history}`: every "
                         "request differs from the previous one right there, so none of the conversation after it is read from "
                         "cache; put the history first and the new question after it", confidence="likely")
        if alone:
            return
        for late in late_histories(ctx):
            if late.volatile:
                continue  # a clock or a counter first: CL101 says so
            ahead, history = describe_late(late)
            yield Report(late.node, f"{ahead} (this turn's) {'comes' if len(late.ahead) == 1 else 'come'} before {history} in this prompt "
                         "text: the history grows turn by turn but sits behind a value that changes every turn, so none of it is "
                         "read from cache; render the history first and this turn's values after it", confidence="likely")
        reported: set[int] = set()
        for found in retrieved_in_system(ctx, analysis.sites):
            reported.add(id(ctx.enclosing_function(found.node)))
            yield Report(found.node, f"`{found.value}`, looked up for this turn ({found.source}), goes into the system prompt ahead of "
                         f"the conversation `{found.history}`: the system prompt differs on every turn, so none of the history after it "
                         "is read from cache; put what is retrieved in the newest user message, after the history", confidence="likely")
        for found in retrieved_in_built_system(ctx):
            if id(ctx.enclosing_function(found.node)) in reported:
                continue
            yield Report(found.node, f"`{found.value}`, looked up for this turn ({found.source}), is added to the system prompt built "
                         "here: the system prompt differs on every turn, so none of the conversation sent after it is read from cache; "
                         "put what is retrieved in the newest user message, after the history", confidence="likely")
        for state in class_state_in_system(ctx, analysis.sites):
            if not analysis.cacheable(state.site):
                continue
            yield Report(state.node, f"the system prompt renders `{state.state}`, which `{state.method}` adds to while the conversation "
                         f"runs (line {ctx.span(state.mutation).row}), ahead of the history `{state.history}`: each change alters the "
                         "system prompt, so none of the history after it is read from cache; keep the system prompt fixed and send "
                         "what changed in a new message after the history", confidence="likely")
        for state in turn_state_in_system(ctx, analysis.sites):
            if id(ctx.enclosing_function(state.node)) in reported or not analysis.cacheable(state.site):
                continue
            yield Report(state.node, f"`{state.name}` ({state.how}) is observed anew on every turn of the loop that sends the history, "
                         f"and the system prompt of {analysis.describe_site(state.site)} renders it ahead of that history: the system "
                         "prompt differs on every turn, so none of the history after it is read from cache; show the current state "
                         "in the newest message instead", confidence="likely")
        for found in framework_rag(ctx):
            yield Report(found.node, f"{found.how}: the system prompt differs on every turn, so none of the history after it is "
                         "read from cache; put what is retrieved in the newest user message, after the history", confidence="likely")
        for site in analysis.sites:
            if not analysis.cacheable(site):
                continue  # nothing of this request is ever cached
            cached = _cached_blocks(analysis.ctx, site)
            for arg, expr in _system_texts(analysis.ctx, site):
                if expr is None:
                    continue
                parts = text_pieces(analysis.ctx, expr)  # a text the function builds once and splices in, opened
                expanded = len(parts) != len(_parts(expr))  # a local text spliced in: the fix no longer maps onto `expr`
                for i, part in enumerate(parts):
                    if _static_length(analysis.ctx, part) is not None:
                        continue
                    walker = ValueWalker(analysis.ctx, site)
                    walker.walk(part.expression if isinstance(part, cst.FormattedStringExpression) else part, Landing(arg), 0)
                    params = [f for f in walker.facts if f.kind == "param"]
                    if not params:
                        continue
                    later = sum(_static_length(analysis.ctx, p) or 0 for p in parts[i + 1 :])
                    if arg in cached and later < minimum_tokens(site, analysis.model_of(site)):
                        break  # a cached block whose static text is provably below the minimum: moving gains nothing
                    shared = "".join(_static_text(analysis.ctx, p) or "" for p in parts)
                    if not analysis.reaches_minimum(site, shared):
                        break  # all of its static text together is below the minimum: no order of it is ever cached
                    if later >= MIN_STATIC_CHARS:
                        yield Report.at(site, part, f"per-request value `{params[0].label}` comes before {later} characters of static "
                                     f"{'system prompt' if arg == 'system' else 'instructions'} in {analysis.describe_site(site)}; "
                                     "move it after the static text (or into the user message) so all requests share the prefix",
                                     fix=None if expanded else _move_to_end(analysis.ctx, expr, i))
                    break


def _move_to_end(ctx, expr, index: int):
    """Unsafe fix for an f-string: the text up to the first long static part moves behind the rest.

    f"The user is {name}.\\n{INSTRUCTIONS}" -> f"{INSTRUCTIONS}\\nThe user is {name}." The model then reads the
    instructions before the user's data, which can change its behaviour: hence unsafe.
    """
    if not isinstance(expr, cst.FormattedString):
        return None
    parts = list(expr.parts)
    split = next((j for j in range(index + 1, len(parts)) if (_static_length(ctx, parts[j]) or 0) >= MIN_STATIC_CHARS // 2), None)
    if split is None:
        return None
    head, tail = parts[:split], parts[split:]
    if isinstance(head[-1], cst.FormattedStringText) and head[-1].value.endswith("\\n"):
        head[-1] = head[-1].with_changes(value=head[-1].value[:-2])  # the separator moves with the order
    new = expr.with_changes(parts=[*tail, cst.FormattedStringText("\\n"), *head])
    return Fix("unsafe", "Move the per-request part behind the static text", (replace_node(ctx, expr, ctx.module.code_for_node(new)),))


def _system_texts(ctx, site):
    """(argument, expression) for the system prompt: system=, instructions=, or a leading system message."""
    for arg in ("system", "instructions"):
        yield arg, _first_block_text(ctx, _resolve_once(ctx, site.arg(arg)))
    for arg in ("messages", "input"):
        messages = _resolve_once(ctx, site.arg(arg))
        if isinstance(messages, cst.BinaryOperation):
            messages = _resolve_once(ctx, messages.left)
        if isinstance(messages, cst.List) and messages.elements:
            first = _resolve_once(ctx, messages.elements[0].value)
            if isinstance(first, cst.Dict):
                fields = {string_value(e.key): e.value for e in first.elements if isinstance(e, cst.DictElement)}
                if string_value(fields.get("role")) in ("system", "developer"):
                    yield "system", _resolve_once(ctx, fields.get("content"))


def _cached_blocks(ctx, site) -> set[str]:
    """The system arguments given as a list whose first block carries cache_control: there the block must reach the
    model's minimum cacheable length to be cached at all (fewer bytes than that many tokens never do)."""
    found = set()
    for arg in ("system", "instructions"):
        expr = _resolve_once(ctx, site.arg(arg))
        if isinstance(expr, cst.List) and expr.elements:
            block = _resolve_once(ctx, expr.elements[0].value)
            if isinstance(block, cst.Dict) and any(isinstance(e, cst.DictElement) and string_value(e.key) == "cache_control" for e in block.elements):
                found.add(arg)
    return found


def _first_block_text(ctx, expr):
    """The text of the first block when the system prompt is a list of content blocks
    (`system=[{"type": "text", "text": prompt, "cache_control": ...}]`): what every request starts with."""
    if isinstance(expr, cst.List) and expr.elements:
        block = _resolve_once(ctx, expr.elements[0].value)
        if isinstance(block, cst.Dict):
            fields = {string_value(e.key): e.value for e in block.elements if isinstance(e, cst.DictElement)}
            if "text" in fields:
                return _resolve_once(ctx, fields["text"])
    return expr


def _resolve_once(ctx, expr):
    """What a name assigned once holds (None for a name assigned more than once, or never); anything else as it is."""
    value = assigned_once(ctx, expr)
    return None if isinstance(expr, cst.Name) and value is expr else value


def _parts(expr) -> list:
    if isinstance(expr, cst.FormattedString):
        return list(expr.parts)
    if isinstance(expr, cst.BinaryOperation) and isinstance(expr.operator, cst.Add):
        return _parts(expr.left) + _parts(expr.right)
    if isinstance(expr, cst.ConcatenatedString):
        return _parts(expr.left) + _parts(expr.right)
    return [expr]


def _static_length(ctx, part) -> int | None:
    """Length of a constant part (literal text or a module-level string constant), None if dynamic."""
    text = _static_text(ctx, part)
    return None if text is None else len(text)


def _static_text(ctx, part) -> str | None:
    """The text of a constant part (literal text or a module-level string constant), None if dynamic."""
    if isinstance(part, cst.FormattedStringText):
        return part.value
    if isinstance(part, cst.FormattedStringExpression):
        return _static_text(ctx, part.expression)
    value = string_value(part)
    if value is not None:
        return value
    if isinstance(part, cst.Name):
        bindings = list(ctx.assigned_values(part))
        if len(bindings) == 1 and bindings[0][1] is not None and ctx.enclosing_function(bindings[0][0]) is None:
            return _static_text(ctx, bindings[0][1])
    if isinstance(part, cst.BinaryOperation) and isinstance(part.operator, cst.Multiply):  # "rule. " * 40
        text, times = (part.left, part.right) if isinstance(part.right, cst.Integer) else (part.right, part.left)
        value = string_value(text)
        if value is not None and isinstance(times, cst.Integer):
            return value * min(int(times.value.replace("_", ""), 0), MAX_REPEAT)
        return None
    if isinstance(part, cst.BinaryOperation) and not isinstance(part.operator, cst.Add):
        return None
    if isinstance(part, (cst.FormattedString, cst.BinaryOperation, cst.ConcatenatedString)):
        texts = [_static_text(ctx, p) for p in _parts(part)]
        return None if any(t is None for t in texts) else "".join(texts)  # type: ignore[arg-type]
    return None
