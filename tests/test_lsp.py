"""`cachelint lsp` through the real LSP protocol (pytest-lsp drives the real server over stdio)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
import pytest_lsp
from lsprotocol import types
from pytest_lsp import ClientServerConfig, LanguageClient, client_capabilities

from cachelint.lsp import codepoint_column, utf16_column

SOURCE = '''from datetime import datetime
import json

import anthropic

client = anthropic.Anthropic()


def ask(profile: dict, question: str):
    system = f"Héllo 🎉 {datetime.now()} profile {json.dumps(profile)}"
    return client.messages.create(model="claude-sonnet-4-5", max_tokens=100, system=system,
                                  messages=[{"role": "user", "content": question}])
'''


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
