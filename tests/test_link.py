"""From a live break to the line of code that caused it: tests/linkapp driven through the real proxy by the real
anthropic SDK against the stand-in provider (tests/upstream.py), then the report joined to the app's source.

The expected place of each break is the line of tests/linkapp marked `# link: <scenario>`."""

from __future__ import annotations

import time
from pathlib import Path

import anthropic
import openai
import pytest

from cachelint.link import annotate, render_sources_text
from cachelint.link.index import build_index
from cachelint.link.match import align_left, align_right, link_break
from cachelint.link.index import Hole
from cachelint.record.report import build_report
from cachelint.record.store import Store
from linkapp.client import ChatBot, SupportBot
from linkapp.prompts import Customer, customer_system, plain_system, stamped_system, traced_instructions
from linkapp.tools import tools_for
from test_proxy import API_KEY, OPENAI_KEY, Proxy
from upstream import Upstream

APP = Path(__file__).parent / "linkapp"
# a prompt built outside the app's tree (as a framework or a gateway would add it)
OUTSIDE_RULES = "Release notes for the operators follow. Keep answers under forty words and in plain English. " * 30


def marked(scenario: str) -> tuple[Path, int]:
    """The file and line of tests/linkapp marked `# link: <scenario>`."""
    for path in sorted(APP.glob("*.py")):
        for number, line in enumerate(path.read_text().splitlines(), start=1):
            if line.rstrip().endswith(f"# link: {scenario}"):
                return path.resolve(), number
    raise AssertionError(f"no marker for {scenario}")


def run_scenarios(client: anthropic.Anthropic, chat: openai.OpenAI) -> None:
    """Six conversations of the support bot, each with one kind of break (one on the OpenAI chat API, one whose
    source is outside the app)."""
    bot = SupportBot(client, "link-timestamp")
    for turn in range(3):
        bot.ask(f"Where is order {turn}?", system=stamped_system(), tools=tools_for([]))
    customer = Customer("Ada Lovelace", 1)
    bot = SupportBot(client, "link-per-user")
    for turn in range(3):
        bot.ask(f"Any news on ticket {turn}?", system=customer_system(customer), tools=tools_for([]))
        customer.open_tickets += 1
    bot = SupportBot(client, "link-tools")
    for recent in ([], ["track_parcel"], ["open_ticket", "track_parcel"]):
        bot.ask("Track my parcel please.", system=plain_system(), tools=tools_for(recent))
    bot = SupportBot(client, "link-history", keep_all=False)
    for turn in range(4):
        bot.ask(f"Question {turn} about my delivery.", system=plain_system(), tools=tools_for([]))
    bot = SupportBot(client, "link-outside")
    for turn in range(2):
        banner = [{"type": "text", "text": f"Operator banner generated at {time.time_ns()} by the deploy pipeline.\n{OUTSIDE_RULES}",
                   "cache_control": {"type": "ephemeral"}}]
        bot.ask(f"Outside question {turn}", system=banner, tools=tools_for([]))
    chat_bot = ChatBot(chat, "link-openai")
    for turn in range(3):
        chat_bot.ask(f"Status of order {turn}?", instructions=traced_instructions())


@pytest.fixture(scope="module")
def recorded_live(tmp_path_factory) -> tuple[dict, str, str]:
    """The scenarios through `cachelint proxy --source tests/linkapp`: the stored report, and the proxy's live
    lines (stdout, --no-dashboard) and stderr."""
    db = tmp_path_factory.mktemp("link") / "cachelint.db"
    out = err = ""
    with Upstream(event_delay=0.0) as upstream:
        proxy = Proxy(upstream.url, db, "--source", str(APP))
        try:
            run_scenarios(anthropic.Anthropic(api_key=API_KEY, base_url=proxy.url, max_retries=0),
                          openai.OpenAI(api_key=OPENAI_KEY, base_url=proxy.url + "/v1", max_retries=0))
        finally:
            out, err = proxy.stop()
    return build_report(Store(db, readonly=True)), out, err


@pytest.fixture(scope="module")
def recorded(recorded_live) -> dict:
    return recorded_live[0]


def test_the_live_proxy_names_each_breaks_line_as_it_happens(recorded_live, linked):
    """`cachelint proxy --source DIR`: every break line of the live view names the place the report names."""
    _, out, err = recorded_live
    assert "linking breaks to" in err
    live = [line for line in out.splitlines() if " BREAK " in line]
    assert live
    for session, (_detail, scenario) in EXPECTED.items():
        path, line = marked(scenario)
        lines = [text for text in live if text.startswith(session)]
        assert lines and all(text.rstrip().endswith(f":{line}") and path.name in text for text in lines), (session, lines)
    outside = [text for text in live if text.startswith("link-outside")]
    assert outside and not any(" -> " in text for text in outside)  # not found in the tree: no place is made up


@pytest.fixture(scope="module")
def linked(recorded) -> dict:
    annotate(recorded, APP)
    return recorded


def breaks_of(report: dict, session: str) -> list[dict]:
    [found] = [s for s in report["sessions"] if s["session"].startswith(session)]
    return found["breaks"]


EXPECTED = {  # session -> (break detail, marker of the line that caused it)
    "link-timestamp": ("volatile_value", "timestamp"),
    "link-per-user": ("volatile_value", "per_user"),
    "link-tools": ("tools_reordered", "tools_reordered"),
    "link-history": ("history_truncated", "history_truncated"),
    "link-openai": ("volatile_value", "request_id"),
}


@pytest.mark.parametrize("session", sorted(EXPECTED))
def test_each_break_names_the_line_that_caused_it(linked, session):
    detail, marker = EXPECTED[session]
    breaks = breaks_of(linked, session)
    assert len(breaks) == 2 and {b["detail"] for b in breaks} == {detail}
    for brk in breaks:
        top = brk["source"][0]
        assert (Path(top["file"]).resolve(), top["line"]) == marked(marker), brk["source"]
        assert top["confidence"] in ("certain", "likely") and brk["source_note"] is None
        assert set(top) >= {"file", "line", "rule", "message", "confidence"}


def test_a_break_made_outside_the_tree_is_not_found(linked):
    [brk] = breaks_of(linked, "link-outside")
    assert brk["detail"] == "volatile_value" and brk["source"] == []
    assert brk["source_note"].startswith("not found in ") and brk["source_note"].endswith("linkapp")


def test_sources_rank_places_by_wasted_prefill_with_shares(linked):
    sources = linked["sources"]
    assert {(Path(s["file"]).resolve(), s["line"]) for s in sources} == {marked(m) for _, m in EXPECTED.values()}
    assert all(s["breaks"] == 2 for s in sources)
    wasted = [s["wasted_prefill_tokens"] for s in sources]
    assert wasted == sorted(wasted, reverse=True) and all(w > 0 for w in wasted)
    total = sum(b.get("wasted_prefill_tokens", b["reprefilled_tokens"]) or 0 for s in linked["sessions"] for b in s["breaks"])
    for s in sources:
        assert s["share"] == pytest.approx(s["wasted_prefill_tokens"] / total, abs=1e-4)
    assert linked["sources_unmatched"]["breaks"] == 1
    lines = render_sources_text(linked)
    assert len(lines) == len(sources) + 1 and lines[-1].startswith("not found in the source tree -> 1 break,")
    first = lines[0]
    assert first.startswith(f"{sources[0]['file']}:{sources[0]['line']} ") and "2 breaks, " in first and "% of wasted prefill, " in first
    assert all(s["wasted_cost"] and s["wasted_cost"] > 0 for s in sources)  # the stand-in's models are priced
    assert " $0.00 " not in " ".join(lines) + " " and "cost unknown" not in first


def test_unknown_money_is_never_printed_as_zero():
    report = {"sessions": [{"breaks": [
        {"wasted_prefill_tokens": 900, "wasted_cost": None, "source": [{"file": "app/p.py", "line": 3, "rule": "CL101", "message": "m", "confidence": "certain"}]},
        {"wasted_prefill_tokens": 100, "wasted_cost": 0.5, "source": [{"file": "app/q.py", "line": 9, "rule": "CL201", "message": "n", "confidence": "likely"}]},
    ]}]}
    from cachelint.link import rank_sources

    report["sources"], report["sources_unmatched"], report["sources_not_code"] = rank_sources(report)
    assert [(s["file"], s["wasted_cost"], s["share"]) for s in report["sources"]] == [("app/p.py", None, 0.9), ("app/q.py", 0.5, 0.1)]
    lines = render_sources_text(report)
    assert lines == ["app/p.py:3 CL101 m -> 1 break, 90% of wasted prefill, cost unknown (certain)",
                     "app/q.py:9 CL201 n -> 1 break, 10% of wasted prefill, $0.50 (likely)"]


def test_a_static_finding_at_the_place_makes_it_certain_and_names_the_rule(tmp_path):
    (tmp_path / "bot.py").write_text(
        "from datetime import datetime\nimport anthropic\n\nclient = anthropic.Anthropic()\nRULES = 'Answer briefly. ' * 200\n\n\n"
        "def ask(q):\n"
        "    system = f'Today is {datetime.now()} and the rules follow.\\n' + RULES\n"
        "    return client.messages.create(model='claude-sonnet-4-5', max_tokens=9, system=system, messages=[{'role': 'user', 'content': q}])\n")
    brk = {"cause": "system_changed", "detail": "volatile_value", "rule": "CL101", "pointer": "/system", "section": "system",
           "before": "Today is 2026-12-01 10:31:05.120001 and the rules follow.\nAnswer briefly. Ans…",
           "after": "Today is 2026-12-01 10:31:06.004512 and the rules follow.\nAnswer briefly. Ans…"}
    report = {"sessions": [{"breaks": [brk]}]}
    annotate(report, tmp_path)
    top = brk["source"][0]
    assert (Path(top["file"]).resolve(), top["line"], top["rule"], top["confidence"], top["finding"]) == ((tmp_path / "bot.py").resolve(), 9, "CL101", "certain", True)


def test_a_change_inside_a_value_and_a_near_miss(tmp_path):
    (tmp_path / "bot.py").write_text(
        "from datetime import datetime\n\n"
        "def system_prompt(handbook):\n"
        "    stamp = datetime.now().strftime('%Y-%m-%d %H:%M')\n"
        "    return f\"You are Acme's support agent. Local time: {stamp}.\\n{handbook}\"\n")
    index = build_index(tmp_path)
    minute = {"cause": "system_changed", "detail": "volatile_value", "rule": "CL101",
              "before": "…upport agent. Local time: 2026-11-29 10:31.\nThe handbook: refunds within 30 days…",
              "after": "…upport agent. Local time: 2026-11-29 10:32.\nThe handbook: refunds within 30 days…"}
    [top] = link_break(minute, index, [])
    assert (top.line, top.confidence, top.code) == (4, "certain", "datetime.now().strftime('%Y-%m-%d %H:%M')")
    other = {"cause": "system_changed", "detail": "volatile_value", "rule": "CL101",  # Claude Code's own clock
             "before": "…inux 6.8.0\nCurrent time: 2026-11-29T10:31\n</env>\nYou are powered by the model na…",
             "after": "…inux 6.8.0\nCurrent time: 2026-11-29T10:32\n</env>\nYou are powered by the model na…"}
    assert link_break(other, index, []) == []


@pytest.mark.parametrize("old, new", [(9, 10), (10, 9), (99, 100000)])
def test_values_of_another_length_cut_the_excerpts_elsewhere(old, new):
    """The excerpts end a fixed width after the first difference: a longer value moves the end of one of them."""
    from cachelint.diff.explain import excerpt
    from cachelint.diff.locate import common_prefix_length

    before = customer_system(Customer("Ada Lovelace", old))[0]["text"]
    after = customer_system(Customer("Ada Lovelace", new))[0]["text"]
    at = common_prefix_length(before, after)
    brk = {"cause": "system_changed", "detail": "volatile_value", "rule": "CL101", "before": excerpt(before, at), "after": excerpt(after, at)}
    found = link_break(brk, build_index(APP), [])
    assert [(c.file.resolve(), c.line, c.confidence) for c in found] == [(*marked("per_user"), "certain")]


def test_templates_of_every_shape_are_matched(tmp_path):
    (tmp_path / "shapes.py").write_text(
        "import time\n"
        "def a(user):\n    return 'Hello {}, your plan is {} today.'.format(user.name, user.plan)\n"
        "def b(n):\n    return 'Queue depth: %d jobs waiting right now.' % n\n"
        "def c():\n    stamp = str(time.time())\n    return 'Snapshot taken ' + stamp + ' for the nightly audit.'\n")
    index = build_index(tmp_path)

    def top(before: str, after: str) -> tuple[int, str]:
        [first, *_] = link_break({"cause": "system_changed", "detail": "volatile_value", "rule": "CL101", "before": before, "after": after}, index, [])
        return first.line, first.confidence

    assert top("Hello Ada, your plan is gold today.", "Hello Ada, your plan is free today.") == (3, "certain")
    assert top("Queue depth: 4 jobs waiting right now.", "Queue depth: 5 jobs waiting right now.") == (5, "certain")
    assert top("Snapshot taken 1764585000.12 for the nightly audit.", "Snapshot taken 1764585001.5 for the nightly audit.") == (7, "certain")
    assert link_break({"cause": "system_changed", "detail": "volatile_value", "before": "Nothing like this 12 here", "after": "Nothing like this 13 here"}, index, []) == []


def test_alignment_counts_literal_characters_across_holes():
    parts = ["Customer: ", Hole(1, "name"), ", with "]
    assert align_left(parts, "Customer: Ada Lovelace, with ") == len("Customer: ") + len(", with ")
    assert align_left(["Local time: "], "Current time: ") == 0  # another template: nothing agrees
    assert align_left(["Local time: "], "al time: 2026-11-29 ", near=32) == len("al time: ")  # cut excerpt, change inside the value
    assert align_left(["Local time: "], "Local time: 2026-11-29 ") == 0  # not next to the change (near=0)
    assert align_right([" open tickets.", Hole(2, "x"), " end"], " open tickets. … end") == len(" open tickets.") + 4
    assert align_right([".\nHandbook follows"], ":31.\nHand", near=32) == len(".\nHand")


def test_source_dir_must_be_a_directory(tmp_path):
    from cachelint.errors import CachelintError

    with pytest.raises(CachelintError, match="not a directory"):
        annotate({"sessions": []}, tmp_path / "missing")


def test_breaks_no_code_made_are_not_sent_looking_in_the_tree(tmp_path):
    (tmp_path / "app.py").write_text("PROMPT = 'Current time: 2026 and more text here'\n")
    expired = {"cause": "ttl_expired", "detail": "idle_gap", "rule": None, "before": None, "after": None, "wasted_prefill_tokens": 300, "wasted_cost": None}
    edited = {"cause": "system_changed", "detail": "volatile_value", "rule": "CL101", "before": "Elsewhere 1 entirely", "after": "Elsewhere 2 entirely",
              "wasted_prefill_tokens": 100, "wasted_cost": 0.25}
    report = {"sessions": [{"breaks": [expired, edited]}]}
    annotate(report, tmp_path)
    assert expired["source"] == [] and expired["source_note"].startswith("not a code change: the cache expired")
    assert edited["source"] == [] and edited["source_note"].startswith("not found in ")
    assert report["sources"] == [] and report["sources_not_code"]["share"] == 0.75 and report["sources_unmatched"]["share"] == 0.25
    assert render_sources_text(report) == ["not found in the source tree -> 1 break, 25% of wasted prefill, $0.25",
                                           "not a code change (cache expired, provider side) -> 1 break, 75% of wasted prefill, cost unknown"]


def test_tools_inline_added_and_a_tree_that_sends_nothing(tmp_path):
    (tmp_path / "agent.py").write_text(
        "import anthropic\n\n"
        "def run(client, history, extra):\n"
        "    history = history[2:]\n"
        "    tools = [{'name': 'grep', 'input_schema': {}}, {'name': 'edit', 'input_schema': {}}]\n"
        "    if extra:\n"
        "        tools.append({'name': 'web', 'input_schema': {}})\n"
        "    return client.messages.create(model='m', max_tokens=1, tools=tools, messages=history)\n")
    index = build_index(tmp_path)
    added = link_break({"cause": "tools_changed", "detail": "tool_added", "before": "tools: grep, edit", "after": "tools: grep, edit, web"}, index, [])
    assert [(c.line, c.confidence) for c in added] == [(7, "likely"), (5, "likely")]  # added on some requests; the list
    [cut] = link_break({"cause": "messages_changed", "detail": "history_truncated", "before": "a", "after": "b"}, index, [])
    assert (cut.line, cut.confidence) == (4, "likely")
    (tmp_path / "agent.py").write_text("def keep(history):\n    return history[2:]\n")
    assert link_break({"cause": "messages_changed", "detail": "history_truncated", "before": "a", "after": "b"}, build_index(tmp_path), []) == []


CLAUDE_MD = """# Project notes

- Use Python 3.11 and type hints everywhere.
- Run tests with pytest -q before you commit.
- Never edit files under vendor/.
"""
HOOK = """#!/bin/sh
# SessionStart hook: tell the agent the time
echo "Current local time: $(date +%H:%M) on $(hostname)"
"""


def agent_request(claude_md: str, now: str, turns: int) -> dict:
    """An agent's request the way Claude Code builds one: a long static system block, a hook's output in the
    next block, the memory file inside the first user message, a breakpoint on the newest message."""
    guide = " ".join(f"Rule {i}: read the code before you change it, run the tests, keep diffs small." for i in range(160))
    messages = [{"role": "user", "content": [
        {"type": "text", "text": f"<system-reminder>\nContents of /work/proj/CLAUDE.md (project instructions):\n\n{claude_md}</system-reminder>"},
        {"type": "text", "text": "fix the failing test"}]}]
    for turn in range(turns):
        messages += [{"role": "assistant", "content": f"Step {turn} done."}, {"role": "user", "content": f"go on {turn}"}]
    messages[-1] = {"role": "user", "content": [{"type": "text", "text": str(messages[-1]["content"] if turns else "fix"), "cache_control": {"type": "ephemeral"}}]} if turns else messages[-1]
    return {"model": "claude-sonnet-4-5", "max_tokens": 100, "metadata": {"user_id": "user_abc_account__session_7f3e"},
            "system": [{"type": "text", "text": guide, "cache_control": {"type": "ephemeral"}},
                       {"type": "text", "text": f"Current local time: {now} on devbox\nYou are working in /work/proj."}],
            "messages": messages}


def agent_project(tmp_path: Path) -> tuple[Path, Path]:
    """A project with a memory file and a hook script, and a store holding three requests of an agent working in
    it: the memory file edited before the second, the hook's minute ticking before the third."""
    import json as _json

    from cachelint.record.analyze import Recorder
    from cachelint.record.exchange import Captured

    project = tmp_path / "proj"
    (project / ".claude" / "hooks").mkdir(parents=True)
    edited = CLAUDE_MD.replace("pytest -q before", "pytest -x -q before")
    (project / "CLAUDE.md").write_text(edited)
    (project / ".claude" / "hooks" / "now.sh").write_text(HOOK)
    (project / "node_modules").mkdir()
    (project / "node_modules" / "copy.md").write_text(edited)  # dependencies are not the user's code
    store = Store(tmp_path / "s.db")
    recorder = Recorder(store)
    usage = {"input_tokens": 3, "cache_creation_input_tokens": 2600, "cache_read_input_tokens": 0, "output_tokens": 1}
    reply = _json.dumps({"id": "msg_1", "type": "message", "role": "assistant", "content": [], "usage": usage}).encode()
    bodies = [agent_request(CLAUDE_MD, "10:31", 1), agent_request(edited, "10:31", 2), agent_request(edited, "10:32", 3)]
    for i, body in enumerate(bodies):
        recorder.record(Captured(1000.0 + i, "POST", "http://127.0.0.1:1/v1/messages", [("content-type", "application/json")],
                                 _json.dumps(body).encode(), status=200, response_body=reply, ended_at=1000.5 + i))
    store.close()
    return project, tmp_path / "s.db"


def test_an_agents_memory_file_and_hook_script_are_named_as_the_source(tmp_path):
    """For a Claude Code or Codex user the prompt is built by text files, not Python: an edited line of CLAUDE.md
    and a hook script that prints the time are the places to fix, found by file and line."""
    project, db = agent_project(tmp_path)
    report = build_report(Store(db, readonly=True))
    annotate(report, project)
    breaks = [b for s in report["sessions"] for b in s["breaks"]]
    assert len(breaks) == 2, [b["cause"] for b in breaks]
    memory, clock = breaks
    assert memory["source"], memory.get("source_note")
    assert (Path(memory["source"][0]["file"]).resolve(), memory["source"][0]["line"]) == ((project / "CLAUDE.md").resolve(), 4)
    assert clock["source"], clock.get("source_note")
    assert (Path(clock["source"][0]["file"]).resolve(), clock["source"][0]["line"]) == ((project / ".claude" / "hooks" / "now.sh").resolve(), 3)
    assert "$(date +%H:%M)" in clock["source"][0]["message"]
    assert not any("node_modules" in c["file"] for b in breaks for c in b["source"])


def test_report_source_names_the_places_in_text_json_and_html(tmp_path):
    import json as _json
    import subprocess
    import sys

    project, db = agent_project(tmp_path)

    def cli(*args: str) -> subprocess.CompletedProcess:
        return subprocess.run([sys.executable, "-m", "cachelint", "report", "--db", str(db), "--source", str(project), *args],
                              capture_output=True, text=True, timeout=120, cwd=tmp_path)

    text = cli()
    assert text.returncode == 0, text.stderr
    block = text.stdout.split("where the breaks come from:")[1]
    assert "proj/CLAUDE.md:4" in block and "proj/.claude/hooks/now.sh:3" in block and "1 break," in block
    data = _json.loads(cli("--format", "json").stdout)
    assert sorted((s["file"], s["line"]) for s in data["sources"]) == [("proj/.claude/hooks/now.sh", 3), ("proj/CLAUDE.md", 4)]
    assert sum(s["share"] for s in data["sources"]) == pytest.approx(1.0, abs=0.01)
    page = cli("--format", "html").stdout
    assert "<table id='sources'>" in page and "proj/CLAUDE.md:4" in page
    assert f"href='vscode://file{project.resolve()}/CLAUDE.md:4'" in page  # a click opens the line in the editor
    missing = cli("--format", "json", "--session", "nope")
    assert missing.returncode == 2
    gone = subprocess.run([sys.executable, "-m", "cachelint", "report", "--db", str(db), "--source", str(tmp_path / "nowhere")],
                          capture_output=True, text=True, timeout=60)
    assert gone.returncode == 2 and gone.stderr.count("\n") == 1 and "nowhere" in gone.stderr


def test_the_editors_index_is_rebuilt_when_a_memory_file_changes(tmp_path):
    """The language server keeps a tree's index while no file it reads changed: an edited CLAUDE.md counts."""
    from cachelint.link.observe import tree_of

    (tmp_path / "CLAUDE.md").write_text("- Run tests with pytest -q before you commit.\n")
    first, _ = tree_of(tmp_path)
    assert tree_of(tmp_path)[0] is first  # nothing changed: the same index
    (tmp_path / "CLAUDE.md").write_text("- Run tests with pytest -x -q before you commit, always.\n")
    second, _ = tree_of(tmp_path)
    assert second is not first and any("pytest -x -q" in t.text for t in second.templates)
