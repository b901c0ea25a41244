"""Round 31: what a spent set (holdout35) taught. Each class is written here in its own words, with the shape
beside it that must stay quiet."""

from __future__ import annotations

from _lint import lint

# --- CL202: tools bound to a model object, switched within one conversation -----------------------------------------

STEP_CHOSEN_CHAINS = '''
from trustcall import create_extractor


class Reflection:
    def __init__(self, model):
        self.think_chain = create_extractor(model, tools=[think, critique], tool_choice="any")
        self.any_chain = create_extractor(model, tools=[think, critique, recommend], tool_choice="any")
        self.final_chain = create_extractor(model, tools=[recommend], tool_choice="recommend")

    def react(self, inputs, max_steps, min_steps):
        messages = [{"role": "user", "content": inputs}]
        for ix in range(max_steps):
            if ix == max_steps - 1:
                chain = self.final_chain
            elif ix < min_steps:
                chain = self.think_chain
            else:
                chain = self.any_chain
            response = chain.invoke(messages)
            msg = response["messages"][-1]
            messages.append(msg)
            for tc in msg.tool_calls or []:
                messages.append({"role": "tool", "content": "", "tool_call_id": tc["id"]})
'''


def test_chains_with_other_tools_chosen_by_the_loops_step_are_reported_at_the_choice():
    found = lint(STEP_CHOSEN_CHAINS, {"CL202"})
    assert [f.row for f in found] == [13]
    assert "`chain`" in found[0].message and "`ix`" in found[0].message


TOOL_ADDED_FROM_THE_SECOND_STEP = '''
from trustcall import create_extractor


async def extract(model, schemas, messages, max_steps):
    extractor = create_extractor(model, tools=list(schemas))
    payload = {"messages": messages}
    for i in range(max_steps):
        if i == 1:
            extractor = create_extractor(model, tools=list(schemas) + [Done])
        response = await extractor.ainvoke(payload)
        if not response["messages"][-1].tool_calls:
            break
        messages = messages + [response["messages"][-1]] + [{"role": "tool", "content": "ok", "tool_call_id": t["id"]}
                                                             for t in response["messages"][-1].tool_calls]
        payload = {"messages": messages}
'''


def test_an_extractor_rebound_with_one_more_tool_inside_the_loop_is_reported():
    found = lint(TOOL_ADDED_FROM_THE_SECOND_STEP, {"CL202"})
    assert [f.row for f in found] == [8]


RETRY_WITH_ANOTHER_CHAIN = '''
from trustcall import create_extractor


def ask(model, question):
    messages = [{"role": "user", "content": question}]
    strict = create_extractor(model, tools=[Answer], tool_choice="Answer")
    loose = create_extractor(model, tools=[Answer])
    for attempt in range(3):
        chain = strict if attempt == 0 else loose
        response = chain.invoke(messages)
        if response["responses"]:
            return response["responses"][0]
'''

ONE_CHAIN_FOR_THE_LOOP = '''
from trustcall import create_extractor


def react(model, inputs, max_steps, final):
    chain = create_extractor(model, tools=[think, recommend]) if not final else create_extractor(model, tools=[recommend])
    messages = [{"role": "user", "content": inputs}]
    for ix in range(max_steps):
        response = chain.invoke(messages)
        messages.append(response["messages"][-1])
'''


def test_a_retry_that_resends_the_same_question_and_a_chain_chosen_before_the_loop_stay_quiet():
    assert lint(RETRY_WITH_ANOTHER_CHAIN, {"CL202"}) == []
    assert lint(ONE_CHAIN_FOR_THE_LOOP, {"CL202"}) == []


TOOL_ADDED_ONCE_HISTORY_EXISTS = '''
from langchain_openai import ChatOpenAI


async def draft_response(state, config):
    llm = ChatOpenAI(model="gpt-4o", tool_choice="required")
    tools = [NewEmailDraft, ResponseEmailDraft, Question]
    messages = state.get("messages") or []
    if len(messages) > 0:
        tools.append(Ignore)
    model = llm.bind_tools(tools)
    messages = [{"role": "user", "content": build_prompt(state)}] + messages
    i = 0
    while i < 5:
        response = await model.ainvoke(messages)
        if len(response.tool_calls) != 1:
            i += 1
            messages += [{"role": "user", "content": "Please call a valid tool call."}]
        else:
            break
    return {"draft": response, "messages": [response]}
'''

TOOL_ADDED_BY_A_SETTING = TOOL_ADDED_ONCE_HISTORY_EXISTS.replace("if len(messages) > 0:", "if config.get('allow_ignore'):")


def test_a_tool_bound_only_once_the_conversation_has_messages_is_reported_at_the_addition():
    found = lint(TOOL_ADDED_ONCE_HISTORY_EXISTS, {"CL202"})
    assert [f.row for f in found] == [9]
    assert "`messages`" in found[0].message
    assert lint(TOOL_ADDED_BY_A_SETTING, {"CL202"}) == []


# --- CL101: a clock filled into a long one-message template ahead of its static text --------------------------------

RULES = "\n".join(f"{n}. Rule number {n}: extract only facts the user states about themselves, their plans, their "
                  f"preferences or their relationships; never guess, never merge two facts, write each in the third person."
                  for n in range(1, 60))

EXTRACTION = f'''
from datetime import datetime

import litellm


class DiscreteStrategy:
    EXTRACTION_PROMPT = """
    You are a long-memory manager.
    Current date and time: {{current_datetime}}

{RULES}

    Message:
    {{message}}
    """

    async def extract(self, text):
        prompt = self.EXTRACTION_PROMPT.format(
            message=text,
            current_datetime=datetime.now().strftime("%A, %B %d, %Y at %I:%M %p"),
        )
        response = await litellm.acompletion(model="gpt-4o", messages=[{{"role": "user", "content": prompt}}])
        return response.choices[0].message.content
'''


def test_a_clock_at_the_top_of_a_long_extraction_template_is_reported_at_the_clock():
    found = lint(EXTRACTION, {"CL101"})
    assert len(found) == 1
    assert found[0].row == EXTRACTION.splitlines().index(
        '            current_datetime=datetime.now().strftime("%A, %B %d, %Y at %I:%M %p"),')
    assert "{current_datetime}" in found[0].message and "every minute" in found[0].message


def test_a_date_a_clock_below_the_data_and_a_short_template_stay_quiet():
    date_only = EXTRACTION.replace('"%A, %B %d, %Y at %I:%M %p"', '"%A, %B %d, %Y"')
    assert lint(date_only, {"CL101"}) == []
    after_the_data = EXTRACTION.replace("Current date and time: {current_datetime}", "{message}").replace(
        "Message:\n    {message}", "Current date and time: {current_datetime}")
    assert lint(after_the_data, {"CL101"}) == []
    short = EXTRACTION.replace(RULES, "1. Extract the facts.")
    assert lint(short, {"CL101"}) == []


# --- a selection only filters: `--select CL104` finds what the full run finds for CL104 ------------------------------

OPENED_BY_ANOTHER_RULES_SHAPE = '''
import datetime


class ContraRepeatWorker(MemoryBaseWorker):
    def _run(self):
        nodes = self.memory_manager.get_memories(NEW_OBS_NODES)
        user_query_list = []
        for i, n in enumerate(nodes):
            user_query_list.append(f"{i + 1} {n.content}")
        system_prompt = self.prompt_handler.contra_repeat_system.format(num_obs=len(user_query_list), user_name=self.target_name)
        user_query = self.prompt_handler.contra_repeat_user_query.format(user_query="\\n".join(user_query_list))
        message = self.prompt_to_msg(system_prompt=system_prompt, few_shot="", user_query=user_query)
        return self.generation_model.call(messages=message)
'''


def test_selecting_one_rule_finds_what_the_full_run_finds_for_it():
    import textwrap

    from cachelint.check.engine import ALL_CODES, lint_source

    source = textwrap.dedent(OPENED_BY_ANOTHER_RULES_SHAPE).lstrip("\n")
    full = [(f.code, f.row) for f in lint_source(source, "worker.py")]
    assert ("CL104", 10) in full
    for code in sorted(ALL_CODES):
        selected = [(f.code, f.row) for f in lint_source(source, "worker.py", frozenset({code}))]
        assert selected == [found for found in full if found[0] == code], code


# --- CL401: the model after the one that failed is a fallback, not a rotation ------------------------------------------

ROTATION_AND_FALLBACK = '''
from openai import OpenAI

client = OpenAI()


class Router:
    def __init__(self):
        self.available_models = ["gpt-4o", "gpt-4o-mini"]
        self.calls = 0

    def ask(self, messages):
        model = self.available_models[self.calls % len(self.available_models)]
        self.calls += 1
        return client.chat.completions.create(model=model, messages=messages)

    def ask_with_fallback(self, messages, model):
        for _ in range(3):
            try:
                return client.chat.completions.create(model=model, messages=messages)
            except TimeoutError:
                model = self.next_model(model)

    def next_model(self, current_model):
        current_index = self.available_models.index(current_model)
        next_index = (current_index + 1) % len(self.available_models)
        return self.available_models[next_index]
'''


def test_a_counter_rotation_is_reported_and_the_model_after_the_failed_one_is_not():
    found = lint(ROTATION_AND_FALLBACK, {"CL401"})
    assert [f.row for f in found] == [12]
    # the same expression run on every request (not only after a failure) is a rotation
    every_request = ROTATION_AND_FALLBACK.replace("                model = self.next_model(model)", "                pass").replace(
        "        for _ in range(3):", "        model = self.next_model(model)\n        for _ in range(3):")
    assert [f.row for f in lint(every_request, {"CL401"})] == [12, 26]


# --- CL401: tool_choice forced on the loop's first pass and reset after it ----------------------------------------

FORCED_ON_THE_FIRST_PASS = '''
async def tool_loop(llm, messages, tools, tool_choice, max_iterations):
    effective_tool_choice = tool_choice
    iteration = 0
    while iteration < max_iterations:
        async def call(choice=effective_tool_choice):
            return await llm.complete(messages=messages, tools=tools, tool_choice=choice)

        response = await with_retries(call)
        if not response.tool_calls:
            return response
        messages.extend(run_tools(response))
        if iteration == 0 and effective_tool_choice in ("required", "any"):
            effective_tool_choice = "auto"
        iteration += 1
'''


def test_a_tool_choice_reset_after_the_loops_first_pass_is_reported():
    found = lint(FORCED_ON_THE_FIRST_PASS, {"CL401"})
    assert [f.row for f in found] == [13]
    chosen_by_a_setting = FORCED_ON_THE_FIRST_PASS.replace("if iteration == 0 and", "if settings.relax and")
    assert lint(chosen_by_a_setting, {"CL401"}) == []


# --- the review's mends ---------------------------------------------------------------------------------------------

A_CONVERSATION_PER_DOCUMENT = '''
from trustcall import create_extractor


def classify_all(model, docs):
    invoice_chain = create_extractor(model, tools=[Invoice])
    receipt_chain = create_extractor(model, tools=[Receipt])
    results = []
    for doc in docs:
        messages = []
        messages.append({"role": "user", "content": doc.text})
        if doc.kind == "invoice":
            chain = invoice_chain
        else:
            chain = receipt_chain
        results.append(chain.invoke(messages))
    return results
'''

SAME_TOOLS_ANOTHER_TOOL_CHOICE = '''
from langchain_openai import ChatOpenAI


def solve(question, tools, max_steps):
    llm = ChatOpenAI(model="gpt-4o")
    forced = llm.bind_tools(tools, tool_choice="required")
    free = llm.bind_tools(tools)
    messages = [{"role": "user", "content": question}]
    for step in range(max_steps):
        if step == 0:
            chain = forced
        else:
            chain = free
        response = chain.invoke(messages)
        messages.append(response)
'''

ADDED_AFTER_BINDING = '''
from langchain_openai import ChatOpenAI


async def respond(state):
    llm = ChatOpenAI(model="gpt-4o")
    tools = [Search, Answer]
    messages = state["messages"]
    model = llm.bind_tools(tools)
    response = await model.ainvoke(messages)
    if len(messages) > 20:
        tools.append(Summarize)
    return {"messages": [response], "tools_for_summary": tools}
'''


def test_a_conversation_per_item_the_same_tools_and_an_addition_after_binding_stay_quiet():
    assert lint(A_CONVERSATION_PER_DOCUMENT, {"CL202"}) == []
    assert lint(SAME_TOOLS_ANOTHER_TOOL_CHOICE, {"CL202"}) == []
    assert lint(ADDED_AFTER_BINDING, {"CL202"}) == []


def test_the_same_switch_written_as_a_conditional_expression_a_payload_dict_or_an_inline_binding_is_reported():
    conditional = STEP_CHOSEN_CHAINS.replace("""            if ix == max_steps - 1:
                chain = self.final_chain
            elif ix < min_steps:
                chain = self.think_chain
            else:
                chain = self.any_chain
""", """            chain = self.final_chain if ix == max_steps - 1 else self.any_chain
""")
    assert conditional != STEP_CHOSEN_CHAINS and [f.row for f in lint(conditional, {"CL202"})] == [13]
    payload = conditional.replace("chain.invoke(messages)", 'chain.invoke({"messages": messages})')
    assert [f.row for f in lint(payload, {"CL202"})] == [13]
    grown_by_plus = conditional.replace("messages.append(msg)", "messages += [msg]")
    assert [f.row for f in lint(grown_by_plus, {"CL202"})] == [13]
    inline = TOOL_ADDED_ONCE_HISTORY_EXISTS.replace("    model = llm.bind_tools(tools)\n", "").replace(
        "await model.ainvoke(messages)", "await llm.bind_tools(tools).ainvoke(messages)")
    assert [f.row for f in lint(inline, {"CL202"})] == [9]


def test_a_clock_after_the_static_text_a_report_template_and_a_date_plus_a_week_stay_quiet():
    after = EXTRACTION.replace("    Current date and time: {current_datetime}\n", "").replace(
        "    Message:", "    Current date and time: {current_datetime}\n    Message:")
    assert after != EXTRACTION and lint(after, {"CL101"}) == []
    report = EXTRACTION.replace("EXTRACTION_PROMPT", "REPORT_HTML")
    assert lint(report, {"CL101"}) == []
    week = EXTRACTION.replace('datetime.now().strftime("%A, %B %d, %Y at %I:%M %p")',
                              '(datetime.now() + timedelta(days=7)).strftime("%Y-%m-%d")')
    assert week != EXTRACTION and lint(week, {"CL101"}) == []


def test_memories_added_to_a_list_of_sections_are_reported_where_they_are_added_not_in_a_nested_function():
    source = """
from openai import OpenAI

client = OpenAI()
RULES = "You are a helpful companion."


def reply(history, store):
    memories = store.similarity_search(history[-1]["content"])

    def preview():
        system = "preview: " + memories
        return system

    parts = [RULES]
    parts.append(memories)
    system_prompt = "\\n\\n".join(parts)
    return client.chat.completions.create(model="gpt-4.1", messages=[{"role": "system", "content": system_prompt}, *history])
"""
    found = lint(source, {"CL104"})
    assert [f.row for f in found] == [15] and "`memories`" in found[0].message
