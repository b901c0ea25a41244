import * as assert from "node:assert/strict";
import { describe, it } from "node:test";

import { NOT_INSTALLED_MESSAGE } from "../src/errors";
import { ServerState, statusView } from "../src/status";

describe("statusView", () => {
  it("has a text per state", () => {
    const texts: Record<ServerState, string> = {
      starting: "$(sync~spin) cachelint",
      running: "$(check) cachelint",
      stopped: "$(error) cachelint",
      notInstalled: "$(warning) cachelint",
      disabled: "$(circle-slash) cachelint",
    };
    for (const [state, text] of Object.entries(texts)) {
      assert.equal(statusView(state as ServerState).text, text, state);
    }
  });

  it("explains each state in the tooltip", () => {
    assert.match(statusView("starting").tooltip, /starting the language server/);
    assert.match(statusView("running").tooltip, /running/);
    assert.match(statusView("stopped").tooltip, /stopped.*\n.*cachelint: Restart Server/s);
    assert.equal(statusView("notInstalled").tooltip, NOT_INSTALLED_MESSAGE);
    assert.match(statusView("disabled").tooltip, /cachelint\.enable is false/);
  });

  it("adds the detail (the command line, or why it stopped)", () => {
    assert.match(statusView("running", "cachelint lsp (from PATH)").tooltip, /\ncachelint lsp \(from PATH\)/);
    assert.match(statusView("stopped", "exited with code 2").tooltip, /exited with code 2/);
  });

  it("opens the output, or the settings where a setting is the fix", () => {
    assert.equal(statusView("running").command.command, "cachelint.showOutput");
    assert.equal(statusView("stopped").command.command, "cachelint.showOutput");
    assert.equal(statusView("notInstalled").command.command, "workbench.action.openSettings");
    assert.deepEqual(statusView("notInstalled").command.arguments, ["@ext:cachelint.cachelint"]);
    assert.equal(statusView("disabled").command.command, "workbench.action.openSettings");
  });

  it("colors the states that need attention", () => {
    assert.equal(statusView("stopped").backgroundColor, "statusBarItem.errorBackground");
    assert.equal(statusView("notInstalled").backgroundColor, "statusBarItem.warningBackground");
    assert.equal(statusView("running").backgroundColor, undefined);
  });
});
