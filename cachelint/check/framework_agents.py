"""Agent frameworks' switches that build the prompt for the app: a clock in the system message (CL101) and a
window over the past runs replayed as history (CL301).

Agno (and phidata before it) builds the system message and the history of every run from the agent's settings.
Two of those settings break the cached prefix on their own, with no prompt text in the app to see:

- `add_datetime_to_context=True` (Agno 2; `add_datetime_to_instructions` in Agno 1 and phidata) appends the
  current time, to the second, to the system message of every run, so no two runs of a conversation share it;
- `add_history_to_context=True` (`add_history_to_messages` before) replays only the last `num_history_runs`
  runs of the session (3 when not given; `num_history_responses` in phidata, and `num_history_messages` caps
  the messages): once a conversation is longer, each run drops the oldest from the front of the history (a window
  of 20 runs or 60 messages and more rarely slides within a conversation, and is left alone).

What each class does is a fact of the framework, written down here once; the code only has to construct it with
the switch set to a literal `True`. A setting passed to one run (`agent.run(..., add_history_to_context=True)`)
is not a construction and is left alone.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass

import libcst as cst

from cachelint.check.module import ModuleContext, literal_int

AGENT_CLASSES = frozenset({
    "agno.agent.Agent", "agno.agent.agent.Agent", "agno.team.Team", "agno.team.team.Team",
    "phi.agent.Agent", "phi.agent.agent.Agent", "phi.assistant.Assistant", "phi.assistant.assistant.Assistant",
})
CLOCK_SWITCHES = ("add_datetime_to_context", "add_datetime_to_instructions")
HISTORY_SWITCHES = ("add_history_to_context", "add_history_to_messages")
WINDOW_SIZES = ("num_history_messages", "num_history_runs", "num_history_responses")  # the first given decides
DEFAULT_RUNS = 3
LONG_WINDOW = {"runs": 20, "messages": 60}  # windows this long rarely slide within a conversation
STORES = frozenset({"db", "storage", "memory"})  # where the runs are kept: without one, no history is replayed

# a cheap look at the text first (gate.py): one of the switches set to True, or a placeholder's cap
QUICK = re.compile(r"\b(?:add_datetime_to_(?:context|instructions)|add_history_to_(?:context|messages))\s*=\s*True\b"
                   r"|\bMessagesPlaceholder\([^)]*\bn_messages\s*=")
PLACEHOLDERS = frozenset({"langchain_core.prompts.MessagesPlaceholder", "langchain_core.prompts.chat.MessagesPlaceholder",
                          "langchain.prompts.MessagesPlaceholder", "langchain.prompts.chat.MessagesPlaceholder"})


@dataclass(frozen=True, slots=True)
class AgentSwitch:
    node: cst.CSTNode  # the keyword argument to report
    cls: str  # Agent, Team
    what: str  # "puts the current time into the system message", "replays only the last 5 runs"


def _constructions(ctx: ModuleContext) -> Iterator[tuple[cst.Call, str, dict[str, cst.Arg]]]:
    if ctx.is_test or not QUICK.search(ctx.source):
        return
    for call in ctx.nodes(cst.Call):
        name = ctx.qualified_name_in(call.func, AGENT_CLASSES)
        if name is not None:
            yield call, name.rsplit(".", 1)[-1], {a.keyword.value: a for a in call.args if a.keyword is not None}


def _on(arg: cst.Arg | None) -> bool:
    return arg is not None and isinstance(arg.value, cst.Name) and arg.value.value == "True"


def clock_switches(ctx: ModuleContext) -> Iterator[AgentSwitch]:
    """An agent made to put the current time into its system message on every run."""
    for _, cls, keywords in _constructions(ctx):
        for switch in CLOCK_SWITCHES:
            if _on(keywords.get(switch)):
                yield AgentSwitch(keywords[switch], cls, f"`{switch}=True` makes `{cls}` append the current time, to the second, "
                                  "to the system message of every run")


def history_windows(ctx: ModuleContext) -> Iterator[AgentSwitch]:
    """An agent made to replay a fixed number of past runs (or messages) as the history of each run."""
    for call, cls, keywords in _constructions(ctx):
        switch = next((s for s in HISTORY_SWITCHES if _on(keywords.get(s))), None)
        if switch is None or not (STORES & set(keywords) or any(a.star == "**" for a in call.args)):
            continue  # no store to read the session's runs from: nothing is replayed
        size = next((keywords[s] for s in WINDOW_SIZES if s in keywords), None)
        if size is None:
            yield AgentSwitch(keywords[switch], cls, f"`{switch}=True` makes `{cls}` replay only the last {DEFAULT_RUNS} runs of the "
                              "session (its default `num_history_runs`)")
            continue
        what = "messages" if size.keyword is not None and size.keyword.value == "num_history_messages" else "runs"
        count = size.value.value if isinstance(size.value, cst.Integer) else f"`{ctx.code(size.value)}`"
        if isinstance(size.value, cst.Name) and size.value.value == "None":
            continue  # no cap: the whole session
        if isinstance(size.value, cst.Integer) and literal_int(size.value) >= LONG_WINDOW[what]:
            continue  # `num_history_runs=30`: a conversation rarely gets that long, the window practically never slides
        yield AgentSwitch(size, cls, f"`{switch}=True` with `{ctx.code(size.keyword)}={ctx.code(size.value)}` makes `{cls}` replay "
                          f"only the last {count} {what} of the session")


def placeholder_windows(ctx: ModuleContext) -> Iterator[AgentSwitch]:
    """LangChain's `MessagesPlaceholder("history", n_messages=n)`: the template renders only the last n messages of
    the history it is given (all of them when `n_messages` is None, the default), so once a conversation is longer
    each request drops the oldest from the front. A cap of 60 messages or more rarely slides and is left alone."""
    if ctx.is_test or "n_messages" not in ctx.source:
        return
    for call in ctx.nodes(cst.Call):
        if ctx.qualified_name_in(call.func, PLACEHOLDERS) is None:
            continue
        size = next((a for a in call.args if a.keyword is not None and a.keyword.value == "n_messages"), None)
        if size is None or isinstance(size.value, cst.Name) and size.value.value == "None":
            continue
        value = size.value
        if isinstance(value, cst.Name):  # `n_messages=MAX_HISTORY_MESSAGES`, a constant of the module
            bound = [v for _, v in ctx.assigned_values(value) if v is not None]
            value = bound[0] if len(bound) == 1 else value
        if isinstance(value, cst.Integer) and literal_int(value) >= LONG_WINDOW["messages"]:
            continue
        if _side_prompt(ctx, call):
            continue  # the prompt that makes the question standalone for a retriever: a side request of its own
        count = size.value.value if isinstance(size.value, cst.Integer) else f"`{ctx.code(size.value)}`"
        yield AgentSwitch(size, "MessagesPlaceholder", f"`n_messages={ctx.code(size.value)}` makes the template render only the last "
                          f"{count} messages of the history")


SIDE_PROMPT = re.compile(r"contextuali[sz]e|condense|rephrase|standalone|rewrite", re.I)


def _side_prompt(ctx: ModuleContext, call: cst.Call) -> bool:
    """The template the placeholder is part of is named for a side task (`contextualize_q_prompt`, a function
    `condense_question_prompt()`), or its text asks for a standalone question: LangChain's history-aware retriever
    sends the latest turns to rewrite the question, not the conversation."""
    statement = ctx.statement_of(call)
    names = [ctx.code(t.target) for t in statement.body[0].targets] \
        if isinstance(statement, cst.SimpleStatementLine) and statement.body and isinstance(statement.body[0], cst.Assign) else []
    function = ctx.enclosing_function(call)
    if function is not None:
        names.append(function.name.value)
    if any(SIDE_PROMPT.search(n) for n in names):
        return True
    template = next((a for a in ctx.ancestors(call) if isinstance(a, cst.Call)), None)
    return template is not None and re.search(r"standalone question", ctx.code(template), re.I) is not None
