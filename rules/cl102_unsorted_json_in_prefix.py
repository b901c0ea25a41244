"""CL102 unsorted-json-in-prefix."""

from __future__ import annotations

import functools

import libcst as cst

from cachelint.check.fixes import add_keyword
from cachelint.check.module import called_name
from cachelint.check.renderers import describe_system, is_system_built, sending_functions, system_facts
from cachelint.check.key_order import unordered_source
from cachelint.check.stored_turns import reordering_store, reserialized_turns
from cachelint.check.values import reported_at_origin
from cachelint.rules.base import Invalid, Report, Rule


class UnsortedJsonInPrefix(Rule):
    code = "CL102"
    what = """
Finds `json.dumps` (or `str()` / `repr()`, or an f-string) of a dict built at run time that reaches the cached
prefix without `sort_keys=True`, where its keys come in an order that can change from one request to the next:
from rows of a `SELECT` with no `ORDER BY`, from a Redis hash read whole (`hgetall`), or in a project that keeps
its data in PostgreSQL `jsonb` (`likely`, naming the file). jsonb gives an object's keys back in its own order (shorter keys first), not in the order they were
written, so the same dict rendered once as it was built and again after a round trip through the store is two
different texts. A system message built here and sent elsewhere (`Message(role="system", ...)`,
`SystemMessage(...)`, a `get_system_message()` builder) is judged for a run-time dict rendered with `str()` or
an f-string; its `json.dumps` of a schema is not. A dict dumped in another module of the tree, through a function
the request's prompt calls, is reported there, where `sort_keys=True` goes (naming the request it reaches), and once
however many modules take it in.

A tool call's arguments or a tool result re-serialized from a stored turn for every request
(`"arguments": json.dumps(call.args)` in a function that converts the history it is handed, a tool message's
`content=json.dumps(result)`, or a helper of the module that returns such a `json.dumps`) is the usual shape:
the live turn renders the model's key order, every later turn the store's.

A dict's key order is its insertion order: the same code filling it from the same data gives the same order
every time. Where nothing in the project reorders keys, nothing is reported, however the dict was built (a dict
filled by iterating a set or a file listing is unordered iteration, CL103). `json.dumps` in a message list that
is a prompt by its shape only (no request in sight) is not reported either: there it is as often an output
schema or a config loaded the same way every time. A JSON schema generated from a class
(`Answer.model_json_schema()`) has its keys in the generator's fixed order and is not reported.
"""
    why = """
A dict's key order is its insertion order, which depends on the code path that filled it; a `jsonb` round trip
gives the keys back in the store's order. The same data serialized in another key order is a different prefix,
so everything after it is prefilled again.
"""
    example = """
import json
from openai import OpenAI
from sqlalchemy import Column
from sqlalchemy.dialects.postgresql import JSONB

client = OpenAI()

class ChatSession:  # the guest's profile is kept here and read back on every later turn
    profile = Column(JSONB)

def ask(profile: dict, question: str):
    system = "You are a concierge. Guest profile: " + json.dumps(profile)
    return client.chat.completions.create(model="gpt-4o", messages=[
        {"role": "system", "content": system}, {"role": "user", "content": question}])
"""
    instead = """
    system = "You are a concierge. Guest profile: " + json.dumps(profile, sort_keys=True)
"""
    fix_safety = "safe: adds `sort_keys=True` to `json.dumps` (the JSON means the same)."

    VALID = [
        # nothing in the project reorders keys: the same code builds the same order on every request
        """
import json
from openai import OpenAI
client = OpenAI()
def ask(profile: dict, q):
    system = "Profile: " + json.dumps(profile, indent=2)
    return client.chat.completions.create(model="gpt-4o", messages=[{"role": "system", "content": system}, {"role": "user", "content": q}])
""",
        # tool descriptions dumped from the tools' own literal dicts
        """
import json
from litellm import completion
def run(env, messages):
    tools_info = [tool.get_info() for tool in env.tools]
    system = env.wiki + "\\nAvailable tools:\\n" + json.dumps(tools_info)
    return completion(model="gpt-4o", messages=[{"role": "system", "content": system}, *messages])
""",
        # a JSON schema generated from a class: the generator writes its keys in one order
        """
import json
from anthropic import Anthropic
from sqlalchemy.dialects.postgresql import JSONB
client = Anthropic()
class ChatSession:
    data = JSONB
def extract(image, response_schema):
    schema = response_schema.model_json_schema()
    system = f"Answer in JSON matching this schema:\\n{json.dumps(schema, indent=2)}"
    return client.messages.create(model="claude-sonnet-4-5", max_tokens=1024, system=system, messages=[{"role": "user", "content": image}])
""",
        """
import json
from openai import OpenAI
from sqlalchemy.dialects.postgresql import JSONB
client = OpenAI()
class ChatSession:
    data = JSONB
def ask(profile: dict, q):
    return client.chat.completions.create(model="gpt-4o", messages=[{"role": "system", "content": json.dumps(profile, sort_keys=True)}, {"role": "user", "content": q}])
""",
        # a literal of constants has one fixed order
        """
import json
from openai import OpenAI
from sqlalchemy.dialects.postgresql import JSONB
client = OpenAI()
class ChatSession:
    data = JSONB
RULES = json.dumps({"tone": "formal", "language": "en"})
def ask(q):
    return client.chat.completions.create(model="gpt-4o", messages=[{"role": "system", "content": RULES}, {"role": "user", "content": q}])
""",
        # in the newest turn it does not matter
        """
import json, anthropic
from sqlalchemy.dialects.postgresql import JSONB
client = anthropic.Anthropic()
class ChatSession:
    data = JSONB
def ask(data: dict):
    return client.messages.create(model="claude-sonnet-4-5", max_tokens=10, system="Summarize.", messages=[{"role": "user", "content": json.dumps(data)}])
""",
        # a schema dumped into a prompt-shaped message list (no request in sight): loaded the same way every run
        """
import json
def build(schema, question):
    return [{"role": "system", "content": "Answer as JSON matching:\\n" + json.dumps(schema, indent=2)},
            {"role": "user", "content": question}]
""",
        # settings read row by row in a fixed order
        """
from openai import OpenAI
client = OpenAI()
def load_settings(conn, channel):
    settings = {}
    for key, value in conn.execute("SELECT key, value FROM channel_settings WHERE channel_id = %s ORDER BY key", (channel,)):
        settings[key] = value
    return settings
def reply(conn, channel, history):
    system = f"You help this channel. Settings: {load_settings(conn, channel)}"
    return client.chat.completions.create(model="gpt-4.1", messages=[{"role": "system", "content": system}, *history])
""",
        # a renderer of stored turns in a project with no reordering store: each dict is built the same way every time
        """
import json
def to_messages(history):
    out = []
    for turn in history:
        out.append({"role": "tool", "tool_call_id": turn.call_id, "content": json.dumps(turn.result)})
    return out
""",
    ]
    INVALID = [
        # settings read from rows a SELECT returns in no fixed order
        Invalid("""
from openai import OpenAI
client = OpenAI()
def load_settings(conn, channel):
    settings = {}
    for key, value in conn.execute("SELECT key, value FROM channel_settings WHERE channel_id = %s", (channel,)):
        settings[key] = value
    return settings
def reply(conn, channel, history):
    settings = load_settings(conn, channel)
    system = f"You help this channel. Settings: {settings}"
    return client.chat.completions.create(model="gpt-4.1", messages=[{"role": "system", "content": system}, *history])
""", line=11, message="no ORDER BY"),
        # a Redis hash read whole
        Invalid("""
import json
from anthropic import Anthropic
client = Anthropic()
def draft(kv, customer_id, ticket):
    prefs = kv.hgetall(f"customer:{customer_id}:prefs")
    system = "Draft a reply. Customer preferences: " + json.dumps(prefs)
    return client.messages.create(model="claude-sonnet-4-5", max_tokens=1024, system=system, messages=[{"role": "user", "content": ticket}])
""", line=7, message="hgetall"),
        Invalid("""
import json
from openai import OpenAI
from sqlalchemy.dialects.postgresql import JSONB
client = OpenAI()
class ChatSession:
    profile = JSONB
def ask(profile: dict, q):
    system = "Profile: " + json.dumps(profile, indent=2)
    return client.chat.completions.create(model="gpt-4o", messages=[{"role": "system", "content": system}, {"role": "user", "content": q}])
""", line=9, message="jsonb", fixed="""
import json
from openai import OpenAI
from sqlalchemy.dialects.postgresql import JSONB
client = OpenAI()
class ChatSession:
    profile = JSONB
def ask(profile: dict, q):
    system = "Profile: " + json.dumps(profile, indent=2, sort_keys=True)
    return client.chat.completions.create(model="gpt-4o", messages=[{"role": "system", "content": system}, {"role": "user", "content": q}])
"""),
        # a generated schema written into before it is dumped: its keys follow the data
        Invalid("""
import json
from openai import OpenAI
from sqlalchemy.dialects.postgresql import JSONB
client = OpenAI()
class ChatSession:
    fields = JSONB

def ask(Answer, extra_fields: dict, question):
    schema = Answer.model_json_schema()
    schema["properties"].update(extra_fields)
    system = "Reply as JSON matching:\\n" + json.dumps(schema)
    return client.chat.completions.create(model="gpt-4o", messages=[{"role": "system", "content": system}, {"role": "user", "content": question}])
""", line=12, message="json.dumps"),
        Invalid("""
from openai import OpenAI
from sqlalchemy.dialects.postgresql import JSONB
client = OpenAI()
class ChatSession:
    settings = JSONB
def ask(settings, q):
    merged = dict(settings)
    return client.responses.create(model="gpt-5", instructions="Settings: " + str(merged), input=q)
""", line=9, message="str()"),
        # a run-time state dict interpolated into a framework's system message, sent elsewhere
        Invalid("""
from typing import Any, Dict, Optional
from sqlalchemy.dialects.postgresql import JSONB
class AgentSession:
    session_state = JSONB
def get_system_message(agent, session_state: Optional[Dict[str, Any]] = None):
    text = f"{agent.description}\\n{agent.instructions}\\n"
    if session_state:
        text += f"<session_state>{session_state}</session_state>"
    return Message(role="system", content=text)
""", line=9, message="system prompt built on line 10"),
    ]

    without_sites = True  # a system message built here whose request is sent elsewhere

    def check(self, analysis):
        found = list(analysis.facts({"unsorted_json", "dict_repr"})) + list(system_facts(analysis, {"unsorted_json", "dict_repr"}))
        # json.dumps in a message list that is a prompt by its shape only is as often a config schema
        found = [(site, fact) for site, fact in found if not (fact.kind == "unsorted_json" and isinstance(site.node, cst.List))]
        # the tree is searched at most once, for the first dict with no order source in sight
        store = functools.cache(lambda: reordering_store(analysis.ctx.filename, analysis.ctx.source))
        for site, fact in found:
            source = unordered_source(analysis.ctx, _rendered(fact))
            if source is None and store() is None:
                continue  # the same code fills the dict in the same order on every request
            where, kept = fact.landing.words, f"and its keys come from {source}" if source else _kept_in(store())
            if fact.kind == "unsorted_json":
                fix = None if fact.origin else add_keyword(analysis.ctx, fact.node, "sort_keys", "True")
                message = (f"`json.dumps()`{fact.origin} of a dict built at run time reaches the {where} of {_place(analysis, site)} "
                           f"without `sort_keys=True`, {kept}")
            else:
                fix = None
                message = f"`{fact.label}`{fact.origin} reaches the {where} of {_place(analysis, site)}, {kept}; use `json.dumps(..., sort_keys=True)`"
            yield Report(fact.node, message, fix=fix, confidence="likely", elsewhere=reported_at_origin(fact))
        yield from _stored_turns(analysis, {id(fact.node) for _, fact in found})


def _rendered(fact) -> cst.BaseExpression:
    """The dict a fact renders: the argument of `json.dumps(x)` / `str(x)`, or an f-string's expression itself."""
    node = fact.node
    if isinstance(node, cst.Call) and node.args and called_name(node) in ("dumps", "str", "repr"):
        return node.args[0].value
    return node


def _kept_in(store: tuple[str, int]) -> str:
    path, line = store
    return (f"and this project keeps data in PostgreSQL jsonb ({path}:{line}), which gives keys back in its own order: the dict "
            "as built and as read back render in different key orders")


def _place(analysis, site) -> str:
    """The request a finding is about, or the system prompt built here and sent elsewhere."""
    return describe_system(analysis, site) if is_system_built(site) else analysis.describe_site(site)


def _stored_turns(analysis, reported: set[int]):
    """Tool calls and tool results re-serialized from stored turns, in a tree that keeps them in jsonb."""
    ctx = analysis.ctx
    found = [item for item in reserialized_turns(ctx, sending_functions(ctx, analysis.sites)) if id(item.node) not in reported]
    # the tree is searched only for a module with a candidate: a search that finds nothing rests on every file
    store = reordering_store(ctx.filename) if found else None
    if store is None:
        return
    path, line = store
    for item in found:
        if item.helper:
            what, fix = f"`{item.helper}()` (a `json.dumps()` without `sort_keys=True`)", None
        elif called_name(item.node) == "str":
            what, fix = "`str()` of a tool's response", None
        else:
            what, fix = "`json.dumps()` without `sort_keys=True`", add_keyword(ctx, item.node, "sort_keys", "True")
        yield Report(item.node, f"{what} re-serializes {item.slot} from a stored turn (the message built on line "
                     f"{ctx.span(item.message).row}, handed back for every request), and the tree keeps data in PostgreSQL "
                     f"jsonb ({path}:{line}), which gives keys back in its own order: from the next turn on this call renders "
                     "differently and the history after it is prefilled again", confidence="likely", fix=fix)
