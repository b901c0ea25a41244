"""Round 32: what a spent set (holdout36) taught. Each class is written here in its own words, with the shape
beside it that must stay quiet."""

from __future__ import annotations

from _lint import lint

# --- CL101: a clock added to a settings object's system prompt, then read from it ---------------------------------

SETTINGS_PROMPT_CLOCK = '''
import datetime
from langchain_openai import ChatOpenAI
from langchain_core.messages import SystemMessage


async def run(agent_settings, history, tools):
    llm = ChatOpenAI(model="gpt-4o").bind_tools(tools)
    messages = list(history)
    if agent_settings.system_prompt:
        agent_settings.system_prompt += f"\\nCurrent date and time: {datetime.datetime.now().strftime('%Y-%m-%d %H:%M:%S')}"
        messages.insert(0, SystemMessage(content=agent_settings.system_prompt))
    while True:
        reply = await llm.ainvoke(messages)
        messages.append(reply)
        if not reply.tool_calls:
            return reply
'''


def test_a_clock_added_to_an_objects_system_prompt_is_followed_to_where_it_is_read():
    found = lint(SETTINGS_PROMPT_CLOCK, {"CL101"})
    assert [f.row for f in found] == [10]
    assert "datetime.datetime.now().strftime()" in found[0].message


SETTINGS_PROMPT_BOUND_AFTER = '''
import datetime
from langchain_openai import ChatOpenAI
from langchain_core.messages import SystemMessage


async def run(agent_settings, history):
    llm = ChatOpenAI(model="gpt-4o")
    messages = [SystemMessage(content=agent_settings.system_prompt)] + history
    reply = await llm.ainvoke(messages)
    agent_settings.last_run += f"finished at {datetime.datetime.now()}"
    agent_settings.system_prompt += f" (last run {datetime.datetime.now()})"
    return reply
'''


def test_a_clock_added_to_an_objects_system_prompt_after_it_is_read_is_quiet():
    assert lint(SETTINGS_PROMPT_BOUND_AFTER, {"CL101"}) == []


# --- CL103: a skills folder listed in the file system's order -------------------------------------------------------

SKILLS_LOADED = '''
from pathlib import Path


class SkillLoader:
    def __init__(self, skills_dir):
        self.skills_dir = Path(skills_dir)
        self.loaded_skills = {}

    def discover_skills(self):
        found = []
        for skill_file in self.skills_dir.rglob("SKILL.md"):
            skill = self.load_skill(skill_file)
            if skill:
                found.append(skill)
                self.loaded_skills[skill.name] = skill
        return found

    def get_skills_metadata_prompt(self):
        parts = ["## Available Skills"]
        for skill in self.loaded_skills.values():
            parts.append(f"- `{skill.name}`: {skill.description}")
        return "\\n".join(parts)
'''


def test_skills_loaded_from_an_unsorted_listing_are_reported_at_the_listing():
    found = lint(SKILLS_LOADED, {"CL103"})
    assert [f.row for f in found] == [11]
    assert "their contents are collected" in found[0].message


SKILL_ENTRIES = '''
from pathlib import Path


class Skills:
    def _skill_entries_from_dir(self, base: Path, source: str):
        entries = []
        for skill_dir in base.iterdir():
            skill_file = skill_dir / "SKILL.md"
            if not skill_file.exists():
                continue
            name = skill_dir.name
            entries.append({"name": name, "path": str(skill_file), "source": source})
        return entries
'''


def test_skill_entries_listed_without_reading_them_are_reported_at_the_listing():
    found = lint(SKILL_ENTRIES, {"CL103"})
    assert [f.row for f in found] == [7]
    assert "the skills it finds are collected into `entries`" in found[0].message


SKILL_QUIET = '''
import json
import zipfile
from pathlib import Path


def discover_skill_md_files(root: Path):
    results = []
    for p in root.rglob("SKILL.md"):
        results.append(p)
    results.sort(key=lambda x: str(x))
    return results


def package_skill(skill_path: Path, out: Path):
    if not (skill_path / "SKILL.md").exists():
        raise ValueError("not a skill")
    files_to_package = []
    for file_path in skill_path.rglob("*"):
        files_to_package.append(file_path)
    with zipfile.ZipFile(out, "w") as archive:
        for file_path in files_to_package:
            archive.write(file_path)


@server.tool()
async def skills_list() -> str:
    skills = []
    for skill_dir in SKILLS_DIR.iterdir():
        if (skill_dir / "SKILL.md").exists():
            skills.append({"name": skill_dir.name, "text": (skill_dir / "SKILL.md").read_text()})
    return json.dumps(skills)
'''


def test_a_sorted_skills_list_a_skills_own_files_and_a_tools_result_are_quiet():
    assert lint(SKILL_QUIET, {"CL103"}) == []


# --- CL301: a text prompt rebuilt each step from the newest steps, walked by index ---------------------------------

STEP_WINDOW = """
import anthropic

client = anthropic.Anthropic()


class ResearchAgent:
    def __init__(self, initial_prompt):
        self.initial_prompt = initial_prompt
        self.history_steps = []

    def run(self, env, last_steps=3):
        while not env.is_final():
            curr_step = len(self.history_steps)
            prompt = self.initial_prompt
            for idx in range(max(0, curr_step - last_steps), curr_step):
                prompt += "Action: " + self.history_steps[idx]["action"] + "\\nObservation: " + self.history_steps[idx]["observation"]
            reply = client.messages.create(model="claude-sonnet-4-5", max_tokens=1024, messages=[{"role": "user", "content": prompt}])
            self.history_steps.append({"action": reply.content[0].text, "observation": env.step(reply.content[0].text)})
"""


def test_a_prompt_rebuilt_from_the_newest_steps_by_index_is_a_window():
    found = lint(STEP_WINDOW, {"CL301"})
    assert [f.row for f in found] == [15], found
    assert "`self.history_steps`" in found[0].message


def test_a_walk_by_index_over_every_step_or_over_text_that_is_no_history_is_quiet():
    every = STEP_WINDOW.replace("range(max(0, curr_step - last_steps), curr_step)", "range(0, curr_step)")
    assert every != STEP_WINDOW and lint(every, {"CL301"}) == []
    words = '''
def neighbours(sentences, i):
    out = []
    for j in range(max(0, i - 3), i):
        out.append(sentences[j])
    return out
'''
    assert lint(words, {"CL301"}) == []


# --- a value made in another module of the tree is reported where it is made ----------------------------------------

LISTING_PROMPTS = {
    "app/__init__.py": "",
    "app/tooluse_prompt.py": '''
        import os


        def get_tooluse_prompt():
            tool_folder = os.path.join(os.path.dirname(__file__), "tools")
            tool_files = [os.path.join(tool_folder, f) for f in os.listdir(tool_folder) if f.endswith(".py")]
            contents = [open(f).read() for f in tool_files]
            return "Here are the available tools:\\n" + "\\n\\n".join(contents)
        ''',
    "app/builder.py": '''
        import datetime


        def get_system_message(name):
            now = datetime.datetime.now().strftime("%H:%M:%S")
            return f"You are {name}, a careful agent. The time is {now}."


        def get_local_time():
            return datetime.datetime.now().strftime("%H:%M:%S")
        ''',
    "app/agent.py": '''
        from openai import OpenAI

        from app.builder import get_local_time, get_system_message
        from app.tooluse_prompt import get_tooluse_prompt

        client = OpenAI()


        def step(history):
            system = get_system_message("Ada") + get_tooluse_prompt()
            return client.chat.completions.create(model="gpt-4o", messages=[{"role": "system", "content": system}, *history])


        def step_with_time(history):
            system = "You are Ada. The time is " + get_local_time()
            return client.chat.completions.create(model="gpt-4o", messages=[{"role": "system", "content": system}, *history])
        ''',
}


def test_values_made_in_a_prompt_builder_are_reported_where_they_are_made(tmp_path):
    from _lint import lint_tree

    found = lint_tree(tmp_path, LISTING_PROMPTS, "app/agent.py", {"CL101", "CL103"})
    where = sorted((f.filename.rsplit("/", 1)[-1], f.row, f.code) for f in found)
    # the clock in the builder's text where it is written; the clock a helper only hands back where the prompt takes it
    # in; the listing is prompt material its own module reports (and sorts), so not again from here
    assert where == [("agent.py", 15, "CL101"), ("builder.py", 5, "CL101")], found
    moved = next(f for f in found if f.filename.endswith("builder.py"))
    assert "agent.py:10)" in moved.message and moved.fix is None and "(in " not in moved.message
    listing = lint_tree(tmp_path, LISTING_PROMPTS, "app/tooluse_prompt.py", {"CL103", "CL201"})
    assert [(f.code, f.row) for f in listing] == [("CL103", 6)], listing


def test_a_noqa_where_the_value_is_made_holds(tmp_path):
    from _lint import lint_tree

    files = dict(LISTING_PROMPTS)
    files["app/builder.py"] = files["app/builder.py"].replace('strftime("%H:%M:%S")\n            return f"You',
                                                              'strftime("%H:%M:%S")  # noqa: CL101\n            return f"You')
    assert files["app/builder.py"] != LISTING_PROMPTS["app/builder.py"]
    found = lint_tree(tmp_path, files, "app/agent.py", {"CL101"})
    assert [(f.filename.rsplit("/", 1)[-1], f.row) for f in found] == [("agent.py", 15)], found


def test_a_value_taken_in_by_two_modules_is_reported_once_by_a_check_of_the_tree(tmp_path, monkeypatch):
    import textwrap
    from pathlib import Path

    from cachelint.check.config import Config
    from cachelint.check.run import run_check

    files = dict(LISTING_PROMPTS)
    files["app/other.py"] = LISTING_PROMPTS["app/agent.py"]
    for name, text in files.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(textwrap.dedent(text).lstrip("\n"))
    monkeypatch.chdir(tmp_path)
    for _ in range(2):  # cold, then from the cache
        run = run_check([Path(".")], Config(root=tmp_path), processes=1)
        where = sorted((f.filename, f.row, f.code) for f in run.findings)
        assert where == [("app/agent.py", 15, "CL101"), ("app/builder.py", 5, "CL101"), ("app/other.py", 15, "CL101"),
                         ("app/tooluse_prompt.py", 6, "CL103")], where


# --- CL501: an adapter's callers in the tests say nothing of the app's prompts --------------------------------------

ADAPTER = '''
import anthropic


async def query_anthropic_async(client, model, msg, system_msg, msg_history, **kwargs):
    new_msg_history = msg_history + [{"role": "user", "content": [{"type": "text", "text": msg}]}]
    response = await client.messages.create(model=model, max_tokens=1024, system=system_msg, messages=new_msg_history, **kwargs)
    new_msg_history.append({"role": "assistant", "content": [{"type": "text", "text": response.content[0].text}]})
    return response, new_msg_history
'''
ADAPTER_TEST = '''
import asyncio

from app.providers import query_anthropic_async


def test_accounting(fake_client):
    response, history = asyncio.run(query_anthropic_async(fake_client, "claude-sonnet-4-5", "hi", "Be brief.", []))
    assert history[-1]["role"] == "assistant"
'''


def test_an_adapter_whose_only_caller_passing_a_system_prompt_is_a_test_is_judged_as_an_adapter(tmp_path):
    from _lint import lint_tree

    files = {"app/__init__.py": "", "app/providers.py": ADAPTER, "tests/test_providers.py": ADAPTER_TEST,
             "pyproject.toml": "[project]\\nname = 'app'\\n"}
    found = lint_tree(tmp_path, files, "app/providers.py", {"CL501"})
    assert [f.row for f in found] == [6], found
    assert "sends the history its callers pass (`msg_history`)" in found[0].message
