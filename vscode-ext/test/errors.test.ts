import * as assert from "node:assert/strict";
import { describe, it } from "node:test";

import { ServerCommand } from "../src/command";
import { describeFailure, errorCode, lastLine, NOT_INSTALLED_MESSAGE, OPEN_SETTINGS, SHOW_OUTPUT } from "../src/errors";

const onPath: ServerCommand = { command: "cachelint", args: ["lsp"], source: "PATH" };
const viaPython: ServerCommand = { command: "/venv/bin/python", args: ["-m", "cachelint", "lsp"], source: "cachelint.interpreter", python: ["/venv/bin/python"] };

function enoent(): Error {
  return Object.assign(new Error("spawn cachelint ENOENT"), { code: "ENOENT", errno: -2, syscall: "spawn cachelint" });
}

describe("describeFailure", () => {
  it("says cachelint is not installed for ENOENT, with a button to open the settings", () => {
    const report = describeFailure({ command: onPath, error: enoent() });
    assert.equal(report.kind, "notInstalled");
    assert.ok(report.message.startsWith(NOT_INSTALLED_MESSAGE), report.message);
    assert.match(report.message, /tried `cachelint lsp` from PATH/);
    assert.deepEqual(report.actions[0], OPEN_SETTINGS);
    assert.deepEqual(OPEN_SETTINGS, { title: "Open Settings", command: "workbench.action.openSettings", args: ["@ext:cachelint.cachelint"] });
  });

  it("has the exact not-installed text", () => {
    assert.equal(
      NOT_INSTALLED_MESSAGE,
      "cachelint is not installed: install it from a checkout of its repository (`pipx install ./cachelint`, or `pip install ./cachelint` in the interpreter you use; the `cachelint` package on PyPI is a different project), or set cachelint.path / cachelint.interpreter",
    );
  });

  it("says not installed when the interpreter lacks the module", () => {
    assert.equal(describeFailure({ command: viaPython, missingModule: true, exitCode: 3 }).kind, "notInstalled");
    const report = describeFailure({ command: viaPython, exitCode: 1, stderr: "/venv/bin/python: No module named cachelint\n" });
    assert.equal(report.kind, "notInstalled");
    assert.match(report.message, /tried `\/venv\/bin\/python -m cachelint lsp` from cachelint.interpreter/);
  });

  it("does not mistake another missing module for cachelint", () => {
    assert.equal(describeFailure({ exitCode: 1, stderr: "ModuleNotFoundError: No module named 'cachelint_extra'" }).kind, "failed");
  });

  it("explains permission errors", () => {
    const report = describeFailure({ command: onPath, error: Object.assign(new Error("spawn EACCES"), { code: "EACCES" }) });
    assert.equal(report.kind, "failed");
    assert.match(report.message, /permission denied/);
  });

  it("asks for an upgrade when the cachelint has no lsp command", () => {
    const stderr = "Usage: cachelint [OPTIONS] COMMAND [ARGS]...\nTry 'cachelint --help' for help.\n\nError: No such command 'lsp'.\n";
    const report = describeFailure({ command: onPath, exitCode: 2, stderr });
    assert.equal(report.kind, "failed");
    assert.match(report.message, /no `lsp` command/);
    assert.match(report.message, /pipx install --force \.\/cachelint/);
    assert.doesNotMatch(report.message, /pip install -U cachelint/);
  });

  it("names a missing server dependency", () => {
    const report = describeFailure({ exitCode: 1, stderr: "Traceback ...\nModuleNotFoundError: No module named 'pygls'\n" });
    assert.match(report.message, /needs pygls/);
  });

  it("quotes the exit code and the last line of standard error", () => {
    const report = describeFailure({ command: onPath, exitCode: 2, stderr: "Usage: cachelint lsp\n\nError: Got unexpected extra argument (--bogus)\n" });
    assert.equal(report.kind, "failed");
    assert.equal(report.message, "The cachelint server exited with code 2 (tried `cachelint lsp` from PATH): Error: Got unexpected extra argument (--bogus)");
    assert.deepEqual(report.actions[0], SHOW_OUTPUT);
  });

  it("reports a server that keeps crashing", () => {
    const report = describeFailure({ crashes: 5, exitCode: 1, stderr: "RuntimeError: boom" });
    assert.match(report.message, /crashed 5 times in the last 3 minutes and will not be restarted: RuntimeError: boom/);
  });

  it("reports a signal, and any other error", () => {
    assert.match(describeFailure({ signal: "SIGKILL" }).message, /killed by SIGKILL/);
    assert.match(describeFailure({ error: new Error("initialize failed") }).message, /could not be started: initialize failed/);
    assert.match(describeFailure({}).message, /unknown error/);
  });
});

describe("helpers", () => {
  it("errorCode reads system error codes", () => {
    assert.equal(errorCode(enoent()), "ENOENT");
    assert.equal(errorCode(new Error("x")), undefined);
    assert.equal(errorCode({ code: 2 }), undefined);
    assert.equal(errorCode(undefined), undefined);
  });

  it("lastLine skips blank lines and trims long ones", () => {
    assert.equal(lastLine("a\nb\n\n  \n"), "b");
    assert.equal(lastLine(""), undefined);
    assert.equal(lastLine("x".repeat(500), 10), `${"x".repeat(9)}…`);
  });
});
