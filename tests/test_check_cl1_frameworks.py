"""CL101-CL103 on system prompts that frameworks build as message objects or in a builder method, and send
from another module (confidence `likely`): the shapes real agent frameworks use, and the quiet cases."""

from __future__ import annotations

import textwrap

from cachelint.check.engine import lint_source


def codes(source: str) -> list[tuple[str, int]]:
    findings = lint_source(textwrap.dedent(source), "agent_messages.py")
    return sorted((f.code, f.row) for f in findings)


def test_message_object_with_system_role_setting_and_time_in_a_list_of_lines() -> None:
    found = codes('''
        from datetime import datetime

        def get_system_message(agent, tz=None):
            content = agent.description or ""
            extra = []
            if agent.add_datetime_to_context:
                now = datetime.now(tz) if tz else datetime.now()
                extra.append(f"The current time is {str(now)}.")
            for line in extra:
                content += f"\\n- {line}"
            return Message(role=agent.system_message_role, content=content.strip())
    ''')
    assert ("CL101", 8) in found


def test_langchain_system_message_object() -> None:
    found = codes('''
        import time

        class Planner:
            def build(self, history):
                stamp = time.time()
                return [SystemMessage(content=f"You plan tasks for {self.team}. Clock: {stamp}. {self.rules}"), *history]
    ''')
    assert found == [("CL101", 6)]


# the framework keeps its sessions in PostgreSQL jsonb, which gives a state dict's keys back in its own order
JSONB_SESSIONS = '''
        from sqlalchemy.dialects.postgresql import JSONB

        class AgentSession:
            session_state = JSONB
'''


def test_system_tuple_with_a_dict_repr() -> None:
    source = '''
        from typing import Any

        def make_prompt(state: dict[str, Any], tools):
            return [("system", f"You are an agent.\\n{tools}\\n<state>{state}</state>"), ("human", "{input}")]
    '''
    assert codes(source) == []  # nothing in sight reorders the state's keys: the same code, the same order
    assert codes(source + JSONB_SESSIONS) == [("CL102", 5)]


def test_builder_method_returning_text_with_a_set() -> None:
    found = codes('''
        class Agent:
            def _build_system_prompt(self, names):
                allowed = set(names)
                parts = [self.persona, self.rules]
                return "\\n".join(parts) + "\\nTools: " + ", ".join(allowed)
    ''')
    assert found == [("CL103", 6)]  # where the set is iterated into the text


def test_day_resolution_date_is_quiet() -> None:
    assert codes('''
        from datetime import date

        def get_system_message(agent):
            return Message(role="system", content=f"{agent.persona}\\n{agent.rules}\\nToday is {date.today()}.")
    ''') == []


def test_value_computed_once_at_import_is_quiet() -> None:
    assert codes('''
        import time
        STARTED = time.time()

        def get_system_message(agent):
            return Message(role="system", content=f"{agent.persona}\\n{agent.rules}\\nStarted {STARTED}.")
    ''') == []


def test_short_prompt_with_only_a_time_is_quiet() -> None:
    assert codes('''
        from datetime import datetime

        def get_system_message():
            return {"role": "system", "content": f"Be brief. Now: {datetime.now()}"}
    ''') == []


def test_user_message_object_is_quiet() -> None:
    assert codes('''
        from datetime import datetime

        def get_user_message(agent, text):
            return Message(role="user", content=f"{agent.context}\\n{datetime.now()}: {text}")
    ''') == []


def test_optional_dict_state_rendered_by_a_helper_of_the_builder() -> None:
    found = codes('''
        from typing import Any, Dict, Optional

        def format_state(session_state: Optional[Dict[str, Any]]) -> str:
            return f"\\n<session_state>\\n{session_state}\\n</session_state>\\n"

        async def aget_system_message(agent, run_context=None):
            content = f"{agent.description}\\n{agent.instructions}\\n"
            if agent.add_session_state_to_context:
                content += format_state(run_context.session_state)
            return Message(role="system", content=content.strip())
    ''' + JSONB_SESSIONS)
    assert found == [("CL102", 5)]


def test_schema_json_in_a_system_prompt_is_quiet() -> None:
    assert codes('''
        import json

        def get_system_message(agent, schema):
            fields = {}
            for name, spec in schema.model_json_schema()["properties"].items():
                fields[name] = spec
            return Message(role="system", content=f"{agent.instructions}\\nAnswer as JSON:\\n{json.dumps(fields, indent=2)}")
    ''') == []


def test_system_messages_of_a_module_that_sends_them_keep_their_request() -> None:
    found = lint_source(textwrap.dedent('''
        from datetime import datetime
        from openai import OpenAI
        client = OpenAI()

        def ask(history, question, docs):
            system = {"role": "system", "content": f"Answer from these documents.\\n{docs}\\nNow: {datetime.now()}"}
            messages = [system, *history, {"role": "user", "content": question}]
            return client.chat.completions.create(model="gpt-4o", messages=messages)
    '''), "support.py")
    assert [(f.code, f.row, f.confidence) for f in found] == [("CL101", 7, "certain")]


def test_system_prompt_named_and_passed_to_a_sender_out_of_sight() -> None:
    found = codes('''
        from datetime import datetime

        class Researcher(Role):
            def _get_prefix(self) -> str:
                stamp = datetime.now().strftime("%Y-%m-%d %H:%M:%S")
                return f"{self.profile}, {self.goal}. The current time is {stamp}."

            async def _think(self):
                system_prompt = self.system_template.format(role_info=self._get_prefix(), tools=self.tool_docs)
                return await self.llm.aask(self.history, system_msgs=[system_prompt])
    ''')
    assert found == [("CL101", 6)]


def test_system_prompt_variable_with_only_static_settings_is_quiet() -> None:
    assert codes('''
        class Writer(Role):
            async def _act(self):
                system_prompt = self.system_template.format(role_info=self.profile, language=self.language)
                return await self.llm.aask(self.history, system_msgs=[system_prompt])
    ''') == []


def test_messages_named_as_not_the_system_prompt_are_quiet() -> None:
    assert codes('''
        from datetime import datetime

        async def reset(agent, history):
            init = build_initial_messages(agent, stamp=datetime.now())
            non_system_messages = [to_message(agent, m, f"{agent.persona}\\n{m}\\n{datetime.now()}") for m in init[1:]]
            return await agent.append(non_system_messages)
    ''') == []


PLANNER = '''
    import datetime

    def format_chat_message(role, message):
        return {"role": role, "content": message}

    class Planner:
        def __init__(self, prompt_data):
            self.instruction_template = prompt_data["instruction_template"]

        def compose_sys_prompt(self, context):
            return self.instruction_template.format(environment_context=context, role_name="Planner")

        def get_env_context(self):
            now = datetime.datetime.now()
            current_time = now.strftime("{fmt}")
            return f"- Current time: {current_time}"

        def compose_prompt(self, rounds):
            history = [format_chat_message(role="system", message=f"{self.compose_sys_prompt(context=self.get_env_context())}")]
            for r in rounds:
                history.append(format_chat_message(role="user", message=r.text))
            return history
'''


def test_clock_kept_in_a_name_then_formatted_into_a_template_filled_per_call() -> None:
    # the time is read into `now`, formatted to the second, passed as an argument into the method that fills the
    # template, and the message is built with `message=` by the framework's own helper
    found = lint_source(textwrap.dedent(PLANNER.replace("{fmt}", "%Y-%m-%d %H:%M:%S")), "planner.py")
    assert [(f.code, f.row) for f in found] == [("CL101", 16)]
    assert "every second" in found[0].message and found[0].confidence == "likely"


def test_the_same_planner_at_day_resolution_is_quiet() -> None:
    assert codes(PLANNER.replace("{fmt}", "%Y-%m-%d")) == []


# --- a cycle counter in a system prompt rebuilt each cycle of a tool loop, held by a message object whose role
# is another keyword (`message_type=`) and sent by a helper of another module

CYCLE_LOOP = '''
    from app.prompts import AGENT_PROMPT, AGENT_PROMPT_REASONING
    from app.llm.models import ChatMessage, MessageType
    from app.chat.step import run_llm_step

    def research(history, tools, token_counter, reasoning, max_cycles=8):
        cycle_count = 0
        while cycle_count <= max_cycles:
            template = AGENT_PROMPT_REASONING if reasoning else AGENT_PROMPT
            prompt = template.format(current_cycle_count=COUNTER, max_cycles=max_cycles)
            system_prompt = ChatMessage(
                message=prompt,
                token_count=token_counter(prompt) + cycle_count,
                message_type=MessageType.SYSTEM,
            )
            reply = run_llm_step(history=history, system_prompt=system_prompt, tools=tools)
            history.append(reply)
            cycle_count += 1

    def orchestrate(history, tools, max_cycles=8):
        for cycle in range(max_cycles):
            system_prompt = ChatMessage(message=AGENT_PROMPT.format(current_cycle_count=cycle), message_type=MessageType.SYSTEM)
            history.append(run_llm_step(history=history, system_prompt=system_prompt, tools=tools))
'''


def test_a_cycle_counter_in_a_message_objects_text_is_reported_where_it_enters() -> None:
    found = codes(CYCLE_LOOP.replace("COUNTER", "cycle_count"))
    assert ("CL101", 10) in found  # the while loop's counter, formatted into the text
    assert ("CL101", 22) in found  # the for loop's counter


def test_a_counter_only_in_the_message_objects_bookkeeping_is_quiet() -> None:
    found = codes(CYCLE_LOOP.replace("COUNTER", "max_cycles"))
    assert ("CL101", 10) not in found and ("CL101", 13) not in found  # token_count= is not the text


# --- a helper with a flag parameter picks the resolution of the date it returns: the call decides the branch

DAY_TIME = '''
    from datetime import datetime

    def current_day_time(include_hour_min: bool = False) -> str:
        now = datetime.now()
        return now.strftime("%B %d, %Y %H:%M") if include_hour_min else now.strftime("%B %d, %Y")

    def build(history, send):
        for step in range(3):
            system_prompt = f"You are a researcher. Today is {current_day_time(ARGS)}. " + LONG_RULES
            history.append(send(system_prompt=system_prompt, history=history))
'''


def test_a_flag_left_at_its_default_takes_the_day_branch_and_is_quiet() -> None:
    assert [c for c in codes(DAY_TIME.replace("ARGS", "")) if c[0] == "CL101"] == []


def test_a_caller_that_asks_for_minutes_is_reported() -> None:
    assert ("CL101", 6) in codes(DAY_TIME.replace("ARGS", "include_hour_min=True"))
    assert ("CL101", 6) in codes(DAY_TIME.replace("ARGS", "True"))
    assert ("CL101", 6) in codes(DAY_TIME.replace("ARGS", "flag"))  # not known: both branches count


def test_a_day_written_with_glibc_flags_is_still_a_day() -> None:
    helper = '''
        import datetime

        def get_today_str() -> str:
            return datetime.datetime.now().strftime("FORMAT")

        def supervisor(state, send):
            system_prompt = SUPERVISOR_INSTRUCTIONS.format(today=get_today_str())
            return send(system_prompt=system_prompt, messages=state["messages"])
    '''
    assert codes(helper.replace("FORMAT", "%a %b %-d, %Y")) == []  # %-d: the day without padding
    assert ("CL101", 5) in codes(helper.replace("FORMAT", "%a %b %-d, %Y %-H:%M"))
