import * as assert from "node:assert/strict";
import { describe, it } from "node:test";

import { configurationAction, DEFAULT_SETTINGS, readSettings, Settings } from "../src/settings";

function config(values: Record<string, unknown>) {
  return { get: <T>(key: string) => values[key] as T | undefined };
}

/** A change event for these keys, as VS Code reports it (a section matches its keys). */
function changed(...keys: string[]) {
  return { affectsConfiguration: (section: string) => keys.some((key) => key === section || key.startsWith(`${section}.`)) };
}

const on: Settings = { ...DEFAULT_SETTINGS };
const off: Settings = { ...DEFAULT_SETTINGS, enable: false };

describe("readSettings", () => {
  it("has the package.json defaults", () => {
    assert.deepEqual(readSettings(config({})), { enable: true, path: [], interpreter: [], args: [] });
  });

  it("reads every setting", () => {
    const values = { enable: false, path: ["/bin/cachelint"], interpreter: ["/bin/python"], args: ["--x", ""] };
    assert.deepEqual(readSettings(config(values)), values);
  });

  it("drops wrong types and blank paths, and takes a lone string as a list", () => {
    const read = readSettings(config({ enable: "yes", path: "/bin/cachelint", interpreter: [1, " ", " /bin/python "], args: [2, "--x"] }));
    assert.deepEqual(read, { enable: true, path: ["/bin/cachelint"], interpreter: ["/bin/python"], args: ["--x"] });
  });
});

describe("configurationAction", () => {
  it("ignores changes outside cachelint", () => {
    assert.equal(configurationAction(changed("python.defaultInterpreterPath", "editor.fontSize"), on, on), "none");
  });

  it("restarts on any cachelint.* change", () => {
    for (const key of ["cachelint.path", "cachelint.interpreter", "cachelint.args", "cachelint.trace.server"]) {
      assert.equal(configurationAction(changed(key), on, on), "restart", key);
    }
  });

  it("stops when cachelint.enable becomes false, starts when it becomes true", () => {
    assert.equal(configurationAction(changed("cachelint.enable"), on, off), "stop");
    assert.equal(configurationAction(changed("cachelint.enable"), off, on), "start");
  });

  it("does nothing while disabled", () => {
    assert.equal(configurationAction(changed("cachelint.path"), off, off), "none");
  });
});
