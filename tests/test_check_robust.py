"""`cachelint check` and `cachelint rule` on bad input and in real terminals (issues 17 and 18): every case is
run as a user runs it, and the test reads what the user sees (stdout, stderr, exit code, the files)."""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from test_check_cli import BAD, JSONB_STORE, run

FIXABLE = '''import json

import anthropic

client = anthropic.Anthropic()
HANDBOOK = "Follow the handbook. " * 400


def ask(profile: dict, question: str):
    return client.messages.create(model="claude-sonnet-4-5", max_tokens=100,
                                  system=[{"type": "text", "text": HANDBOOK, "cache_control": {"type": "ephemeral"}},
                                          {"type": "text", "text": json.dumps(profile)}],
                                  messages=[{"role": "user", "content": question}, {"role": "user", "content": question}])
''' + JSONB_STORE


def test_no_python_files_warns_on_stderr(tmp_path):
    (tmp_path / "notes.txt").write_text("no code here\n")
    out = run(tmp_path, "check", "--no-cache", ".")
    assert out.returncode == 0
    warnings = [line for line in out.stderr.splitlines() if line]
    assert len(warnings) == 1 and warnings[0].startswith("cachelint: warning: no Python files found in")


def test_a_file_named_but_excluded_says_so_not_that_there_is_no_python(tmp_path):
    (tmp_path / "pyproject.toml").write_text('[tool.cachelint]\nextend-exclude = ["generated"]\n')
    (tmp_path / "generated").mkdir()
    (tmp_path / "generated" / "app.py").write_text(FIXABLE)
    out = run(tmp_path, "check", "--no-cache", "generated/app.py")
    assert out.returncode == 0  # as ruff with --force-exclude: the configuration holds for files pre-commit names
    [warning] = [line for line in out.stderr.splitlines() if line]
    assert warning.startswith("cachelint: warning: generated/app.py excluded by the configuration") and "pyproject.toml" in warning


def test_a_syntax_error_is_reported_where_it_is(tmp_path):
    (tmp_path / "broken.py").write_text("x = 1\ndef f(:\n    pass\n")
    out = run(tmp_path, "check", "--no-cache", "--output-format", "json", "broken.py")
    [finding] = json.loads(out.stdout)
    assert finding["code"] == "CL999" and (finding["location"]["row"], finding["location"]["column"]) == (2, 7)


def test_a_huge_line_is_never_printed_whole(tmp_path):
    (tmp_path / "minified.py").write_text('x = 1\ny = "' + "a" * 200_000 + " +\n")
    out = run(tmp_path, "check", "--no-cache", "minified.py")
    assert out.returncode == 1 and "CL999" in out.stdout
    assert max(len(line) for line in out.stdout.splitlines()) < 600
    [finding] = json.loads(run(tmp_path, "check", "--no-cache", "--output-format", "json", "minified.py").stdout)
    assert finding["location"]["row"] == 2 and len(finding["message"]) <= 220


def test_a_file_over_the_limit_is_skipped_by_its_size(tmp_path):
    from cachelint.check.engine import MAX_FILE_BYTES

    big = tmp_path / "generated.py"
    with big.open("wb") as fh:  # sparse: its size says it is too large without writing it
        fh.truncate(MAX_FILE_BYTES + 1)
    (tmp_path / "bad.py").write_text(BAD)
    out = run(tmp_path, "check", "--no-cache", "--output-format", "json", ".")
    findings = json.loads(out.stdout)
    skipped = [f for f in findings if f["filename"].endswith("generated.py")]
    assert [f["code"] for f in skipped] == ["CL999"] and "skipped" in skipped[0]["message"] and "too large" in skipped[0]["message"]
    assert {f["code"] for f in findings if f["filename"].endswith("bad.py")} == {"CL101", "CL102"}


def test_fix_keeps_mode_and_bom_and_writes_atomically(tmp_path):
    path = tmp_path / "app.py"
    path.write_bytes(b"\xef\xbb\xbf" + FIXABLE.encode())
    os.chmod(path, 0o640)
    out = run(tmp_path, "check", "--no-cache", "--fix", "app.py")
    data = path.read_bytes()
    assert b"sort_keys=True" in data, out.stdout + out.stderr
    assert data.startswith(b"\xef\xbb\xbf") and data.count(b"\xef\xbb\xbf") == 1
    assert stat.S_IMODE(path.stat().st_mode) == 0o640
    assert sorted(p.name for p in tmp_path.iterdir()) == ["app.py"]  # no temporary file left behind


def test_one_read_only_file_does_not_stop_the_fixes(tmp_path):
    locked, other = tmp_path / "a_locked.py", tmp_path / "b_other.py"
    locked.write_text(FIXABLE)
    other.write_text(FIXABLE)
    os.chmod(locked, 0o444)
    try:
        out = run(tmp_path, "check", "--no-cache", "--fix", ".")
    finally:
        os.chmod(locked, 0o644)
    assert locked.read_text() == FIXABLE
    assert "sort_keys=True" in other.read_text()
    assert "a_locked.py: fixes not written: the file is read-only" in out.stderr
    assert "Traceback" not in out.stderr and out.returncode == 1
    assert "a_locked.py" in out.stdout and "CL102" in out.stdout  # its findings are still reported


def test_a_deeply_nested_config_is_one_clear_line(tmp_path):
    (tmp_path / "pyproject.toml").write_text("[tool.cachelint]\nx = " + "[" * 2000 + "]" * 2000 + "\n")
    (tmp_path / "app.py").write_text("x = 1\n")
    out = run(tmp_path, "check", "--no-cache", ".")
    assert out.returncode == 2
    assert out.stderr.strip().splitlines() == [f"cachelint: error: {tmp_path / 'pyproject.toml'}: invalid TOML: nested too deeply to read"]


def test_statistics_counts_findings_per_rule(tmp_path):
    (tmp_path / "bad.py").write_text(BAD)
    (tmp_path / "bad2.py").write_text(BAD)
    out = run(tmp_path, "check", "--no-cache", "--statistics", ".")
    assert out.returncode == 1
    lines = [line.split("\t") for line in out.stdout.splitlines()]
    assert [(n, code) for n, code, _ in lines] == [("2", "CL101"), ("2", "CL102")]
    assert lines[1][2] == "[*] unsorted-json-in-prefix"
    data = json.loads(run(tmp_path, "check", "--no-cache", "--statistics", "--output-format", "json", ".").stdout)
    assert [(d["code"], d["count"], d["fixable"]) for d in data] == [("CL101", 2, False), ("CL102", 2, True)]


def test_no_progress_bar_when_piped(tmp_path):
    for i in range(210):  # long enough for a bar on a terminal
        (tmp_path / f"m{i}.py").write_text("x = 1\n")
    out = run(tmp_path, "check", "--no-cache", ".")
    assert out.returncode == 0 and out.stderr == ""


@pytest.mark.skipif(not hasattr(os, "openpty"), reason="needs a pseudo-terminal")
def test_progress_bar_on_a_terminal(tmp_path):
    import pty

    for i in range(210):
        (tmp_path / f"m{i}.py").write_text("x = 1\n")
    main, child = pty.openpty()
    env = {k: v for k, v in os.environ.items() if k != "GITHUB_ACTIONS"} | {"TERM": "xterm", "COLUMNS": "100"}
    proc = subprocess.run([sys.executable, "-m", "cachelint", "check", "--no-cache", "-j", "1", "."], cwd=tmp_path,
                          stdout=subprocess.PIPE, stderr=child, env=env, timeout=120)
    os.close(child)
    seen = b""
    while True:
        try:
            chunk = os.read(main, 65536)
        except OSError:
            break
        if not chunk:
            break
        seen += chunk
    os.close(main)
    assert proc.returncode == 0 and b"All checks passed!" in proc.stdout
    assert b"checking" in seen and b"/210" in seen


def test_rule_accepts_a_name_and_knows_cl999(tmp_path):
    by_name = run(tmp_path, "rule", "volatile-value-in-prefix")
    assert by_name.returncode == 0 and by_name.stdout == run(tmp_path, "rule", "CL101").stdout
    cl999 = run(tmp_path, "rule", "cl999")
    assert cl999.returncode == 0 and cl999.stdout.startswith("## CL999 unanalyzable-file") and "### What it does" in cl999.stdout
    everything = run(tmp_path, "rule", "--all", "--format", "json")
    assert [r["code"] for r in json.loads(everything.stdout)][-1] == "CL999"
    assert "## CL999 unanalyzable-file" in run(tmp_path, "rule", "--all").stdout
    unknown = run(tmp_path, "rule", "no-such-rule")
    assert unknown.returncode == 2 and unknown.stderr.startswith("cachelint: error: unknown rule")


@pytest.mark.skipif(not hasattr(os, "openpty"), reason="needs a pseudo-terminal")
def test_rule_renders_markdown_on_a_terminal(tmp_path):
    import pty

    import select

    main, child = pty.openpty()
    env = dict(os.environ) | {"TERM": "xterm", "COLUMNS": "100"}
    proc = subprocess.Popen([sys.executable, "-m", "cachelint", "rule", "CL301"], stdout=child, stderr=subprocess.DEVNULL, env=env)
    os.close(child)
    seen = b""
    # read while it writes: a terminal holds only so much, and a writer nobody reads from waits for ever
    for _ in range(600):  # at most about 10 minutes on a very busy machine
        if not select.select([main], [], [], 1.0)[0]:
            if proc.poll() is not None:
                break
            continue
        try:
            chunk = os.read(main, 65536)
        except OSError:  # the other side is closed: everything has been read
            break
        if not chunk:
            break
        seen += chunk
    os.close(main)
    text = seen.decode("utf-8", "replace")
    assert proc.wait(timeout=60) == 0 and "CL301 rewritten-history" in text
    assert "## CL301" not in text and "```" not in text  # rendered, not the Markdown source
    assert "\x1b[" in text  # styled for the terminal


def test_one_problem_in_one_statement_is_one_finding(tmp_path):
    """A history cut found both through the request it feeds (certain) and from its shape alone (likely) is reported
    once, as certain; two arguments of one call that each change stay two findings."""
    (tmp_path / "bot.py").write_text('''import anthropic

client = anthropic.Anthropic()


def run(first: str, failures: int) -> None:
    messages = [{"role": "user", "content": first}]
    for turn in range(20):
        if len(messages) > 12:
            messages = messages[-12:]
        client.messages.create(
            model="claude-opus-4-1" if turn > 10 else "claude-sonnet-4-5",
            max_tokens=100,
            tool_choice={"type": "any"} if turn > 3 else {"type": "auto"},
            tools=[{"name": "t", "description": "d", "input_schema": {"type": "object"}}],
            messages=messages,
        )
''')
    out = run(tmp_path, "check", "--no-cache", "--output-format", "json", "bot.py")
    found = [(f["code"], f["location"]["row"], f.get("confidence")) for f in json.loads(out.stdout)]
    assert [f for f in found if f[0] == "CL301"] == [("CL301", 10, "certain")], found
    assert sorted(row for code, row, _ in found if code == "CL401") == [12, 14], found


def test_the_editors_store_setting_is_a_configuration_key_check_accepts(tmp_path):
    (tmp_path / "pyproject.toml").write_text('[tool.cachelint]\nstore = "~/.local/share/cachelint/cachelint.db"\n')
    (tmp_path / "app.py").write_text("x = 1\n")
    assert run(tmp_path, "check", "--no-cache", "app.py").returncode == 0
    (tmp_path / "pyproject.toml").write_text("[tool.cachelint]\nstore = 3\n")
    bad = run(tmp_path, "check", "--no-cache", "app.py")
    assert bad.returncode == 2 and "store" in bad.stderr and "non-empty string" in bad.stderr
