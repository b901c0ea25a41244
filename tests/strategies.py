"""Hypothesis strategies for the fuzz tests (tests/test_fuzz.py): Python sources that call the LLM SDKs,
request bodies of every known shape (and of wrong ones), SSE streams and usage objects.

Everything here builds *text* or plain JSON values; nothing runs cachelint.
"""

from __future__ import annotations

import json
import string
import textwrap
from functools import lru_cache
from typing import Any

import libcst as cst
from hypothesis import strategies as st

# --------------------------------------------------------------------------------------------------------
# Python sources
# --------------------------------------------------------------------------------------------------------

NAMES = [
    "q", "question", "messages", "history", "SYSTEM", "TOOLS", "REGISTRY", "profile", "tools", "system",
    "prompt", "notes", "parts", "user", "config", "self.system", "self.messages", "self.tools", "kwargs",
    "build_system()", "helper(q)", "x", "allowed",
]
VOLATILE = [
    "datetime.now()", "datetime.now().isoformat()", "datetime.now().strftime('%H:%M')", "datetime.utcnow()",
    "date.today()", "time.time()", "time.monotonic()", "time.strftime('%Y-%m-%d')", "uuid.uuid4()",
    "str(uuid.uuid4())", "uuid.uuid4().hex", "random.random()", "random.randint(0, 9)", "os.getpid()",
    "os.listdir('notes')", "glob.glob('*.md')", "Path('docs').iterdir()", "Path('docs').glob('*.md')",
    "os.path.getmtime('f')", "json.dumps(profile)", "json.dumps(dict(profile))", "json.dumps(profile, sort_keys=True)",
    "json.dumps({k: v for k, v in profile.items()})", "json.dumps(dict(profile), sort_keys=False)", "str(profile)",
    "str(dict(profile))", "set(TOOLS)", "TOOLS.values()", "REGISTRY.values()", "list(REGISTRY.values())",
    "secrets.token_hex(8)", "next(COUNTER)", "os.environ.get('USER')", "getpass.getuser()", "socket.gethostname()",
    "await session.list_tools()", "sorted(os.listdir('notes'))", "'\\n'.join(os.listdir('notes'))",
    "'\\n'.join({'a', 'b'})", "{'x', 'y'}", "frozenset(allowed)",
]
FUNCS = ["str", "repr", "sorted", "list", "tuple", "dict", "len", "f", "helper", "textwrap.dedent", "json.dumps",
         "'\\n'.join", "' '.join", "'{}: {}'.format", "render", "messages.copy", "copy.deepcopy"]
ROLES = ['"user"', '"assistant"', '"system"', '"developer"', '"tool"', "'user'", "role"]
KEYWORDS = ["model", "max_tokens", "system", "tools", "messages", "instructions", "input", "tool_choice", "thinking",
            "reasoning_effort", "reasoning", "extra_headers", "betas", "response_format", "text", "prompt_cache_key",
            "stream", "metadata", "temperature", "cache_control", "store", "previous_response_id", "functions"]
MODELS = ['"claude-sonnet-4-5"', '"claude-3-haiku-20240307"', '"gpt-4o"', '"gpt-5"', '"o3"', "MODEL", "model",
          '"anthropic/claude-sonnet-4-5"', "random.choice(MODELS)", '"x" * 1000', "None", "self.model"]

SDK_SETUPS = {
    "anthropic": [
        ("import anthropic", "anthropic.Anthropic()"),
        ("from anthropic import Anthropic", "Anthropic()"),
        ("from anthropic import AsyncAnthropic", "AsyncAnthropic()"),
        ("from anthropic import AnthropicBedrock", "AnthropicBedrock()"),
        ("from anthropic import AnthropicVertex", "AnthropicVertex(region='us-east5', project_id='p')"),
        ("import anthropic as ant", "ant.Anthropic(api_key='k')"),
    ],
    "openai": [
        ("import openai", "openai.OpenAI()"),
        ("from openai import OpenAI", "OpenAI()"),
        ("from openai import AsyncOpenAI", "AsyncOpenAI()"),
        ("from openai import AzureOpenAI", "AzureOpenAI(api_version='2024-10-21')"),
        ("import openai as oa", "oa.OpenAI(base_url='http://localhost:8000/v1')"),
    ],
    "litellm": [("import litellm", None), ("from litellm import completion, acompletion", None)],
}
METHODS = {
    "anthropic": ["messages.create", "messages.stream", "messages.parse", "beta.messages.create", "beta.messages.stream",
                  "messages.count_tokens", "messages.batches.create"],
    "openai": ["chat.completions.create", "chat.completions.parse", "chat.completions.stream", "responses.create",
               "responses.parse", "responses.stream", "beta.chat.completions.parse", "embeddings.create"],
    "litellm": ["litellm.completion", "litellm.acompletion", "completion", "acompletion"],
}
CORE_KEYWORDS = {
    "anthropic": ["model", "max_tokens", "tools", "system", "messages"],
    "chat": ["model", "tools", "messages"],
    "responses": ["model", "tools", "instructions", "input"],
}
BASE_IMPORTS = ["import json", "import os", "import time", "import uuid", "import random", "import glob",
                "from datetime import datetime, date", "from pathlib import Path"]
EXTRA_IMPORTS = [
    "import json", "import os", "import time", "import uuid", "import random", "import glob", "import secrets",
    "import textwrap", "import copy", "import getpass", "import socket", "import functools", "import itertools",
    "from datetime import datetime, date", "import datetime as dt", "from pathlib import Path",
    "from time import time as now", "from uuid import uuid4", "from os import listdir",
]

def rarely(n: int) -> st.SearchStrategy[bool]:
    """True once in `n` draws. (Hypothesis leans towards the first choice and small integers, so the rare
    case goes last.)"""
    return st.sampled_from([False] * (n - 1) + [True])


def usually(n: int) -> st.SearchStrategy[bool]:
    """False once in `n` draws."""
    return st.sampled_from([True] * (n - 1) + [False])


_SAFE_TEXT = st.text(alphabet=string.ascii_letters + string.digits + " .,:;-_/#=<>!?()é😀\t", max_size=30)


def _py_string(text: str, quote: str = '"') -> str:
    """A valid Python string literal for `text` (json.dumps escapes are Python escapes too, for \\uXXXX)."""
    body = json.dumps(text, ensure_ascii=False)[1:-1]
    if quote == "'":
        body = body.replace("\\\"", "\"").replace("'", "\\'")
    return quote + body + quote


# Text for string literals: anything but lone surrogates (which a Python source cannot hold; see the
# xfail in test_fuzz.py for str sources that do) and the line breaks only str.splitlines knows (see the
# xfail for fixes after a form feed).
ODD_LINE_BREAKS = "\x0b\x0c\x1c\x1d\x1e\x85\u2028\u2029"
literal_text = st.text(st.characters(blacklist_categories=("Cs",), blacklist_characters=ODD_LINE_BREAKS), max_size=40)


@lru_cache(maxsize=None)
def string_literals(odd_line_breaks: bool = False) -> st.SearchStrategy[str]:
    text = st.text(st.characters(blacklist_categories=("Cs",)), max_size=40) if odd_line_breaks else literal_text
    return st.one_of(
        st.tuples(text, st.sampled_from(['"', "'"])).map(lambda t: _py_string(*t)),
        text.map(repr),
        _SAFE_TEXT.map(lambda t: '"""' + t.replace('"', "'") + '\n"""'),
        _SAFE_TEXT.map(lambda t: "r'" + t.replace("'", "").replace("\\", "") + "'"),
        _SAFE_TEXT.map(lambda t: repr(t.encode("utf-8"))),
        st.tuples(_SAFE_TEXT, _SAFE_TEXT).map(lambda t: f"{_py_string(t[0])} {_py_string(t[1], chr(39))}"),
        st.sampled_from(['"\\n"', '"\\t\\x41\\u00e9\\N{BULLET}"', '"\\\\"', "''", '""""""', '"\\U0001F600"', "b'\\xff'"]),
    )


number_literals = st.one_of(
    st.integers().map(str),
    st.floats(allow_nan=False, allow_infinity=False).map(repr),
    st.sampled_from(["1_000_000", "0x_FF", "0o777", "0b1010", "1e308", "1e999", "3j", "1.5e-7J", ".5", "10.",
                     "0", "00", "True", "False", "None", "...", "float('nan')"]),
)


def huge_literals() -> st.SearchStrategy[str]:
    """A big string, bytes or number literal (built by repetition, not drawn char by char)."""
    return st.one_of(
        st.tuples(st.sampled_from(["a", "é", "😀", "\\n", "{", " ", "x" * 7]), st.integers(1_000, 300_000)).map(
            lambda t: '"' + t[0] * t[1] + '"'),
        st.tuples(st.sampled_from(["a", "\\n"]), st.integers(1_000, 100_000)).map(lambda t: '"""' + (t[0] + "\n") * (t[1] // 10) + '"""'),
        st.integers(1_000, 100_000).map(lambda n: "b'" + "\\xff" * n + "'"),
        st.integers(300, 20_000).map(lambda n: "9" * n),  # beyond int()'s 4300-digit limit
        st.integers(300, 5_000).map(lambda n: "0x" + "f" * n),
        st.integers(300, 5_000).map(lambda n: "1." + "5" * n + "e-99"),
        st.integers(100, 3_000).map(lambda n: "f'" + "{x}" * n + "'"),
        st.integers(100, 2_000).map(lambda n: "f'" + "a" * n + "{q!r:>{w}}" * 5 + "'"),
        st.integers(100, 3_000).map(lambda n: " ".join(['"a"'] * n)),  # implicit concatenation
    )


def _fstring(parts: list[str | tuple[str, str]]) -> str:
    out = []
    for part in parts:
        if isinstance(part, tuple):
            expr, spec = part
            out.append("{" + expr + spec + "}")
        else:
            out.append(part.replace("{", "{{").replace("}", "}}").replace("'", "").replace("\\", ""))
    return "f'" + "".join(out) + "'"


def _no_single_quotes(expr: str) -> str:
    return expr.replace("'", '"')


@lru_cache(maxsize=None)
def expressions(max_leaves: int = 10, odd_line_breaks: bool = False) -> st.SearchStrategy[str]:
    """Random Python expressions, built to be valid (most of the time: f-strings may nest quotes)."""
    leaf = st.one_of(
        st.sampled_from(NAMES), st.sampled_from(VOLATILE), st.sampled_from(VOLATILE), string_literals(odd_line_breaks), number_literals,
    )

    def extend(children: st.SearchStrategy[str]) -> st.SearchStrategy[str]:
        two = st.tuples(children, children)
        return st.one_of(
            st.tuples(children, st.sampled_from(["+", "%", "*", "or", "and", "==", "|", "-", "//", "@", "in", "is not"]), children).map(
                lambda t: f"({t[0]} {t[1]} {t[2]})"),
            st.tuples(children, children, children).map(lambda t: f"({t[0]} if {t[1]} else {t[2]})"),
            children.map(lambda e: f"({e})"),
            st.lists(children, max_size=4).map(lambda es: "[" + ", ".join(es) + "]"),
            st.lists(children, max_size=3).map(lambda es: "(" + "".join(e + ", " for e in es) + ")"),
            st.lists(children, min_size=1, max_size=3).map(lambda es: "{" + ", ".join(es) + "}"),
            st.lists(st.tuples(st.one_of(string_literals(), children), children), max_size=3).map(
                lambda kv: "{" + ", ".join(f"({k}): {v}" for k, v in kv) + "}"),
            st.tuples(st.sampled_from(ROLES), children).map(lambda t: '{"role": %s, "content": %s}' % t),
            st.tuples(children, st.booleans(), st.sampled_from(["", ', "ttl": "1h"', ', "ttl": "5m"'])).map(
                lambda t: '[{"type": "text", "text": %s%s}]' % (t[0], ', "cache_control": {"type": "ephemeral"%s}' % t[2] if t[1] else "")),
            st.tuples(st.sampled_from(FUNCS), st.lists(children, max_size=3), st.lists(st.tuples(st.sampled_from(["key", "sort_keys", "indent", "default", "k"]), children), max_size=2)).map(
                lambda t: f"{t[0]}(" + ", ".join([*t[1], *(f"{k}={v}" for k, v in t[2])]) + ")"),
            st.lists(st.one_of(_SAFE_TEXT, st.tuples(children.map(_no_single_quotes), st.sampled_from(["", "!r", "!s", ":>10", ":%H:%M", "=", "!r:^{w}"]))), max_size=4).map(_fstring),
            two.map(lambda t: f'"{{}} {{}}".format({t[0]}, {t[1]})'),
            two.map(lambda t: f'"%s: %s" % ({t[0]}, {t[1]})'),
            children.map(lambda e: f'"\\n".join({e})'),
            two.map(lambda t: f"{t[0]}[{t[1]}]"),
            children.map(lambda e: f"{e}[1:]"),
            children.map(lambda e: f"{e}[-10:]"),
            st.tuples(children, st.sampled_from(["values()", "items()", "keys()", "copy()", "strip()", "lower()", "hex", "name"])).map(lambda t: f"({t[0]}).{t[1]}"),
            st.tuples(children, children, children).map(lambda t: f"[{t[0]} for x in {t[1]} if {t[2]}]"),
            two.map(lambda t: f"{{k: {t[0]} for k, v in ({t[1]}).items()}}"),
            two.map(lambda t: f"({t[0]} for t in {t[1]})"),
            children.map(lambda e: f"(lambda: {e})"),
            children.map(lambda e: f"(lambda t: {e})(q)"),
            two.map(lambda t: f"[*{t[0]}, {t[1]}]"),
            two.map(lambda t: f"{{**{t[0]}, 'k': {t[1]}}}"),
            children.map(lambda e: f"(y := {e})"),
            children.map(lambda e: f"(await ({e}))"),
            children.map(lambda e: f"(not ({e}))"),
            children.map(lambda e: f"(-({e}))"),
            children.map(lambda e: f"sorted({e}, key=lambda t: t['name'])"),
        )

    return st.recursive(leaf, extend, max_leaves=max_leaves)


def _indent(code: str, level: int) -> list[str]:
    pad = "    " * level
    return [pad + line if line else line for line in code.split("\n")]


@lru_cache(maxsize=None)
def _statements(expr: st.SearchStrategy[str], message: st.SearchStrategy[str]) -> st.SearchStrategy[str]:
    name = st.sampled_from(["system", "prompt", "notes", "tools", "messages", "history", "parts", "x", "allowed", "user",
                            "self.system", "self.messages", "self.tools", "SYSTEM"])
    return st.one_of(
        st.tuples(name, expr).map(lambda t: f"{t[0]} = {t[1]}"),
        st.tuples(name, expr).map(lambda t: f"{t[0]} += {t[1]}"),
        st.tuples(name, expr).map(lambda t: f"{t[0]}: str = {t[1]}"),
        st.tuples(name, name, expr, expr).map(lambda t: f"{t[0]}, {t[1]} = {t[2]}, {t[3]}"),
        message.map(lambda m: f"messages.append({m})"),
        message.map(lambda m: f"history.append({m})"),
        expr.map(lambda e: f"messages.extend({e})"),
        message.map(lambda m: f"messages.insert(0, {m})"),
        message.map(lambda m: f"messages[0] = {m}"),
        expr.map(lambda e: f"messages[-1]['content'] = {e}"),
        st.sampled_from(["del messages[1:3]", "messages = messages[-10:]", "messages.pop(0)", "messages.sort(key=len)",
                         "messages.clear()", "messages.reverse()", "history = history[-4:]", "del history[0]",
                         "tools.sort(key=lambda t: t['name'])", "random.shuffle(tools)", "pass", "global TOOLS",
                         "parts = []", "messages = []", "history = list(messages)", "TOOLS.clear()"]),
        expr.map(lambda e: f"for x in {e}:\n    parts.append(x)"),
        st.tuples(expr, expr, expr).map(lambda t: f"if {t[0]}:\n    system = {t[1]}\nelse:\n    system = {t[2]}"),
        expr.map(lambda e: f"with open('f') as fh:\n    notes = fh.read() + {e}"),
        expr.map(lambda e: f"try:\n    x = {e}\nexcept Exception:\n    x = None"),
        st.tuples(string_literals(), expr).map(lambda t: f"TOOLS[{t[0]}] = {t[1]}"),
        expr.map(lambda e: f"REGISTRY.update({e})"),
        expr.map(lambda e: f"tools = [t for t in TOOLS if t['name'] in {e}]"),
        expr.map(lambda e: f"while len(messages) > 20:\n    messages.pop({e})"),
    )


@lru_cache(maxsize=None)
def _messages_value(expr: st.SearchStrategy[str], message: st.SearchStrategy[str]) -> st.SearchStrategy[str]:
    return st.one_of(
        st.lists(message, max_size=4).map(lambda ms: "[" + ", ".join(ms) + "]"),
        st.sampled_from(["messages", "history", "self.messages", "history + [{'role': 'user', 'content': q}]",
                         "[*history, {'role': 'user', 'content': q}]", "messages[-10:]", "messages[:1] + messages[-5:]"]),
        expr,
    )


@lru_cache(maxsize=None)
def _tools_value(expr: st.SearchStrategy[str]) -> st.SearchStrategy[str]:
    tool = st.tuples(string_literals(), expr).map(
        lambda t: '{"name": %s, "description": %s, "input_schema": {"type": "object", "properties": {}}}' % t)
    return st.one_of(
        st.lists(tool, max_size=3).map(lambda ts: "[" + ", ".join(ts) + "]"),
        st.sampled_from(["TOOLS", "tools", "list(TOOLS.values())", "list(REGISTRY.values())", "sorted(TOOLS, key=lambda t: t['name'])",
                         "[t for t in TOOLS if t['name'] in allowed]", "self.tools", "[*TOOLS, extra]",
                         "(await session.list_tools()).tools", "[{'type': 'function', 'function': f} for f in FUNCTIONS]"]),
        expr,
    )


@lru_cache(maxsize=None)
def _earlier_turns(expr: st.SearchStrategy[str], message: st.SearchStrategy[str]) -> st.SearchStrategy[str]:
    system_message = st.tuples(st.sampled_from(['"system"', '"developer"']), realistic_text()).map(lambda t: '{"role": %s, "content": %s}' % t)
    return st.tuples(st.lists(st.one_of(system_message, message), min_size=1, max_size=3), st.sampled_from(["q", "question", "f'{q}'"])).map(
        lambda t: "[" + ", ".join([*t[0], '{"role": "user", "content": %s}' % t[1]]) + "]")


@lru_cache(maxsize=None)
def _system_value(expr: st.SearchStrategy[str]) -> st.SearchStrategy[str]:
    block = st.tuples(expr, st.sampled_from(["", ', "cache_control": {"type": "ephemeral"}', ', "cache_control": {"type": "ephemeral", "ttl": "1h"}'])).map(
        lambda t: '{"type": "text", "text": %s%s}' % t)
    return st.one_of(realistic_text(), realistic_text(), expr, st.lists(block, max_size=6).map(lambda bs: "[" + ", ".join(bs) + "]"),
                     st.sampled_from(["SYSTEM", "system", "self.system", "build_system()"]))


# How real apps build prompt text: {v} is a volatile / unordered value or a plain one.
TEMPLATES = [
    'f"You are a helpful assistant. Now: {{{v}}}."', 'f"Today is {{{v}:%Y-%m-%d}}. {{q}}"', '"Profile: " + {v}',
    '"\\n".join({v})', '"Rules: {{}}".format({v})', '"Session %s" % ({v},)', "{v}", "str({v})", "SYSTEM + {v}",
    'textwrap.dedent(f"""\n    Context: {{{v}}}\n    """)', '"".join(sorted({v}))', '"\\n".join(n for n in {v})',
    '"\\n".join(open(p).read() for p in {v})', "[{{'type': 'text', 'text': {v}}}]",
]
PLAIN = ["'Be brief.'", "q", "SYSTEM", "profile", "notes", "user['name']", "'x' * 5000"]


@lru_cache(maxsize=None)
def realistic_text() -> st.SearchStrategy[str]:
    value = st.one_of(st.sampled_from(VOLATILE), st.sampled_from(PLAIN))
    return st.tuples(st.sampled_from(TEMPLATES), value).map(lambda t: t[0].format(v=t[1]))


@lru_cache(maxsize=None)
def _mixed_depth(max_leaves: int, odd_line_breaks: bool) -> st.SearchStrategy[str]:
    """Mostly prompt text built the way apps build it, sometimes shallow or deep random expressions."""
    return st.one_of(realistic_text(), realistic_text(), expressions(2, odd_line_breaks), expressions(max_leaves, odd_line_breaks))


@lru_cache(maxsize=None)
def _message_exprs(expr: st.SearchStrategy[str]) -> st.SearchStrategy[str]:
    return st.one_of(
        st.tuples(st.sampled_from(ROLES), expr).map(lambda t: '{"role": %s, "content": %s}' % t),
        st.tuples(st.sampled_from(ROLES), expr, st.booleans()).map(
            lambda t: '{"role": %s, "content": [{"type": "text", "text": %s%s}]}' % (t[0], t[1], ', "cache_control": {"type": "ephemeral"}' if t[2] else "")),
        expr,
    )


@st.composite
def python_programs(draw, max_leaves: int = 8, odd_line_breaks: bool = False) -> str:
    """A module that imports an LLM SDK and sends requests whose arguments are random expressions."""
    expr = _mixed_depth(max_leaves, odd_line_breaks)
    message = _message_exprs(expr)
    sdk = draw(st.sampled_from(sorted(SDK_SETUPS)))
    import_line, constructor = draw(st.sampled_from(SDK_SETUPS[sdk]))
    lines = [*BASE_IMPORTS] if draw(usually(6)) else []
    lines += draw(st.lists(st.sampled_from(EXTRA_IMPORTS), max_size=4, unique=True))
    lines.insert(draw(st.integers(0, len(lines))), import_line)
    for _ in range(draw(st.integers(0, 3))):
        lines.append(f"{draw(st.sampled_from(['SYSTEM', 'TOOLS', 'REGISTRY', 'MODEL', 'COUNTER', 'MODELS', 'FUNCTIONS']))} = {draw(expr)}")
    if draw(st.booleans()):
        lines += ["REGISTRY = {}", "def register(tool):", "    REGISTRY[tool['name']] = tool", "    return tool"]
    if draw(st.booleans()):
        lines += _indent(f"def build_system():\n    return {draw(expr)}", 0)
    if draw(st.booleans()):
        lines += _indent(f"def helper(v):\n    return {draw(expr)}", 0)

    in_class = draw(st.booleans())
    style = draw(st.sampled_from(["module", "param", "self"] if in_class else ["module", "param"]))
    if constructor is not None and style == "module":
        lines.append(f"client = {constructor}")
    receiver = {"module": "client", "param": "client", "self": "self.client"}[style]
    method = draw(st.sampled_from(METHODS[sdk]))
    call_target = method if sdk == "litellm" else f"{receiver}.{method}"

    core = CORE_KEYWORDS["anthropic" if sdk == "anthropic" else "responses" if "responses" in method else "chat"]
    kw_names = [k for k in core if draw(usually(5))]
    kw_names += [k for k in draw(st.lists(st.sampled_from(KEYWORDS), max_size=4, unique=True)) if k not in kw_names]
    args = []
    for kw in kw_names:
        if kw == "messages" or kw == "input":
            value = draw(st.one_of(_earlier_turns(expr, message), _messages_value(expr, message)))
        elif kw in ("tools", "functions"):
            value = draw(_tools_value(expr))
        elif kw in ("system", "instructions"):
            value = draw(_system_value(expr))
        elif kw == "model":
            value = draw(st.one_of(st.sampled_from(MODELS), expr))
        else:
            value = draw(expr)
        args.append(f"{kw}={value}")
    if draw(rarely(6)):
        args.append("**kwargs")
    if draw(rarely(8)):
        args.insert(0, draw(st.sampled_from(["*args", "q", "MODEL"])))
    call = f"{call_target}(" + (",\n        ".join(args) if draw(st.booleans()) else ", ".join(args)) + ")"
    if draw(st.booleans()):
        call = f"await {call}"

    body = draw(st.lists(_statements(expr, message), max_size=5))
    finish = draw(st.sampled_from(["return {c}", "response = {c}", "{c}", "reply = {c}\nmessages.append({{'role': 'assistant', 'content': reply}})"]))
    loop = draw(st.sampled_from(["", "while True:", "for turn in range(3):", "for q in questions:"]))
    function_lines = [*body]
    if loop:
        function_lines.append(loop)
        function_lines += _indent("\n".join([draw(message).join(["messages.append(", ")"]), finish.format(c=call)]), 1)
    else:
        function_lines.append(finish.format(c=call))
    if style == "param":
        header = draw(st.sampled_from(["def ask(client, q, messages, history=[]):", "async def run(session, client: Anthropic, q):",
                                       "def ask(client: OpenAI, q, profile=None):"]))
    else:
        header = draw(st.sampled_from(["def ask(q, profile=None, *args, **kwargs):", "async def ask(q, profile=None, **kwargs):",
                                       "def ask(q, messages, history=[]):", "async def run(session, q, profile):"]))
    decorator = draw(st.sampled_from(["", "@functools.lru_cache", "@staticmethod", "@app.post('/chat')"]))
    function = ([decorator] if decorator else []) + [header] + _indent("\n".join(function_lines), 1)
    if in_class:
        lines.append("class Bot:")
        init = ["def __init__(self):"] + _indent(
            "\n".join([f"self.client = {constructor or 'litellm'}", f"self.system = {draw(expr)}", "self.messages = []", "self.tools = TOOLS"]), 1)
        lines += _indent("\n".join(init), 1)
        method_def = [line.replace("(", "(self, ", 1) if line.lstrip().startswith(("def ", "async def ")) else line for line in function]
        lines += _indent("\n".join(method_def), 1)
    else:
        lines += function
    # Suppression comments, here and there.
    for _ in range(draw(st.integers(0, 2))):
        comment = draw(st.sampled_from(["# noqa: CL101", "# noqa", "# noqa: CL102, CL103", "# cachelint: ignore[CL301]",
                                        "# cachelint: ignore[]", "# NOQA:cl101", "# just a comment", "# type: ignore"]))
        if draw(rarely(31)):
            comment = "# cachelint: noqa"
        at = draw(st.integers(0, len(lines) - 1))
        if lines[at].rstrip().endswith(("\\", ",", "(", "[", "{")) or '"""' in lines[at] or "'''" in lines[at]:
            continue
        lines[at] = lines[at] + "  " + comment
    source = "\n".join(lines) + "\n"
    if odd_line_breaks and draw(st.booleans()):
        at = draw(st.integers(0, source.count("\n")))
        parts = source.split("\n")
        parts.insert(at, draw(st.sampled_from(["\x0c", "# \x0c page", "#\u2028", "#\x85"])))
        source = "\n".join(parts)
    return source


# --- the rule catalog's own examples, mutated -------------------------------------------------------------

@lru_cache(maxsize=1)
def rule_examples() -> tuple[str, ...]:
    from cachelint.check.registry import all_rules

    found: list[str] = []
    for rule in all_rules():
        found += [rule.example, rule.instead, *rule.VALID, *(invalid.code for invalid in rule.INVALID)]
    parsed = []
    for source in dict.fromkeys(textwrap.dedent(s) for s in found if s.strip()):
        try:
            cst.parse_module(source)
        except cst.ParserSyntaxError:
            continue
        parsed.append(source)
    return tuple(parsed)


class _Replace(cst.CSTTransformer):
    """Replace the chosen argument values / assigned values / list elements (by visit order)."""

    def __init__(self, chosen: dict[int, cst.BaseExpression]) -> None:
        self.chosen, self.index = chosen, 0

    def _next(self, value: cst.BaseExpression) -> cst.BaseExpression:
        new = self.chosen.get(self.index, value)
        self.index += 1
        return new

    def leave_Arg(self, original: cst.Arg, updated: cst.Arg) -> cst.Arg:
        return updated.with_changes(value=self._next(updated.value))

    def leave_Assign(self, original: cst.Assign, updated: cst.Assign) -> cst.Assign:
        return updated.with_changes(value=self._next(updated.value))

    def leave_DictElement(self, original: cst.DictElement, updated: cst.DictElement) -> cst.DictElement:
        return updated.with_changes(value=self._next(updated.value))

    def leave_Element(self, original: cst.Element, updated: cst.Element) -> cst.Element:
        return updated.with_changes(value=self._next(updated.value))


class _Count(cst.CSTVisitor):
    def __init__(self) -> None:
        self.n = 0

    def visit_Arg(self, node: cst.Arg) -> None:
        self.n += 1

    def visit_Assign(self, node: cst.Assign) -> None:
        self.n += 1

    def visit_DictElement(self, node: cst.DictElement) -> None:
        self.n += 1

    def visit_Element(self, node: cst.Element) -> None:
        self.n += 1


@st.composite
def mutated_rule_examples(draw, max_leaves: int = 6) -> str:
    """One or two of the rules' VALID / INVALID examples, with some argument and assigned values replaced
    by random expressions."""
    examples = rule_examples()
    source = draw(st.sampled_from(examples))
    if draw(rarely(4)):
        source = source + "\n" + draw(st.sampled_from(examples))
    module = cst.parse_module(source)
    counter = _Count()
    module.visit(counter)
    if counter.n == 0:
        return source
    chosen: dict[int, cst.BaseExpression] = {}
    for _ in range(draw(st.integers(1, 4))):
        code = draw(expressions(max_leaves))
        try:
            chosen[draw(st.integers(0, counter.n - 1))] = cst.parse_expression(code)
        except Exception:  # an f-string with nested quotes, say: keep the original value
            continue
    try:
        return module.visit(_Replace(chosen)).code
    except Exception:  # a value libcst will not place there (a starred element, say)
        return source


# --- nesting ----------------------------------------------------------------------------------------------

NESTERS = [("(", ")"), ("[", "]"), ("{'k': ", "}"), ("f(", ")"), ("x[", "]"), ("[1, ", ", 2]"), ("not ", ""),
           ("-", ""), ("(lambda: ", ")"), ("{", "}"), ("sorted(", ")"), ("'a' + ", ""), ("(", " + 'a')"),
           ("{'role': 'system', 'content': ", "}"), ("json.dumps(", ")"), ("(x if ", " else y)"), ("await ", ""),
           ("f'{", "}'"), ('f"{', '}"')]


@st.composite
def deeply_nested_programs(draw, max_depth: int = 300) -> str:
    """A request whose system prompt is an expression nested `depth` deep (kept far below the depth at
    which libcst's native parser overflows the C stack; that case runs in a subprocess, see test_fuzz.py)."""
    depth = draw(st.integers(1, max_depth))
    mixed = draw(st.booleans())
    if mixed:
        nesters = [draw(st.sampled_from(NESTERS)) for _ in range(min(depth, 40))]
        nesters = (nesters * (depth // len(nesters) + 1))[:depth]
    else:
        nesters = [draw(st.sampled_from(NESTERS))] * depth
    inner = draw(st.sampled_from(["q", "datetime.now()", "os.listdir('d')", "json.dumps(profile)", '"x"', "1"]))
    expr = "".join(o for o, _ in nesters) + inner + "".join(c for _, c in reversed(nesters))
    chain = draw(st.integers(0, 300))
    concat = " + ".join(["'a'"] * chain) if chain else "''"
    return (
        "import os, json\nfrom datetime import datetime\nimport anthropic\nclient = anthropic.Anthropic()\n"
        f"def ask(q, profile):\n    system = {expr}\n    tail = {concat}\n"
        "    return client.messages.create(model='claude-sonnet-4-5', max_tokens=10, system=system + tail,\n"
        "                                  messages=[{'role': 'user', 'content': q}])\n"
    )


# --------------------------------------------------------------------------------------------------------
# JSON values and request bodies
# --------------------------------------------------------------------------------------------------------

json_scalars = st.one_of(
    st.none(), st.booleans(), st.integers(min_value=-(10**30), max_value=10**30),
    st.floats(allow_nan=True, allow_infinity=True), st.text(max_size=20),
    st.sampled_from(["", "user", "assistant", "system", "developer", "tool", "text", "image", "tool_use", "tool_result",
                     "message", "function_call", "function_call_output", "input_text", "output_text", "ephemeral",
                     "claude-sonnet-4-5", "gpt-4o", "\ud83d", "a/b~c"]),
)
json_values = st.recursive(
    json_scalars,
    lambda children: st.one_of(st.lists(children, max_size=4), st.dictionaries(st.text(max_size=8), children, max_size=4)),
    max_leaves=12,
)


def _maybe(value: st.SearchStrategy, wrong: st.SearchStrategy = json_values, p_wrong: int = 12) -> st.SearchStrategy:
    """Mostly `value`, sometimes any JSON value instead (a wrong type at this level)."""
    return st.integers(0, p_wrong).flatmap(lambda i: wrong if i == 0 else value)


cache_control = st.sampled_from([{"type": "ephemeral"}, {"type": "ephemeral", "ttl": "1h"}, {"type": "ephemeral", "ttl": "5m"}])
content_text = st.text(max_size=60)


def _with_optional_cc(block: dict, cc: dict | None) -> dict:
    return {**block, "cache_control": cc} if cc is not None else block


anthropic_content_block = st.one_of(
    st.builds(lambda t, cc: _with_optional_cc({"type": "text", "text": t}, cc), _maybe(content_text), st.none() | cache_control),
    st.builds(lambda i, n, inp: {"type": "tool_use", "id": i, "name": n, "input": inp}, st.text(max_size=8), st.text(max_size=8), json_values),
    st.builds(lambda i, c, cc: _with_optional_cc({"type": "tool_result", "tool_use_id": i, "content": c}, cc),
              st.text(max_size=8), st.one_of(content_text, st.lists(st.builds(lambda t: {"type": "text", "text": t}, content_text), max_size=2)),
              st.none() | cache_control),
    st.builds(lambda t, s: {"type": "thinking", "thinking": t, "signature": s}, content_text, st.text(max_size=8)),
    st.builds(lambda d: {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": d}}, st.text(max_size=12)),
)


def anthropic_content(wrong: bool) -> st.SearchStrategy:
    block = _maybe(anthropic_content_block) if wrong else anthropic_content_block
    return st.one_of(content_text, st.lists(block, max_size=4))


def anthropic_bodies(wrong: bool = False) -> st.SearchStrategy[dict]:
    w = (lambda s: _maybe(s)) if wrong else (lambda s: s)
    message = st.builds(lambda r, c: {"role": r, "content": c}, w(st.sampled_from(["user", "assistant"])), w(anthropic_content(wrong)))
    tool = st.builds(lambda n, d, cc: _with_optional_cc({"name": n, "description": d, "input_schema": {"type": "object", "properties": {}}}, cc),
                     w(st.text(max_size=12)), st.text(max_size=30), st.none() | cache_control)
    return st.fixed_dictionaries(
        {"model": w(st.sampled_from(["claude-sonnet-4-5", "claude-opus-4-1", "claude-3-haiku-20240307"])),
         "messages": w(st.lists(w(message), max_size=5))},
        optional={
            "max_tokens": st.integers(1, 4096),
            "system": w(st.one_of(content_text, st.lists(w(st.builds(lambda t, cc: _with_optional_cc({"type": "text", "text": t}, cc), content_text, st.none() | cache_control)), max_size=3))),
            "tools": w(st.lists(w(tool), max_size=4)),
            "tool_choice": w(st.sampled_from([{"type": "auto"}, {"type": "any"}, {"type": "tool", "name": "x"}])),
            "thinking": w(st.sampled_from([{"type": "enabled", "budget_tokens": 1024}, {"type": "disabled"}])),
            "cache_control": w(cache_control),
            "stream": st.booleans(),
            "temperature": st.floats(0, 1),
        },
    )


def openai_chat_bodies(wrong: bool = False) -> st.SearchStrategy[dict]:
    w = (lambda s: _maybe(s)) if wrong else (lambda s: s)
    part = st.one_of(st.builds(lambda t: {"type": "text", "text": t}, w(content_text)),
                     st.builds(lambda u: {"type": "image_url", "image_url": {"url": u}}, st.text(max_size=12)))
    content = st.one_of(content_text, st.lists(w(part), max_size=3), st.none())
    call = st.builds(lambda i, n, a: {"id": i, "type": "function", "function": {"name": n, "arguments": a}}, st.text(max_size=6), st.text(max_size=8), st.text(max_size=20))
    message = st.one_of(
        st.builds(lambda r, c: {"role": r, "content": c}, w(st.sampled_from(["system", "developer", "user", "assistant"])), w(content)),
        st.builds(lambda c, calls: {"role": "assistant", "content": c, "tool_calls": calls}, content, w(st.lists(call, max_size=2))),
        st.builds(lambda i, c: {"role": "tool", "tool_call_id": i, "content": c}, st.text(max_size=6), content),
    )
    tool = st.builds(lambda n: {"type": "function", "function": {"name": n, "parameters": {"type": "object", "properties": {}}}}, w(st.text(max_size=10)))
    return st.fixed_dictionaries(
        {"model": w(st.sampled_from(["gpt-4o", "gpt-4o-mini", "gpt-5", "o3"])), "messages": w(st.lists(w(message), max_size=5))},
        optional={
            "tools": w(st.lists(w(tool), max_size=3)),
            "response_format": w(st.sampled_from([{"type": "json_object"}, {"type": "json_schema", "json_schema": {"name": "x", "schema": {}}}])),
            "reasoning_effort": w(st.sampled_from(["low", "medium", "high"])),
            "prompt_cache_key": w(st.text(max_size=8)),
            "tool_choice": w(st.sampled_from(["auto", "none", "required"])),
            "stream": st.booleans(),
        },
    )


def openai_responses_bodies(wrong: bool = False) -> st.SearchStrategy[dict]:
    w = (lambda s: _maybe(s)) if wrong else (lambda s: s)
    part = st.builds(lambda k, t: {"type": k, "text": t}, st.sampled_from(["input_text", "output_text"]), w(content_text))
    message = st.builds(lambda r, c: {"role": r, "content": c}, w(st.sampled_from(["system", "developer", "user", "assistant"])), w(st.one_of(content_text, st.lists(w(part), max_size=3))))
    item = st.one_of(
        message,
        st.builds(lambda r, c: {"type": "message", "role": r, "content": c}, st.sampled_from(["user", "assistant"]), content_text),
        st.builds(lambda i, n, a: {"type": "function_call", "call_id": i, "name": n, "arguments": a}, st.text(max_size=6), st.text(max_size=8), st.text(max_size=20)),
        st.builds(lambda i, o: {"type": "function_call_output", "call_id": i, "output": o}, st.text(max_size=6), st.text(max_size=20)),
    )
    tool = st.builds(lambda n: {"type": "function", "name": n, "parameters": {"type": "object", "properties": {}}}, w(st.text(max_size=10)))
    return st.fixed_dictionaries(
        {"model": w(st.sampled_from(["gpt-5", "gpt-4.1", "o4-mini"])), "input": w(st.one_of(content_text, st.lists(w(item), max_size=5)))},
        optional={
            "instructions": w(st.one_of(content_text, st.lists(part, max_size=2))),
            "tools": w(st.lists(w(tool), max_size=3)),
            "text": w(st.sampled_from([{"format": {"type": "json_schema", "name": "x", "schema": {}}}, {"format": {"type": "text"}}, {}])),
            "reasoning": w(st.sampled_from([{"effort": "low"}, {"effort": "high"}, {}])),
            "prompt_cache_key": w(st.text(max_size=8)),
        },
    )


BODIES = {"anthropic": anthropic_bodies, "openai-chat": openai_chat_bodies, "openai-responses": openai_responses_bodies}


def paths(value: Any, prefix: tuple = ()) -> list[tuple]:
    """Every place in a JSON value, as a tuple of keys / indexes (the root is ())."""
    out = [prefix]
    if isinstance(value, dict):
        for k, v in value.items():
            out += paths(v, prefix + (k,))
    elif isinstance(value, list):
        for i, v in enumerate(value):
            out += paths(v, prefix + (i,))
    return out


def replaced(value: Any, path: tuple, new: Any) -> Any:
    """A copy of `value` with the node at `path` replaced by `new`."""
    if not path:
        return new
    head, rest = path[0], path[1:]
    if isinstance(value, dict):
        return {k: (replaced(v, rest, new) if k == head else v) for k, v in value.items()}
    return [replaced(v, rest, new) if i == head else v for i, v in enumerate(value)]


@st.composite
def corrupted_bodies(draw) -> dict:
    """A body of a known shape, then any node (a key's value, a list element, ...) replaced by any JSON value."""
    kind = draw(st.sampled_from(sorted(BODIES)))
    body = draw(BODIES[kind](wrong=draw(st.booleans())))
    for _ in range(draw(st.integers(0, 3))):
        where = draw(st.sampled_from(paths(body)[1:] or [("messages",)]))
        body = replaced(body, where, draw(json_values))
    if draw(rarely(6)):  # a key of another provider's shape
        body = {**body, draw(st.sampled_from(["system", "input", "messages", "instructions", "functions", "anthropic_version"])): draw(json_values)}
    return body


# --------------------------------------------------------------------------------------------------------
# SSE streams and usage
# --------------------------------------------------------------------------------------------------------

line_ends = st.sampled_from(["\n", "\r\n", "\r"])
_sse_line_text = st.text(st.characters(blacklist_categories=("Cs",), blacklist_characters="\r\n"), max_size=30)


@st.composite
def sse_events(draw) -> tuple[list[tuple[str, str]], bytes]:
    """(the events a stream carries, the stream's bytes): event names, multi-line data, comments, ids,
    retry fields and unknown fields, with any line ending."""
    events: list[tuple[str, str]] = []
    out: list[str] = []
    end = draw(line_ends)  # one per stream: a CR then an LF from the next line would be one CRLF
    if draw(st.booleans()):
        out.append(":" + draw(_sse_line_text) + end)
    for _ in range(draw(st.integers(0, 5))):
        name = draw(st.one_of(st.none(), st.just(""), _sse_line_text))
        data_lines = draw(st.lists(_sse_line_text, min_size=1, max_size=3))
        lines, values = [], []
        if name is not None:
            raw = draw(st.sampled_from(["event:", "event: "])) + name
            lines.append(raw)
            name = _field_value(raw)
        for d in data_lines:
            raw = draw(st.sampled_from(["data:", "data: "])) + d
            lines.append(raw)
            values.append(_field_value(raw))
        for extra in draw(st.lists(st.sampled_from(["id: 7", "retry: 100", ": keep-alive", "foo: bar", "id", "Data: x"]), max_size=2)):
            lines.insert(draw(st.integers(0, len(lines))), extra)
        for line in lines:
            out.append(line + end)
        out.append(end)  # the blank line that dispatches
        events.append((name or "message", "\n".join(values)))
    return events, "".join(out).encode("utf-8")


def _field_value(line: str) -> str:
    """What the WHATWG rules make of `field:value`: the value, without one leading space."""
    value = line.partition(":")[2]
    return value[1:] if value.startswith(" ") else value


def partitions(data: bytes, cuts: list[int]) -> list[bytes]:
    points = sorted({c % (len(data) + 1) for c in cuts})
    pieces, last = [], 0
    for p in points:
        pieces.append(data[last:p])
        last = p
    pieces.append(data[last:])
    return pieces


token_counts = st.integers(0, 10**7)


@st.composite
def anthropic_usage_streams(draw) -> tuple[str, dict]:
    """(an Anthropic SSE stream, the equivalent unstreamed message body)."""
    start = {"input_tokens": draw(token_counts), "output_tokens": draw(st.integers(0, 5))}
    for key in ("cache_creation_input_tokens", "cache_read_input_tokens"):
        if draw(st.booleans()):
            start[key] = draw(st.one_of(token_counts, st.none()))
    if draw(st.booleans()):
        start["cache_creation"] = {"ephemeral_5m_input_tokens": draw(token_counts), "ephemeral_1h_input_tokens": draw(token_counts)}
    deltas = []
    for _ in range(draw(st.integers(0, 3))):
        delta = {"output_tokens": draw(token_counts)}
        for key in ("input_tokens", "cache_creation_input_tokens", "cache_read_input_tokens", "server_tool_use"):
            if draw(rarely(4)):
                delta[key] = draw(st.one_of(token_counts, st.none()))
        deltas.append(delta)
    merged = dict(start)
    for delta in deltas:
        merged.update({k: v for k, v in delta.items() if v is not None})
    message = {"id": "msg_1", "type": "message", "role": "assistant", "model": "claude-sonnet-4-5", "content": [], "stop_reason": None, "usage": start}
    events = [("message_start", {"type": "message_start", "message": message}),
              ("content_block_start", {"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}})]
    for text in draw(st.lists(st.text(max_size=12), max_size=3)):
        events.append(("content_block_delta", {"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": text}}))
        if draw(rarely(4)):
            events.append(("ping", {"type": "ping"}))
    events.append(("content_block_stop", {"type": "content_block_stop", "index": 0}))
    for delta in deltas:
        events.append(("message_delta", {"type": "message_delta", "delta": {"stop_reason": "end_turn"}, "usage": delta}))
    events.append(("message_stop", {"type": "message_stop"}))
    end = draw(line_ends)
    stream = "".join(f"event: {name}{end}data: {json.dumps(data, ensure_ascii=draw(st.booleans()))}{end}{end}" for name, data in events)
    body = {**message, "stop_reason": "end_turn", "usage": merged}
    return stream, body


@st.composite
def openai_chat_usage_streams(draw) -> tuple[str, dict]:
    """(an OpenAI Chat SSE stream with stream_options.include_usage, the equivalent unstreamed body)."""
    usage = {"prompt_tokens": draw(token_counts), "completion_tokens": draw(token_counts)}
    usage["total_tokens"] = usage["prompt_tokens"] + usage["completion_tokens"]
    if draw(st.booleans()):
        usage["prompt_tokens_details"] = {"cached_tokens": draw(token_counts), "audio_tokens": 0}
        if draw(st.booleans()):
            usage["prompt_tokens_details"]["cache_write_tokens"] = draw(token_counts)
    chunks = []
    null_usage = draw(st.booleans())
    for text in draw(st.lists(st.text(max_size=12), max_size=4)):
        chunk = {"id": "c1", "object": "chat.completion.chunk", "choices": [{"index": 0, "delta": {"content": text}}]}
        if null_usage:
            chunk["usage"] = None
        chunks.append(chunk)
    chunks.append({"id": "c1", "object": "chat.completion.chunk", "choices": [], "usage": usage})
    end = draw(line_ends)
    stream = "".join(f"data: {json.dumps(c)}{end}{end}" for c in chunks) + f"data: [DONE]{end}{end}"
    body = {"id": "c1", "object": "chat.completion", "choices": [{"index": 0, "message": {"role": "assistant", "content": "x"}}], "usage": usage}
    return stream, body


@st.composite
def openai_responses_usage_streams(draw) -> tuple[str, dict]:
    usage = {"input_tokens": draw(token_counts), "output_tokens": draw(token_counts),
             "input_tokens_details": {"cached_tokens": draw(token_counts)}}
    response = {"id": "resp_1", "object": "response", "status": "completed", "usage": usage}
    end = draw(line_ends)
    events = [("response.created", {"type": "response.created", "response": {"id": "resp_1", "usage": None}}),
              ("response.output_text.delta", {"type": "response.output_text.delta", "delta": "hi"}),
              (draw(st.sampled_from(["response.completed", "response.incomplete"])), {"type": "response.completed", "response": response})]
    events[-1][1]["type"] = events[-1][0]
    stream = "".join(f"event: {name}{end}data: {json.dumps(data)}{end}{end}" for name, data in events)
    return stream, response


@st.composite
def garbage_streams(draw) -> str | bytes:
    """Streams that are not quite SSE, or not quite JSON: random text, truncated JSON, `data:` lines with no
    blank line, usage fields of any type."""
    provider_json = st.one_of(
        st.builds(lambda u: {"type": "message_start", "message": {"usage": u}}, json_values),
        st.builds(lambda u: {"type": "message_start", "message": u}, json_values),
        st.builds(lambda u: {"type": "message_delta", "usage": u}, json_values),
        st.builds(lambda u: {"usage": u}, json_values),
        st.builds(lambda t, r: {"type": t, "response": r}, st.sampled_from(["response.completed", "response.incomplete", "response.x"]), json_values),
        json_values,
    )
    line = st.one_of(
        provider_json.map(lambda v: "data: " + json.dumps(v)),
        provider_json.map(lambda v: "data: " + json.dumps(v)).flatmap(lambda s: st.integers(0, len(s)).map(lambda i: s[:i])),  # truncated
        st.sampled_from(["data: [DONE]", "data:", "event: message_start", ":", "data: {", "data: }", "data: null", "data: 1e999", "retry: x"]),
        st.text(max_size=40),
    )
    text = draw(st.lists(st.tuples(line, st.sampled_from(["\n", "\r\n", "\r", "\n\n", "", "\r\n\r\n"])).map("".join), max_size=8).map("".join))
    choice = draw(st.integers(0, 4))
    if choice == 0:
        return text.encode("utf-8", "surrogatepass")[: draw(st.integers(0, len(text.encode("utf-8", "surrogatepass"))))] + draw(st.binary(max_size=8))
    if choice == 1:
        return "{" + text  # looks like a JSON body
    if choice == 2:
        return json.dumps(draw(provider_json))[: draw(st.integers(0, 200))]
    return text


# --- programs made to carry fixes (CL102 sort_keys, CL103 / CL201 sorted) -------------------------------

JSON_ARGS = ["dict(profile)", "{k: v for k, v in profile.items()}", "{**profile, 'k': 1}", "{'user': user, **extra}", "vars(obj)"]
JSON_TAILS = ["", ", indent=2", ", default=str", ",", ", ensure_ascii=False,  # keep unicode\n", ", *rest", ", **opts",
              "\n        , indent=2\n    ", ",\n        separators=(',', ':'),\n    "]
UNORDERED_EXPRS = ["os.listdir('notes')", "os.listdir(NOTES)", "glob.glob('docs/*.md')", "Path('docs').iterdir()",
                   "Path(root).glob('*.txt')", "Path(root).rglob('*')", "{'alpha', 'beta', 'gamma'}", "set(names)",
                   "os.scandir('notes')", "REGISTRY.values()", "REGISTRY.keys()", "{n for n in names}"]
PLACEMENTS = ['"\\n".join({x})', 'f"Notes: {{{x}}}"', '"Profile: " + {x}', "str({x})", '", ".join(str(n) for n in {x})',
              '"".join(sorted({x})) + {x2}', "[{{'type': 'text', 'text': {x}}}]", '"{{}}".format({x})', "{x}"]


@st.composite
def fixable_programs(draw) -> str:
    """A request whose prefix carries values with a known fix, laid out in the odd ways code is written."""
    def json_expr() -> str:
        func = draw(st.sampled_from(["json.dumps", "js.dumps", "dumps"]))
        return f"{func}({draw(st.sampled_from(JSON_ARGS))}{draw(st.sampled_from(JSON_TAILS))})"

    def value() -> str:
        x = json_expr() if draw(st.booleans()) else draw(st.sampled_from(UNORDERED_EXPRS))
        placement = draw(st.sampled_from(PLACEMENTS))
        return placement.format(x=x, x2=json_expr() if "{x2}" in placement else "")

    sdk = draw(st.sampled_from(["anthropic", "chat", "responses"]))
    lines = ["import json", "import json as js", "from json import dumps", "import os", "import glob", "from pathlib import Path",
             "import anthropic" if sdk == "anthropic" else "from openai import OpenAI", "NOTES = 'notes'", "REGISTRY = {}",
             "def register(tool):", "    REGISTRY[tool['name']] = tool", "    return tool",
             f"client = {'anthropic.Anthropic()' if sdk == 'anthropic' else 'OpenAI()'}"]
    body = []
    for name in draw(st.lists(st.sampled_from(["system", "notes", "context", "rules"]), min_size=1, max_size=3, unique=True)):
        body.append(f"{name} = {value()}")
    parts = " + ".join(n.split(" = ")[0] for n in body)
    tools = draw(st.sampled_from(["list(REGISTRY.values())", "[*REGISTRY.values()]", "[t for t in REGISTRY.values()]",
                                  "sorted(REGISTRY.values(), key=lambda t: t['name'])", "TOOLS"]))
    sep = draw(st.sampled_from([", ", ",\n        ", ",  # arg\n        "]))
    if sdk == "anthropic":
        args = ["model='claude-sonnet-4-5'", "max_tokens=100", f"tools={tools}", f"system={parts}",
                "messages=[{'role': 'user', 'content': q}]"]
        call = "client.messages.create("
    elif sdk == "chat":
        args = ["model='gpt-4o'", f"tools={tools}", f"messages=[{{'role': 'system', 'content': {parts}}}, {{'role': 'user', 'content': q}}]"]
        call = "client.chat.completions.create("
    else:
        args = ["model='gpt-5'", f"tools={tools}", f"instructions={parts}", "input=q"]
        call = "client.responses.create("
    header = draw(st.sampled_from(["def ask(q, profile, user, extra, names, obj, root, rest, opts):",
                                   "async def ask(session, q, profile, user, extra, names, obj, root, rest, opts):"]))
    trailing = draw(st.sampled_from(["", ",", ",\n    "]))
    lines += [header] + ["    " + b for b in "\n".join(body).split("\n")] + [f"    return {call}{sep.join(args)}{trailing})"]
    return "\n".join(lines) + "\n"
