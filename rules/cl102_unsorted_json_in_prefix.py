"""CL102 unsorted-json-in-prefix."""

from __future__ import annotations

import libcst as cst

from cachelint.check.fixes import add_keyword
from cachelint.check.module import called_name
from cachelint.check.renderers import describe_system, is_system_built, sending_functions, system_facts
from cachelint.check.stored_turns import reordering_store, reserialized_turns
from cachelint.rules.base import Invalid, Report, Rule


class UnsortedJsonInPrefix(Rule):
    code = "CL102"
    what = """
Finds `json.dumps` (or `str()` / `repr()`) of a dict built at run time that reaches the cached prefix
without `sort_keys=True`. A system message built here and sent elsewhere (`Message(role="system", ...)`,
`SystemMessage(...)`, a `get_system_message()` builder) is judged for a run-time dict rendered with `str()` or
an f-string (`likely`); its `json.dumps` of a schema is not.

A tool call's arguments or a tool result re-serialized from a stored turn for every request
(`"arguments": json.dumps(call.args)` in a function that converts the history it is handed, a tool message's
`content=json.dumps(result)`, or a helper of the module that returns such a `json.dumps`) is reported only
where the tree speaks of PostgreSQL `jsonb` (`likely`, naming the file): jsonb gives an object's keys back in
its own order, so from the next turn on the stored call renders differently from the turn it was made in.
Without such a store the same code builds the same key order every time, and nothing is reported. For a
similar reason `json.dumps` in a message list that is a
prompt by its shape only (no request in sight) is not reported: there it is as often an output schema or a
config loaded the same way every time. A JSON schema generated from a class (`Answer.model_json_schema()`,
`TypeAdapter(...).json_schema()`) has its keys in the generator's fixed order and is not reported either.
"""
    why = """
A dict's key order is its insertion order, which depends on the code path that filled it (a database row,
a merged config, a `jsonb` round trip). The same data serialized in another key order is a different
prefix, so everything after it is prefilled again.
"""
    example = """
import json
from openai import OpenAI

client = OpenAI()

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
        # a JSON schema generated from a class: the generator writes its keys in one order
        """
import json
from anthropic import Anthropic
client = Anthropic()
def extract(image, response_schema):
    schema = response_schema.model_json_schema()
    system = f"Answer in JSON matching this schema:\\n{json.dumps(schema, indent=2)}"
    return client.messages.create(model="claude-sonnet-4-5", max_tokens=1024, system=system, messages=[{"role": "user", "content": image}])
""",
        """
import json
from openai import OpenAI
client = OpenAI()
def ask(profile: dict, q):
    return client.chat.completions.create(model="gpt-4o", messages=[{"role": "system", "content": json.dumps(profile, sort_keys=True)}, {"role": "user", "content": q}])
""",
        # a literal of constants has one fixed order
        """
import json
from openai import OpenAI
client = OpenAI()
RULES = json.dumps({"tone": "formal", "language": "en"})
def ask(q):
    return client.chat.completions.create(model="gpt-4o", messages=[{"role": "system", "content": RULES}, {"role": "user", "content": q}])
""",
        # in the newest turn it does not matter
        """
import json, anthropic
client = anthropic.Anthropic()
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
        # a renderer of stored turns: each dict is built by the same code, in the same key order, every time
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
        # a generated schema written into before it is dumped: its keys follow the data
        Invalid("""
import json
from openai import OpenAI
client = OpenAI()

def ask(Answer, extra_fields: dict, question):
    schema = Answer.model_json_schema()
    schema["properties"].update(extra_fields)
    system = "Reply as JSON matching:\\n" + json.dumps(schema)
    return client.chat.completions.create(model="gpt-4o", messages=[{"role": "system", "content": system}, {"role": "user", "content": question}])
""", line=9, message="json.dumps"),
        Invalid("""
import json
from openai import OpenAI
client = OpenAI()
def ask(profile: dict, q):
    system = "Profile: " + json.dumps(profile, indent=2)
    return client.chat.completions.create(model="gpt-4o", messages=[{"role": "system", "content": system}, {"role": "user", "content": q}])
""", line=6, fixed="""
import json
from openai import OpenAI
client = OpenAI()
def ask(profile: dict, q):
    system = "Profile: " + json.dumps(profile, indent=2, sort_keys=True)
    return client.chat.completions.create(model="gpt-4o", messages=[{"role": "system", "content": system}, {"role": "user", "content": q}])
"""),
        Invalid("""
import json, anthropic
client = anthropic.Anthropic()
def run(user):
    context = {k: v for k, v in user.items() if v}
    return client.messages.create(model="claude-sonnet-4-5", max_tokens=10, system=[{"type": "text", "text": json.dumps(context)}], messages=[{"role": "user", "content": "hi"}])
""", line=6),
        Invalid("""
from openai import OpenAI
client = OpenAI()
def ask(settings, q):
    merged = dict(settings)
    return client.responses.create(model="gpt-5", instructions="Settings: " + str(merged), input=q)
""", line=6, message="str()"),
        # a run-time state dict interpolated into a framework's system message, sent elsewhere (likely)
        Invalid("""
from typing import Any, Dict, Optional
def get_system_message(agent, session_state: Optional[Dict[str, Any]] = None):
    text = f"{agent.description}\\n{agent.instructions}\\n"
    if session_state:
        text += f"<session_state>{session_state}</session_state>"
    return Message(role="system", content=text)
""", line=6, message="system prompt built on line 7"),
    ]

    without_sites = True  # a system message built here whose request is sent elsewhere

    def check(self, analysis):
        found = list(analysis.facts({"unsorted_json", "dict_repr"})) + list(system_facts(analysis, {"unsorted_json", "dict_repr"}))
        for site, fact in found:
            if fact.kind == "unsorted_json" and isinstance(site.node, cst.List):
                continue  # a message list that is a prompt by its shape only: its json.dumps is as often a config schema
            where = fact.landing.words
            if fact.kind == "unsorted_json":
                fix = None if fact.origin else add_keyword(analysis.ctx, fact.node, "sort_keys", "True")
                message = f"`json.dumps()`{fact.origin} of a dict built at run time reaches the {where} of {_place(analysis, site)} without `sort_keys=True`: its key order can change between requests"
            else:
                fix = None
                message = f"`{fact.label}`{fact.origin} reaches the {where} of {_place(analysis, site)}: its key order can change between requests; use `json.dumps(..., sort_keys=True)`"
            yield Report.at(site, fact.node, message, fix=fix)
        yield from _stored_turns(analysis, {id(fact.node) for _, fact in found})


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
