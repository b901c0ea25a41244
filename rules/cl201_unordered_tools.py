"""CL201 unordered-tools."""

from __future__ import annotations

from cachelint.rules.base import Invalid, Report, Rule

from cachelint.check.fixes import wrap

SORTABLE = ("os.listdir()", "glob.glob()", "glob.iglob()", "Path.iterdir()", "Path.glob()", "Path.rglob()")


class UnorderedTools(Rule):
    code = "CL201"
    what = """
Finds a `tools=` list built from a source without a defined order: a set (made there, or a parameter annotated
`set[...]` / `frozenset[...]`), the values of a dict filled at run
time (a registry populated by decorators or plugins), or a directory listing, without sorting (one MCP
server's `list_tools()` keeps that server's own order and is not reported). Also, wherever the request is sent from (confidence `likely`): tools
listed by several servers, clients or workbenches (`for server in servers: tools.extend(await server.list_tools())`,
`client.get_tools()`, `for tool in client.tools:`, `[t for wb in workbenches for t in await wb.list_tools()]`, a dict
of functions keyed by tool name) and merged in connection and listing order with no sort afterwards, often with
failing servers skipped; and a tools list built by iterating a set of tool names kept on the object
(`[spec(n) for n in self.enabled_tools]`, or a set the function is handed) and handed to a framework's own LLM call;
and tools (tool files, OpenAPI schemas, plug-ins) loaded in a loop over an unsorted directory listing
(`for file in tools_folder.iterdir(): add_tool(agent, load(file))`, or a generator named for tools that yields
them: `def _iter_tool_classes(paths): for path in base.rglob("*.py"): yield ...`, or a function named for the tools it
finds that returns the list it collects: `def discover_module_tools(name): for py in d.glob("*.py"): results.append(...)`,
unless it sorts the list or a caller in the tree sorts what it returns). Also
tools added by coroutines that connect several servers at once (`asyncio.gather(*[connect(s) for s in servers])`, where
`connect` adds each listed tool to the toolset: their order follows which server answers first), and a list of tools
handed to a discovery call in a loop over servers (`client.connect_and_discover(name, config, self.mcp_tools)`). A
list of the servers that offer a tool (`servers_with_tool.append(server_name)`) is not a list of tools. A table of
tools filled in a loop over a set of names (`names = list(set(a + b))`, `for name in names: tools[name] = ...`) keeps
the set's order; a set of tool names handed on as it is (`tools: set[str]`, the groups to enable) is the callee's to
use, and is not reported where it is handed on.
"""
    why = """
Tools come first in the cached prefix. The same tools in another order invalidate the tools, the system
prompt and every message after them: nothing of the request is read from cache. Registration and
reconnection order varies between runs (many agent frameworks hit this with MCP servers).
"""
    example = """
from anthropic import Anthropic

client = Anthropic()
TOOLS = {}

def tool(fn):
    TOOLS[fn.__name__] = {"name": fn.__name__, "description": fn.__doc__, "input_schema": {"type": "object"}}
    return fn

def run(messages):
    return client.messages.create(model="claude-sonnet-4-5", max_tokens=1024, tools=list(TOOLS.values()), messages=messages)
"""
    instead = """
def run(messages):
    tools = sorted(TOOLS.values(), key=lambda t: t["name"])
    return client.messages.create(model="claude-sonnet-4-5", max_tokens=1024, tools=tools, messages=messages)
"""
    fix_safety = "safe for directory listings (wraps them in `sorted()`); none for tool objects, which need a key."

    VALID = [
        # one MCP server's tools in the order it lists them: a server's own, fixed order
        """
from openai import AsyncOpenAI
client = AsyncOpenAI()
async def run(session, messages):
    listed = await session.list_tools()
    tools = [{"type": "function", "function": {"name": t.name, "parameters": t.inputSchema}} for t in listed.tools]
    return await client.chat.completions.create(model="gpt-4.1", tools=tools, messages=messages)
""",
        # the set parameter sorted before the tools are built
        """
from openai import OpenAI
client = OpenAI()
REGISTRY = {"search": {"type": "function", "function": {"name": "search"}}}
def run(messages, enabled: set[str]):
    tools = [REGISTRY[name] for name in sorted(enabled)]
    return client.chat.completions.create(model="gpt-4o", messages=messages, tools=tools)
""",
        """
from anthropic import Anthropic
client = Anthropic()
TOOLS = [{"name": "a", "input_schema": {}}, {"name": "b", "input_schema": {}}]
def run(messages):
    return client.messages.create(model="claude-sonnet-4-5", max_tokens=10, tools=TOOLS, messages=messages)
""",
        """
from anthropic import Anthropic
client = Anthropic()
REGISTRY = {}
def register(fn):
    REGISTRY[fn.__name__] = {"name": fn.__name__}
    return fn
def run(messages):
    return client.messages.create(model="claude-sonnet-4-5", max_tokens=10, tools=sorted(REGISTRY.values(), key=lambda t: t["name"]), messages=messages)
""",
    ]
    INVALID = [
        # the tools picked from a set the caller passes (a parameter annotated as one)
        Invalid("""
from openai import OpenAI
client = OpenAI()
REGISTRY = {"search": {"type": "function", "function": {"name": "search"}}, "fetch": {"type": "function", "function": {"name": "fetch"}}}
def run(messages, enabled: set[str]):
    tools = [REGISTRY[name] for name in enabled]
    return client.chat.completions.create(model="gpt-4o", messages=messages, tools=tools)
""", line=6, message="a set"),
        # no request in sight: a tool list built from a set parameter
        Invalid("""
def tool_specs(registry, enabled: frozenset[str]):
    tools = [registry[name].spec() for name in enabled]
    return tools
""", line=3, message="a set"),
        Invalid("""
from anthropic import Anthropic
client = Anthropic()
REGISTRY = {}
def register(fn):
    REGISTRY[fn.__name__] = {"name": fn.__name__}
    return fn
def run(messages):
    return client.messages.create(model="claude-sonnet-4-5", max_tokens=10, tools=list(REGISTRY.values()), messages=messages)
""", line=9, message="dict filled at run time"),
        Invalid("""
import glob, json
from openai import OpenAI
client = OpenAI()
def run(messages):
    tools = [json.load(open(path)) for path in glob.glob("tools/*.json")]
    return client.chat.completions.create(model="gpt-4.1", tools=tools, messages=messages)
""", line=6, fixed="""
import glob, json
from openai import OpenAI
client = OpenAI()
def run(messages):
    tools = [json.load(open(path)) for path in sorted(glob.glob("tools/*.json"))]
    return client.chat.completions.create(model="gpt-4.1", tools=tools, messages=messages)
"""),
        Invalid("""
from typing import Set
class Agent:
    def __init__(self, llm):
        self.llm = llm
        self.enabled_tools: Set[str] = set()
    def respond(self, messages):
        tools = [{"type": "function", "function": SPECS[name]} for name in self.enabled_tools]
        return self.llm.chat(messages=messages, tools=tools)
""", line=8, message="a set"),
        Invalid("""
class Toolkit:
    def get_tools(self):
        merged = []
        for client in self.clients:
            try:
                merged.extend(client.get_tools())
            except ConnectionError:
                continue
        return merged
""", line=7, message="connection and listing order"),
    ]

    without_sites = True

    def check(self, analysis):
        from cachelint.check.conversation import merged_provider_tools, tools_from_sets
        from cachelint.check.history import tools_from_listings
        from cachelint.check.listings import listed_prompt_material
        from cachelint.check.listings import tools_loaded_from_listings

        from cachelint.check.concurrent_tools import tools_added_concurrently
        from cachelint.check.gate import opened_alone

        ctx = analysis.ctx
        if not analysis.sites and opened_alone(ctx.source):  # opened for a set of tools handed on, and judged for it alone
            yield from map(_built_from_a_set, tools_from_sets(ctx))
            return
        concurrent = list(tools_added_concurrently(ctx))
        for found in concurrent:
            yield Report(found.node, f"tools are added with `{found.holder}(...)` in `{found.function}()`, which runs concurrently for each server "
                         "(scheduled together with asyncio): each server adds its tools when its own listing returns, so their order "
                         "follows which server answers first and changes from run to run, and the tools open the prefix; sort them "
                         "by name once every server has answered", confidence="likely")
        for merge in merged_provider_tools(ctx):
            if any(ctx.contains(merge.node, found.node) or ctx.contains(found.node, merge.node) for found in concurrent):
                continue
            yield Report(merge.node, f"tools listed by each of `{merge.providers}` are merged into `{merge.tools}` in connection and listing "
                         "order and never sorted: a server that fails, reconnects or lists in another order moves every tool after it, "
                         f"and the tools open the prefix; sort `{merge.tools}` by name once they are merged", confidence="likely")
        if not analysis.sites:  # where a request is in sight, the data flow reports a set at the request's tools
            yield from map(_built_from_a_set, tools_from_sets(ctx))
        if not analysis.sites:  # where a request is in sight, the data flow reports it at the request's tools
            # read into a prompt's text, which the function returns: CL103's
            listed = {id(material.node) for material in listed_prompt_material(analysis.ctx) if material.text}
            for found in tools_from_listings(analysis.ctx):
                if id(found.node) in listed:
                    continue
                listed.add(id(found.node))
                yield Report(found.node, f"the tools in `{found.tools}` are loaded from {found.servers} in the file system's order, never "
                             f"sorted, and tools open the prefix; sort the listing: sorted({found.servers})", confidence="likely")
            for loaded in tools_loaded_from_listings(analysis.ctx):
                if id(loaded.node) not in listed:
                    yield Report(loaded.node, (f"the tools {loaded.tools} hands back are loaded" if loaded.yielded else f"tools are loaded into {loaded.tools}") + f" in a loop over `{loaded.listing}`, in the file system's "
                                 "order (it differs between machines, file systems and checkouts), never sorted, and tools open the "
                                 f"prefix; iterate sorted({loaded.listing})", confidence="likely")
        for site, fact in analysis.facts({"unordered"}, args=("tools",)):
            message = f"the tools of {analysis.describe_site(site)} come from {fact.label}{fact.origin} in no defined order; sort them by name"
            fix = wrap(analysis.ctx, fact.node, "sorted") if fact.label in SORTABLE and not fact.origin else None
            yield Report.at(site, fact.node, message, fix=fix)


def _built_from_a_set(found) -> Report:
    return Report(found.node, f"`{found.tools}` is built by iterating `{found.source}`, a set: its order follows hashing (of strings, or of "
                  "objects' ids), which changes with every process, so each process sends the same tools in another order and the "
                  f"tools open the prefix; iterate sorted({found.source})", confidence="likely")
