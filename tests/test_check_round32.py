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
    # the clock in the builder's text where it is written, the listing where it is sorted; the clock a helper only
    # hands back where the prompt takes it in
    assert where == [("agent.py", 15, "CL101"), ("builder.py", 5, "CL101"), ("tooluse_prompt.py", 6, "CL103")], found
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


# --- the review's mends ---------------------------------------------------------------------------------------------

def _write(root, files):
    import textwrap

    for name, text in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(textwrap.dedent(text).lstrip("\n"))


def _check(root, monkeypatch, **kwargs):
    from pathlib import Path

    from cachelint.check.config import Config
    from cachelint.check.run import run_check

    monkeypatch.chdir(root)
    options = {k: v for k, v in kwargs.items() if k in ("fix",)}
    config = Config(root=root, **{k: v for k, v in kwargs.items() if k not in ("fix",)})
    run = run_check([Path(".")], config, processes=1, use_cache=False, **options)
    return sorted((f.filename, f.row, f.code) for f in run.findings), run


def test_a_finding_moved_into_another_module_obeys_that_modules_per_file_ignores_and_excludes(tmp_path, monkeypatch):
    _write(tmp_path, LISTING_PROMPTS)
    found, _ = _check(tmp_path, monkeypatch)
    assert ("app/builder.py", 5, "CL101") in found
    found, _ = _check(tmp_path, monkeypatch, per_file_ignores={"app/builder.py": ["CL101"]})
    assert not [f for f in found if f[0] == "app/builder.py"], found
    found, _ = _check(tmp_path, monkeypatch, exclude=["app/builder.py"])
    assert not [f for f in found if f[0] == "app/builder.py"], found


HELPERS_WITH_OWN_REQUEST = {
    "helpers.py": '''
        import os

        from openai import OpenAI

        client = OpenAI()


        def notes_prompt(folder):
            return "Notes:\\n" + "\\n".join(os.listdir(folder))


        def ask(history):
            return client.chat.completions.create(model="gpt-4o", messages=[{"role": "system", "content": notes_prompt("notes")}, *history])
        ''',
    "agent.py": '''
        from openai import OpenAI

        from helpers import notes_prompt

        client = OpenAI()


        def step(history):
            system = notes_prompt("notes")
            return client.chat.completions.create(model="gpt-4o", messages=[{"role": "system", "content": system}, *history])
        ''',
}


def test_the_modules_own_fixable_finding_wins_and_nothing_is_left_after_the_fix(tmp_path, monkeypatch):
    _write(tmp_path, HELPERS_WITH_OWN_REQUEST)
    found, run = _check(tmp_path, monkeypatch)
    assert found == [("helpers.py", 9, "CL103")], found
    assert run.findings[0].fix is not None
    found, run = _check(tmp_path, monkeypatch, fix=True)
    assert found == [] and run.fixed == 1, found
    assert "sorted(os.listdir(folder))" in (tmp_path / "helpers.py").read_text()


def test_a_listing_followed_into_its_module_is_kept_when_only_the_caller_is_checked_or_only_certain_findings_are_shown(tmp_path):
    from _lint import lint_tree

    found = lint_tree(tmp_path, LISTING_PROMPTS, "app/agent.py", {"CL103"})
    assert [(f.filename.rsplit("/", 1)[-1], f.row, f.confidence) for f in found] == [("tooluse_prompt.py", 6, "certain")], found


def test_a_helper_named_for_the_system_that_only_hands_back_the_clock_stays_reported_at_the_caller(tmp_path):
    from _lint import lint_tree

    files = dict(LISTING_PROMPTS)
    files["app/builder.py"] += '''

        def get_system_time():
            return datetime.datetime.now().strftime("%H:%M:%S")
        '''
    files["app/agent.py"] = files["app/agent.py"].replace("get_local_time", "get_system_time")
    found = lint_tree(tmp_path, files, "app/agent.py", {"CL101"})
    assert sorted((f.filename.rsplit("/", 1)[-1], f.row) for f in found) == [("agent.py", 15), ("builder.py", 5)], found


def test_a_clock_a_builder_gets_from_a_helper_of_its_module_is_reported_once_in_that_module(tmp_path, monkeypatch):
    _write(tmp_path, {
        "builder.py": '''
            import datetime


            def get_local_time():
                return datetime.datetime.now().strftime("%H:%M:%S")


            def get_system_message(name):
                return f"You are {name}, a careful agent. The time is {get_local_time()}."
            ''',
        "agent.py": '''
            from openai import OpenAI

            from builder import get_system_message

            client = OpenAI()


            def step(history):
                system = get_system_message("Ada") + " Answer briefly."
                return client.chat.completions.create(model="gpt-4o", messages=[{"role": "system", "content": system}, *history])
            ''',
    })
    found, run = _check(tmp_path, monkeypatch)
    assert found == [("builder.py", 5, "CL101")], found
    assert run.findings[0].confidence == "certain"  # found through the request too


def test_a_noqa_on_the_first_row_of_the_statement_where_the_value_is_made_holds(tmp_path):
    from _lint import lint_tree

    files = dict(LISTING_PROMPTS)
    files["app/builder.py"] = files["app/builder.py"].replace(
        'now = datetime.datetime.now().strftime("%H:%M:%S")',
        'now = (  # noqa: CL101\n                datetime.datetime.now().strftime("%H:%M:%S")\n            )')
    assert files["app/builder.py"] != LISTING_PROMPTS["app/builder.py"]
    found = lint_tree(tmp_path, files, "app/agent.py", {"CL101"})
    assert [(f.filename.rsplit("/", 1)[-1], f.row) for f in found] == [("agent.py", 15)], found


def test_a_moved_findings_message_reads_the_same_from_any_working_directory(tmp_path, monkeypatch):
    from pathlib import Path

    from cachelint.check.config import Config
    from cachelint.check.run import run_check

    files = dict(LISTING_PROMPTS)  # a builder its own module does not judge alone (not named for a system prompt)
    files["app/builder.py"] = files["app/builder.py"].replace("def get_system_message(name)", "def prepare_persona(name)")
    files["app/agent.py"] = files["app/agent.py"].replace("get_system_message", "prepare_persona")
    _write(tmp_path, files)
    messages = []
    for cwd in (tmp_path, tmp_path / "app", tmp_path / "app"):  # the second run in app/ reads the cache
        monkeypatch.chdir(cwd)
        run = run_check([tmp_path], Config(root=tmp_path), processes=1)
        messages.append(next(f.message for f in run.findings if f.filename.endswith("builder.py")))
    assert len(set(messages)) == 1 and "(reached from agent.py:10)" in messages[0], messages


def test_an_attribute_bound_again_before_it_is_read_drops_the_clock_stored_first():
    rebound = '''
import datetime
from openai import OpenAI

client = OpenAI()
BASE_PROMPT = "You are a careful research agent."


def run(state, history):
    state.system_prompt = f"Started at {datetime.datetime.now()}"
    log(state.system_prompt)
    state.system_prompt = BASE_PROMPT
    messages = [{"role": "system", "content": state.system_prompt}, *history]
    return client.chat.completions.create(model="gpt-4o", messages=messages)
'''
    assert lint(rebound, {"CL101"}) == []


def test_a_window_start_bound_to_a_name_is_a_window_and_a_loop_that_only_counts_is_not():
    named = STEP_WINDOW.replace("for idx in range(max(0, curr_step - last_steps), curr_step):",
                                "start = max(0, curr_step - last_steps)\n            for idx in range(start, curr_step):")
    assert named != STEP_WINDOW and [f.row for f in lint(named, {"CL301"})] == [16]
    counting = STEP_WINDOW.replace('prompt += "Action: " + self.history_steps[idx]["action"]',
                                   'recent_tokens += len(self.history_steps[idx]["action"]) + 0 * len(')
    counting = counting.replace('+ "\\\\nObservation: " + self.history_steps[idx]["observation"]', 'self.history_steps[idx]["observation"])')
    assert counting != STEP_WINDOW and "recent_tokens +=" in counting
    assert lint(counting, {"CL301"}) == []


def test_skills_installed_or_validated_are_quiet_and_a_comprehension_over_the_folder_is_found():
    acts = '''
import shutil
from pathlib import Path


def install_skills(src: Path, dst: Path) -> list[str]:
    installed = []
    for skill_dir in src.iterdir():
        if (skill_dir / "SKILL.md").exists():
            shutil.copytree(skill_dir, dst / skill_dir.name)
            installed.append(skill_dir.name)
    return installed


def validate_skills(root: Path) -> list[str]:
    errors = []
    for skill_dir in root.iterdir():
        if not (skill_dir / "SKILL.md").is_file():
            errors.append(f"{skill_dir.name}: missing SKILL.md")
    return errors
'''
    assert lint(acts, {"CL103"}) == []
    comp = '''
from pathlib import Path


class Skills:
    def _skill_entries_from_dir(self, base: Path, source: str):
        return [{"name": d.name, "path": str(d / "SKILL.md"), "source": source}
                for d in base.iterdir() if (d / "SKILL.md").exists()]
'''
    assert [f.row for f in lint(comp, {"CL103"})] == [7]


def test_tool_schemas_read_from_a_listing_stay_a_tools_finding():
    tools = '''
import glob
import json


def load_system_tools():
    tools = []
    for path in glob.glob("tools/*.json"):
        with open(path) as f:
            tools.append(json.load(f))
    return tools
'''
    assert "CL201" in {f.code for f in lint(tools, {"CL201", "CL103"})}


def test_stdin_shows_a_moved_finding_where_the_document_reaches_it(tmp_path, monkeypatch):
    import subprocess
    import sys
    import textwrap

    _write(tmp_path, LISTING_PROMPTS)
    monkeypatch.chdir(tmp_path)
    agent = textwrap.dedent(LISTING_PROMPTS["app/agent.py"]).lstrip("\n")
    out = subprocess.run([sys.executable, "-m", "cachelint", "check", "--stdin-filename", "app/agent.py", "--output-format", "concise",
                          "--select", "CL101"], input=agent, capture_output=True, text=True).stdout
    rows = sorted(line.split(":")[:2] for line in out.splitlines() if ": CL101 " in line)
    assert rows == [["app/agent.py", "10"], ["app/agent.py", "15"]], out
    assert "builder.py:5" in out  # the message read from here names where the clock is made


def test_a_window_of_steps_rendered_after_the_whole_conversation_is_a_tail_and_quiet():
    after = '''
from openai import OpenAI

client = OpenAI()


def solve(task_state, max_steps_in_context=3):
    prompt = [
        {"role": "system", "content": task_state.task_description},
        *task_state.messages,
    ]
    step = len(task_state.history_steps)
    for idx in range(max(0, step - max_steps_in_context), step):
        prompt += [{"role": "assistant", "content": task_state.history_steps[idx]["action"]}]
    return client.chat.completions.create(model="gpt-4o", messages=prompt)
'''
    assert lint(after, {"CL301"}) == []
    before = after.replace("        *task_state.messages,\n", "")
    assert [f.row for f in lint(before, {"CL301"})] == [11]


def test_a_walk_over_the_newest_messages_that_marks_breakpoints_builds_no_prompt():
    marks = """
def apply_prompt_caching(payload, prompt_cache_size=3):
    candidates = []
    messages = payload.get("messages", [])
    cache_start = max(0, len(messages) - prompt_cache_size)
    for i in range(cache_start, len(messages)):
        msg = messages[i]
        if isinstance(msg.get("content"), list):
            candidates.append(msg["content"][-1])
    for block in candidates[-4:]:
        block["cache_control"] = {"type": "ephemeral"}
    return payload
"""
    assert lint(marks, {"CL301"}) == []
