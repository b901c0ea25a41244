"""`cachelint lsp`: `cachelint check` as a language server (pygls 2, stdio).

Diagnostics on open, change (debounced) and save, cleared on close; quick fixes, `# noqa` suppressions and
`source.fixAll.cachelint`; hover on `# noqa: CLxxx` shows the rule's doc. Columns are converted from code
points (libcst) to UTF-16 code units (LSP). The workspace's `[tool.cachelint]` config is re-read when a
config file changes.
"""

from __future__ import annotations

import asyncio
import re
from pathlib import Path
from urllib.parse import unquote, urlparse

from lsprotocol import types
from pygls.lsp.server import LanguageServer

from cachelint import __version__
from cachelint.check.config import Config, load_config
from cachelint.check.engine import lint_source
from cachelint.check.finding import Edit, Finding
from cachelint.check.registry import rule
from cachelint.check.run import fix_source, options_for
from cachelint.errors import CachelintError
from cachelint.rules import RULE_META

DEBOUNCE_S = 0.25
FIX_ALL = "source.fixAll.cachelint"
CONFIG_FILES = ("pyproject.toml", "cachelint.toml", ".cachelint.toml")
_NOQA = re.compile(r"#\s*noqa:\s*(?P<codes>[A-Z]+[0-9]+(?:[\s,]+[A-Z]+[0-9]+)*)", re.I)


def utf16_column(line: str, column: int) -> int:
    """A 1-based code-point column as a 0-based UTF-16 offset (what LSP positions count)."""
    prefix = line[: max(0, column - 1)]
    return len(prefix.encode("utf-16-le")) // 2


def codepoint_column(line: str, character: int) -> int:
    """A 0-based UTF-16 offset as a 0-based code-point index."""
    units = 0
    for index, char in enumerate(line):
        if units >= character:
            return index
        units += 2 if ord(char) > 0xFFFF else 1
    return len(line)


def to_range(lines: list[str], row: int, column: int, end_row: int, end_column: int) -> types.Range:
    def line(r: int) -> str:
        return lines[r - 1] if 0 < r <= len(lines) else ""

    return types.Range(
        start=types.Position(line=max(0, row - 1), character=utf16_column(line(row), column)),
        end=types.Position(line=max(0, end_row - 1), character=utf16_column(line(end_row), end_column)),
    )


def diagnostic(finding: Finding, lines: list[str]) -> types.Diagnostic:
    meta = RULE_META.get(finding.code)
    return types.Diagnostic(
        range=to_range(lines, finding.row, finding.column, finding.end_row, finding.end_column),
        message=finding.message,
        severity=types.DiagnosticSeverity.Error if finding.severity == "error" else types.DiagnosticSeverity.Warning,
        code=finding.code,
        code_description=types.CodeDescription(href=meta.help_uri) if meta else None,
        source="cachelint",
        data={"fix": finding.fix.to_json() if finding.fix else None, "name": finding.name},
    )


def text_edit(edit: Edit, lines: list[str]) -> types.TextEdit:
    return types.TextEdit(range=to_range(lines, edit.row, edit.column, edit.end_row, edit.end_column), new_text=edit.content)


def noqa_edit(lines: list[str], row: int, code: str) -> types.TextEdit:
    """Add `code` to the line's `# noqa:` comment, or append one."""
    text = lines[row - 1] if 0 < row <= len(lines) else ""
    match = _NOQA.search(text)
    if match:
        codes = match.group("codes")
        start, end = match.span("codes")
        new = f"{codes}, {code}"
    else:
        start = end = len(text)
        new = f"  # noqa: {code}"
    rng = types.Range(start=types.Position(line=row - 1, character=utf16_column(text, start + 1)),
                      end=types.Position(line=row - 1, character=utf16_column(text, end + 1)))
    return types.TextEdit(range=rng, new_text=new)


def path_of(uri: str) -> Path:
    parsed = urlparse(uri)
    return Path(unquote(parsed.path)) if parsed.scheme == "file" else Path(parsed.path or "untitled.py")


class CachelintServer(LanguageServer):
    def __init__(self) -> None:
        super().__init__("cachelint", __version__, text_document_sync_kind=types.TextDocumentSyncKind.Incremental)
        self.configs: dict[Path, Config] = {}
        self.pending: dict[str, asyncio.Task] = {}

    def config_for(self, path: Path) -> Config:
        start = path.parent if path.parent.exists() else Path.cwd()
        config = self.configs.get(start)
        if config is None:
            try:
                config = load_config(start)
            except CachelintError as exc:
                self.window_show_message(types.ShowMessageParams(types.MessageType.Error, f"cachelint: {exc}"))
                config = Config(root=start)
            self.configs[start] = config
        return config

    def findings(self, uri: str, source: str) -> list[Finding]:
        path = path_of(uri)
        config = self.config_for(path)
        return lint_source(source, str(path), config.enabled_codes(path), options_for(config))

    def publish(self, uri: str) -> None:
        document = self.workspace.get_text_document(uri)
        version = document.version
        source = document.source
        findings = self.findings(uri, source)
        if self.workspace.get_text_document(uri).version != version:
            return  # an edit arrived while linting: the next lint will publish
        lines = source.splitlines()
        self.text_document_publish_diagnostics(
            types.PublishDiagnosticsParams(uri=uri, version=version, diagnostics=[diagnostic(f, lines) for f in findings])
        )

    async def lint_later(self, uri: str) -> None:
        previous = self.pending.pop(uri, None)
        if previous is not None:
            previous.cancel()

        async def run() -> None:
            await asyncio.sleep(DEBOUNCE_S)
            await asyncio.to_thread(self.publish, uri)

        self.pending[uri] = asyncio.ensure_future(run())


server = CachelintServer()


@server.feature(types.TEXT_DOCUMENT_DID_OPEN)
async def did_open(ls: CachelintServer, params: types.DidOpenTextDocumentParams) -> None:
    await asyncio.to_thread(ls.publish, params.text_document.uri)


@server.feature(types.TEXT_DOCUMENT_DID_CHANGE)
async def did_change(ls: CachelintServer, params: types.DidChangeTextDocumentParams) -> None:
    await ls.lint_later(params.text_document.uri)


@server.feature(types.TEXT_DOCUMENT_DID_SAVE)
async def did_save(ls: CachelintServer, params: types.DidSaveTextDocumentParams) -> None:
    if path_of(params.text_document.uri).name in CONFIG_FILES:
        ls.configs.clear()
    await asyncio.to_thread(ls.publish, params.text_document.uri)


@server.feature(types.TEXT_DOCUMENT_DID_CLOSE)
def did_close(ls: CachelintServer, params: types.DidCloseTextDocumentParams) -> None:
    task = ls.pending.pop(params.text_document.uri, None)
    if task is not None:
        task.cancel()
    ls.text_document_publish_diagnostics(types.PublishDiagnosticsParams(uri=params.text_document.uri, diagnostics=[]))


@server.feature(types.WORKSPACE_DID_CHANGE_WATCHED_FILES)
def did_change_watched_files(ls: CachelintServer, params: types.DidChangeWatchedFilesParams) -> None:
    if any(path_of(change.uri).name in CONFIG_FILES for change in params.changes):
        ls.configs.clear()
        for uri in list(ls.workspace.text_documents):
            ls.publish(uri)


@server.feature(types.WORKSPACE_DID_CHANGE_CONFIGURATION)
def did_change_configuration(ls: CachelintServer, params: types.DidChangeConfigurationParams) -> None:
    ls.configs.clear()


@server.feature(
    types.TEXT_DOCUMENT_CODE_ACTION,
    types.CodeActionOptions(code_action_kinds=[types.CodeActionKind.QuickFix, FIX_ALL]),
)
def code_action(ls: CachelintServer, params: types.CodeActionParams) -> list[types.CodeAction]:
    uri = params.text_document.uri
    document = ls.workspace.get_text_document(uri)
    lines = document.source.splitlines()
    actions: list[types.CodeAction] = []
    wanted = params.context.only
    if not wanted or types.CodeActionKind.QuickFix in wanted:
        for diag in params.context.diagnostics:
            if diag.source != "cachelint":
                continue
            fix = (diag.data or {}).get("fix") if isinstance(diag.data, dict) else None
            if fix:
                edits = [Edit(e["location"]["row"], e["location"]["column"], e["end_location"]["row"], e["end_location"]["column"], e["content"]) for e in fix["edits"]]
                actions.append(types.CodeAction(
                    title=f"cachelint: {fix['message']} ({diag.code})", kind=types.CodeActionKind.QuickFix, diagnostics=[diag],
                    is_preferred=fix["applicability"] == "safe",
                    edit=types.WorkspaceEdit(changes={uri: [text_edit(e, lines) for e in edits]}),
                ))
            actions.append(types.CodeAction(
                title=f"cachelint: suppress {diag.code} on this line (# noqa)", kind=types.CodeActionKind.QuickFix, diagnostics=[diag],
                edit=types.WorkspaceEdit(changes={uri: [noqa_edit(lines, diag.range.start.line + 1, str(diag.code))]}),
            ))
    if not wanted or any(str(k).startswith("source") for k in wanted):
        path = path_of(uri)
        config = ls.config_for(path)
        fixed, applied, _ = fix_source(document.source, str(path), config.enabled_codes(path), options_for(config), unsafe=False)
        if applied:
            end = types.Position(line=len(lines), character=0)
            actions.append(types.CodeAction(
                title="cachelint: fix all safe fixes", kind=FIX_ALL,
                edit=types.WorkspaceEdit(changes={uri: [types.TextEdit(range=types.Range(start=types.Position(line=0, character=0), end=end), new_text=fixed)]}),
            ))
    return actions


@server.feature(types.TEXT_DOCUMENT_HOVER)
def hover(ls: CachelintServer, params: types.HoverParams) -> types.Hover | None:
    document = ls.workspace.get_text_document(params.text_document.uri)
    lines = document.source.splitlines()
    if params.position.line >= len(lines):
        return None
    text = lines[params.position.line]
    match = _NOQA.search(text)
    column = codepoint_column(text, params.position.character)
    if not match or not (match.start() <= column <= match.end()):
        return None
    for found in re.finditer(r"[A-Z]+[0-9]+", match.group("codes"), re.I):
        start, end = match.start("codes") + found.start(), match.start("codes") + found.end()
        if start <= column <= end:
            rule_class = rule(found.group(0))
            meta = RULE_META.get(found.group(0).upper())
            doc = rule_class.doc_markdown() if rule_class else (f"## {meta.code} {meta.name}\n\n{meta.summary}" if meta else None)
            if doc:
                return types.Hover(contents=types.MarkupContent(kind=types.MarkupKind.Markdown, value=doc))
    return None


def main() -> None:
    server.start_io()
