"""CL103 unordered-iteration-in-prefix."""

from __future__ import annotations

from cachelint.check.fixes import wrap
from cachelint.check.renderers import describe, describe_system, is_rendered, is_system_built, rendered_facts, system_facts
from cachelint.check.values import reported_at_origin
from cachelint.rules.base import Invalid, Report, Rule

SORTABLE = ("a set", "a set literal", "os.listdir()", "glob.glob()", "glob.iglob()", "Path.iterdir()", "Path.glob()", "Path.rglob()")


class UnorderedIterationInPrefix(Rule):
    code = "CL103"
    what = """
Finds prefix text (system prompt, instructions, earlier messages) built by iterating a source without a
defined order: a set, `os.listdir`, `os.scandir`, `glob`, `Path.iterdir|glob|rglob`, or a dict filled at
run time, without `sorted()`. Messages rendered per turn by a function that returns them (a history
renderer whose request is sent elsewhere) are judged too, with confidence `likely`, and so is a system
message built here and sent elsewhere (`Message(role="system", ...)`, `SystemMessage(...)`, `("system", text)`,
or what a `get_system_message()` / `_build_system_prompt()` builder returns). Where the prompt is assembled out
of sight, prompt material read from an unsorted listing is judged by its shape (`likely`): a loop over the
listing that reads each file and collects the contents, in a function or list named for examples, docs,
instructions, templates or prompts (`for p in glob.glob("examples/*.yaml"): pool.append(load(p))`). A table of
the files read, keyed by name and returned or walked only through `sorted(table.values(), ...)`, is read in a
defined order and is not reported. A skills folder counts too: the skills found by listing it (`rglob("SKILL.md")`,
`iterdir()` over folders that hold a `SKILL.md`) and loaded (`self.load_skill(path)`), or only collected as entries
(`entries.append({"name": d.name, "path": str(d / "SKILL.md")})`), are the list a prompt names them in; not a
listing of one skill's own files (`rglob("*")`, packaging it), nor a tool's result (a function decorated as a tool
returns what the conversation then keeps as it was sent).

A listing, set or dict found in another module of the tree, through a function the request's prompt calls, is
reported in that module, where it is sorted (naming the request it reaches: "reached from agent.py:12"), and only
once however many modules take it in (with that module's own fix, where it reports the listing itself); a noqa
there, or at the call that reaches it, holds, and so do that module's per-file ignores and excludes.

The choices of a schema made from a set are judged by their shape too (`likely`): `Literal[tuple(set(...))]`,
`Enum("Table", list(set(names)))`, `{"enum": list(set(kinds))}`, directly or through a local name bound once to one;
so are a JSON schema's required names listed from a set (`{"properties": ..., "required": list(required)}`,
`Parameters(properties=..., required=list(required_params))` with `required_params: set[str]`: a tool's parameters
built from a function's signature). A response model or a tool's parameters go out with the request and open the prefix; `sorted(set(...))` is one
order everywhere and is not reported.

Prompt text made from a set is judged by its shape too (`likely`): a set (a parameter annotated `set[...]`, not of
numbers, or a local bound to `set(...)`, a set literal or comprehension) written out in its own order (joined,
`list(...)`, a comprehension, or a loop that adds to a text or a list) into what is named for prompt material: the
text a function named for it returns (`_get_example_input_fields(self, modalities: set[Modality])`), a name
(`tool_docs_str = "\n\n".join(set(tool_docs))`) or an entry (`{"examples": list(samples)}`). Not a set only tested for membership, counted or measured
(`len(...)`), nor one sorted first or whose list is sorted afterwards, nor ids or statistics, nor a listing written
inline into one prompt's f-string (`f"Change types: {', '.join(kinds)}"`: the request it reaches judges it).
"""
    why = """
Set iteration order changes with `PYTHONHASHSEED` (every process); directory listings follow the file
system's order. The same items joined in another order are another prefix, so the cache misses across
processes and machines even though nothing changed.
"""
    example = """
import os
import anthropic

client = anthropic.Anthropic()

def ask(q):
    notes = "\\n".join(open(f"notes/{name}").read() for name in os.listdir("notes"))
    return client.messages.create(model="claude-sonnet-4-5", max_tokens=512,
                                  system="Project notes:\\n" + notes, messages=[{"role": "user", "content": q}])
"""
    instead = """
    notes = "\\n".join(open(f"notes/{name}").read() for name in sorted(os.listdir("notes")))
"""
    fix_safety = "safe for sets of strings and directory listings: wraps the source in `sorted()`; none for other sources."

    VALID = [
        # a dataset builder counting the rows it yields: `idx += 1` collects no file's text
        """
import json
from pathlib import Path
def _generate_examples(folder):
    idx = -1
    for path in Path(folder).glob("*.json"):
        with path.open() as f:
            data = json.load(f)
        idx += 1
        yield idx, {"conversations": data}
""",
        """
import os, anthropic
client = anthropic.Anthropic()
def ask(q):
    docs = "\\n".join(sorted(os.listdir("docs")))
    return client.messages.create(model="claude-sonnet-4-5", max_tokens=10, system="Docs: " + docs, messages=[{"role": "user", "content": q}])
""",
        """
from openai import OpenAI
client = OpenAI()
TAGS = ["a", "b"]
def ask(q):
    return client.chat.completions.create(model="gpt-4o", messages=[{"role": "system", "content": ", ".join(TAGS)}, {"role": "user", "content": q}])
""",
    ]
    INVALID = [
        Invalid("""
import os, anthropic
client = anthropic.Anthropic()
def ask(q):
    docs = "\\n".join(os.listdir("docs"))
    return client.messages.create(model="claude-sonnet-4-5", max_tokens=10, system="Docs: " + docs, messages=[{"role": "user", "content": q}])
""", line=5, fixed="""
import os, anthropic
client = anthropic.Anthropic()
def ask(q):
    docs = "\\n".join(sorted(os.listdir("docs")))
    return client.messages.create(model="claude-sonnet-4-5", max_tokens=10, system="Docs: " + docs, messages=[{"role": "user", "content": q}])
"""),
        Invalid("""
from pathlib import Path
from openai import OpenAI
client = OpenAI()
def ask(q, skills: set[str]):
    listing = ", ".join({s.lower() for s in skills})
    files = [p.read_text() for p in Path("prompts").glob("*.md")]
    return client.responses.create(model="gpt-5", instructions="Skills: " + listing + "\\n".join(files), input=q)
""", line=6),
    ]

    without_sites = True  # a history renderer whose request is sent elsewhere

    def check(self, analysis):
        from cachelint.check.gate import opened_alone

        if not analysis.sites and opened_alone(analysis.ctx.source):
            yield from _set_texts(analysis, set())  # a module opened for its set-made prompt text alone
            return
        found = list(analysis.facts({"unordered"}, args=("system", "instructions", "messages", "input"))) + list(rendered_facts(analysis, {"unordered"}))
        found += list(system_facts(analysis, {"unordered"}))
        reported = set()
        for site, fact in found:
            where = describe(analysis, site) if is_rendered(site) else f"the {fact.landing.words} of {_place(analysis, site)}"
            message = f"{fact.label}{fact.origin} is iterated in no defined order into {where}; sort it"
            fix = wrap(analysis.ctx, fact.node, "sorted") if fact.label in SORTABLE and not fact.origin else None
            reported.add(id(fact.node))
            yield Report.at(site, fact.node, message, fix=fix, elsewhere=reported_at_origin(fact))
        from cachelint.check.listings import listed_prompt_material
        from cachelint.check.schema_sets import choices_from_sets

        for choices in choices_from_sets(analysis.ctx):
            if id(choices.node) not in reported:
                reported.add(id(choices.node))
                subject = "the names in" if "`required`" in choices.schema else "the choices of"
                yield Report(choices.node, f"{subject} {choices.schema} are made from a set, listed in no defined order: the "
                             "schema goes out with the request (a tool, or the output format) and opens the cached prefix, and each "
                             "process lists the same choices in another order, so no two share that prefix; sort them",
                             fix=None if choices.filled else wrap(analysis.ctx, choices.node, "sorted"), confidence="likely")

        yield from _set_texts(analysis, reported)

        for listed in listed_prompt_material(analysis.ctx):
            if id(listed.node) not in reported:
                collected = (f"their contents are collected into `{listed.collected}`, prompt material read in that order" if listed.read
                             else f"the skills it finds are collected into `{listed.collected}` in that order, the list a prompt names them in")
                yield Report(listed.node, f"`{listed.listing}` lists files in the file system's order, which differs between machines and "
                             f"checkouts, and {collected}: "
                             "the same prompt is built in another order elsewhere and shares no cached prefix; sort the listing",
                             fix=wrap(analysis.ctx, listed.node, "sorted"), confidence="likely")


def _set_texts(analysis, reported: set[int]):
    """Prompt text made from a set (set_text.py), where no other finding of this rule took the set."""
    from cachelint.check.set_text import text_from_sets

    for made in text_from_sets(analysis.ctx):
        if id(made.node) not in reported:
            reported.add(id(made.node))
            yield Report(made.node, f"a set is written out in its own order into {made.into}, prompt material: a set of strings "
                         "(or of Enum members) iterates in an order that changes with PYTHONHASHSEED, so each process writes the "
                         "same prompt in another order and shares no cached prefix with the others; sort it",
                         fix=wrap(analysis.ctx, made.node, "sorted") if made.joined else None, confidence="likely")


def _place(analysis, site) -> str:
    """The request a finding is about, or the system prompt built here and sent elsewhere."""
    return describe_system(analysis, site) if is_system_built(site) else analysis.describe_site(site)
