"""CL202 on agent middleware (issue 14, holdout5's deer-flow): LangChain's hooks around every model call hand on
the request with its tools filtered. Filtered on what the request or the conversation's state holds, the tool
list changes between calls of one conversation; filtered on the middleware's own settings, it never does."""

from __future__ import annotations

import textwrap

from cachelint.check.engine import lint_source


def lint(source: str) -> list:
    source = textwrap.dedent(source).lstrip("\n")
    return [f for f in lint_source(source, "middleware.py") if f.code == "CL202"]


def row_of(source: str, needle: str) -> int:
    return next(i for i, line in enumerate(textwrap.dedent(source).lstrip("\n").splitlines(), 1) if needle in line)


PROMOTED = """
from langchain.agents.middleware import AgentMiddleware, ModelRequest

class DeferredToolFilterMiddleware(AgentMiddleware):
    def __init__(self, deferred_names):
        self._deferred = frozenset(deferred_names)

    def _promoted(self, state):
        return set(state.get("promoted_tools") or ())

    def _hidden(self, state):
        return self._deferred - self._promoted(state)

    def _filter_tools(self, request: ModelRequest) -> ModelRequest:
        hide = self._hidden(request.state)
        active = [t for t in request.tools if getattr(t, "name", None) not in hide]
        return request.override(tools=active)

    def wrap_model_call(self, request, handler):
        return handler(self._filter_tools(request))

    async def awrap_model_call(self, request, handler):
        return await handler(self._filter_tools(request))
"""


def test_tools_filtered_on_the_conversations_state_in_a_helper_of_the_hook_are_reported_once():
    found = lint(PROMOTED)
    assert [f.row for f in found] == [row_of(PROMOTED, "active = [")]
    assert found[0].confidence == "likely" and "every model call" in found[0].message


def test_a_filter_written_as_filter_and_assigned_to_request_tools_is_reported():
    source = """
        class SkillPolicy(AgentMiddleware):
            def modify_model_request(self, request, state):
                allowed = allowed_tools_of(state["active_skills"])
                request.tools = list(filter(lambda tool: tool.name in allowed, request.tools))
                return request
        """
    assert [f.row for f in lint(source)] == [row_of(source, "request.tools =")]


def test_a_filter_on_the_middlewares_own_settings_is_quiet():
    source = """
        class DisabledTools(AgentMiddleware):
            def __init__(self, disabled):
                self.disabled = frozenset(disabled)

            def wrap_model_call(self, request, handler):
                kept = [t for t in request.tools if t.name not in self.disabled and not t.name.startswith("debug_")]
                return handler(request.override(tools=kept))
        """
    assert lint(source) == []


def test_other_fields_overridden_per_call_are_not_tools():
    source = """
        class PickModel(AgentMiddleware):
            def wrap_model_call(self, request, handler):
                msgs = [m for m in request.messages if m.type != "tool" or request.state.get("keep_tools")]
                return handler(request.override(messages=msgs))
        """
    assert lint(source) == []


def test_a_method_with_the_hooks_name_outside_a_class_is_not_a_hook():
    source = """
        def wrap_model_call(request, handler):
            return handler(request.override(tools=[t for t in request.tools if t.name in request.state["allowed"]]))
        """
    assert lint(source) == []
