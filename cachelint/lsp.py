"""`cachelint lsp`: `cachelint check` as a language server (pygls 2, stdio).

Diagnostics on open, change (debounced) and save, cleared on close; quick fixes, `# noqa` suppressions and
`source.fixAll.cachelint`; hover on `# noqa: CLxxx` shows the rule's doc. Columns are converted from code
points (libcst) to UTF-16 code units (LSP). The workspace's `[tool.cachelint]` config is re-read when a
config file changes.

With a store (the `store` initialization option, the `cachelint.store` workspace setting, or `store = ...` in
`[tool.cachelint]`, relative to that file), what the proxy recorded joins the code (cachelint.link): a finding
says what was observed at its line ("observed: 14 breaks, 8,200 tokens prefilled again in the last 7 days")
and a hover on an LLM call site shows the live hit rate of the traffic sent from it.

The transport is read by this module, not pygls: every message is framed by a `Content-Length` of at most
`MAX_MESSAGE_BYTES`, header lines are bounded, and a framing error (a bad or missing length, a header that is
not one, input that ends inside a message) is answered with a JSON-RPC error and the server exits with
status 1 instead of waiting forever or allocating what the header claims. A body that is not JSON gets a
parse error and the server goes on.
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import sys
import threading
import time
from pathlib import Path
from typing import Any, BinaryIO
from urllib.parse import unquote, urlparse

from lsprotocol import types
from pygls.lsp.server import LanguageServer

from cachelint import __version__
from cachelint.check.config import Config, load_config
from cachelint.check.engine import lint_source
from cachelint.check.finding import Edit, Finding, seen_from
from cachelint.check.registry import rule
from cachelint.check.run import fix_source, options_for
from cachelint.errors import CachelintError
from cachelint.rules import RULE_META

DEBOUNCE_S = 0.25
MAX_MESSAGE_BYTES = 64 * 1024 * 1024
MAX_HEADER_LINE = 8 * 1024
MAX_HEADER_LINES = 32
STORE_REFRESH_S = 10.0  # a store that changed is read again at most this often
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


def store_from_settings(settings: Any) -> str | None:
    """The store named in initialization options or workspace settings: `{"store": ...}` or
    `{"cachelint": {"store": ...}}`."""
    if not isinstance(settings, dict):
        return None
    inner = settings.get("cachelint")
    value = inner.get("store") if isinstance(inner, dict) else settings.get("store")
    return value if isinstance(value, str) and value.strip() else None


class CachelintServer(LanguageServer):
    def __init__(self) -> None:
        super().__init__("cachelint", __version__, text_document_sync_kind=types.TextDocumentSyncKind.Incremental)
        self.configs: dict[Path, Config] = {}
        self.pending: dict[str, asyncio.Task] = {}
        self.store_setting: str | None = None
        self.observed: dict[tuple[Path, Path], Any] = {}  # (store, root) -> cachelint.link.observe.Observations
        self.observed_checked: dict[tuple[Path, Path], float] = {}
        self.store_errors: set[str] = set()
        self.observe_lock = threading.Lock()

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

    def root_for(self, path: Path) -> Path:
        root = self.workspace.root_path if self.workspace else None
        return Path(root) if root else self.config_for(path).root

    def store_for(self, path: Path) -> Path | None:
        if self.store_setting:
            root = self.root_for(path)
            store = Path(os.path.expanduser(self.store_setting.replace("${workspaceFolder}", str(root))))
            return store if store.is_absolute() else root / store
        config = self.config_for(path)  # `store = ...` of the nearest configuration file, relative to its folder
        if not config.store:
            return None
        store = Path(os.path.expanduser(config.store))
        return store if store.is_absolute() else config.root / store

    def observations(self, path: Path) -> Any:
        """What the store recorded about this workspace (None without a store), read again when it changed."""
        store = self.store_for(path)
        if store is None:
            return None
        from cachelint.link.observe import Observations

        key = (Path(os.path.abspath(store)), Path(os.path.abspath(self.root_for(path))))
        with self.observe_lock:
            found = self.observed.get(key)
            checked = self.observed_checked.get(key, 0.0)
            if found is not None and (found.fresh() or time.monotonic() - checked < STORE_REFRESH_S):
                return found
            self.observed_checked[key] = time.monotonic()
            if found is None:  # the first reading: the diagnostics wait for it
                return self.read_store(key, Observations)
        # a store that changed since: read it again in the background, answer with the last reading meanwhile
        threading.Thread(target=self.read_store, args=(key, Observations), daemon=True).start()
        return found

    def read_store(self, key: tuple[Path, Path], reader: Any) -> Any:
        try:
            found = reader.load(key[0], key[1])
        except CachelintError as exc:
            if str(exc) not in self.store_errors:
                self.store_errors.add(str(exc))
                self.window_show_message(types.ShowMessageParams(types.MessageType.Warning, f"cachelint: {exc}"))
            return self.observed.get(key)  # the last good reading, if any
        except Exception as exc:  # a store being written or a tree being edited: try again later, never crash
            print(f"cachelint: lsp: could not read the store {key[0]} ({type(exc).__name__}: {exc})", file=sys.stderr)
            return self.observed.get(key)
        self.observed[key] = found
        return found

    def findings(self, uri: str, source: str) -> list[Finding]:
        path = path_of(uri)
        config = self.config_for(path)
        if config.is_test(path, base=self.root_for(path)):
            return []  # as `cachelint check`: a test module's requests never run in the app (include-tests = true checks it)
        return seen_from(lint_source(source, str(path), config.enabled_codes(path), options_for(config)), str(path))

    def publish(self, uri: str) -> None:
        document = self.workspace.get_text_document(uri)
        version = document.version
        source = document.source
        findings = self.findings(uri, source)
        observed = self.observations(path_of(uri)) if findings else None
        if self.workspace.get_text_document(uri).version != version:
            return  # an edit arrived while linting: the next lint will publish
        lines = source.splitlines()
        diagnostics = []
        for f in findings:
            diag = diagnostic(f, lines)
            stats = observed.for_span(path_of(uri), f.row, max(f.row, f.end_row)) if observed is not None else None
            if stats is not None:
                diag.message = f"{diag.message} ({stats.words()})"
                diag.data["observed"] = {"breaks": stats.breaks, "wasted_prefill_tokens": stats.wasted_prefill_tokens}
            diagnostics.append(diag)
        self.text_document_publish_diagnostics(types.PublishDiagnosticsParams(uri=uri, version=version, diagnostics=diagnostics))

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


@server.feature(types.INITIALIZE)
def initialize(ls: CachelintServer, params: types.InitializeParams) -> None:
    ls.store_setting = store_from_settings(params.initialization_options) or ls.store_setting


@server.feature(types.WORKSPACE_DID_CHANGE_CONFIGURATION)
def did_change_configuration(ls: CachelintServer, params: types.DidChangeConfigurationParams) -> None:
    ls.configs.clear()
    found = store_from_settings(params.settings)
    if found:
        ls.store_setting = found


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
        return call_site_hover(ls, params.text_document.uri, document.source, params.position.line + 1)
    for found in re.finditer(r"[A-Z]+[0-9]+", match.group("codes"), re.I):
        start, end = match.start("codes") + found.start(), match.start("codes") + found.end()
        if start <= column <= end:
            rule_class = rule(found.group(0))
            meta = RULE_META.get(found.group(0).upper())
            doc = rule_class.doc_markdown() if rule_class else (f"## {meta.code} {meta.name}\n\n{meta.summary}" if meta else None)
            if doc:
                return types.Hover(contents=types.MarkupContent(kind=types.MarkupKind.Markdown, value=doc))
    return None


def call_site_hover(ls: CachelintServer, uri: str, source: str, line: int) -> types.Hover | None:
    """On an LLM call site, with a store: the live hit rate of the traffic sent from it."""
    from cachelint.link.observe import call_spans

    spans = [span for span in call_spans(source) if span[0] <= line <= span[1]]
    if not spans:
        return None
    path = path_of(uri)
    observed = ls.observations(path)
    if observed is None:
        return None
    first = max(spans)[0]  # the innermost call on the line
    stats = observed.for_call(path, first)
    text = stats.words() if stats is not None else "**cachelint, live**: no recorded traffic is attributed to this call site"
    return types.Hover(contents=types.MarkupContent(kind=types.MarkupKind.Markdown, value=text))


# --- transport ---------------------------------------------------------------------------------------


class FramingError(Exception):
    """The input is not a stream of LSP messages any more: nothing after it can be trusted."""


def read_message(stream: BinaryIO) -> bytes | None:
    """One message body from an LSP byte stream (None at a clean end of input).

    Bounded: header lines of at most MAX_HEADER_LINE bytes, at most MAX_HEADER_LINES of them, a body of at most
    MAX_MESSAGE_BYTES; the length is checked before anything is allocated for the body."""
    length: int | None = None
    started = False
    for _ in range(MAX_HEADER_LINES):
        line = stream.readline(MAX_HEADER_LINE + 1)
        if not line:
            if started:
                raise FramingError("the input ended inside a message header")
            return None
        if len(line) > MAX_HEADER_LINE:
            raise FramingError(f"a header line longer than {MAX_HEADER_LINE:,} bytes")
        text = line.rstrip(b"\r\n")
        if not text:
            if not started:
                continue  # blank lines between messages
            if length is None:
                raise FramingError("a message without a Content-Length header")
            break
        started = True
        name, colon, value = text.partition(b":")
        if not colon:
            raise FramingError(f"not a header: {text[:60]!r}")
        if name.strip().lower() == b"content-length":
            value = value.strip()
            if not value.isdigit() or len(value) > 19:
                raise FramingError(f"a bad Content-Length: {value[:40]!r}")
            length = int(value)
            if length > MAX_MESSAGE_BYTES:
                raise FramingError(f"a message of {length:,} bytes, over the {MAX_MESSAGE_BYTES:,}-byte limit")
    else:
        raise FramingError(f"more than {MAX_HEADER_LINES} header lines")
    body = stream.read(length)
    if len(body) < length:
        raise FramingError("the input ended inside a message body")
    return body


def error_frame(code: int, message: str, id: Any = None) -> bytes:
    body = json.dumps({"jsonrpc": "2.0", "id": id, "error": {"code": code, "message": message}}).encode("utf-8")
    return b"Content-Length: %d\r\n\r\n" % len(body) + body


async def serve(ls: CachelintServer, stdin: BinaryIO, stdout: BinaryIO) -> int:
    """Read messages and hand them to pygls's protocol until the input ends (0) or breaks (1)."""
    from pygls.io_ import StdoutWriter

    writer = StdoutWriter(stdout)
    ls.protocol.set_writer(writer)
    loop = asyncio.get_running_loop()
    while True:
        try:
            body = await loop.run_in_executor(None, read_message, stdin)
        except FramingError as exc:
            writer.write(error_frame(-32700, f"cachelint lsp: framing error: {exc}"))
            print(f"cachelint: error: lsp: framing error: {exc}; stopping", file=sys.stderr)
            return 1
        if body is None:
            return 0
        try:
            message = json.loads(body, object_hook=ls.protocol.structure_message)
        except (ValueError, RecursionError) as exc:
            writer.write(error_frame(-32700, f"Parse error: {exc}"))
            continue
        if not hasattr(message, "jsonrpc"):
            writer.write(error_frame(-32600, "Invalid Request: not a JSON-RPC message", message.get("id") if isinstance(message, dict) else None))
            continue
        try:
            ls.protocol.handle_message(message)
        except SystemExit:
            raise
        except Exception as exc:  # a handler's bug costs one message, never the server
            print(f"cachelint: lsp: could not handle a message ({type(exc).__name__}: {exc})", file=sys.stderr)


def main() -> None:
    """Serve on standard input and output; exit 1 after a framing error, 0 at the end of input."""
    server._stop_event = threading.Event()
    code = 0
    try:
        code = asyncio.run(serve(server, sys.stdin.buffer, sys.stdout.buffer))
    except BrokenPipeError:
        code = 0
    except KeyboardInterrupt:
        code = 130
    except SystemExit as exc:
        code = exc.code if isinstance(exc.code, int) else 0
    finally:
        server.shutdown()
    sys.exit(code)
