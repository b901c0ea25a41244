import * as assert from "node:assert/strict";
import { describe, it } from "node:test";

import { expandPath, formatCommand, resolveServerCommand, serverCommands } from "../src/command";
import { DEFAULT_SETTINGS, Settings } from "../src/settings";

function settings(overrides: Partial<Settings> = {}): Settings {
  return { ...DEFAULT_SETTINGS, ...overrides };
}

describe("resolveServerCommand", () => {
  it("uses cachelint.path[0] as `<path> lsp`", () => {
    const command = resolveServerCommand(settings({ path: ["/opt/bin/cachelint", "/other/cachelint"] }));
    assert.deepEqual(command, { command: "/opt/bin/cachelint", args: ["lsp"], source: "cachelint.path" });
  });

  it("prefers cachelint.path over cachelint.interpreter and the Python extension", () => {
    const command = resolveServerCommand(settings({ path: ["/opt/bin/cachelint"], interpreter: ["/venv/bin/python"] }), {
      pythonInterpreter: ["/selected/python"],
    });
    assert.equal(command.command, "/opt/bin/cachelint");
    assert.equal(command.source, "cachelint.path");
  });

  it("uses cachelint.interpreter[0] as `<python> -m cachelint lsp`", () => {
    const command = resolveServerCommand(settings({ interpreter: ["/venv/bin/python", "/ignored/python"] }));
    assert.deepEqual(command, {
      command: "/venv/bin/python",
      args: ["-m", "cachelint", "lsp"],
      source: "cachelint.interpreter",
      python: ["/venv/bin/python"],
    });
  });

  it("prefers cachelint.interpreter over the Python extension's interpreter", () => {
    const command = resolveServerCommand(settings({ interpreter: ["/venv/bin/python"] }), { pythonInterpreter: ["/selected/python"] });
    assert.equal(command.command, "/venv/bin/python");
  });

  it("uses the Python extension's interpreter, then cachelint on PATH", () => {
    const commands = serverCommands(settings(), { pythonInterpreter: ["/selected/python"] });
    assert.deepEqual(commands, [
      { command: "/selected/python", args: ["-m", "cachelint", "lsp"], source: "Python extension", python: ["/selected/python"] },
      { command: "cachelint", args: ["lsp"], source: "PATH" },
    ]);
  });

  it("keeps the rest of a multi-part interpreter command before -m", () => {
    const command = resolveServerCommand(settings(), { pythonInterpreter: ["conda", "run", "-n", "app", "python"] });
    assert.equal(command.command, "conda");
    assert.deepEqual(command.args, ["run", "-n", "app", "python", "-m", "cachelint", "lsp"]);
    assert.deepEqual(command.python, ["conda", "run", "-n", "app", "python"]);
  });

  it("falls back to `cachelint lsp` from PATH", () => {
    assert.deepEqual(serverCommands(settings()), [{ command: "cachelint", args: ["lsp"], source: "PATH" }]);
    assert.deepEqual(resolveServerCommand(settings(), { pythonInterpreter: [] }).source, "PATH");
    assert.deepEqual(resolveServerCommand(settings(), { pythonInterpreter: [""] }).source, "PATH");
  });

  it("passes cachelint.args through verbatim in every case", () => {
    const args = ["--log-level", "debug", "a b", ""];
    assert.deepEqual(resolveServerCommand(settings({ path: ["/bin/cachelint"], args })).args, ["lsp", ...args]);
    assert.deepEqual(resolveServerCommand(settings({ interpreter: ["/bin/python"], args })).args, ["-m", "cachelint", "lsp", ...args]);
    assert.deepEqual(resolveServerCommand(settings({ args }), { pythonInterpreter: ["/py"] }).args, ["-m", "cachelint", "lsp", ...args]);
    assert.deepEqual(resolveServerCommand(settings({ args })).args, ["lsp", ...args]);
  });

  it("expands ~ and ${workspaceFolder} in path settings", () => {
    const context = { home: "/home/me", workspaceFolder: "/work/app" };
    assert.equal(resolveServerCommand(settings({ path: ["~/bin/cachelint"] }), context).command, "/home/me/bin/cachelint");
    assert.equal(
      resolveServerCommand(settings({ interpreter: ["${workspaceFolder}/.venv/bin/python"] }), context).command,
      "/work/app/.venv/bin/python",
    );
  });
});

describe("expandPath", () => {
  const context = { home: "/home/me", workspaceFolder: "/w", env: { VENV: "/venvs/a" } };

  it("expands the known variables", () => {
    assert.equal(expandPath("~", context), "/home/me");
    assert.equal(expandPath("${userHome}/x", context), "/home/me/x");
    assert.equal(expandPath("${workspaceFolder}/.venv/bin/python", context), "/w/.venv/bin/python");
    assert.equal(expandPath("${env:VENV}/bin/python", context), "/venvs/a/bin/python");
    assert.equal(expandPath("${env:MISSING}/bin/python", context), "/bin/python");
  });

  it("leaves the rest alone", () => {
    assert.equal(expandPath("/usr/bin/cachelint", context), "/usr/bin/cachelint");
    assert.equal(expandPath("a~b", context), "a~b");
    assert.equal(expandPath("${workspaceFolder}/x", {}), "${workspaceFolder}/x");
    assert.equal(expandPath("${unknown}/x", context), "${unknown}/x");
  });
});

describe("formatCommand", () => {
  it("quotes parts with spaces and empty parts", () => {
    assert.equal(formatCommand({ command: "/my tools/python", args: ["-m", "cachelint", "lsp", ""] }), '"/my tools/python" -m cachelint lsp ""');
  });
});
