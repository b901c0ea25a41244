"""Round 34: what a spent set (holdout38) taught. Each class is written here in its own words, with the shape
beside it that must stay quiet."""

from __future__ import annotations

from _lint import lint, lint_tree

# --- CL101: a random draw handed in by a caller is the case the request is about -----------------------------------

SAMPLED_PROFILE = '''
    import random
    from openai import OpenAI

    client = OpenAI()
    AGES = ["18-29", "30-49", "50-64"]


    def get_random_age():
        group = random.choices(AGES, [0.4, 0.4, 0.2])[0]
        return random.randint(18, 29) if group == "18-29" else random.randint(30, 64)


    def describe(age, profession):
        prompt = f"""Write a social media user profile for this person.
        Age: {age}
        Profession: {profession}
        Output a JSON object with realname, username and bio."""
        return client.chat.completions.create(model="gpt-4o-mini", messages=[{"role": "system", "content": prompt}])


    def generate(n):
        return [describe(get_random_age(), random.choice(["nurse", "chef"])) for _ in range(n)]
'''

SEEDED_SYSTEM_PROMPT = '''
    import random
    import string
    from openai import OpenAI

    client = OpenAI()
    RULES = "You are a careful diplomat. " * 400


    def random_seed():
        return "".join(random.choices(string.ascii_letters, k=80))


    def negotiate(history):
        system = f"<SEED>{random_seed()}</SEED>\\n{RULES}"
        return client.chat.completions.create(model="gpt-4o", messages=[{"role": "system", "content": system}, *history])
'''


def test_random_draws_a_caller_hands_in_are_not_reported():
    assert lint(SAMPLED_PROFILE, {"CL101"}) == []


def test_a_random_draw_made_for_the_prompt_itself_is_still_reported():
    found = lint(SEEDED_SYSTEM_PROMPT, {"CL101"})
    assert [f.row for f in found] == [10]
    assert "random.choices()" in found[0].message


def test_a_random_draw_handed_to_a_request_with_a_conversation_is_still_reported():
    source = '''
        import random
        from openai import OpenAI

        client = OpenAI()
        RULES = "You are a careful diplomat. " * 400


        def send(history, nonce):
            system = f"Request id {nonce}\\n{RULES}"
            return client.chat.completions.create(model="gpt-4o", messages=[{"role": "system", "content": system}, *history])


        def loop(history):
            while True:
                history.append({"role": "user", "content": input()})
                reply = send(history, random.getrandbits(64))
                history.append({"role": "assistant", "content": reply.choices[0].message.content})
    '''
    assert [f.row for f in lint(source, {"CL101"})] == [16]
    # a seed block a caller builds and hands to the sender, with the conversation after it
    seeded = '''
        import random
        import string
        from openai import OpenAI

        client = OpenAI()
        RULES = "You are a careful diplomat. " * 400


        def random_seed():
            return "".join(random.choices(string.ascii_letters, k=80))


        def send(system, history):
            return client.chat.completions.create(model="gpt-4o", messages=[{"role": "system", "content": system}, *history])


        def negotiate(history):
            system = f"<SEED>{random_seed()}</SEED>\\n{RULES}"
            return send(system, history)
    '''
    assert [f.row for f in lint(seeded, {"CL101"})] == [10]


def test_djangos_clock_is_a_clock():
    source = '''
        from django.utils import timezone
        from openai import OpenAI

        client = OpenAI()
        RULES = "Follow the review rules. " * 400


        def review(history):
            system = f"Now: {timezone.now().isoformat()}\\n{RULES}"
            return client.chat.completions.create(model="gpt-4o", messages=[{"role": "system", "content": system}, *history])
    '''
    found = lint(source, {"CL101"})
    assert [f.row for f in found] == [9]
    assert "timezone.now()" in found[0].message


# --- CL301: a window that is never opened, and a cut made in large steps ---------------------------------------------

WINDOW_OFF_BY_DEFAULT = '''
    from openai import OpenAI

    client = OpenAI()


    class Role:
        def __init__(self, system):
            self.system = system
            self.history: list[dict] = []

        def get_history(self, similar: int, recent: int, prompt: str):
            history = self.history[-recent:] if recent > 0 else []
            return history

        def __call__(self, prompt, recent: int = 0, similar: int = 0):
            history = self.get_history(similar, recent, prompt)
            messages = [{"role": "system", "content": self.system}]
            for turn in history:
                messages.extend(turn["messages"])
            messages.append({"role": "user", "content": prompt})
            reply = client.chat.completions.create(model="gpt-4o", messages=messages)
            self.history.append({"messages": messages[-1:] + [reply.choices[0].message]})
            return reply
'''


def test_a_window_whose_size_defaults_to_off_is_still_reported(tmp_path):
    # tried this round (quiet where no file of the tree passes the size) and taken back: a library's users pass it, a
    # caller may pass it by position or in **options, and a holdout set still blind lost a labelled problem to it
    files = {"agent/__init__.py": "", "agent/role.py": WINDOW_OFF_BY_DEFAULT,
             "agent/run.py": "from agent.role import Role\n\ndef run(llm):\n    return Role(llm)('hello')\n"}
    found = lint_tree(tmp_path, files, "agent/role.py", {"CL301"})
    assert [f.row for f in found] == [12]


def test_a_cut_from_a_high_bound_to_far_fewer_entries_is_quiet():
    source = '''
        class Memory:
            def __init__(self):
                self.messages = []

            def add(self, message):
                self.messages.append(message)
                if len(self.messages) > 100:
                    self.messages = self.messages[-50:]
                return self.messages
    '''
    assert lint(source, {"CL301"}) == []
    assert lint(source.replace("> 100", "> 0x64"), {"CL301", "CL999"}) == []  # a hex bound is read, not a crash
    # a window that keeps nearly all of its bound slides on almost every turn, and so does a small one
    found = lint(source.replace("[-50:]", "[-95:]"), {"CL301"})
    assert [f.row for f in found] == [8]
    assert [f.row for f in lint(source.replace("> 100", "> 4").replace("[-50:]", "[-3:]"), {"CL301"})] == [8]


SENT_CHAT = '''
    from openai import OpenAI

    client = OpenAI()


    class Chat:
        def __init__(self):
            self.history = []

        def ask(self, prompt):
            self.history.append({"role": "user", "content": prompt})
            if len(self.history) > 100:
                {cut}
            reply = client.chat.completions.create(model="gpt-4o", messages={sent})
            self.history.append({"role": "assistant", "content": reply.choices[0].message.content})
            return reply
'''


def test_a_cut_in_large_steps_before_the_request_is_quiet():
    assert lint(SENT_CHAT.replace("{cut}", "self.history = self.history[-50:]").replace("{sent}", "self.history"), {"CL301"}) == []


def test_a_window_taken_only_to_send_is_reported_whatever_its_bound():
    # the stored history grows on; past the bound every request sends the newest 20, a window that slides every turn
    source = SENT_CHAT.replace("{cut}", "messages = self.history[-20:]").replace("{sent}", "messages if len(self.history) > 100 else self.history")
    assert [f.row for f in lint(source, {"CL301"})] == [13]
    in_else = SENT_CHAT.replace("{cut}", "self.history = [self.summary()]\n            else:\n                self.history = self.history[-20:]")
    assert [f.row for f in lint(in_else.replace("{sent}", "self.history"), {"CL301"})] == [15]


# --- CL104: a lookup appended to a system prompt that goes out with the new message alone --------------------------

LOOKUP_LAST = '''
    from app.llm import call_llm


    class Agent:
        def get_knowledge_base(self, message):
            return self.store.search(message)

        def handle(self, message):
            system_prompt = self.base_prompt
            system_prompt_context = self.get_knowledge_base(message)
            system_prompt += system_prompt_context
            return call_llm(self.model, system_prompt=system_prompt, user_prompt=message)
'''


def test_a_lookup_added_to_a_system_prompt_sent_with_only_the_new_message_is_quiet():
    assert lint(LOOKUP_LAST, {"CL104"}) == []


def test_the_same_lookup_sent_with_the_conversation_is_reported():
    for call in ("call_llm(self.model, system_prompt=system_prompt, user_prompt=message, messages=self.history)",
                 "call_llm(self.model, self.history, system_prompt=system_prompt, user_prompt=message)",
                 "call_llm(self.model, system_prompt=system_prompt, user_prompt=message, memory=self.memory)",
                 'call_llm(self.model, system_prompt=system_prompt, prompt="\\n".join(self.history) + message)'):
        found = lint(LOOKUP_LAST.replace("call_llm(self.model, system_prompt=system_prompt, user_prompt=message)", call), {"CL104"})
        assert [f.row for f in found] == [11], call
        assert "looked up for this turn" in found[0].message


# --- CL501: a conversation handed over by a method of the object that keeps it --------------------------------------

BACKEND = {
    "robot/__init__.py": "",
    "robot/backends/__init__.py": "",
    "robot/backends/anthropic_backend.py": '''
        import anthropic


        class AnthropicBackend:
            def __init__(self):
                self.client = anthropic.Anthropic()

            def predict(self, message, context=None, model="claude-sonnet-4-5"):
                messages = [m.serialize() for m in context + [message]]
                reply = self.client.messages.create(model=model, messages=messages, max_tokens=1024)
                return reply.content[0].text
    ''',
    "robot/agent.py": '''
        class LanguageAgent:
            def __init__(self, actor):
                self.actor = actor
                self.context = []

            def prepare_inputs(self, instruction):
                memory = self.context
                return Message(role="user", content=[instruction]), memory

            def act(self, instruction):
                message, memory = self.prepare_inputs(instruction)
                response = self.actor.predict(message, context=memory)
                self.context.append(message)
                self.context.append(Message(role="assistant", content=response))
                return response
    ''',
}


def test_a_conversation_a_method_of_its_keeper_hands_back_is_reported(tmp_path):
    found = lint_tree(tmp_path, BACKEND, "robot/backends/anthropic_backend.py", {"CL501"})
    assert [f.row for f in found] == [10]
    assert "rebuilds from `self.context`" in found[0].message


def test_a_starred_unpacking_of_what_a_method_hands_back_is_not_guessed(tmp_path):
    files = dict(BACKEND)
    files["robot/agent.py"] = BACKEND["robot/agent.py"].replace(
        'return Message(role="user", content=[instruction]), memory', 'return self.persona, memory, [], Message(role="user", content=[instruction])'
    ).replace("message, memory = self.prepare_inputs(instruction)", "*_, memory, message = self.prepare_inputs(instruction)")
    assert lint_tree(tmp_path, files, "robot/backends/anthropic_backend.py", {"CL501"}) == []


def test_a_fresh_list_a_method_hands_back_is_quiet(tmp_path):
    files = dict(BACKEND)
    files["robot/agent.py"] = BACKEND["robot/agent.py"].replace("memory = self.context", "memory = []")
    assert lint_tree(tmp_path, files, "robot/backends/anthropic_backend.py", {"CL501"}) == []


# --- CL501: a framework agent whose model defaults to Claude in the function that makes it ---------------------------

DEFAULT_CLAUDE_AGENT = '''
    from pydantic_ai import Agent

    from app.utils import model_string


    def create_chat_agent(model=None, model_provider: str = "anthropic", model_name: str = "claude-sonnet-4-5"):
        if model:
            model_obj = model
        else:
            model_obj = model_string(model_provider, model_name)
        return Agent(model_obj, instructions="You are a helpful assistant in JupyterLab.")
'''


def test_a_framework_agent_whose_model_defaults_to_claude_is_reported():
    found = lint(DEFAULT_CLAUDE_AGENT, {"CL501"})
    assert [f.row for f in found] == [11]
    assert "runs `claude-sonnet-4-5` unless its caller names another model" in found[0].message


def test_an_agent_defaulting_to_another_model_is_quiet():
    assert lint(DEFAULT_CLAUDE_AGENT.replace("claude-sonnet-4-5", "gpt-4o"), {"CL501"}) == []

def test_a_claude_default_of_another_role_or_beside_another_providers_default_is_quiet():
    judge = DEFAULT_CLAUDE_AGENT.replace('model_provider: str = "anthropic", model_name: str = "claude-sonnet-4-5"',
                                         'model_provider: str = "anthropic", model_name: str = "", judge_model: str = "claude-sonnet-4-5"')
    judge = judge.replace("model_string(model_provider, model_name)", "model_string(model_provider, model_name, judge=judge_model)")
    assert lint(judge, {"CL501"}) == []
    switch = '''
        from pydantic_ai import Agent


        def create_agent(provider: str = "openai", openai_model: str = "gpt-4o", model: str = "claude-sonnet-4-5"):
            model_name = model if provider == "anthropic" else openai_model
            return Agent(f"{provider}:{model_name}", instructions="You are a helpful assistant.")
    '''
    assert lint(switch, {"CL501"}) == []


def test_an_agent_named_by_a_claude_string_is_looked_at_without_the_word_anthropic(tmp_path):
    source = '''
        from pydantic_ai import Agent

        agent = Agent("anthropic:claude-sonnet-4-5", instructions="You are a helpful assistant.")
    '''
    found = lint_tree(tmp_path, {"bot/app.py": source}, "bot/app.py", {"CL501"})
    assert [f.row for f in found] == [3]


def test_an_agent_with_caching_on_in_its_settings_is_quiet(tmp_path):
    cached = DEFAULT_CLAUDE_AGENT.replace('instructions="You are', 'model_settings={"anthropic_cache_instructions": True}, instructions="You are')
    assert lint_tree(tmp_path, {"app/agent.py": cached}, "app/agent.py", {"CL501"}) == []


def test_langchains_caching_middleware_counts_as_a_breakpoint(tmp_path):
    files = {"app/agent.py": '''
        from langchain_anthropic import ChatAnthropic


        def make_model():
            return ChatAnthropic(model="claude-sonnet-4-5")
    ''', "app/graph.py": '''
        from langchain.agents import create_agent
        from langchain_anthropic.middleware import AnthropicPromptCachingMiddleware


        def build(model, tools):
            return create_agent(model, tools, middleware=[AnthropicPromptCachingMiddleware()])
    '''}
    assert lint_tree(tmp_path, files, "app/agent.py", {"CL501"}) == []
    del files["app/graph.py"]
    (tmp_path / "app/graph.py").unlink(missing_ok=True)
    found = lint_tree(tmp_path / "other", files, "app/agent.py", {"CL501"})
    assert [f.row for f in found] == [5]


# --- CL401: camel's agents scheduled over several model backends ------------------------------------------------------

SCHEDULED_AGENT = '''
    from typing import List, Optional, Union

    from camel.agents import ChatAgent
    from camel.models import BaseModelBackend


    class SocialAgent(ChatAgent):
        def __init__(self, system_message, model: Optional[Union[BaseModelBackend, List[BaseModelBackend]]] = None):
            super().__init__(
                system_message=system_message,
                model=model,
                scheduling_strategy="random_model",
            )
'''


def test_an_agent_scheduled_over_several_backends_is_reported():
    found = lint(SCHEDULED_AGENT, {"CL401"})
    assert [f.row for f in found] == [12]
    assert "at random (random_model)" in found[0].message


def test_an_agent_given_one_backend_is_quiet():
    one = SCHEDULED_AGENT.replace("Optional[Union[BaseModelBackend, List[BaseModelBackend]]]", "BaseModelBackend")
    assert lint(one, {"CL401"}) == []
    assert lint(SCHEDULED_AGENT.replace('"random_model"', '"always_first"'), {"CL401"}) == []
