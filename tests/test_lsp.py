"""`cachelint lsp` through the real LSP protocol (pytest-lsp drives the real server over stdio)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
import pytest_lsp
from lsprotocol import types
from pytest_lsp import ClientServerConfig, LanguageClient, client_capabilities

from cachelint.lsp import codepoint_column, utf16_column
from test_check_cli import JSONB_STORE

SOURCE = '''from datetime import datetime
import json

import anthropic

client = anthropic.Anthropic()


def ask(profile: dict, question: str):
    system = f"Héllo 🎉 {datetime.now()} profile {json.dumps(profile)}"
    return client.messages.create(model="claude-sonnet-4-5", max_tokens=100, system=system,
                                  messages=[{"role": "user", "content": question}])
''' + JSONB_STORE  # sessions kept in jsonb: CL102 applies


@pytest_lsp.fixture(config=ClientServerConfig(server_command=[sys.executable, "-m", "cachelint", "lsp"]))
async def client(lsp_client: LanguageClient, tmp_path_factory):
    root = tmp_path_factory.mktemp("workspace")
    (root / "pyproject.toml").write_text("[tool.cachelint]\nignore = []\n")
    lsp_client.root = root
    await lsp_client.initialize_session(types.InitializeParams(capabilities=client_capabilities("visual-studio-code"), root_uri=root.as_uri()))
    yield
    await lsp_client.shutdown_session()


async def open_document(client: LanguageClient, text: str, name: str = "app.py") -> str:
    uri = (client.root / name).as_uri()
    client.text_document_did_open(types.DidOpenTextDocumentParams(types.TextDocumentItem(uri=uri, language_id="python", version=1, text=text)))
    await client.wait_for_notification(types.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS)
    return uri


async def test_diagnostics_at_the_right_utf16_range_with_rule_metadata(client: LanguageClient):
    uri = await open_document(client, SOURCE)
    diags = {d.code: d for d in client.diagnostics[uri]}
    assert set(diags) == {"CL101", "CL102"}
    d = diags["CL101"]
    line = SOURCE.splitlines()[9]
    start = line.index("datetime.now()")
    # 'é' is one UTF-16 unit, '🎉' two: the server must count as the editor does
    assert d.range.start == types.Position(line=9, character=len(line[:start].encode("utf-16-le")) // 2)
    assert d.source == "cachelint" and d.severity == types.DiagnosticSeverity.Error
    assert d.code_description.href.endswith("#cl101-volatile-value-in-prefix")


async def test_quick_fix_makes_the_finding_go_away(client: LanguageClient):
    uri = await open_document(client, SOURCE)
    diag = next(d for d in client.diagnostics[uri] if d.code == "CL102")
    actions = await client.text_document_code_action_async(types.CodeActionParams(
        text_document=types.TextDocumentIdentifier(uri=uri), range=diag.range,
        context=types.CodeActionContext(diagnostics=[diag], only=[types.CodeActionKind.QuickFix])))
    fix = next(a for a in actions if "sort_keys" in a.title)
    [edit] = fix.edit.changes[uri]
    lines = SOURCE.splitlines(keepends=True)
    line = lines[edit.range.start.line]
    start = codepoint_column(line, edit.range.start.character)
    end = codepoint_column(line, edit.range.end.character)
    lines[edit.range.start.line] = line[:start] + edit.new_text + line[end:]
    fixed = "".join(lines)
    assert "json.dumps(profile, sort_keys=True)" in fixed
    client.text_document_did_change(types.DidChangeTextDocumentParams(
        text_document=types.VersionedTextDocumentIdentifier(uri=uri, version=2),
        content_changes=[types.TextDocumentContentChangeWholeDocument(text=fixed)]))
    await client.wait_for_notification(types.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS)
    assert {d.code for d in client.diagnostics[uri]} == {"CL101"}


async def test_suppress_action_hover_fix_all_and_close(client: LanguageClient):
    uri = await open_document(client, SOURCE)
    diag = next(d for d in client.diagnostics[uri] if d.code == "CL101")
    actions = await client.text_document_code_action_async(types.CodeActionParams(
        text_document=types.TextDocumentIdentifier(uri=uri), range=diag.range, context=types.CodeActionContext(diagnostics=[diag])))
    suppress = next(a for a in actions if "noqa" in a.title)
    assert suppress.edit.changes[uri][0].new_text == "  # noqa: CL101"
    fix_all = next(a for a in actions if a.kind == "source.fixAll.cachelint")
    assert "sort_keys=True" in fix_all.edit.changes[uri][0].new_text
    text = "import anthropic\nx = 1  # noqa: CL101\n"
    hover_uri = await open_document(client, text, "hover.py")
    hover = await client.text_document_hover_async(types.HoverParams(
        text_document=types.TextDocumentIdentifier(uri=hover_uri), position=types.Position(line=1, character=text.splitlines()[1].index("CL101") + 2)))
    assert "volatile-value-in-prefix" in hover.contents.value and "Why is this bad?" in hover.contents.value
    client.text_document_did_close(types.DidCloseTextDocumentParams(types.TextDocumentIdentifier(uri=uri)))
    await client.wait_for_notification(types.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS)
    assert list(client.diagnostics[uri]) == []


async def test_unparsable_documents_and_fast_edits(client: LanguageClient):
    uri = await open_document(client, "import openai\ndef broken(:\n")
    assert [d.code for d in client.diagnostics[uri]] == ["CL999"]
    for version in range(2, 30):  # edits faster than it lints: only the last one counts
        client.text_document_did_change(types.DidChangeTextDocumentParams(
            text_document=types.VersionedTextDocumentIdentifier(uri=uri, version=version),
            content_changes=[types.TextDocumentContentChangeWholeDocument(text=SOURCE if version == 29 else f"import openai\nx = ({version}\n")]))
    await client.wait_for_notification(types.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS)
    assert {d.code for d in client.diagnostics[uri]} == {"CL101", "CL102"}


def test_column_conversions():
    line = "é🎉x"
    assert utf16_column(line, 1) == 0 and utf16_column(line, 3) == 3 and utf16_column(line, 4) == 4
    assert codepoint_column(line, 3) == 2 and codepoint_column(line, 4) == 3


# --- what the proxy recorded, in the editor (cachelint.link) ----------------------------------------

BILLING_APP = '''from datetime import datetime

import anthropic

client = anthropic.Anthropic()
RULES = "You are the billing assistant of Acme. Answer briefly and cite the invoice number. " * 40


def ask(question: str):
    system = f"Current time: {datetime.now().isoformat()}\\n" + RULES
    return client.messages.create(model="claude-sonnet-4-5", max_tokens=100, system=system,
                                  messages=[{"role": "user", "content": question}])
'''
BILLING_RULES = "You are the billing assistant of Acme. Answer briefly and cite the invoice number. " * 40


def record_billing_traffic(db: Path, tmp: Path) -> None:
    """Three turns of the billing app as the provider saw them (the clock ticked each turn, nothing was read
    from the cache), loaded through `cachelint import`: the proxy's own pipeline into a real store."""
    import json
    import subprocess
    import time

    messages, lines = [], []
    for turn in range(3):
        messages.append({"role": "user", "content": f"invoice question {turn}"})
        body = {"model": "claude-sonnet-4-5", "max_tokens": 100, "messages": list(messages),
                "system": [{"type": "text", "text": f"Current time: 2026-12-01T10:0{turn}:00.123456\n" + BILLING_RULES, "cache_control": {"type": "ephemeral"}}]}
        response = {"id": f"msg_{turn}", "type": "message", "role": "assistant", "model": "claude-sonnet-4-5", "content": [{"type": "text", "text": "ok"}],
                    "stop_reason": "end_turn", "usage": {"input_tokens": 8, "cache_creation_input_tokens": 3400 + 10 * turn, "cache_read_input_tokens": 0, "output_tokens": 2}}
        lines.append(json.dumps({"started_at": time.time() - 300 + turn, "request": {"method": "POST", "url": "https://api.anthropic.com/v1/messages",
                     "headers": {"content-type": "application/json", "x-claude-code-session-id": "billing-1"}, "body": body},
                     "response": {"status": 200, "headers": {"content-type": "application/json"}, "body": response}}))
        messages.append({"role": "assistant", "content": "ok"})
    (tmp / "traffic.jsonl").write_text("\n".join(lines) + "\n")
    done = subprocess.run([sys.executable, "-m", "cachelint", "import", "--db", str(db), str(tmp / "traffic.jsonl")], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr


def billing_workspace(tmp_path_factory, store_in_pyproject: bool) -> tuple[Path, Path]:
    root = tmp_path_factory.mktemp("billing")
    traffic = tmp_path_factory.mktemp("traffic")
    db = traffic / "cachelint.db"
    record_billing_traffic(db, traffic)
    (root / "app.py").write_text(BILLING_APP)
    store_line = f'store = "{db}"\n' if store_in_pyproject else ""
    (root / "pyproject.toml").write_text(f"[tool.cachelint]\nignore = []\n{store_line}")
    return root, db


@pytest_lsp.fixture(config=ClientServerConfig(server_command=[sys.executable, "-m", "cachelint", "lsp"]))
async def store_client(lsp_client: LanguageClient, tmp_path_factory):
    root, db = billing_workspace(tmp_path_factory, store_in_pyproject=False)
    lsp_client.root = root
    await lsp_client.initialize_session(types.InitializeParams(
        capabilities=client_capabilities("visual-studio-code"), root_uri=root.as_uri(), initialization_options={"store": str(db)}))
    yield
    await lsp_client.shutdown_session()


@pytest_lsp.fixture(config=ClientServerConfig(server_command=[sys.executable, "-m", "cachelint", "lsp"]))
async def pyproject_store_client(lsp_client: LanguageClient, tmp_path_factory):
    root, _db = billing_workspace(tmp_path_factory, store_in_pyproject=True)
    lsp_client.root = root
    await lsp_client.initialize_session(types.InitializeParams(capabilities=client_capabilities("visual-studio-code"), root_uri=root.as_uri()))
    yield
    await lsp_client.shutdown_session()


async def check_observed(client: LanguageClient) -> None:
    uri = await open_document(client, BILLING_APP)
    [diag] = [d for d in client.diagnostics[uri] if d.code == "CL101"]
    assert diag.range.start.line == 9
    assert "(observed: 2 breaks, 6,826 tokens prefilled again in the last 7 days)" in diag.message
    assert diag.data["observed"] == {"breaks": 2, "wasted_prefill_tokens": 6826}
    call_line = BILLING_APP.splitlines().index(next(line for line in BILLING_APP.splitlines() if "messages.create" in line))
    for line in (call_line, call_line + 1):  # anywhere on the call, which spans two lines
        hover = await client.text_document_hover_async(types.HoverParams(
            text_document=types.TextDocumentIdentifier(uri=uri), position=types.Position(line=line, character=20)))
        assert hover is not None and "hit rate 0% over 3 requests in 1 session, 2 breaks" in hover.contents.value
    elsewhere = await client.text_document_hover_async(types.HoverParams(
        text_document=types.TextDocumentIdentifier(uri=uri), position=types.Position(line=0, character=3)))
    assert elsewhere is None


async def test_findings_say_what_was_observed_and_call_sites_their_hit_rate(store_client: LanguageClient):
    await check_observed(store_client)


async def test_store_named_in_pyproject(pyproject_store_client: LanguageClient):
    await check_observed(pyproject_store_client)


async def test_store_from_the_editor_settings(client: LanguageClient, tmp_path):
    """VS Code sends the `cachelint.*` settings (vscode-ext's `cachelint.store`) as workspace/didChangeConfiguration."""
    record_billing_traffic(tmp_path / "s.db", tmp_path)
    (client.root / "app.py").write_text(BILLING_APP)
    client.workspace_did_change_configuration(types.DidChangeConfigurationParams(settings={"cachelint": {"enable": True, "store": str(tmp_path / "s.db")}}))
    await check_observed(client)


async def test_a_missing_store_is_said_once_and_linting_goes_on(client: LanguageClient, tmp_path):
    client.workspace_did_change_configuration(types.DidChangeConfigurationParams(settings={"cachelint": {"store": str(tmp_path / "none.db")}}))
    uri = await open_document(client, BILLING_APP)
    assert {d.code for d in client.diagnostics[uri]} == {"CL101"} and all("observed" not in d.message for d in client.diagnostics[uri])
    assert [m.message for m in client.messages if "none.db" in m.message] == [f"cachelint: {tmp_path / 'none.db'}: no such store (record traffic with `cachelint proxy` or `cachelint import` first)"]


async def test_without_a_store_nothing_observed_is_claimed(client: LanguageClient):
    uri = await open_document(client, BILLING_APP)
    assert all("observed" not in d.message for d in client.diagnostics[uri])
    line = next(i for i, text in enumerate(BILLING_APP.splitlines()) if "messages.create" in text)
    hover = await client.text_document_hover_async(types.HoverParams(
        text_document=types.TextDocumentIdentifier(uri=uri), position=types.Position(line=line, character=20)))
    assert hover is None


# --- the transport: framing errors answer or exit, never hang or allocate what a header claims -------------


def lsp_process(payload: bytes) -> tuple[int, bytes, str, int]:
    """Run `cachelint lsp` on these bytes (then end of input): exit code, stdout, stderr, and the server's peak RSS
    in KiB (measured by a parent of its own, so no other child of the test run counts)."""
    import json
    import subprocess

    parent = ("import json, resource, subprocess, sys\n"
              "done = subprocess.run([sys.executable, '-m', 'cachelint', 'lsp'], stdin=sys.stdin, capture_output=True, timeout=110)\n"
              "peak = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss\n"
              "print(json.dumps([done.returncode, done.stdout.decode('latin-1'), done.stderr.decode(errors='replace'), peak]))\n")
    done = subprocess.run([sys.executable, "-c", parent], input=payload, capture_output=True, timeout=120)
    code, out, err, peak = json.loads(done.stdout)
    return code, out.encode("latin-1"), err, peak


def frame(body: dict | bytes, eol: bytes = b"\r\n") -> bytes:
    import json

    data = body if isinstance(body, bytes) else json.dumps(body).encode()
    return b"Content-Length: " + str(len(data)).encode() + eol + eol + data


INIT = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"processId": None, "rootUri": None, "capabilities": {}}}


def test_a_huge_content_length_is_refused_without_allocating_it():
    code, out, err, peak_kib = lsp_process(b"Content-Length: 1000000000000\r\n\r\n{}")
    assert code == 1
    assert b'"code": -32700' in out and b"over the 67,108,864-byte limit" in out
    assert "cachelint: error: lsp: framing error: a message of 1,000,000,000,000 bytes" in err and "Traceback" not in err
    assert peak_kib < 1024 * 1024  # under 1 GiB: the claimed terabyte was never allocated


@pytest.mark.parametrize("payload, words", [
    (b"Content-Lenght: 10\r\n\r\n0123456789", b"a message without a Content-Length header"),
    (b"Content-Length: ten\r\n\r\n", b"a bad Content-Length"),
    (b"this is not a header\r\n\r\n", b"not a header"),
    (b"Content-Length: 50\r\n\r\n{\"jsonrpc\"", b"the input ended inside a message body"),
    (b"X-Pad: " + b"a" * 20000 + b"\r\n", b"a header line longer than"),
])
def test_a_framing_error_is_answered_and_the_server_exits(payload, words):
    code, out, err, _ = lsp_process(payload)
    assert code == 1 and words in out and "Traceback" not in err


def test_a_bad_body_is_answered_and_the_server_goes_on():
    shutdown = {"jsonrpc": "2.0", "id": 2, "method": "shutdown"}
    exit_ = {"jsonrpc": "2.0", "method": "exit"}
    payload = frame(b"{not json") + frame(b"[1, 2]") + frame(INIT, eol=b"\n") + frame(shutdown) + frame(exit_)
    code, out, err, _ = lsp_process(payload)
    assert code == 0, err
    assert b'"code": -32700' in out and b'"code": -32600' in out  # parse error, invalid request
    assert b'"capabilities"' in out and b'"id": 2' in out  # then initialize and shutdown were answered


BUILDER = '''import datetime


def get_system_message(name):
    now = datetime.datetime.now().strftime("%H:%M:%S")
    return f"You are {name}, a careful agent. The time is {now}."
'''
IMPORTER = '''from openai import OpenAI

from builder import get_system_message

client = OpenAI()


def step(history):
    system = get_system_message("Ada") + " Answer briefly."
    return client.chat.completions.create(model="gpt-4o", messages=[{"role": "system", "content": system}, *history])
'''


async def test_a_value_made_in_another_module_is_shown_where_the_open_document_reaches_it(client: LanguageClient):
    (client.root / "builder.py").write_text(BUILDER)
    # `cachelint check` reports the clock in builder.py, where it is written; the open document's diagnostics are
    # about its own rows: the editor shows it at the call that reaches it, never builder.py's rows painted onto it
    uri = await open_document(client, IMPORTER, "step.py")
    assert [(d.code, d.range.start.line) for d in client.diagnostics[uri]] == [("CL101", 8)]
    assert "builder.py:5" in client.diagnostics[uri][0].message
    builder = await open_document(client, BUILDER, "builder.py")
    assert [(d.code, d.range.start.line) for d in client.diagnostics[builder]] == [("CL101", 4)]
