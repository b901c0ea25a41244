"""Call shapes and false alarms seen on real LLM applications (issue 14): each a small file in the shape
real code takes. A shape test asserts the request is recognized (a finding at the right line, with its
confidence); a false-alarm test asserts the linter stays quiet."""

from __future__ import annotations

import json
import os
import textwrap

import pytest

from cachelint.check.engine import lint_source
from cachelint.check.output import json_text

LONG_HISTORY = "messages=history"  # an unbounded history: the prefix can be cached, so a break matters


def lint(source: str, codes: set[str] | None = None):
    source = textwrap.dedent(source).lstrip("\n")
    findings = lint_source(source, "app.py")
    return [f for f in findings if codes is None or f.code in codes]


def rows(source: str, code: str) -> list[int]:
    return [f.row for f in lint(source, {code})]


# --- call shapes ------------------------------------------------------------------------------------------

KWARGS_SHAPES = {
    "literal": """
        import anthropic, datetime
        client = anthropic.Anthropic()
        def ask(history):
            params = {"model": "claude-sonnet-4-5", "max_tokens": 100,
                      "system": f"Now: {datetime.datetime.now()}", "messages": history}
            return client.messages.create(**params)
    """,
    "dict-call": """
        import anthropic, datetime
        client = anthropic.Anthropic()
        def ask(history):
            params = dict(model="claude-sonnet-4-5", max_tokens=100,
                          system=f"Now: {datetime.datetime.now()}", messages=history)
            return client.messages.create(**params)
    """,
    "subscript": """
        import litellm, datetime
        def ask(history):
            kwargs = {"model": "gpt-4o"}
            kwargs["messages"] = [{"role": "system", "content": f"Now: {datetime.datetime.now()}"}, *history]
            return litellm.completion(**kwargs)
    """,
    "update": """
        import litellm, datetime
        def ask(history):
            kwargs = {"model": "gpt-4o"}
            kwargs.update(messages=[{"role": "system", "content": f"Now: {datetime.datetime.now()}"}, *history])
            return litellm.completion(**kwargs)
    """,
    "helper-returns-dict": """
        import anthropic, datetime
        client = anthropic.Anthropic()
        def build(history):
            return {"model": "claude-sonnet-4-5", "max_tokens": 100, "system": f"Now: {datetime.datetime.now()}", "messages": history}
        def ask(history):
            return client.messages.create(**build(history))
    """,
}


@pytest.mark.parametrize("name", sorted(KWARGS_SHAPES))
def test_arguments_in_a_dict_are_followed(name):
    found = lint(KWARGS_SHAPES[name], {"CL101"})
    assert found, name
    assert all(f.confidence == "certain" for f in found)
    assert "datetime.now()" in found[0].message


def test_explicit_keyword_wins_over_the_dict():
    source = """
        import anthropic, datetime
        client = anthropic.Anthropic()
        def ask(history):
            params = {"system": f"Now: {datetime.datetime.now()}", "messages": history}
            return client.messages.create(model="claude-sonnet-4-5", max_tokens=10, system="Be brief.", **params)
    """
    assert rows(source, "CL101") == []


SDK_SHAPES = {
    "with-raw-response": """
        import anthropic, datetime
        client = anthropic.Anthropic()
        def ask(history):
            return client.beta.messages.with_raw_response.create(model="claude-sonnet-4-5", max_tokens=10,
                system=f"Now: {datetime.datetime.now()}", messages=history)
    """,
    "with-streaming-response": """
        import openai, datetime
        client = openai.OpenAI()
        def ask(history):
            return client.chat.completions.with_streaming_response.create(model="gpt-4o",
                messages=[{"role": "system", "content": f"Now: {datetime.datetime.now()}"}, *history])
    """,
    "prompt-caching-beta": """
        import anthropic, datetime
        client = anthropic.Anthropic()
        def ask(history):
            return client.beta.prompt_caching.messages.create(model="claude-sonnet-4-5", max_tokens=10,
                system=f"Now: {datetime.datetime.now()}", messages=history)
    """,
    "legacy-chatcompletion": """
        import openai, datetime
        def ask(history):
            return openai.ChatCompletion.create(model="gpt-4o",
                messages=[{"role": "system", "content": f"Now: {datetime.datetime.now()}"}, *history])
    """,
    "legacy-chatcompletion-acreate": """
        import openai, datetime
        async def ask(history):
            return await openai.ChatCompletion.acreate(model="gpt-4o",
                messages=[{"role": "system", "content": f"Now: {datetime.datetime.now()}"}, *history])
    """,
    "partial-of-method": """
        import functools, datetime
        from openai import OpenAI
        client = OpenAI()
        complete = functools.partial(client.chat.completions.create, model="gpt-4o")
        def ask(history):
            return complete(messages=[{"role": "system", "content": f"Now: {datetime.datetime.now()}"}, *history])
    """,
    "partial-on-self": """
        from functools import partial
        import litellm, datetime
        class LLM:
            def __init__(self, model):
                self._completion = partial(litellm.completion, model=model, temperature=0)
            def ask(self, history):
                return self._completion(messages=[{"role": "system", "content": f"Now: {datetime.datetime.now()}"}, *history])
    """,
    "client-class-attribute": """
        import datetime
        from anthropic import Anthropic
        class Bot:
            client = Anthropic()
            def ask(self, history):
                return self.client.messages.create(model="claude-sonnet-4-5", max_tokens=10,
                    system=f"Now: {datetime.datetime.now()}", messages=history)
    """,
    "function-class-attribute": """
        import datetime
        import litellm
        class Bot:
            completion = staticmethod(litellm.completion)
            def ask(self, history):
                return self.completion(model="gpt-4o", messages=[{"role": "system", "content": f"Now: {datetime.datetime.now()}"}, *history])
    """,
    "function-alias": """
        import datetime
        from litellm import acompletion
        class Bot:
            def __init__(self):
                self.complete = acompletion
            async def ask(self, history):
                return await self.complete(model="gpt-4o", messages=[{"role": "system", "content": f"Now: {datetime.datetime.now()}"}, *history])
    """,
    "lazy-import": """
        import datetime
        def ask(history):
            import litellm
            return litellm.completion(model="gpt-4o", messages=[{"role": "system", "content": f"Now: {datetime.datetime.now()}"}, *history])
    """,
}


@pytest.mark.parametrize("name", sorted(SDK_SHAPES))
def test_sdk_call_shapes_are_recognized(name):
    found = lint(SDK_SHAPES[name], {"CL101"})
    assert found, name
    assert {f.confidence for f in found} == {"certain"}


INJECTED = {
    "openai-shape": """
        import datetime
        class Action:
            def __init__(self, llm):
                self.llm = llm
            def run(self, history):
                return self.llm.aclient.chat.completions.create(model="gpt-4o",
                    messages=[{"role": "system", "content": f"Now: {datetime.datetime.now()}"}, *history])
    """,
    "anthropic-shape": """
        import time
        def step(client, history):
            return client.messages.create(model="claude-sonnet-4-5", max_tokens=10, system=f"t={time.time()}", messages=history)
    """,
}


@pytest.mark.parametrize("name", sorted(INJECTED))
def test_injected_clients_are_recognized_by_shape_as_likely(name):
    found = lint(INJECTED[name], {"CL101"})
    assert found and {f.confidence for f in found} == {"likely"}


def test_shape_without_request_keywords_is_not_a_request():
    # Twilio: client.messages.create(to=..., body=...) is an SMS, not an LLM request
    source = """
        import time
        def remind(client, to):
            return client.messages.create(to=to, from_="+100", body=f"sent at {time.time()}")
    """
    assert lint(source) == []


def test_confidence_is_in_json_and_sarif():
    from pathlib import Path

    from cachelint.check.output import SourceLines, sarif_log

    findings = lint(INJECTED["anthropic-shape"], {"CL101"})
    assert json.loads(json_text(findings))[0]["confidence"] == "likely"
    log = sarif_log(findings, SourceLines(), Path.cwd())
    assert log["runs"][0]["results"][0]["properties"]["confidence"] == "likely"


# --- false alarms seen on real code: each stays quiet ---------------------------------------------------

def test_date_in_a_short_prompt_that_is_never_cached_is_quiet():
    # ~150 tokens of system prompt, no history, no cache_control: below every minimum, nothing is cached
    rules = " ".join(f"Rule {i}: answer in plain words and keep it short." for i in range(15))
    source = f"""
        import datetime
        from openai import OpenAI
        client = OpenAI()
        RULES = {rules!r}
        def ask(question):
            system = f"You are a concise assistant. Today is {{datetime.date.today():%Y-%m-%d}}. {{RULES}}"
            return client.chat.completions.create(model="gpt-4o-mini",
                messages=[{{"role": "system", "content": system}}, {{"role": "user", "content": question}}])
    """
    assert lint(source) == []
    anthropic = source.replace("from openai import OpenAI", "from anthropic import Anthropic").replace("OpenAI()", "Anthropic()")
    anthropic = anthropic.replace('chat.completions.create(model="gpt-4o-mini",', 'messages.create(model="claude-sonnet-4-5", max_tokens=10,')
    assert "messages.create" in anthropic and lint(anthropic) == []


def test_the_same_date_is_reported_where_the_prefix_can_be_cached():
    long_rules = " ".join(f"Rule {i}: answer in plain words, cite the handbook section, and keep it short." for i in range(120))
    grows = """
        import datetime
        from openai import OpenAI
        client = OpenAI()
        def ask(history, question):
            system = f"You are a concise assistant. Now: {datetime.datetime.now():%H:%M}."
            return client.chat.completions.create(model="gpt-4o-mini",
                messages=[{"role": "system", "content": system}, *history, {"role": "user", "content": question}])
    """
    assert rows(grows, "CL101") == [5]
    long_static = f"""
        import datetime
        from openai import OpenAI
        client = OpenAI()
        RULES = {long_rules!r}
        def ask(question):
            system = f"Now: {{datetime.datetime.now():%H:%M}}. {{RULES}}"
            return client.chat.completions.create(model="gpt-4o-mini",
                messages=[{{"role": "system", "content": system}}, {{"role": "user", "content": question}}])
    """
    assert rows(long_static, "CL101") == [6]


def test_day_resolution_value_computed_once_at_import_is_quiet():
    source = """
        import datetime
        from anthropic import Anthropic
        client = Anthropic()
        TODAY = datetime.date.today().isoformat()
        SYSTEM = f"You are the release assistant. Today is {TODAY}."
        def ask(history):
            return client.messages.create(model="claude-sonnet-4-5", max_tokens=10, system=SYSTEM, messages=history)
    """
    assert rows(source, "CL101") == []
    # a finer value computed once per process still differs between workers
    assert rows(source.replace("datetime.date.today().isoformat()", "datetime.datetime.now().isoformat()"), "CL101") == [4]


def test_tools_appended_under_if_else_raise_is_not_a_per_request_tool_list():
    source = """
        from anthropic import Anthropic
        client = Anthropic()
        REGISTRY = {"search": {"name": "search", "input_schema": {}}, "fetch": {"name": "fetch", "input_schema": {}}}
        def step(history, names):
            tools = []
            for name in ("fetch", "search"):
                found = REGISTRY.get(name)
                if found:
                    tools.append(found)
                else:
                    raise KeyError(name)
            return client.messages.create(model="claude-sonnet-4-5", max_tokens=10, tools=tools, messages=history)
    """
    assert rows(source, "CL202") == []
    # without the raise a missing tool is dropped, but from a constant list: the same tools every turn
    dropped = source.replace("                else:\n                    raise KeyError(name)\n", "")
    assert rows(dropped, "CL202") == []
    # names picked from the newest message: the tools change from turn to turn
    per_turn = dropped.replace('("fetch", "search")', 'pick(history[-1]["content"])')
    assert rows(per_turn, "CL202") == [9]


def test_param_rebuilt_in_loop_from_loop_invariant_inputs_is_quiet():
    source = """
        import os
        from anthropic import Anthropic
        client = Anthropic()
        def agent(history, config):
            while True:
                model = config.get("model") or os.environ.get("MODEL", "claude-sonnet-4-5")
                reply = client.messages.create(model=model, max_tokens=10, messages=history)
                history.append({"role": "assistant", "content": reply.content})
    """
    assert rows(source, "CL401") == []
    varying = source.replace('config.get("model")', 'pick(len(history))')
    assert rows(varying, "CL401") == [6]


def test_cache_control_set_again_on_the_same_system_block_is_quiet():
    source = """
        from anthropic import Anthropic
        client = Anthropic()
        def agent(history, system_text):
            system = [{"type": "text", "text": system_text}]
            while True:
                system[0]["cache_control"] = {"type": "ephemeral"}
                reply = client.messages.create(model="claude-sonnet-4-5", max_tokens=10, system=system, messages=history)
                history.append({"role": "assistant", "content": reply.content})
    """
    assert rows(source, "CL503") == []
    moving = source.replace('system[0]["cache_control"]', 'history[-1]["content"][-1]["cache_control"]')
    assert rows(moving, "CL503") == [6]


# --- data flow across functions and methods of a module -------------------------------------------------

def test_a_time_passed_as_an_argument_into_a_helper_is_followed():
    source = """
        import datetime
        from anthropic import Anthropic
        client = Anthropic()
        def render_system(now, rules):
            return f"{rules}\\nCurrent time: {now}"
        def ask(history):
            system = render_system(datetime.datetime.now().isoformat(), "Be brief.")
            return client.messages.create(model="claude-sonnet-4-5", max_tokens=10, system=system, messages=history)
    """
    assert rows(source, "CL101") == [7]
    # the same helper called with a constant is quiet
    assert rows(source.replace("datetime.datetime.now().isoformat()", '"2026-01-01"'), "CL101") == []


def test_a_parameter_of_the_sending_function_is_followed_to_its_callers():
    source = """
        import time
        from openai import OpenAI
        client = OpenAI()
        def send(system, history):
            return client.chat.completions.create(model="gpt-4o", messages=[{"role": "system", "content": system}, *history])
        def handle(history):
            return send(f"Request started at {time.time()}. You answer tickets.", history)
    """
    assert rows(source, "CL101") == [7]


def test_a_set_kept_on_self_and_iterated_in_another_method_is_found():
    source = """
        from anthropic import Anthropic
        class Agent:
            def __init__(self):
                self.client = Anthropic()
                self.skills = set()
            def learn(self, name):
                self.skills.add(name)
            def system_blocks(self):
                text = "Skills:\\n" + "\\n".join(self.skills)
                return [{"type": "text", "text": text, "cache_control": {"type": "ephemeral"}}]
            def step(self, history):
                return self.client.messages.create(model="claude-sonnet-4-5", max_tokens=10, system=self.system_blocks(), messages=history)
    """
    found = lint(source, {"CL103"})
    assert [f.row for f in found] == [9] and "self.skills" in found[0].message


def test_a_constructor_argument_kept_on_self_is_followed():
    source = """
        import uuid
        from openai import OpenAI
        class Bot:
            def __init__(self, persona):
                self.client = OpenAI()
                self.persona = persona
            def ask(self, history):
                return self.client.responses.create(model="gpt-5", instructions=self.persona, input=history)
        def make():
            return Bot(persona=f"You are agent {uuid.uuid4()}. Answer briefly.")
    """
    assert rows(source, "CL101") == [10]


def test_a_comprehension_over_a_parameter_follows_the_callers():
    source = """
        import os
        from anthropic import Anthropic
        client = Anthropic()
        def tool_specs(names):
            return [{"name": n, "description": n, "input_schema": {}} for n in names]
        def ask(history):
            return client.messages.create(model="claude-sonnet-4-5", max_tokens=10, tools=tool_specs(os.listdir("tools")), messages=history)
    """
    assert rows(source, "CL201") == [7]


# --- across modules of the linted tree ------------------------------------------------------------------

PROMPTS = '''
import datetime
import os

STAMP = datetime.datetime.now().isoformat()
SYSTEM = f"You are the support bot. Started {STAMP}."


def render(user, notes_dir):
    notes = "\\n".join(os.listdir(notes_dir))
    return f"Time: {datetime.datetime.now():%H:%M}. User {user}.\\n{notes}"
'''
AGENT = '''
from anthropic import Anthropic

from .prompts import SYSTEM, render
from .reexport import SYSTEM as AGAIN

client = Anthropic()


def ask(history):
    return client.messages.create(model="claude-sonnet-4-5", max_tokens=10, system=SYSTEM, messages=history)


def ask_user(history, user):
    return client.messages.create(model="claude-sonnet-4-5", max_tokens=10, system=render(user, "notes"), messages=history)


def ask_again(history):
    return client.messages.create(model="claude-sonnet-4-5", max_tokens=10, system=AGAIN, messages=history)
'''


@pytest.fixture
def package(tmp_path, monkeypatch):
    app = tmp_path / "app"
    app.mkdir()
    (app / "__init__.py").write_text("")
    (app / "prompts.py").write_text(PROMPTS)
    (app / "reexport.py").write_text("from .prompts import SYSTEM\n")
    (app / "agent.py").write_text(AGENT)
    (tmp_path / "pyproject.toml").write_text("[tool.cachelint]\n")
    monkeypatch.chdir(tmp_path)
    return app


def test_names_imported_from_another_module_are_followed(package):
    agent = package / "agent.py"
    found = lint_source(agent.read_text(), str(agent))
    by_row = {(f.row, f.code): f for f in found if f.filename == str(agent)}
    assert set(by_row) == {(11, "CL101"), (15, "CL101"), (19, "CL101")}
    assert "prompts.py:5" in by_row[11, "CL101"].message and "once per process" in by_row[11, "CL101"].message
    assert "prompts.py:11" in by_row[15, "CL101"].message and "every minute" in by_row[15, "CL101"].message
    # the listing is reported in the other file, where it is sorted, naming the request that takes it in
    listing = [f for f in found if f.filename != str(agent)]
    assert [(f.filename, f.row, f.code) for f in listing] == [(str(package / "prompts.py"), 10, "CL103")]
    assert listing[0].fix is None and "(reached from agent.py:15)" in listing[0].message
    assert all(f.confidence == "certain" for f in found)


def test_names_of_an_imported_module_are_followed(package):
    (package / "service.py").write_text(
        "import anthropic\n"
        "from . import prompts\n"
        "import app.prompts as p\n"
        "client = anthropic.Anthropic()\n"
        "def ask(history):\n"
        "    return client.messages.create(model='claude-sonnet-4-5', max_tokens=10, system=prompts.SYSTEM, messages=history)\n"
        "def ask_user(history, user):\n"
        "    return client.messages.create(model='claude-sonnet-4-5', max_tokens=10, system=p.render(user, 'notes'), messages=history)\n"
    )
    service = package / "service.py"
    found = {(os.path.basename(f.filename), f.row, f.code) for f in lint_source(service.read_text(), str(service))}
    assert found == {("service.py", 6, "CL101"), ("service.py", 8, "CL101"), ("prompts.py", 10, "CL103")}


def test_a_clean_imported_prompt_stays_quiet(package):
    (package / "prompts.py").write_text('SYSTEM = "You are the support bot."\n\ndef render(user, notes_dir):\n    return "Be brief."\n')
    agent = package / "agent.py"
    assert lint_source(agent.read_text(), str(agent)) == []


def test_the_cache_drops_a_result_when_an_imported_module_changes(package):
    import subprocess
    import sys
    from pathlib import Path

    (package / "service.py").write_text(
        "import anthropic\nfrom . import prompts\nclient = anthropic.Anthropic()\n"
        "def ask(history):\n"
        "    return client.messages.create(model='claude-sonnet-4-5', max_tokens=10, system=prompts.SYSTEM, messages=history)\n"
    )

    def check() -> set[tuple[str, int, str]]:
        out = subprocess.run([sys.executable, "-m", "cachelint", "check", "app", "--output-format", "json", "--exit-zero"],
                             capture_output=True, text=True, check=True, timeout=120)
        return {(Path(f["filename"]).name, f["location"]["row"], f["code"]) for f in json.loads(out.stdout)}

    before = check()
    assert {("agent.py", 11, "CL101"), ("service.py", 5, "CL101")} <= before
    assert any((package.parent / ".cachelint_cache").rglob("*.json"))
    assert check() == before  # served from the cache
    (package / "prompts.py").write_text(PROMPTS.replace("datetime.datetime.now().isoformat()", '"v1"'))
    after = check()
    assert ("agent.py", 11, "CL101") not in after and ("service.py", 5, "CL101") not in after
    assert ("agent.py", 15, "CL101") in after


def test_confidence_certain_in_config_drops_findings_only_a_shape_suggests(tmp_path, monkeypatch):
    import subprocess
    import sys

    (tmp_path / "injected.py").write_text(textwrap.dedent(INJECTED["anthropic-shape"]).lstrip("\n"))
    (tmp_path / "sdk.py").write_text(textwrap.dedent(SDK_SHAPES["legacy-chatcompletion"]).lstrip("\n"))

    def codes(config: str) -> set[tuple[str, str]]:
        (tmp_path / "pyproject.toml").write_text(f"[tool.cachelint]\n{config}")
        out = subprocess.run([sys.executable, "-m", "cachelint", "check", ".", "--output-format", "json", "--exit-zero"],
                             cwd=tmp_path, capture_output=True, text=True, check=True, timeout=120)
        return {(f["filename"], f["confidence"]) for f in json.loads(out.stdout)}

    assert codes("") == {("injected.py", "likely"), ("sdk.py", "certain")}
    assert codes('confidence = "certain"\n') == {("sdk.py", "certain")}


# --- prompts built here and sent elsewhere (a framework sends them) -------------------------------------

def test_a_message_list_built_for_a_framework_is_judged_as_likely():
    source = """
        import datetime
        def build_messages(history, question):
            messages = [{"role": "system", "content": f"You are the planner. Now: {datetime.datetime.now()}"}]
            messages.extend(history)
            messages.append({"role": "user", "content": question})
            return messages
    """
    found = lint(source)
    assert [(f.row, f.code, f.confidence) for f in found] == [(3, "CL101", "likely")]
    assert "by its shape" in found[0].message


def test_a_short_system_message_sent_alone_with_the_question_is_quiet():
    source = """
        import datetime
        def build_messages(question):
            return [{"role": "system", "content": f"Today is {datetime.date.today()}."}, {"role": "user", "content": question}]
    """
    assert lint(source) == []


def test_lists_of_other_dicts_are_not_prompts():
    source = """
        import time
        ROWS = [{"role": "admin", "content": f"created {time.time()}"}]
    """
    assert lint(source) == []


def test_betas_rebuilt_each_turn_from_settings_is_quiet():
    # the shape of anthropic-quickstarts' computer-use loop (44c2b5c9, computer_use_demo/loop.py)
    source = """
        from anthropic import Anthropic
        def loop(messages, model, beta_flag, efficient, api_key):
            system = {"type": "text", "text": "You operate a computer."}
            while True:
                betas = [beta_flag] if beta_flag else []
                if efficient:
                    betas.append("token-efficient-tools-2025-02-19")
                client = Anthropic(api_key=api_key)
                system["cache_control"] = {"type": "ephemeral"}
                response = client.beta.messages.with_raw_response.create(max_tokens=10, messages=messages, model=model,
                                                                         system=[system], betas=betas)
                messages.append({"role": "assistant", "content": response.parse().content})
    """
    assert lint(source, {"CL401", "CL503"}) == []
    assert rows(source.replace("if beta_flag else", "if len(messages) > 8 else"), "CL401") == [5]


# --- issue 14, second pass: false-alarm classes from the real-world benchmark ----------------------------


def test_a_capability_switch_on_the_tools_is_not_a_per_request_tool_list():
    source = """
        import anthropic
        client = anthropic.Anthropic()
        def make_answer_tool(schema):
            return {"name": "answer", "input_schema": schema} if schema is not None else None
        def complete(history, tools, schema=None):
            tool_defs = [dict(t) for t in tools]
            answer_tool = make_answer_tool(schema)
            if answer_tool:
                tool_defs.append(answer_tool)
            return client.messages.create(model="claude-sonnet-4-5", max_tokens=10, tools=tool_defs, messages=history)
    """
    assert rows(source, "CL202") == []
    # a tool added once the conversation is long: chosen per turn
    per_turn = source.replace("if answer_tool:", "if answer_tool and len(history) > 20:")
    assert rows(per_turn, "CL202") == [9]


def test_a_filter_inside_one_tool_definition_is_not_a_tool_choice():
    source = """
        import inspect
        from openai import OpenAI
        client = OpenAI()
        def schema_of(func):
            sig = inspect.signature(func)
            needed = [p.name for p in sig.parameters.values() if p.default is inspect.Parameter.empty]
            return {"type": "function", "function": {"name": func.__name__, "parameters": {"required": needed}}}
        def run(agent, history):
            tools = [schema_of(f) for f in agent.functions]
            return client.chat.completions.create(model="gpt-4.1", tools=tools, messages=history)
    """
    assert rows(source, "CL202") == []


def test_a_loop_counter_passed_to_a_prompt_builder_is_reported_where_it_enters_the_text():
    source = """
        import anthropic
        client = anthropic.Anthropic()
        RULES = "Follow the rules. " * 400
        def build_system(step=None, limit=None):
            note = ""
            if step is not None:
                note = f"This is step {step} of {limit}."
            return RULES + note
        def ask(history, step=None, limit=None):
            return client.messages.create(model="claude-sonnet-4-5", max_tokens=10, system=build_system(step, limit), messages=history)
        def auto(history, limit):
            count = 0
            while count < limit:
                ask(history, step=count + 1, limit=limit)
                count += 1
    """
    findings = lint(source, {"CL101"})
    assert [f.row for f in findings] == [7]
    assert "count" in findings[0].message and "line 14" in findings[0].message


def test_a_state_dict_rendered_into_the_system_prompt_is_a_rewrite_not_an_unordered_iteration():
    source = """
        import anthropic
        client = anthropic.Anthropic()
        open_files = {}
        def open_file(path):
            open_files[path] = open(path).read()
        def edit_file(path, new_text):
            open_files[path] = new_text
        def system_prompt():
            listing = "\\n".join(open_files.keys())
            body = "".join(f"--- {p} ---\\n{text}\\n" for p, text in open_files.items())
            return "Files:\\n" + listing + "\\n" + body + "Be careful. " * 600
        def turn(history):
            return client.messages.create(model="claude-sonnet-4-5", max_tokens=10, system=system_prompt(), messages=history)
    """
    assert rows(source, "CL103") == []
    assert rows(source, "CL301") == [9, 10]
    # a registry of tools keeps the tools family
    tools = source.replace("system=system_prompt()", "tools=list(open_files.values())")
    assert rows(tools, "CL201") == [13]


# --- history cut where the request is out of sight (CL301, confidence likely) -----------------------------


def test_a_history_class_that_drops_its_oldest_messages_itself():
    source = """
        class Transcript:
            def __init__(self, budget):
                self.messages = []
                self.token_counts = []
                self.budget = budget
            def add(self, role, text, tokens):
                self.messages.append({"role": role, "content": text})
                self.token_counts.append(tokens)
            def shrink(self):
                def drop_pair():
                    self.messages.pop(0)
                    self.messages.pop(0)
                    self.token_counts.pop(0)
                while sum(self.token_counts) > self.budget and len(self.messages) > 2:
                    drop_pair()
    """
    findings = lint(source, {"CL301"})
    assert [f.row for f in findings] == [11, 12] and {f.confidence for f in findings} == {"likely"}
    assert "token_counts" not in " ".join(f.message for f in findings)  # bookkeeping beside the history is not it


def test_a_utility_that_drops_old_messages_until_the_prompt_fits():
    source = """
        def fit_prompt(messages, limit, count):
            while count(messages) > limit and len(messages) > 1:
                messages.pop(0)
            return messages
        def window(history, keep):
            return history[:1] + history[len(history) - keep:]
        def last_lines(history):
            return any(m["role"] == "tool" for m in history[-3:])
    """
    assert rows(source, "CL301") == [3, 6]


def test_a_work_queue_drained_with_pop0_is_not_a_history():
    source = """
        def deliver(messages, send):
            while messages:
                item = messages.pop(0)
                send(item)
    """
    assert rows(source, "CL301") == []


def test_old_tool_output_replaced_in_a_copy_by_position():
    source = """
        def hide_old_outputs(history, keep_last):
            outputs = [i for i, m in enumerate(history) if m["role"] == "tool"]
            old = set(outputs[:-keep_last])
            result = []
            for i, message in enumerate(history):
                copy = message.copy()
                if i in old:
                    copy["content"] = "(output omitted)"
                result.append(copy)
            return result
        def to_api(history):
            out = []
            for message in history:
                copy = dict(message)
                if message["role"] == "tool":
                    copy["content"] = str(message["content"])
                out.append(copy)
            return out
    """
    assert rows(source, "CL301") == [8]  # the conversion applied to every tool message alike is no rewrite


def test_a_caller_that_cuts_a_conversation_object_in_a_loop(tmp_path):
    (tmp_path / "convo.py").write_text(textwrap.dedent("""
        class Conversation:
            def __init__(self, system):
                self.messages = [{"role": "system", "content": system}]
            def user(self, text):
                self.messages.append({"role": "user", "content": text})
                return self
            def cut(self, start, count):
                self.messages = self.messages[:start] + self.messages[start + count:]
                return self
    """).lstrip())
    app = tmp_path / "agent.py"
    app.write_text(textwrap.dedent("""
        from convo import Conversation

        async def pair_programming(llm, ask):
            convo = Conversation("You are a careful engineer.")
            while True:
                convo.user(await ask())
                if len(convo.messages) > 10:
                    convo.cut(1, 2)
                await llm(convo)
    """).lstrip())
    findings = [f for f in lint_source(app.read_text(), str(app)) if f.code == "CL301"]
    assert [f.row for f in findings] == [8]
    assert "convo.cut" in findings[0].message


def test_a_history_trimmed_by_a_package_function():
    source = """
        import tokentrim as tt
        import litellm
        def send(messages, model, budget):
            messages = tt.trim(messages, model=model, max_tokens=budget)
            return litellm.completion(model=model, messages=messages)
    """
    assert rows(source, "CL301") == [4]


def test_history_conversions_and_compaction_are_not_cuts():
    source = """
        def to_anthropic(messages):
            messages = messages.copy()
            system = [messages.pop(0)["content"]]
            while messages and messages[0]["role"] == "system":
                system.append(messages.pop(0)["content"])
            return system, messages
        def render(messages):
            for message in messages:
                copy = dict(message)
                blocks = [b for b in message["content"] if b]
                if blocks:
                    copy["content"] = blocks
                yield copy
        def compact_history(history, summary, keep):
            return [history[0], {"role": "user", "content": summary}] + history[-keep:]
    """
    assert rows(source, "CL301") == []


def test_a_window_marker_replaced_in_earlier_messages_when_a_later_one_shows_the_same_file():
    source = """
        def collapse_old_windows(history):
            seen = set()
            out = []
            for message in reversed(history):
                copy = message.copy()
                name = message["content"].split(":")[0]
                if name in seen:
                    copy["content"] = "(outdated file window)"
                seen.add(name)
                out.append(copy)
            return list(reversed(out))
    """
    assert rows(source, "CL301") == [8]


def test_a_router_that_picks_another_model_for_every_request():
    source = """
        import random
        class Router:
            def __init__(self, models, api_keys):
                self.models = models
                self.api_keys = api_keys
                self.calls = 0
            def pick(self):
                return random.choice(self.models)
            def pick_in_turn(self):
                index = self.calls % len(self.models)
                self.calls += 1
                return self.models[index]
            def key(self):
                return random.choice(self.api_keys)  # another organization's cache, but no rule family covers it
    """
    findings = lint(source, {"CL401"})
    assert [f.row for f in findings] == [8, 10] and {f.confidence for f in findings} == {"likely"}


def test_tools_merged_from_several_mcp_servers_unsorted():
    source = """
        async def connect_all(servers, stack):
            all_tools = []
            for server in servers:
                session = await stack.enter_async_context(server.connect())
                listed = await session.list_tools()
                for tool in listed.tools:
                    all_tools.append({"name": tool.name, "input_schema": tool.inputSchema})
            return all_tools
    """
    findings = lint(source, {"CL201"})
    assert [f.row for f in findings] == [6] and findings[0].confidence == "likely"
    sorted_after = source.replace("            return all_tools", "            all_tools.sort(key=lambda t: t['name'])\\n            return all_tools")
    assert rows(sorted_after, "CL201") == []


def test_a_converter_that_builds_content_in_the_loop_is_not_a_rewrite():
    source = """
        def to_api(messages):
            for message in messages:
                if message["role"] == "assistant":
                    copy = dict(message)
                    parts = []
                    for block in message["content"]:
                        parts.append({"type": "text", "text": block})
                    if parts:
                        copy["content"] = parts
                    yield copy
    """
    assert rows(source, "CL301") == []


def test_a_conversation_object_reached_through_builder_chains_and_helper_methods(tmp_path):
    (tmp_path / "convo.py").write_text(textwrap.dedent("""
        class Conversation:
            def __init__(self, system):
                self.messages = [{"role": "system", "content": system}]
            def user(self, text) -> "Conversation":
                self.messages.append({"role": "user", "content": text})
                return self
            def cut(self, start, count):
                del self.messages[start:start + count]
    """).lstrip())
    app = tmp_path / "agent.py"
    app.write_text(textwrap.dedent("""
        from convo import Conversation

        class Helper:
            def start(self):
                convo = Conversation("You are careful.").user("Hello")
                return convo

            async def loop(self, llm, ask):
                convo = self.start()
                while True:
                    convo = convo.user(await ask())
                    if len(convo.messages) > 12:
                        convo.cut(3, 2)
                    await llm(convo)
    """).lstrip())
    findings = [f for f in lint_source(app.read_text(), str(app)) if f.code == "CL301"]
    assert [f.row for f in findings] == [13]


def test_tools_loaded_from_a_directory_listing_in_a_module_without_requests():
    source = """
        from pathlib import Path
        from plugins import Plugin
        folder = Path("~/.app/functions").expanduser()
        functions = [Plugin(path) for path in folder.glob("*.py")]
        def schemas():
            return [f.schema for f in functions]
    """
    findings = lint(source, {"CL201"})
    assert [f.row for f in findings] == [4] and findings[0].confidence == "likely"
    assert rows(source.replace('folder.glob("*.py")', 'sorted(folder.glob("*.py"))'), "CL201") == []


def test_a_state_dict_filled_in_listing_order_reaches_the_system_prompt():
    source = """
        import glob
        import anthropic
        client = anthropic.Anthropic()
        files = {}
        def add_folder(folder):
            for path in glob.glob(folder + "/*"):
                files[path] = open(path).read()
        def system_prompt():
            return "Files:\\n" + "".join(f"{p}: {c}\\n" for p, c in files.items()) + "Rules. " * 800
        def turn(history):
            return client.messages.create(model="claude-sonnet-4-5", max_tokens=10, system=system_prompt(), messages=history)
    """
    assert rows(source, "CL103") == [6]
    assert rows(source, "CL301") == [9]


def test_a_long_static_start_of_the_system_prompt_without_cache_control():
    long = "Follow the coding handbook, section by section, and cite it. " * 120
    source = f"""
        import anthropic
        client = anthropic.Anthropic()
        HANDBOOK = {long!r}
        TOOLS = [{{"name": "read_file", "input_schema": {{"type": "object"}}}}]
        def build_system(files):
            return HANDBOOK + "Files:" + "".join(files)
        def step(history, files):
            return client.messages.create(model="claude-sonnet-4-5", max_tokens=10, tools=TOOLS,
                                          system=build_system(files), messages=history)
    """
    findings = lint(source, {"CL501"})
    assert [f.row for f in findings] == [8] and "at least" in findings[0].message
    # the per-request part first: no breakpoint could be read, CL104 territory, not CL501
    assert rows(source.replace('HANDBOOK + "Files:" + "".join(files)', '"Files:" + "".join(files) + HANDBOOK'), "CL501") == []


def test_deeply_nested_static_tool_schemas_count_as_static():
    description = "Edit several files at once; each edit names its file and its instructions. " * 150
    source = f"""
        import anthropic
        client = anthropic.Anthropic()
        TOOLS = [{{"name": "edit", "description": {description!r}, "input_schema": {{"type": "object", "properties": {{
            "files": {{"type": "array", "items": {{"type": "object", "properties": {{
                "path": {{"type": "string"}}, "edits": {{"type": "array", "items": {{"type": "object", "properties": {{
                    "search": {{"type": "string"}}, "replace": {{"type": "string"}}}}}}}}}}}}}}}}}}}}]
        def step(history):
            return client.messages.create(model="claude-sonnet-4-5", max_tokens=10, tools=TOOLS, messages=history)
    """
    assert rows(source, "CL501") == [8]


def test_a_one_shot_request_that_caches_its_own_arguments():
    rules = "Answer with SEARCH/REPLACE blocks only. " * 300
    source = f"""
        import anthropic
        client = anthropic.Anthropic()
        RULES = {rules!r}
        def edit(file_text, instructions):
            system = f"File:\\n{{file_text}}\\n\\nInstructions:\\n{{instructions}}\\n\\n{{RULES}}"
            return client.messages.create(model="claude-sonnet-4-5", max_tokens=10,
                                          system=[{{"type": "text", "text": system, "cache_control": {{"type": "ephemeral"}}}}],
                                          messages=[{{"role": "user", "content": "Write the blocks."}}])
        def contextualize(document, chunk):
            return client.messages.create(model="claude-sonnet-4-5", max_tokens=10,
                                          system=[{{"type": "text", "text": RULES + document, "cache_control": {{"type": "ephemeral"}}}}],
                                          messages=[{{"role": "user", "content": chunk}}])
    """
    # the second caches a document that repeats across calls with different chunks: a good breakpoint
    assert rows(source, "CL502") == [7]


def test_a_system_message_appended_to_a_list_rebuilt_per_request_is_in_the_prefix():
    """`messages = [system]; messages.append({"role": "system", "content": f"... {time}"})`, then the history and
    the newest turn: the list is built again for every request, so the appended system message is rendered again
    each time, ahead of the whole history."""
    source = '''
import time
from openai import OpenAI
client = OpenAI()

def step(prompt, feeds, newest):
    messages = [{"role": "system", "content": prompt}]
    messages.append({"role": "system", "content": f"The current time and date is {time.strftime('%c')}"})
    for feed in feeds:
        messages.append({"role": feed.role, "content": feed.text})
    messages.append({"role": "user", "content": newest})
    return client.chat.completions.create(model="gpt-4.1", messages=messages)
'''
    assert rows(source, "CL101") == [7]  # lines as lint numbers them: the leading newline is stripped
    sent_elsewhere = source.replace("    return client.chat.completions.create(model=\"gpt-4.1\", messages=messages)", "    return messages")
    assert rows(sent_elsewhere, "CL101") == [7]  # a prompt by its shape: the builder's caller sends it


def test_a_system_message_appended_once_to_a_kept_conversation_is_quiet():
    source = '''
from datetime import datetime
from openai import OpenAI
client = OpenAI()

class Chat:
    def __init__(self, prompt):
        self.messages = [{"role": "system", "content": prompt}]
        self.messages.append({"role": "system", "content": f"Session started {datetime.now()}"})

    def ask(self, text):
        self.messages.append({"role": "user", "content": text})
        reply = client.chat.completions.create(model="gpt-4.1", messages=self.messages)
        self.messages.append({"role": "assistant", "content": reply.choices[0].message.content})
        return reply
'''
    assert rows(source, "CL101") == []  # written once when the conversation starts, then kept as it was


def test_a_model_picked_at_random_from_a_literal_list_of_models_per_request():
    source = """
        import random

        def predict(inputs, llm_kwargs, history):
            model = llm_kwargs["llm_model"]
            if model == "gpt-3.5-random":  # spread the rate limits
                model = random.choice(["gpt-3.5-turbo", "gpt-3.5-turbo-16k", "gpt-3.5-turbo-1106"])
            return send({"model": model, "messages": [*history, {"role": "user", "content": inputs}]})

        def pick_greeting():
            return random.choice(["Hello!", "Hi there!", "Welcome back!"])
    """
    findings = lint(source, {"CL401"})
    assert [f.row for f in findings] == [6] and findings[0].confidence == "likely"


def test_a_model_setting_with_a_fallback_is_one_model_for_the_whole_conversation():
    source = """
        from openai import OpenAI

        class Agent:
            def reflect(self, messages, turns):
                client = OpenAI()
                for _ in range(turns):
                    reply = client.chat.completions.create(model=self.reflect_llm if self.reflect_llm else self.llm, messages=messages)
                    messages.append(reply.choices[0].message)
    """
    assert lint(source, {"CL401"}) == []
    switched = source.replace("messages.append(reply.choices[0].message)", "messages.append(reply.choices[0].message)\n                    self.reflect_llm = None")
    assert [f.row for f in lint(switched, {"CL401"})] == [7]


# --- a system-role message added after the history is the newest message, not the opening prompt -----------

APPENDED_SYSTEM = """
    import time
    RULES = "Follow the house rules. " * 400

    def next_state(state, step, max_steps, started):
        remaining = 3600 - (time.time() - started)
        return state.with_messages(state.messages + [
            {"role": "system", "content": f"{RULES} You have {remaining:.0f} seconds and {max_steps - step} steps left."},
        ])

    def reminders(messages, steps):
        for step in steps:
            messages.append({"role": "system", "content": f"{RULES} It is {time.time()} now; step {step}."})
            yield messages
"""


def test_a_system_message_added_after_the_history_is_not_the_system_prompt():
    assert lint(APPENDED_SYSTEM, {"CL101"}) == []


def test_a_system_message_that_opens_the_list_still_is():
    source = APPENDED_SYSTEM.replace("state.messages + [", "[").replace("        ])", "        ] + state.messages)")
    assert rows(source, "CL101") == [5]  # where the time is read


# --- compaction where it must happen, and a one-off request, are not cache problems -------------------------

CONTEXT_TRIM = """
    from openai import OpenAI
    client = OpenAI()

    def reply(messages, count_tokens, {budget}):
        total = sum(count_tokens(m["content"]) for m in messages)
        shown_messages = messages.copy()
        while total >= {name}:
            removed = shown_messages.pop(1)
            total -= count_tokens(removed["content"])
        return client.chat.completions.create(model="gpt-4o", messages=shown_messages)
"""


def test_messages_dropped_only_past_the_context_window_are_quiet():
    assert rows(CONTEXT_TRIM.replace("{budget}", "context_length").replace("{name}", "context_length"), "CL301") == []


def test_messages_dropped_past_a_budget_of_the_apps_own_are_a_window():
    assert rows(CONTEXT_TRIM.replace("{budget}", "history_budget").replace("{name}", "history_budget"), "CL301") == [8]


ONE_OFF_MEMORY = """
    from openai import OpenAI
    client = OpenAI()

    def chat_with_memories(memory, message, user_id):
        found = memory.search(query=message, user_id=user_id, limit=3)
        memories = "\\n".join(f"- {m['memory']}" for m in found["results"])
        system_prompt = f"You are a helpful AI. Answer from the memories.\\n{memories}"
        messages = [{"role": "system", "content": system_prompt}, {"role": "user", "content": message}]
        return client.chat.completions.create(model="gpt-4o-mini", messages=messages)
"""


def test_retrieved_text_in_the_system_prompt_of_a_one_off_request_is_quiet():
    assert lint(ONE_OFF_MEMORY, {"CL104"}) == []


def test_a_request_to_a_model_that_caches_no_prompt_is_quiet():
    source = """
        import datetime
        import openai
        def ask(history, model):
            return openai.ChatCompletion.create(model=MODEL,
                messages=[{"role": "system", "content": f"Now: {datetime.datetime.now()}"}, *history])
    """
    # OpenAI caches prompts from gpt-4o on, Anthropic from Claude 3 on: before them there is nothing to break
    for model, found in (("gpt-4o", [5]), ("gpt-4", []), ("gpt-3.5-turbo-16k", []), ("gpt-4-turbo-2024-04-09", []), ("gpt-4o-2024-05-13", []), ("gpt-4o-2024-08-06", [5]), ("gpt-4.1-mini", [5])):
        assert rows(source.replace("MODEL", repr(model)), "CL101") == found, model
