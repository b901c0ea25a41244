"""Fuzz tests: the linter, the request adapters, the diff, the SSE parser, usage, suppressions and fixes
never crash on what users (or their traffic) can feed them, and keep their invariants.

The number of examples scales with CACHELINT_FUZZ_EXAMPLES (default 100, the unit every test's weight
multiplies); the whole file runs in about a minute at the default on two cores.

Crashes found by fuzzing that are not fixed yet are documented by the strict xfail tests at the end of
each section, each with a minimal reproducer. The property tests skip exactly those crashes (by exception
type and the cachelint function that raises) through `KNOWN_CRASHES`, so that they keep hunting for new
ones; when a bug is fixed, its xfail turns into an XPASS failure: remove the marker and its entry there.
"""

from __future__ import annotations

import copy
import io
import json
import os
import re
import subprocess
import sys
import tokenize
import traceback
import warnings
from pathlib import Path

import libcst as cst
import pytest
from hypothesis import HealthCheck, event, given, reject, settings
from hypothesis import strategies as st

import strategies as gen
from test_check_cli import JSONB_STORE
from cachelint.check import suppress
from cachelint.check.engine import ALL_CODES, MAX_FILE_BYTES, lint_file, lint_source
from cachelint.check.finding import Edit, Finding
from cachelint.check.fixes import apply_edits, fixable
from cachelint.check.run import fix_source
from cachelint.diff import explain
from cachelint.diff.explain import CAUSES
from cachelint.errors import CachelintError
from cachelint.prompt import Exchange, Prompt, build_prompt
from cachelint.prompt.pointer import resolve
from cachelint.prompt.usage import StreamUsage, Usage, from_response_body
from cachelint.rules import RULE_META
from cachelint.sse import Event, SSEParser, parse_events
from cachelint.tokens import counter_for

REPO = Path(__file__).resolve().parent.parent
SCALE = int(os.environ.get("CACHELINT_FUZZ_EXAMPLES", "100"))


def fuzz(weight: float) -> settings:
    """Settings for a test worth `weight` x CACHELINT_FUZZ_EXAMPLES examples."""
    return settings(
        max_examples=max(1, int(SCALE * weight)),
        deadline=None,
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.filter_too_much,
                               HealthCheck.large_base_example],
    )


# (exception type, file, function of the innermost cachelint frame) of crashes documented by an xfail below.
KNOWN_CRASHES: set[tuple[str, str, str]] = set()  # all fixed; add a signature here with its xfail when one is found


def crash_signature(exc: BaseException) -> tuple[str, str, str]:
    frames = [f for f in traceback.extract_tb(exc.__traceback__) if "/cachelint/" in f.filename or "/rules/" in f.filename]
    last = frames[-1] if frames else None
    return (type(exc).__name__, Path(last.filename).name if last else "?", last.name if last else "?")


def reject_if_known(exc: BaseException) -> None:
    """Skip this example if it hits a crash that is already documented by an xfail; else let it fail."""
    if crash_signature(exc) in KNOWN_CRASHES:
        event(f"known crash {crash_signature(exc)}")
        reject()


def run_cachelint(*args: str, cwd: Path, stdin: bytes | None = None, timeout: float = 120) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k not in ("GITHUB_ACTIONS", "CACHELINT_DEBUG")}
    return subprocess.run([sys.executable, "-m", "cachelint", *args], cwd=cwd, capture_output=True, input=stdin,
                          env=env, timeout=timeout)


def run_python(code: str, stdin: bytes | None = None, timeout: float = 60) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, input=stdin, timeout=timeout)


# ==========================================================================================================
# 1. lint_source never raises
# ==========================================================================================================

def lint(source: str | bytes, filename: str = "fuzz.py") -> list[Finding]:
    try:
        return lint_source(source, filename)
    except Exception as exc:
        reject_if_known(exc)
        raise


def check_findings(findings: list[Finding], filename: str = "fuzz.py") -> None:
    assert isinstance(findings, list)
    for f in findings:
        assert isinstance(f, Finding)
        assert f.code in RULE_META and f.name == RULE_META[f.code].name
        assert f.severity in ("error", "warning")
        assert f.filename == filename
        assert f.row >= 1 and f.column >= 1 and (f.end_row, f.end_column) >= (f.row, f.column)
        assert f.message
        json.dumps(f.to_json())
    if any(f.code == "CL999" for f in findings):
        assert len(findings) == 1, findings


def libcst_problem(text: str) -> str | None:
    try:
        cst.parse_module(text)
    except cst.ParserSyntaxError:
        return "syntax error"
    return None


def bracket_depth(text: str) -> int | None:
    """The deepest nesting of real brackets (not those in strings or comments); None if it cannot tokenize."""
    depth = deepest = 0
    try:
        for tok in tokenize.generate_tokens(io.StringIO(text).readline):
            if tok.type == tokenize.OP and tok.string in "([{":
                depth += 1
                deepest = max(deepest, depth)
            elif tok.type == tokenize.OP and tok.string in ")]}":
                depth -= 1
    except (tokenize.TokenError, SyntaxError):
        return None
    return deepest


def allowed_cl999(text: str, message: str) -> bool:
    """CL999 messages a file libcst can parse may still get."""
    if message == "file is too deeply nested to analyze":
        return True
    if message.startswith("file is nested more than"):
        depth = bracket_depth(text)
        if depth is None or depth > 200:
            return True
        # Known (test_brackets_in_strings_do_not_make_a_file_unanalyzable): the pre-check counts brackets in
        # strings and comments too.
        event("known: brackets in strings counted as nesting")
        reject()
    return False


def check_lint_of_text(text: str, findings: list[Finding]) -> None:
    """A source libcst cannot parse is one CL999 that says so; one it parses is analyzed (or is too deep)."""
    check_findings(findings)
    problem = "NUL bytes" if "\x00" in text else libcst_problem(text)
    cl999 = [f.message for f in findings if f.code == "CL999"]
    if problem is not None:
        assert len(cl999) == 1 and (problem in cl999[0] or cl999[0].startswith("file is nested more than")), (problem, findings)
    else:
        assert all(allowed_cl999(text, m) for m in cl999), findings


@fuzz(0.6)
@given(gen.python_programs())
def test_lint_generated_programs(source):
    findings = lint(source)
    event("CL999" if any(f.code == "CL999" for f in findings) else f"{len(findings)} findings")
    check_lint_of_text(source, findings)


@fuzz(0.6)
@given(gen.mutated_rule_examples())
def test_lint_mutated_rule_examples(source):
    check_lint_of_text(source, lint(source))


@fuzz(0.2)
@given(gen.deeply_nested_programs())
def test_lint_deeply_nested_expressions(source):
    check_lint_of_text(source, lint(source))


@fuzz(0.15)
@given(st.data())
def test_lint_huge_literals(data):
    literal = data.draw(gen.huge_literals())
    where = data.draw(st.sampled_from(["system={x}", "messages=[{{'role': 'user', 'content': {x}}}, {{'role': 'user', 'content': q}}]",
                                       "model={x}", "tools=[{{'name': {x}}}]", "max_tokens={x}"]))
    source = ("import anthropic, datetime\nclient = anthropic.Anthropic()\nBIG = " + literal + "\n"
              "def ask(q):\n    return client.messages.create(" + where.format(x=data.draw(st.sampled_from([literal, "BIG", "f'{BIG}{datetime.datetime.now()}'"]))) +
              ", messages=[{'role': 'user', 'content': q}])\n")
    check_lint_of_text(source, lint(source))


def expected_bytes_problem(data: bytes) -> str | None:
    if len(data) > MAX_FILE_BYTES:
        return "too large"
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError:
        return "not valid UTF-8"
    if "\x00" in text:
        return "NUL bytes"
    return libcst_problem(text)


def check_lint_of_bytes(data: bytes, findings: list[Finding]) -> None:
    check_findings(findings)
    problem = expected_bytes_problem(data)
    cl999 = [f.message for f in findings if f.code == "CL999"]
    if problem is not None:
        assert len(cl999) == 1 and (problem in cl999[0] or cl999[0].startswith("file is nested more than")), (problem, findings)
    else:
        assert all(allowed_cl999(data.decode("utf-8-sig"), m) for m in cl999), findings


@fuzz(1.0)
@given(st.one_of(
    st.binary(max_size=400),
    st.tuples(gen.python_programs(max_leaves=4), st.binary(max_size=6), st.integers(0, 10**6)).map(
        lambda t: (lambda raw, at: raw[:at] + t[1] + raw[at:])(t[0].encode("utf-8"), t[2] % (len(t[0].encode("utf-8")) + 1))),
    st.sampled_from([b"", b"\xef\xbb\xbf", b"\xef\xbb\xbf\xef\xbb\xbf", b"\xff\xfe", b"\xfe\xff", b"\x00", b"\r", b"\r\n\r\n",
                     b"\\\n", b"\x0c", b"#\x00", b"x = '\xed\xa0\x80'\n", b"\xc0\xaf", b"import openai\x00\n"]),
))
def test_lint_arbitrary_bytes(data):
    check_lint_of_bytes(data, lint(data))


ENCODINGS = ["utf-8", "utf-8-sig", "latin-1", "cp1252", "utf-16", "utf-16-le", "utf-16-be", "utf-32", "shift_jis", "koi8-r"]


@fuzz(0.4)
@given(gen.python_programs(max_leaves=4), st.sampled_from(ENCODINGS), st.booleans(), st.sampled_from(["é", "ü", "Ж", "ß", "€", "日本"]))
def test_lint_files_in_other_encodings(source, encoding, cookie, word):
    text = (f"# -*- coding: {encoding} -*-\n" if cookie else "") + source + f"NAME = {word!r}\n"
    data = text.encode(encoding, errors="replace")
    findings = lint(data)
    check_lint_of_bytes(data, findings)
    if encoding in ("utf-8", "utf-8-sig"):
        assert findings == lint(text)  # a BOM changes nothing


def _break(source: str, how: str, at: int, junk: str) -> str:
    at %= len(source) + 1
    if how == "truncate":
        return source[:at]
    if how == "delete":
        return source[:at] + source[at + 1 + len(junk):]
    if how == "insert":
        return source[:at] + junk + source[at:]
    if how == "dedent":
        lines = source.split("\n")
        i = at % len(lines)
        lines[i] = "   " + lines[i]
        return "\n".join(lines)
    return source + "\n" + junk  # append


@fuzz(1.0)
@given(gen.python_programs(max_leaves=4), st.sampled_from(["truncate", "delete", "insert", "dedent", "append"]), st.integers(0, 10**6),
       st.one_of(st.sampled_from(["(", ")", "[", "]", "{", "}", ":", "'", '"', '"""', "\\", "def", "lambda", "f'{", "@", "=", " ", "\t",
                                  "\n    ", "!", "$", "?", "`", "\x0c", "\r", "print 'x'", "0777", "1__0", "match x:", "async", "*", "**"]),
                 st.text(max_size=8)))
def test_lint_syntax_errors(source, how, at, junk):
    broken = _break(source, how, at, junk)
    check_lint_of_text(broken, lint(broken))


@pytest.fixture(scope="module")
def ten_megabytes() -> bytes:
    good = (REPO / "rules" / "cl101_volatile_value_in_prefix.py").read_bytes()
    filler = b"# " + b"x" * 98 + b"\n"
    return good + filler * (10 * 1024 * 1024 // len(filler))


def test_lint_ten_megabyte_file(tmp_path, ten_megabytes):
    path = tmp_path / "big.py"
    path.write_bytes(ten_megabytes)
    for findings in (lint_file(path, "big.py", ALL_CODES, None), lint_source(ten_megabytes, "big.py")):
        assert [f.code for f in findings] == ["CL999"]
        assert "too large" in findings[0].message and f"{len(ten_megabytes):,} bytes" in findings[0].message


# a guide of unknown length ahead of the clock: a prefix that can be cached (a short one could not, and is quiet)
GOOD_VOLATILE = '''import anthropic, datetime
client = anthropic.Anthropic()
GUIDE = open("guide.md").read()
def ask(q):
    return client.messages.create(model="claude-sonnet-4-5", max_tokens=100,
        system=f"{GUIDE} Now: {datetime.datetime.now().isoformat()}",
        messages=[{"role": "user", "content": q}])
'''
GOOD_JSON = '''import json
from openai import OpenAI
client = OpenAI()
def ask(profile, q):
    return client.chat.completions.create(model="gpt-4o", messages=[
        {"role": "system", "content": "Profile: " + json.dumps(dict(profile))},
        {"role": "user", "content": q}])
''' + JSONB_STORE  # sessions kept in jsonb: CL102 applies
CLEAN = '''import anthropic
client = anthropic.Anthropic()
def ask(q):
    return client.messages.create(model="claude-sonnet-4-5", max_tokens=100, system="Be brief.",
                                  messages=[{"role": "user", "content": q}])
'''


def mixed_tree(root: Path, ten_megabytes: bytes) -> dict[str, tuple[bytes, str | None]]:
    """file name -> (bytes, the CL999 problem it must report, or None for a good file)."""
    files = {
        "good_volatile.py": (GOOD_VOLATILE.encode(), None),
        "good_json.py": (GOOD_JSON.encode(), None),
        "good_bom.py": (b"\xef\xbb\xbf" + GOOD_VOLATILE.encode(), None),
        "good_crlf.py": (GOOD_JSON.replace("\n", "\r\n").encode(), None),
        "good_cr.py": (GOOD_VOLATILE.replace("\n", "\r").encode(), None),
        "clean.py": (CLEAN.encode(), None),
        "empty.py": (b"", None),
        "syntax.py": (GOOD_VOLATILE.replace("def ask(q):", "def ask(q:").encode(), "syntax error"),
        "latin1.py": (("# -*- coding: latin-1 -*-\nNAME = 'é'\n" + GOOD_VOLATILE).encode("latin-1"), "not valid UTF-8"),
        "utf16.py": (GOOD_VOLATILE.encode("utf-16"), "not valid UTF-8"),
        "utf16le.py": (("# coding: utf-16-le\n" + GOOD_VOLATILE).encode("utf-16-le"), "NUL bytes"),
        "nul.py": (GOOD_VOLATILE.encode().replace(b"max_tokens", b"max\x00tokens"), "NUL bytes"),
        "binary.py": (bytes(range(256)), "not valid UTF-8"),
        "big.py": (ten_megabytes, "too large"),
    }
    for name, (data, _) in files.items():
        (root / name).write_bytes(data)
    return files


@pytest.mark.parametrize("jobs", ["1", "2"])
def test_check_cli_on_a_tree_of_broken_and_good_files(tmp_path, ten_megabytes, jobs):
    (tmp_path / "pyproject.toml").write_text("[project]\nname = 'app'\n")
    (tmp_path / "src").mkdir()
    files = mixed_tree(tmp_path / "src", ten_megabytes)
    proc = run_cachelint("check", "--no-cache", "--jobs", jobs, "--output-format", "json", "src", cwd=tmp_path)
    stderr = proc.stderr.decode("utf-8", "replace")
    assert "Traceback" not in stderr and "internal error" not in stderr, stderr
    assert proc.returncode == 1, (proc.returncode, stderr)
    findings = [Finding.from_json(f) for f in json.loads(proc.stdout)]
    by_file: dict[str, list[Finding]] = {}
    for f in findings:
        by_file.setdefault(Path(f.filename).name, []).append(f)
    for name, (data, problem) in files.items():
        got = by_file.get(name, [])
        if problem is None:
            expected = lint_source(data, name)
            assert [(f.code, f.row, f.column) for f in got] == [(f.code, f.row, f.column) for f in expected], name
        else:
            assert [f.code for f in got] == ["CL999"] and problem in got[0].message, (name, got)
    assert {f.code for f in by_file["good_volatile.py"]} == {"CL101"}
    assert {f.code for f in by_file["good_bom.py"]} == {"CL101"}
    assert {f.code for f in by_file["good_json.py"]} == {"CL102"}
    assert "clean.py" not in by_file and "empty.py" not in by_file


# --- crashes found in the linter ----------------------------------------------------------------------------

@pytest.mark.parametrize("source", [
    'import anthropic\nc = anthropic.Anthropic()\nc.messages.create(model="\\x4", messages=[])\n',
    'import anthropic\nc = anthropic.Anthropic()\nc.messages.create(model="m", system="\\N{NOT A NAME}", messages=[])\n',
    'import openai\nc = openai.OpenAI()\nc.chat.completions.create(model="m", messages=[{"role": "\\u12", "content": "x"}])\n',
], ids=["model-CL504", "system-CL104", "role-CL101"])
def test_lint_invalid_escape_in_a_string_literal(source):
    findings = lint_source(source, "esc.py")
    check_findings(findings, "esc.py")


def test_check_cli_goes_on_after_a_file_with_an_invalid_escape(tmp_path):
    (tmp_path / "good.py").write_text(GOOD_VOLATILE)
    (tmp_path / "esc.py").write_text('import anthropic\nc = anthropic.Anthropic()\nc.messages.create(model="\\x4", messages=[])\n')
    proc = run_cachelint("check", "--no-cache", "--output-format", "concise", ".", cwd=tmp_path)
    assert proc.returncode == 1 and b"good.py" in proc.stdout and b"internal error" not in proc.stderr, proc


@pytest.mark.parametrize("source", ['x = "\udce9"\n', 'import openai\n# \ud83d\n'])
def test_lint_str_source_with_a_lone_surrogate(source):
    assert [f.code for f in lint_source(source, "s.py")] == ["CL999"]


def test_check_stdin_that_is_not_utf8(tmp_path):
    proc = run_cachelint("check", "--no-cache", "--stdin-filename", "l1.py", cwd=tmp_path, stdin=b'x = "\xe9"\n')
    assert proc.returncode == 1 and b"CL999" in proc.stdout and b"internal error" not in proc.stderr, proc


@pytest.mark.parametrize("opener, closer", [("(", ")"), ("[", "]"), ("f(", ")")])
def test_lint_very_deep_nesting_does_not_kill_the_process(opener, closer):
    source = "s = " + opener * 3000 + closer * 3000 + "\n"
    proc = run_python("import sys\nfrom cachelint.check.engine import lint_source\n"
                      "print([f.code for f in lint_source(sys.stdin.read(), 'deep.py')])", stdin=source.encode())
    assert proc.returncode == 0 and b"CL999" in proc.stdout, (proc.returncode, proc.stderr[-300:])


def test_lint_str_over_the_size_limit_answers_at_once():
    try:
        proc = run_python("from cachelint.check.engine import lint_source\n"
                          "print([f.message for f in lint_source('x = 1\\n' * 1_750_000, 'big.py')])", timeout=4)
    except subprocess.TimeoutExpired:
        pytest.fail("lint_source on a 10 MB str took more than 4 s")
    assert b"too large" in proc.stdout


@pytest.mark.parametrize("line", ['ART = "' + "(" * 300 + '"', "PATTERN = r'" + "[" * 201 + "'", "# " + "{" * 250],
                         ids=["string", "raw-string", "comment"])
def test_brackets_in_strings_do_not_make_a_file_unanalyzable(line):
    source = GOOD_VOLATILE + line + "\n"
    assert python_compiles(source)
    assert [f.code for f in lint_source(source, "s.py")] == ["CL101"]


# ==========================================================================================================
# 2. Request adapters and the diff
# ==========================================================================================================

PATHS = [None, "/v1/messages", "/v1/messages?beta=true", "/v1/messages/count_tokens", "/v1/chat/completions",
         "/v1/responses", "/openai/deployments/x/chat/completions?api-version=1", "/v1/other"]


def build(body: dict, path: str | None = None, headers: dict | None = None) -> Prompt:
    try:
        return build_prompt(Exchange(body, path=path, headers=headers))
    except CachelintError:
        raise
    except Exception as exc:
        reject_if_known(exc)
        raise


@fuzz(2.0)
@given(gen.corrupted_bodies(), st.sampled_from(PATHS),
       st.one_of(st.none(), st.dictionaries(st.sampled_from(["anthropic-beta", "Anthropic-Beta", "x"]), st.text(max_size=20), max_size=2)))
def test_build_prompt_returns_a_prompt_or_a_cachelint_error(body, path, headers):
    try:
        prompt = build(body, path, headers)
    except CachelintError as exc:
        assert str(exc)
        event("CachelintError")
        return
    event(f"Prompt {prompt.provider}")
    assert isinstance(prompt, Prompt)
    assert prompt.provider in ("anthropic", "openai-chat", "openai-responses")
    for block in prompt.blocks:
        assert block.tokens >= 0
        resolve(body, block.pointer)  # every block points back into the body
    json.dumps(prompt.params, ensure_ascii=False)


def valid_body(kind: str) -> st.SearchStrategy[dict]:
    return gen.BODIES[kind]()


def new_message(kind: str, text: str) -> dict:
    if kind == "openai-responses":
        return {"role": "user", "content": [{"type": "input_text", "text": text}]}
    return {"role": "user", "content": text}


def conversation_key(body: dict) -> str:
    return "input" if "messages" not in body else "messages"


def diff(before: dict, after: dict):
    b, a = build(before), build(after)
    return explain(b, a, counter_for(a.provider, a.model)), b, a


def check_break(brk, b: Prompt, a: Prompt, before: dict, after: dict) -> None:
    assert brk.cause in CAUSES
    assert brk.before_prompt_tokens == b.prompt_tokens and brk.after_prompt_tokens == a.prompt_tokens
    assert 0 <= brk.reprefilled_tokens <= min(b.prompt_tokens, a.prompt_tokens)
    assert 0 <= brk.common_prefix_tokens <= min(b.prompt_tokens, a.prompt_tokens)
    if brk.pointer is not None:
        try:
            target = resolve(after, brk.pointer)
        except (KeyError, IndexError) as exc:
            # Known (test_diff_pointer_of_a_removed_part_resolves_in_after): when the divergence is a removal
            # (a message or tool cut at the end, a parameter or the model dropped) the pointer names the
            # place in BEFORE. Anything else is a new bug.
            try:
                target = resolve(before, brk.pointer)
            except (KeyError, IndexError):
                raise AssertionError(f"{brk.cause}/{brk.detail}: pointer {brk.pointer!r} resolves in neither body: {exc!r}") from None
            event("pointer into BEFORE (known)")
        if brk.char is not None:
            assert isinstance(target, str) and 0 <= brk.char <= len(target), (brk.pointer, brk.char, target)
    assert brk.rule is None or brk.rule in RULE_META
    json.dumps(brk.to_json(), ensure_ascii=False)


@fuzz(0.6)
@given(st.sampled_from(sorted(gen.BODIES)).flatmap(valid_body))
def test_diff_of_a_body_with_itself_is_no_break(body):
    try:
        brk, b, a = diff(body, copy.deepcopy(body))
    except CachelintError:
        reject()
    assert brk.cause == "none", brk
    assert brk.reprefilled_tokens == 0 and brk.common_prefix_tokens == b.prompt_tokens
    check_break(brk, b, a, body, body)


@fuzz(0.6)
@given(st.sampled_from(sorted(gen.BODIES)).flatmap(lambda k: st.tuples(st.just(k), valid_body(k))), st.lists(st.text(max_size=40), min_size=1, max_size=3))
def test_diff_appending_messages_is_no_break(kind_body, texts):
    kind, body = kind_body
    key = conversation_key(body)
    if not isinstance(body.get(key), list):
        reject()
    after = copy.deepcopy(body)
    after[key] += [new_message(kind, t) for t in texts]
    try:
        brk, b, a = diff(body, after)
    except CachelintError:
        reject()
    assert brk.cause == "none", brk
    assert brk.common_prefix_tokens == b.prompt_tokens
    check_break(brk, b, a, body, after)


@st.composite
def mutated(draw, body: dict) -> dict:
    """`body` changed in place, keeping the types: a string edited, a list element removed, duplicated or
    moved, a key removed, the model changed, messages appended."""
    for _ in range(draw(st.integers(1, 3))):
        places = gen.paths(body)
        how = draw(st.sampled_from(["string", "remove", "duplicate", "swap", "drop_key", "model", "append", "param"]))
        if how == "string":
            strings = [p for p in places if isinstance(resolve_path(body, p), str)]
            if strings:
                p = draw(st.sampled_from(strings))
                old = resolve_path(body, p)
                new = draw(st.one_of(st.text(max_size=30), st.just(old + "x"), st.just(old[:-1]), st.just(" " + old), st.just(old.replace("1", "2"))))
                body = gen.replaced(body, p, new)
        elif how in ("remove", "duplicate", "swap"):
            lists = [p for p in places if isinstance(resolve_path(body, p), list) and resolve_path(body, p)]
            if lists:
                p = draw(st.sampled_from(lists))
                items = list(resolve_path(body, p))
                i, j = draw(st.integers(0, len(items) - 1)), draw(st.integers(0, len(items) - 1))
                if how == "remove":
                    del items[i]
                elif how == "duplicate":
                    items.insert(j, copy.deepcopy(items[i]))
                else:
                    items[i], items[j] = items[j], items[i]
                body = gen.replaced(body, p, items)
        elif how == "drop_key":
            dicts = [p for p in places if isinstance(resolve_path(body, p), dict) and resolve_path(body, p)]
            if dicts:  # a body whose only object is the (never dropped) top level has none
                p = draw(st.sampled_from(dicts))
                d = dict(resolve_path(body, p))
                del d[draw(st.sampled_from(sorted(d, key=str)))]
                body = gen.replaced(body, p, d)
        elif how == "model":
            body = {**body, "model": draw(st.sampled_from(["claude-sonnet-4-5", "claude-opus-4-1", "gpt-4o", "gpt-5", "o3", "x"]))}
        elif how == "param":
            key = draw(st.sampled_from(["tool_choice", "thinking", "reasoning_effort", "prompt_cache_key", "reasoning", "max_tokens", "temperature", "speed"]))
            body = {**body, key: draw(st.sampled_from([{"type": "auto"}, "high", "k1", {"effort": "low"}, 5, 0.5, "fast"]))}
        else:
            key = conversation_key(body)
            if isinstance(body.get(key), list):
                body = {**body, key: body[key] + [{"role": "user", "content": draw(st.text(max_size=20))}]}
    return body


def resolve_path(value, path: tuple):
    for p in path:
        value = value[p]
    return value


@fuzz(2.0)
@given(st.sampled_from(sorted(gen.BODIES)).flatmap(valid_body).flatmap(lambda b: st.tuples(st.just(b), mutated(b))), st.booleans())
def test_diff_invariants_after_a_change(pair, reverse):
    before, after = pair if not reverse else pair[::-1]
    try:
        brk, b, a = diff(before, after)
    except CachelintError:
        reject()
    event(f"{brk.cause}/{brk.detail}")
    check_break(brk, b, a, before, after)
    if before == after:
        assert brk.cause == "none"


# --- crashes found in the adapters --------------------------------------------------------------------------

def _reorder_one_dict(value, n):
    """The same JSON with the keys of its n-th object (in document order) reversed: other bytes, equal in Python."""
    count = [0]

    def walk(v):
        if isinstance(v, dict):
            count[0] += 1
            items = [(k, walk(x)) for k, x in v.items()]
            return dict(reversed(items)) if count[0] == n + 1 else dict(items)
        if isinstance(v, list):
            return [walk(x) for x in v]
        return v

    return walk(value)


def _block_facts(prompt):
    return [(b.section, b.kind, b.pointer, b.text, b.role, b.message, b.shape, b.cache_control, b.tokens, b.digest) for b in prompt.blocks]


@fuzz(2.0)
@given(st.data(), st.sampled_from(["anthropic", "openai-chat"]))
def test_a_prompt_built_on_the_previous_one_equals_one_built_from_scratch(data, kind):
    """Reusing the previous request's blocks is an optimisation only: appended turns, edited or reordered values
    (keys in another order, 1 -> 1.0 -> true), or an unrelated request all give exactly the blocks of a fresh build."""
    bodies = gen.anthropic_bodies() if kind == "anthropic" else gen.openai_chat_bodies()
    first = data.draw(bodies)
    change = data.draw(st.sampled_from(["append", "reorder", "retype", "unrelated"]))
    if change == "unrelated":
        second = data.draw(bodies)
    else:
        second = copy.deepcopy(first)
        second["messages"] = second["messages"] + data.draw(bodies)["messages"]
        if change == "reorder":
            second = _reorder_one_dict(second, data.draw(st.integers(0, 20)))
        elif change == "retype" and first["messages"]:
            second["messages"][0] = {**second["messages"][0], "n": data.draw(st.sampled_from([1, 1.0, True, 0.0, -0.0]))}
            first["messages"][0] = {**first["messages"][0], "n": 1}
    try:
        previous = build_prompt(Exchange(first))
        fresh = build_prompt(Exchange(second))
    except CachelintError:
        return
    assert _block_facts(build_prompt(Exchange(second), previous=previous)) == _block_facts(fresh)


@pytest.mark.parametrize("body", [
    {"messages": 5},
    {"messages": [{"role": [], "content": "x"}]},
    {"messages": [{"role": "user", "content": [{"type": {}}]}]},
    {"model": "gpt-4o", "messages": [{"role": "assistant", "content": "x", "tool_calls": 1}]},
    {"input": [{"role": [], "content": "x"}]},
    {"model": "gpt-4o", "messages": [{"role": "assistant", "content": "", "tool_calls": {"": None}}]},
], ids=["messages-int", "role-list", "block-type-dict", "tool_calls-int", "responses-role-list", "tool_calls-dict"])
def test_build_prompt_known_crashes(body):
    """Each once escaped as another exception or gave a pointer that names nothing; now a CachelintError, or a
    prompt whose every block points back into the body."""
    try:
        prompt = build_prompt(Exchange(body))
    except CachelintError:
        return
    for block in prompt.blocks:
        resolve(body, block.pointer)


def test_read_json_with_a_huge_number(tmp_path):
    from cachelint.prompt.load import read_json

    path = tmp_path / "big.json"
    path.write_text('{"model": "gpt-4o", "messages": [], "n": ' + "1" * 5000 + "}")
    with pytest.raises(CachelintError):
        read_json(path)


@pytest.mark.parametrize("before, after", [
    ({"model": "gpt-4o", "messages": [{"role": "user", "content": "a"}, {"role": "assistant", "content": "b"}]},
     {"model": "gpt-4o", "messages": [{"role": "user", "content": "a"}]}),
    ({"model": "claude-sonnet-4-5", "messages": [], "tools": [{"name": "a"}, {"name": "b"}]},
     {"model": "claude-sonnet-4-5", "messages": [], "tools": [{"name": "a"}]}),
    ({"model": "claude-sonnet-4-5", "messages": [], "thinking": {"type": "disabled"}},
     {"model": "claude-sonnet-4-5", "messages": []}),
    ({"model": "gpt-5", "input": "x", "reasoning": {"effort": "high"}}, {"model": "gpt-5", "input": "x", "reasoning": {}}),
    ({"model": "gpt-4o", "messages": []}, {"messages": []}),
], ids=["message_removed", "tool_removed", "thinking-dropped", "reasoning.effort-dropped", "model-dropped"])
def test_diff_pointer_of_a_removed_part_resolves_in_after(before, after):
    """A removal points at the list or object in AFTER it was removed from; the exact place is before_pointer."""
    brk, _, _ = diff(before, after)
    assert brk.cause != "none" and brk.pointer is not None
    resolve(after, brk.pointer)
    removed = brk.extra["before_pointer"]
    resolve(before, removed)
    assert removed.startswith(brk.pointer + "/") or brk.pointer == ""


# ==========================================================================================================
# 3. The SSE parser and usage
# ==========================================================================================================

def feed_all(chunks: list[bytes]) -> list[Event]:
    parser = SSEParser()
    events: list[Event] = []
    for chunk in chunks:
        events += parser.feed(chunk)
    return events + parser.close()


@fuzz(0.8)
@given(gen.sse_events())
def test_sse_split_at_every_byte_boundary(stream):
    expected, data = stream
    whole = parse_events(data)
    assert whole == [Event(name, text) for name, text in expected]
    assert parse_events(data.decode("utf-8")) == whole
    for i in range(len(data) + 1):
        assert feed_all([data[:i], data[i:]]) == whole, i
    assert feed_all([data[i:i + 1] for i in range(len(data))]) == whole


@fuzz(1.5)
@given(st.one_of(
    gen.sse_events().map(lambda t: t[1]),
    st.binary(max_size=300),
    st.lists(st.sampled_from([b"data: x", b"data:", b"event: e", b":c", b"\r", b"\n", b"\r\n", b"data: \xe2\x82", b"\xac", b"id: 1", b" ", b"data"]), max_size=30).map(b"".join),
), st.lists(st.integers(0, 10**6), max_size=8))
def test_sse_split_at_random_boundaries(data, cuts):
    assert feed_all(gen.partitions(data, cuts)) == parse_events(data)


@fuzz(0.8)
@given(gen.anthropic_usage_streams(), st.lists(st.integers(0, 10**6), max_size=6))
def test_usage_of_an_anthropic_stream_equals_the_message(stream_body, cuts):
    stream, body = stream_body
    expected = from_response_body("anthropic", body)
    assert isinstance(expected, Usage)
    assert from_response_body("anthropic", stream) == expected
    assert from_response_body("anthropic", stream.encode("utf-8")) == expected
    assert from_response_body("anthropic", json.dumps(body)) == expected
    assert streamed_usage("anthropic", stream.encode("utf-8"), cuts) == expected  # the proxy's way, chunk by chunk
    u = body["usage"]
    read, write = u.get("cache_read_input_tokens"), u.get("cache_creation_input_tokens")
    assert expected.prompt_tokens == u["input_tokens"] + (read or 0) + (write or 0)


def streamed_usage(provider: str, data: bytes, cuts: list[int]) -> Usage | None:
    parser, usage = SSEParser(), StreamUsage(provider)
    for chunk in gen.partitions(data, cuts):
        for e in parser.feed(chunk):
            usage.add(e)
    for e in parser.close():
        usage.add(e)
    return usage.usage


@fuzz(0.5)
@given(gen.openai_chat_usage_streams(), st.lists(st.integers(0, 10**6), max_size=6))
def test_usage_of_an_openai_chat_stream_equals_the_completion(stream_body, cuts):
    stream, body = stream_body
    expected = from_response_body("openai-chat", body)
    assert isinstance(expected, Usage) and expected.prompt_tokens == body["usage"]["prompt_tokens"]
    assert from_response_body("openai-chat", stream) == expected
    assert streamed_usage("openai-chat", stream.encode("utf-8"), cuts) == expected


@fuzz(0.3)
@given(gen.openai_responses_usage_streams())
def test_usage_of_a_responses_stream_equals_the_response(stream_body):
    stream, body = stream_body
    expected = from_response_body("openai-responses", body)
    assert isinstance(expected, Usage)
    assert from_response_body("openai-responses", stream) == expected


@fuzz(2.0)
@given(gen.garbage_streams(), st.sampled_from(["anthropic", "openai-chat", "openai-responses"]))
def test_usage_of_garbage_streams_never_raises(stream, provider):
    try:
        usage = from_response_body(provider, stream)
    except Exception as exc:
        reject_if_known(exc)
        raise
    assert usage is None or isinstance(usage, Usage)
    event("usage" if usage else "none")


# --- crashes found in usage ---------------------------------------------------------------------------------

@pytest.mark.parametrize("provider, stream", [
    ("anthropic", 'data: {"type": "message_start", "message": {"usage": "abc"}}\n\n'),
    ("anthropic", 'data: {"type": "message_start", "message": {"usage": 5}}\n\n'),
    ("anthropic", 'data: {"type": "message_start", "message": {"usage": [1]}}\n\n'),
    ("anthropic", '{"usage": ' + "[" * 100_000 + "]" * 100_000 + "}"),
    ("openai-chat", "data: " + "[" * 100_000 + "\n\n"),
    ("anthropic", 'data: {"type": "ping"}\n\ndata: \udc80\n\n'),
], ids=["usage-str", "usage-int", "usage-list", "deep-json-body", "deep-json-event", "lone-surrogate"])
def test_usage_known_crashes(provider, stream):
    usage = from_response_body(provider, stream)
    assert usage is None or isinstance(usage, Usage)


# ==========================================================================================================
# 4. Suppressions and fixes
# ==========================================================================================================

comment_heavy_text = st.lists(st.one_of(
    st.sampled_from(["# noqa", "# noqa: CL101", "# NOQA:cl101,CL102", "# cachelint: ignore[CL101]", "# cachelint: ignore[",
                     "# cachelint: noqa", "x = 1  # noqa: CL999 CL1", "'''# noqa'''", "'''", '"""', "f'{x # noqa}'",
                     "def f(:", "\\", "    ", "\t", "  x = (", ")", "#", "# noqa:", "# cachelint: ignore[]]"]),
    st.text(max_size=30),
), max_size=12).map("\n".join)


@fuzz(2.0)
@given(st.one_of(st.text(), st.text(st.characters()), comment_heavy_text))
def test_suppress_parse_never_raises(text):
    result = suppress.parse(text)
    assert isinstance(result.file, bool)
    for row, codes in result.lines.items():
        assert row >= 1 and isinstance(codes, frozenset)
        result.covers("CL101", (row,))


def libcst_rows(text: str) -> list[tuple[int, str]]:
    """(offset, text) of each row as libcst counts rows: only \\r\\n, \\r and \\n end one; a text that ends
    with a line break has a last, empty row."""
    rows, at = [], 0
    for m in re.finditer(r"\r\n|\r|\n", text):
        rows.append((at, text[at:m.start()]))
        at = m.end()
    rows.append((at, text[at:]))
    return rows


@st.composite
def text_and_edits(draw) -> tuple[str, list[Edit], list[tuple[int, int]]]:
    """A text, edits at positions libcst could report in it, and each edit's (start, end) offsets."""
    text = draw(st.one_of(st.text(max_size=200), comment_heavy_text, gen.python_programs(max_leaves=3),
                          st.text(st.sampled_from("a\r\n\x0c\x0b\x1c\x85\u2028 #"), max_size=30)))
    rows = libcst_rows(text)

    def position() -> tuple[int, int, int]:
        row = draw(st.integers(1, len(rows)))
        column = draw(st.integers(1, len(rows[row - 1][1]) + 1))
        return row, column, rows[row - 1][0] + column - 1

    edits, offsets = [], []
    for _ in range(draw(st.integers(0, 5))):
        start, end = sorted([position(), position()], key=lambda p: p[2])
        edits.append(Edit(start[0], start[1], end[0], end[1], draw(st.text(max_size=20))))
        offsets.append((start[2], end[2]))
    return text, edits, offsets


@fuzz(2.0)
@given(text_and_edits())
def test_apply_edits_never_raises(text_edits):
    text, edits, offsets = text_edits
    new, applied = apply_edits(text, edits)
    assert isinstance(new, str) and 0 <= applied <= len(edits)
    if not edits:
        assert (new, applied) == (text, 0)
    if len(edits) == 1:  # one edit lands exactly where libcst's rows and columns say
        (start, end), = offsets
        assert (new, applied) == (text[:start] + edits[0].content + text[end:], 1)


@fuzz(1.0)
@given(st.text(max_size=60), st.lists(st.tuples(st.integers(-3, 50), st.integers(-3, 200), st.integers(-3, 50), st.integers(-3, 200),
                                                st.text(max_size=5)), max_size=4))
def test_apply_edits_never_raises_on_positions_outside_the_text(text, raw):
    new, applied = apply_edits(text, [Edit(*r) for r in raw])
    assert isinstance(new, str) and 0 <= applied <= len(raw)


def test_an_edit_that_ends_before_it_starts_is_not_applied():
    source = "client.messages.create(model=m)\nsecond line\n"
    assert apply_edits(source, [Edit(2, 5, 1, 3, "X")]) == (source, 0)  # once duplicated text between the two
    assert apply_edits(source, [Edit(1, 8, 1, 3, "X"), Edit(2, 1, 2, 7, "2nd")]) == (source.replace("second", "2nd"), 1)


def python_compiles(source: str, name: str = "<fuzz>") -> bool:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # "'set' object is not subscriptable": generated code is nonsense
        try:
            compile(source, name, "exec", dont_inherit=True)
        except (SyntaxError, ValueError):
            return False
    return True


# A fix whose result does not compile and is documented by an xfail below.
KNOWN_BAD_FIXES = ("keyword argument repeated: sort_keys",)


def check_fixed(source: str, new: str) -> None:
    try:
        cst.parse_module(new)
    except cst.ParserSyntaxError as exc:
        raise AssertionError(f"fixed code does not parse: {exc}\n--- fixed:\n{new}") from None
    if python_compiles(source):
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                compile(new, "<fixed>", "exec", dont_inherit=True)
        except SyntaxError as exc:
            if any(k in str(exc) for k in KNOWN_BAD_FIXES):
                event("known bad fix")
                reject()
            raise AssertionError(f"fixed code does not compile: {exc}\n--- fixed:\n{new}") from None


@fuzz(0.5)
@given(st.one_of(gen.fixable_programs(), gen.python_programs(), gen.mutated_rule_examples(max_leaves=3)))
def test_fixes_keep_the_code_parsing(source):
    if libcst_problem(source):
        reject()
    findings = lint(source)
    edits = [edit for f in fixable(findings, unsafe=True) for edit in f.fix.edits]
    event(f"{len(edits)} edits")
    new, applied = apply_edits(source, edits)
    assert applied <= len(edits)
    check_fixed(source, new)
    if not edits:
        return
    try:
        fixed, _, remaining = fix_source(source, "fuzz.py", ALL_CODES, None, unsafe=True)  # the --fix loop
    except Exception as exc:
        reject_if_known(exc)
        raise
    check_fixed(source, fixed)
    check_findings(remaining)


# --- bad fixes ------------------------------------------------------------------------------------------------

FORM_FEED_PROGRAM = '''import json
from openai import OpenAI
client = OpenAI()
\x0c
def ask(p, q):
    a = json.dumps(dict(p))
    s = json.dumps(dict(p))
    return client.chat.completions.create(model="gpt-4o", messages=[{"role": "system", "content": s}, {"role": "user", "content": q}])
''' + JSONB_STORE


@pytest.mark.parametrize("separator", ["\x0c", "# \u2028", "x = '\x85'"])
def test_fix_after_an_odd_line_break_edits_the_right_line(separator):
    source = FORM_FEED_PROGRAM.replace("\x0c", separator)
    findings = lint_source(source, "ff.py")
    assert [(f.code, f.row) for f in findings] == [("CL102", 7)]
    new, applied = apply_edits(source, list(findings[0].fix.edits))
    assert new == source.replace("s = json.dumps(dict(p))", "s = json.dumps(dict(p), sort_keys=True)")


def test_fix_of_json_dumps_with_sort_keys_false_compiles():
    source = GOOD_JSON.replace("json.dumps(dict(profile))", "json.dumps(dict(profile), sort_keys=False)")
    fixed, applied, _ = fix_source(source, "f.py", ALL_CODES, None, unsafe=False)
    assert applied >= 1
    compile(fixed, "f.py", "exec")
