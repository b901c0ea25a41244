/**
 * A smoke test against the real server: the extension's own resolution, preflight and spawn start
 * `<python> -m cachelint lsp`, and a JSON-RPC client (vscode-languageserver-protocol, as inside VS Code)
 * gets diagnostics for a file. Runs when a Python with cachelint is found: $CACHELINT_PYTHON, else the
 * repository's .venv or .venv-ci; skipped otherwise. The protocol itself is tested in tests/test_lsp.py.
 */
import * as assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import * as fs from "node:fs";
import * as path from "node:path";
import { pathToFileURL } from "node:url";
import { after, describe, it } from "node:test";
import {
  createMessageConnection,
  InitializeRequest,
  InitializedNotification,
  PublishDiagnosticsNotification,
  PublishDiagnosticsParams,
  ShutdownRequest,
  ExitNotification,
  DidOpenTextDocumentNotification,
  StreamMessageReader,
  StreamMessageWriter,
} from "vscode-languageserver-protocol/node";

import { resolveServerCommand } from "../src/command";
import { preflight, spawnServer } from "../src/process";
import { DEFAULT_SETTINGS } from "../src/settings";
import { removeTempDirs, tempDir } from "./fakes/servers";

after(removeTempDirs);

function findPython(): string | undefined {
  const root = path.resolve(__dirname, "..", "..", "..");
  const bin = process.platform === "win32" ? path.join("Scripts", "python.exe") : path.join("bin", "python");
  const candidates = [process.env.CACHELINT_PYTHON, path.join(root, ".venv", bin), path.join(root, ".venv-ci", bin)];
  return candidates.find(
    (candidate) =>
      candidate !== undefined &&
      candidate !== "" &&
      fs.existsSync(candidate) &&
      spawnSync(candidate, ["-c", "import cachelint.lsp"], { cwd: tempDir() }).status === 0,
  );
}

const python = findPython();

const SOURCE = `from datetime import datetime
import json

import anthropic

client = anthropic.Anthropic()


def ask(profile: dict, question: str):
    system = f"Now {datetime.now()} profile {json.dumps(profile)}"
    return client.messages.create(model="claude-sonnet-4-5", max_tokens=100, system=system,
                                  messages=[{"role": "user", "content": question}])


# sessions are kept in PostgreSQL jsonb, which gives a profile's keys back in its own order (CL102)
from sqlalchemy.dialects.postgresql import JSONB  # noqa: E402


class ChatSession:
    profile = JSONB
`;

describe("the real cachelint server", { skip: python === undefined ? "no Python with cachelint.lsp (set CACHELINT_PYTHON)" : false }, () => {
  it("starts as the extension starts it and publishes diagnostics", { timeout: 120_000 }, async () => {
    const root = tempDir();
    fs.writeFileSync(path.join(root, "pyproject.toml"), "[tool.cachelint]\n");
    const command = resolveServerCommand({ ...DEFAULT_SETTINGS, interpreter: [python as string] });
    assert.equal(await preflight(command, undefined, root), undefined);

    const server = await spawnServer(command, { cwd: root });
    const connection = createMessageConnection(
      new StreamMessageReader(server.child.stdout as NodeJS.ReadableStream),
      new StreamMessageWriter(server.child.stdin as NodeJS.WritableStream),
    );
    const uri = pathToFileURL(path.join(root, "app.py")).toString();
    const published = new Promise<PublishDiagnosticsParams>((resolve) => {
      connection.onNotification(PublishDiagnosticsNotification.type, (params) => {
        if (params.uri === uri) {
          resolve(params);
        }
      });
    });
    connection.listen();
    try {
      const result = await connection.sendRequest(InitializeRequest.type, {
        processId: process.pid,
        rootUri: pathToFileURL(root).toString(),
        capabilities: {},
        workspaceFolders: [{ uri: pathToFileURL(root).toString(), name: "root" }],
      });
      assert.ok(result.capabilities.textDocumentSync !== undefined, "the server syncs documents");
      await connection.sendNotification(InitializedNotification.type, {});
      await connection.sendNotification(DidOpenTextDocumentNotification.type, {
        textDocument: { uri, languageId: "python", version: 1, text: SOURCE },
      });
      const diagnostics = await published;
      const codes = diagnostics.diagnostics.map((diagnostic) => diagnostic.code).sort();
      assert.deepEqual(codes, ["CL101", "CL102"]);
      assert.ok(diagnostics.diagnostics.every((diagnostic) => diagnostic.source === "cachelint"));
      await connection.sendRequest(ShutdownRequest.type);
      await connection.sendNotification(ExitNotification.type);
      assert.equal((await server.exited).code, 0);
    } finally {
      connection.dispose();
      server.kill();
    }
  });
});
