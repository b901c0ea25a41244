"""CL201 on tools that agent frameworks build themselves: merged from several MCP servers, clients or
workbenches in connection order, or iterated out of a set of tool names enabled at run time. The request is
sent elsewhere (a framework's own LLM wrapper), so these findings are `likely`."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

from cachelint.check.engine import lint_source


def lint(source: str, code: str = "CL201"):
    source = textwrap.dedent(source).lstrip("\n")
    return [f for f in lint_source(source, "agent.py") if f.code == code]


def rows(source: str, code: str = "CL201") -> list[int]:
    return [f.row for f in lint(source, code)]


# --- tools of several clients merged in connection order ------------------------------------------------------

TOOLKIT = """
    import logging

    log = logging.getLogger(__name__)

    class MultiServerToolkit:
        def __init__(self, clients):
            self.clients = clients

        def get_tools(self):
            merged = []
            for index, client in enumerate(self.clients):
                try:
                    merged.extend(client.get_tools())
                except Exception as error:
                    log.warning("server %d failed: %s", index, error)
            return merged
"""


def test_client_tools_extended_in_connection_order_with_failures_skipped():
    findings = lint(TOOLKIT)
    assert [f.row for f in findings] == [13]
    assert findings[0].confidence == "likely" and "`merged`" in findings[0].message


def test_merged_client_tools_sorted_afterwards_are_quiet():
    fixed = TOOLKIT.replace("            return merged", "            return sorted(merged, key=lambda t: t.name)")
    assert rows(fixed) == []


def test_tools_property_of_each_server_appended_in_a_nested_loop():
    source = """
        def as_tool_params(servers):
            params = []
            for server in servers:
                for tool in server.tools:
                    params.append(tool.to_param())
            return params
    """
    assert rows(source) == [4]


def test_workbench_tools_flattened_in_a_comprehension():
    source = """
        async def step(model, workbenches, handoffs, messages):
            tools = [tool for bench in workbenches for tool in await bench.list_tools()] + handoffs
            return await model.create(messages, tools=tools)
    """
    assert rows(source) == [2]
    sorted_source = source.replace("tools = [tool for bench", "tools = sorted([tool for bench").replace("+ handoffs", ", key=str) + handoffs")
    assert rows(sorted_source) == []


def test_tools_registered_into_a_dict_by_name_per_session():
    source = """
        class Toolkit:
            async def build(self):
                for position, session in enumerate(self.sessions):
                    listed = await session.list_tools()
                    for tool in listed.tools:
                        self.functions[tool.name] = wrap(tool, position)
    """
    assert rows(source) == [5]


def test_a_per_server_table_of_tool_names_is_not_a_tool_list():
    source = """
        class Toolkit:
            def describe(self):
                table = {}
                for position, client in enumerate(self.clients):
                    names = [tool.name for tool in client.get_tools()]
                    table[f"server_{position}"] = names
                return table
    """
    assert rows(source) == []


def test_a_loop_over_one_servers_tools_is_not_a_merge():
    source = """
        async def tools_of(session):
            listed = await session.list_tools()
            out = []
            for tool in listed.tools:
                out.append({"name": tool.name})
            return out
    """
    assert rows(source) == []


def test_listings_gathered_first_then_merged_beside_their_connections():
    source = """
        import asyncio

        class Manager:
            async def all_tools(self):
                results = await asyncio.gather(*[self._list(c) for c in self.connections], return_exceptions=True)
                tools = []
                for connection, result in zip(self.connections, results):
                    if isinstance(result, BaseException):
                        continue
                    for tool in result:
                        tools.append(tool)
                return tools
    """
    assert rows(source) == [10]
    assert rows(source.replace("                return tools", "                return sorted(tools, key=str)")) == []


def test_a_client_opened_per_configured_server_and_its_tools_merged():
    source = """
        class Manager:
            async def init(self, config):
                tools = []
                for server_name in config["mcpServers"]:
                    client = MCPClient()
                    await client.connect(config["mcpServers"][server_name])
                    for tool in client.tools:
                        tools.append(make_tool(server_name, tool))
                return tools
    """
    assert rows(source) == [7]


def test_zipped_names_and_values_that_are_not_listings_stay_quiet():
    source = """
        def labels(connections, names):
            tools = []
            for connection, name in zip(connections, names):
                tools.append(name.upper())
            return tools
    """
    assert rows(source) == []


# --- a tools list built by iterating a set kept on the agent ----------------------------------------------------

AGENT = """
    from typing import Set

    class ToolAgent:
        def __init__(self, llm, specs):
            self.llm = llm
            self.specs = specs
            self.usable_tools: Set[str] = set()

        def enable(self, name):
            self.usable_tools.add(name)

        def respond(self, messages):
            tools = [{"type": "function", "function": self.specs[name]} for name in self.usable_tools]
            return self.llm.chat(messages=messages, tools=tools)
"""


def test_tools_iterated_from_a_set_of_enabled_names():
    findings = lint(AGENT)
    assert [f.row for f in findings] == [13]
    assert findings[0].confidence == "likely" and "self.usable_tools" in findings[0].message


def test_functions_keyword_iterated_from_a_set_created_with_set_call():
    source = """
        class Agent:
            def __init__(self):
                self.enabled_functions = set()

            def ask(self, messages):
                return self.llm.chat(messages, functions=[self.schemas[f] for f in self.enabled_functions])
    """
    assert rows(source) == [6]


def test_tools_iterated_from_a_sorted_set_or_a_list_are_quiet():
    assert rows(AGENT.replace("for name in self.usable_tools]", "for name in sorted(self.usable_tools)]")) == []
    as_list = AGENT.replace("self.usable_tools: Set[str] = set()", "self.usable_tools: list[str] = []").replace(".add(name)", ".append(name)")
    assert rows(as_list) == []


def test_a_set_iterated_into_something_other_than_tools_is_quiet():
    source = """
        class Memory:
            def __init__(self):
                self.seen_ids = set()

            def ids(self):
                names = [str(i) for i in self.seen_ids]
                return names
    """
    assert rows(source) == []


# --- through the command line, on a tree -----------------------------------------------------------------------

def test_cli_reports_the_merge_in_a_framework_module_without_an_sdk_import(tmp_path: Path):
    (tmp_path / "toolkit.py").write_text(textwrap.dedent(TOOLKIT).lstrip("\n"))
    (tmp_path / "agent.py").write_text(textwrap.dedent(AGENT).lstrip("\n"))
    out = subprocess.run([sys.executable, "-m", "cachelint", "check", ".", "--no-cache", "--select", "CL201", "--output-format", "json"],
                         cwd=tmp_path, capture_output=True, text=True, timeout=120, check=False)
    assert out.returncode == 1, out.stderr
    found = sorted((Path(f["filename"]).name, f["location"]["row"]) for f in json.loads(out.stdout))
    assert found == [("agent.py", 13), ("toolkit.py", 13)]


# --- CL202: a tool list rebuilt each step from state read in that step --------------------------------------

SURFER = """
    class BrowserAgent:
        async def step(self, history):
            position = await self.browser.scroll_position()
            tools = list(self.base_tools)
            if position.top > 0:
                tools.append(SCROLL_UP)
            if position.bottom < position.height:
                tools.append(SCROLL_DOWN)
            return await self.model_client.create(history, tools=tools)
"""


def test_tools_added_when_the_page_state_allows_it_are_reported_once():
    findings = lint(SURFER, "CL202")
    assert [f.row for f in findings] == [6] and findings[0].confidence == "likely"
    assert "position.top > 0" in findings[0].message


def test_tools_added_on_a_setting_or_a_parameter_are_quiet():
    on_setting = SURFER.replace("if position.top > 0:", "if self.allow_scrolling:").replace(
        "if position.bottom < position.height:", "if self.allow_scrolling:")
    assert rows(on_setting, "CL202") == []
    on_parameter = SURFER.replace("async def step(self, history):", "async def step(self, history, can_scroll):").replace(
        "if position.top > 0:", "if can_scroll:").replace("if position.bottom < position.height:", "if can_scroll:")
    assert rows(on_parameter, "CL202") == []


def test_state_dependent_tools_never_sent_with_a_history_are_quiet():
    not_sent = SURFER.replace("return await self.model_client.create(history, tools=tools)", "return tools")
    assert rows(not_sent, "CL202") == []


def test_tools_of_a_connection_opened_per_configured_server_merged_into_specs():
    source = """
        def create_mcp_tools(config):
            tool_specs = []
            for server_config in config.mcp.servers:
                try:
                    client = MCPClient(config=config)
                    tools, session = client.connect(server_config.name)
                    for mcp_tool in tools.tools:
                        tool_specs.append(make_spec(server_config.name, mcp_tool))
                except Exception:
                    continue
            return tool_specs
    """
    assert rows(source) == [7]


def test_a_sorted_list_of_other_names_does_not_count_as_sorting_the_tools():
    source = """
        class MCPUtil:
            @classmethod
            async def get_all_function_tools(cls, servers):
                tools = []
                tool_names = set()
                for server in servers:
                    server_tools = await cls.get_function_tools(server)
                    duplicate_tool_names = sorted({t.name for t in server_tools} & tool_names)
                    if duplicate_tool_names:
                        raise ValueError(duplicate_tool_names)
                    tool_names.update(t.name for t in server_tools)
                    tools.extend(server_tools)
                return tools
    """
    assert rows(source) == [7]


# --- tools and tool_choice switched between the cycles of one conversation, handed to a sender of another module --

CYCLES = '''
from app.llm.step import run_llm_step

def run(history, tools, forced_tool_id=None, max_cycles=6):
    for cycle in range(max_cycles):
        if forced_tool_id:
            final_tools = [tool for tool in tools if tool.id == forced_tool_id]
            tool_choice = "required"
            forced_tool_id = None
        elif cycle == max_cycles - 1:
            final_tools = []
            tool_choice = "none"
        else:
            final_tools = tools
            tool_choice = "auto"
        reply = run_llm_step(history=history, tools=final_tools, tool_choice=tool_choice)
        history.append(reply)
        if not reply.tool_calls:
            break
'''


def test_tools_and_tool_choice_switched_between_cycles_are_reported_where_they_are_decided():
    findings = lint_source(CYCLES.lstrip("\n"), "loop.py")
    assert sorted((f.code, f.row) for f in findings if f.code in ("CL202", "CL401")) == [("CL202", 6), ("CL401", 7)]


def test_one_tool_list_per_conversation_is_quiet():
    steady = CYCLES.replace("final_tools = [tool for tool in tools if tool.id == forced_tool_id]", "final_tools = tools").replace(
        "final_tools = []", "final_tools = tools").replace('tool_choice = "required"', 'tool_choice = "auto"').replace('tool_choice = "none"', 'tool_choice = "auto"')
    assert [f for f in lint_source(steady.lstrip("\n"), "loop.py") if f.code in ("CL202", "CL401")] == []


def test_a_loop_over_separate_tasks_that_grows_no_conversation_is_quiet():
    separate = CYCLES.replace("        history.append(reply)\n", "        results.append(reply)\n").replace("def run(history,", "def run(history, results,")
    assert [f for f in lint_source(separate.lstrip("\n"), "loop.py") if f.code in ("CL202", "CL401")] == []


def test_tools_gathered_into_a_local_set_and_handed_on_as_a_list():
    source = '''
from typing import Any, Callable

async def run_turn(self, actor, assigned_tasks):
    tools: set[Callable[..., Any]] = set()
    for t in assigned_tasks:
        tools.update(t.get_tools())
    return await actor._run(messages=self.thread.get_messages(), tools=list(tools))
'''
    found = [f for f in lint_source(source.lstrip("\n"), "orchestrator.py") if f.code == "CL201"]
    assert [f.row for f in found] == [4] and "a set" in found[0].message
    ordered = source.replace("tools=list(tools)", "tools=sorted(tools, key=lambda f: f.__name__)")
    assert [f for f in lint_source(ordered.lstrip("\n"), "orchestrator.py") if f.code == "CL201"] == []


# --- the last word of a tool loop sent through the plain chat path (CL203; ragflow, holdout7) ------------------

TOOL_LOOP_FALLBACK = """
    from openai import AsyncOpenAI
    class Chat:
        def __init__(self, tools):
            self.client = AsyncOpenAI()
            self.tools = tools
        async def _chat(self, history, conf):
            response = await self.client.chat.completions.create(model=self.model, messages=history, **conf)
            return response.choices[0].message.content
        async def chat_with_tools(self, system, history, conf):
            for _ in range(self.max_rounds):
                response = await self.client.chat.completions.create(model=self.model, messages=history, tools=self.tools)
                calls = response.choices[0].message.tool_calls
                if not calls:
                    return response.choices[0].message.content
                history = self._append_results(history, calls)
            history.append({"role": "user", "content": "Exceeded the rounds"})
            return await self._chat(history, conf)
"""


def test_a_tool_loop_whose_last_request_goes_through_a_helper_without_tools_is_found():
    found = lint(TOOL_LOOP_FALLBACK, "CL203")
    assert [f.row for f in found] == [17]
    assert "self._chat()" in found[0].message and "line 11 sends them" in found[0].message


def test_a_helper_that_also_forwards_kwargs_is_still_the_loops_last_request():
    """ragflow's `_async_chat(history, gen_conf, **kwargs)` forwards `**kwargs` to the SDK: a request itself, but
    its history comes by position, so it is paired with the loop's request as the helper it is."""
    source = TOOL_LOOP_FALLBACK.replace("async def _chat(self, history, conf):", "async def _chat(self, history, conf, **kwargs):")\
        .replace("messages=history, **conf)", "messages=history, **conf, **kwargs)")
    assert rows(source, "CL203") == [17]


def test_the_plain_chat_path_on_its_own_is_quiet():
    # the helper called for another conversation (a fresh list), or the helper's own request: nothing to compare
    source = TOOL_LOOP_FALLBACK.replace("return await self._chat(history, conf)",
                                        "return await self._chat([{'role': 'user', 'content': system}], conf)")
    assert rows(source, "CL203") == []


# --- a tool list filled in the order of a set made where it is iterated -------------------------------------

SET_OF_TOOL_NAMES = """
    class RAGAgentMixin:
        def _register_tools(self):
            for tool_name in set(self.config.rag_tools):
                if tool_instance := self.tool_registry.create_tool_instance(tool_name, context=self):
                    self._tools.append(tool_instance)
"""


def test_tools_appended_while_iterating_a_set_of_names_are_found():
    found = lint(SET_OF_TOOL_NAMES)
    assert [f.row for f in found] == [3] and "set(self.config.rag_tools)" in found[0].message
    assert found[0].confidence == "likely"


def test_tools_from_a_sorted_set_or_a_set_used_for_bookkeeping_are_quiet():
    assert lint(SET_OF_TOOL_NAMES.replace("in set(self.config.rag_tools)", "in sorted(set(self.config.rag_tools))")) == []
    source = """
        class Agent:
            def _check(self, names):
                for tool_name in set(names):
                    self.seen_tool_names.add(tool_name)
        """
    assert lint(source) == []
