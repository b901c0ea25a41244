/**
 * The extension as VS Code runs it, against the fake `vscode` and `vscode-languageclient/node` modules
 * (test/fakes), with fake `cachelint` / `python` executables as real processes.
 */
import "./fakes/register";

import * as assert from "node:assert/strict";
import * as path from "node:path";
import { afterEach, beforeEach, describe, it } from "node:test";

import * as extension from "../src/extension";
import { NOT_INSTALLED_MESSAGE } from "../src/errors";
import { LanguageClient, State } from "./fakes/languageclient";
import { fakeCachelint, fakePython, oldCachelint, removeTempDirs, skipOnWindows, startedWith, tempDir } from "./fakes/servers";
import { EventEmitter, fake } from "./fakes/vscode";

async function waitFor(condition: () => boolean, what: string, timeoutMs = 20000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!condition()) {
    if (Date.now() > deadline) {
      assert.fail(`timed out waiting for ${what}`);
    }
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

let subscriptions: Array<{ dispose(): unknown }> = [];
const originalPath = process.env.PATH;

async function activate(): Promise<void> {
  subscriptions = [];
  await extension.activate({ subscriptions } as never);
}

function status() {
  return fake.statusItems[0];
}

function processExited(client: LanguageClient): Promise<void> {
  const child = client.process;
  if (child === undefined || child.exitCode !== null || child.signalCode !== null) {
    return Promise.resolve();
  }
  return new Promise((resolve) => child.once("exit", () => resolve()));
}

describe("extension", { skip: skipOnWindows }, () => {
  beforeEach(() => {
    fake.reset();
    LanguageClient.instances = [];
    // Nothing on PATH unless a test puts it there: the real machine may have a cachelint.
    process.env.PATH = tempDir();
  });

  afterEach(async () => {
    await extension.deactivate();
    for (const subscription of subscriptions) {
      subscription.dispose();
    }
    process.env.PATH = originalPath;
    removeTempDirs();
  });

  it("registers its commands and starts `<cachelint.path> lsp ...args` with the client options", async () => {
    const dir = tempDir();
    fake.configuration["cachelint.path"] = [fakeCachelint(dir)];
    fake.configuration["cachelint.args"] = ["--log-level", "debug"];
    await activate();

    assert.ok(fake.commands.has("cachelint.restart"));
    assert.ok(fake.commands.has("cachelint.showOutput"));
    await waitFor(() => startedWith(dir).length >= 1, "the server process to start");
    assert.deepEqual(startedWith(dir), [["lsp", "--log-level", "debug"]]);
    assert.equal(status().text, "$(check) cachelint");
    assert.ok(status().visible);

    assert.equal(LanguageClient.instances.length, 1);
    const client = LanguageClient.instances[0];
    assert.equal(client.id, "cachelint");
    assert.equal(client.state, State.Running);
    const options = client.clientOptions;
    assert.deepEqual(options.documentSelector, [
      { scheme: "file", language: "python" },
      { scheme: "untitled", language: "python" },
    ]);
    assert.equal(options.synchronize.configurationSection, "cachelint");
    assert.deepEqual(
      options.synchronize.fileEvents.map((watcher: { glob: string }) => watcher.glob),
      ["**/pyproject.toml", "**/cachelint.toml", "**/.cachelint.toml"],
    );
    assert.equal(options.outputChannel, fake.outputChannels[0]);
    assert.equal(fake.outputChannels[0].name, "cachelint");
    assert.equal(fake.messages.length, 0);
  });

  it("restarts when a cachelint.* setting changes, and only then", async () => {
    const dir = tempDir();
    fake.configuration["cachelint.path"] = [fakeCachelint(dir)];
    await activate();
    const first = LanguageClient.instances[0];

    fake.changeConfiguration(["python.analysis.typeCheckingMode", "editor.fontSize"]);
    await sleep(100);
    assert.equal(LanguageClient.instances.length, 1);

    fake.configuration["cachelint.args"] = ["--verbose"];
    fake.changeConfiguration(["cachelint.args"]);
    await waitFor(() => LanguageClient.instances.length === 2 && status().text === "$(check) cachelint", "the restart");
    await processExited(first);
    await waitFor(() => startedWith(dir).length >= 2, "the server process to start");
    assert.deepEqual(startedWith(dir), [["lsp"], ["lsp", "--verbose"]]);
    assert.ok(fake.watchers.slice(0, 3).every((watcher) => watcher.disposed), "the old client's file watchers are disposed");
  });

  it("restarts on the cachelint.restart command and shows the output on cachelint.showOutput", async () => {
    const dir = tempDir();
    fake.configuration["cachelint.path"] = [fakeCachelint(dir)];
    await activate();
    await fake.commands.get("cachelint.restart")?.();
    assert.equal(LanguageClient.instances.length, 2);
    await waitFor(() => startedWith(dir).length >= 2, "the server processes to start");
    assert.equal(startedWith(dir).length, 2);
    await fake.commands.get("cachelint.showOutput")?.();
    assert.equal(fake.outputChannels[0].shown, 1);
  });

  it("stops when cachelint.enable is false, and starts again when true", async () => {
    const dir = tempDir();
    fake.configuration["cachelint.path"] = [fakeCachelint(dir)];
    await activate();
    const first = LanguageClient.instances[0];

    fake.configuration["cachelint.enable"] = false;
    fake.changeConfiguration(["cachelint.enable"]);
    await waitFor(() => status().text === "$(circle-slash) cachelint", "the disabled status");
    await processExited(first);
    assert.equal(first.state, State.Stopped);

    await fake.commands.get("cachelint.restart")?.();
    assert.equal(LanguageClient.instances.length, 1, "restart does nothing while disabled");
    assert.match(fake.messages.at(-1)?.message ?? "", /disabled/);

    fake.configuration["cachelint.enable"] = true;
    fake.changeConfiguration(["cachelint.enable"]);
    await waitFor(() => LanguageClient.instances.length === 2 && status().text === "$(check) cachelint", "the start");
  });

  it("says cachelint is not installed, with a button that opens the settings", async () => {
    fake.configuration["cachelint.path"] = [path.join(tempDir(), "missing", "cachelint")];
    fake.answer = (message) => (message.items.includes("Open Settings") ? "Open Settings" : undefined);
    await activate();

    assert.equal(LanguageClient.instances.length, 0);
    assert.equal(fake.messages.length, 1);
    assert.equal(fake.messages[0].kind, "warning");
    assert.ok(fake.messages[0].message.startsWith(NOT_INSTALLED_MESSAGE), fake.messages[0].message);
    assert.deepEqual(fake.messages[0].items, ["Open Settings", "Show Output"]);
    assert.equal(status().text, "$(warning) cachelint");
    await waitFor(() => fake.executed.length > 0, "the settings command");
    assert.deepEqual(fake.executed[0], { command: "workbench.action.openSettings", args: ["@ext:cachelint.cachelint"] });
  });

  it("says not installed when nothing is configured and PATH has no cachelint", async () => {
    await activate();
    assert.ok(fake.messages[0]?.message.startsWith(NOT_INSTALLED_MESSAGE));
    assert.match(fake.messages[0].message, /tried `cachelint lsp` from PATH/);
  });

  it("starts `cachelint lsp` from PATH when nothing is configured", async () => {
    const dir = tempDir();
    fakeCachelint(dir);
    process.env.PATH = dir;
    await activate();
    await waitFor(() => startedWith(dir).length >= 1, "the server process to start");
    assert.deepEqual(startedWith(dir), [["lsp"]]);
    assert.equal(status().text, "$(check) cachelint");
  });

  it("starts `<cachelint.interpreter> -m cachelint lsp`", async () => {
    const dir = tempDir();
    fake.configuration["cachelint.interpreter"] = [fakePython(dir, true)];
    fake.configuration["cachelint.args"] = ["--x"];
    await activate();
    await waitFor(() => startedWith(dir).length >= 1, "the server process to start");
    assert.deepEqual(startedWith(dir), [["-m", "cachelint", "lsp", "--x"]]);
    assert.equal(status().text, "$(check) cachelint");
  });

  it("says not installed when the interpreter lacks cachelint", async () => {
    const dir = tempDir();
    fake.configuration["cachelint.interpreter"] = [fakePython(dir, false)];
    await activate();
    assert.equal(LanguageClient.instances.length, 0);
    assert.ok(fake.messages[0]?.message.startsWith(NOT_INSTALLED_MESSAGE));
    assert.equal(status().text, "$(warning) cachelint");
  });

  it("uses the Python extension's interpreter and restarts when it changes", async () => {
    const dir = tempDir();
    let python = fakePython(dir, true, "python-a");
    const changed = new EventEmitter<void>();
    fake.extensions.set("ms-python.python", {
      isActive: false,
      exports: undefined,
      activate: async () => ({
        environments: {
          getActiveEnvironmentPath: () => ({ path: python }),
          resolveEnvironment: async (environment: { path: string }) => ({ executable: { uri: { fsPath: environment.path } } }),
          onDidChangeActiveEnvironmentPath: changed.event,
        },
      }),
    });
    await activate();
    await waitFor(() => startedWith(dir).length >= 1, "the server process to start");
    assert.deepEqual(startedWith(dir), [["-m", "cachelint", "lsp"]]);
    assert.equal(LanguageClient.instances.length, 1);

    python = fakePython(dir, true, "python-b");
    changed.fire();
    await waitFor(() => LanguageClient.instances.length === 2 && status().text === "$(check) cachelint", "the restart");
    await waitFor(() => startedWith(dir).length >= 2, "the server processes to start");
    assert.equal(startedWith(dir).length, 2);
  });

  it("explains a cachelint without `lsp` once, instead of the client's generic notification", async () => {
    const dir = tempDir();
    fake.configuration["cachelint.path"] = [oldCachelint(dir)];
    await activate();
    await waitFor(() => fake.messages.length >= 1, "the error message");
    assert.equal(fake.messages.length, 1);
    assert.equal(fake.messages[0].kind, "error");
    assert.match(fake.messages[0].message, /no `lsp` command/);
    assert.equal(status().text, "$(error) cachelint");
    const notifications = LanguageClient.instances[0].notifications;
    assert.ok(notifications.length > 0);
    assert.ok(notifications.every((notification) => notification.show === false), JSON.stringify(notifications));
    assert.match(fake.outputChannels[0].text, /No such command 'lsp'/);
  });

  it("restarts a crashed server four times within three minutes, then reports it", async () => {
    const dir = tempDir();
    fake.configuration["cachelint.path"] = [fakeCachelint(dir)];
    await activate();
    const client = LanguageClient.instances[0];
    for (let crash = 1; crash <= 4; crash++) {
      await waitFor(() => startedWith(dir).length >= crash, "the server process to start"); // a busy machine starts it late
      client.process?.kill("SIGKILL");
      await processExited(client);
      assert.equal((await client.simulateClosed()).action, 2 /* Restart */);
      assert.equal(status().text, "$(check) cachelint");
    }
    await waitFor(() => startedWith(dir).length >= 5, "the server processes to start");
    assert.equal(startedWith(dir).length, 5);
    assert.equal(fake.messages.length, 0);

    await waitFor(() => startedWith(dir).length >= 5, "the server process to start");
    client.process?.kill("SIGKILL");
    await processExited(client);
    assert.equal((await client.simulateClosed()).action, 1 /* DoNotRestart */);
    await waitFor(() => fake.messages.length === 1, "the report");
    assert.match(fake.messages[0].message, /crashed 5 times in the last 3 minutes/);
    assert.equal(status().text, "$(error) cachelint");
  });

  it("stops the server on deactivate", async () => {
    const dir = tempDir();
    fake.configuration["cachelint.path"] = [fakeCachelint(dir)];
    await activate();
    const client = LanguageClient.instances[0];
    await extension.deactivate();
    await processExited(client);
    assert.notEqual(client.process?.exitCode, null);
  });
});
