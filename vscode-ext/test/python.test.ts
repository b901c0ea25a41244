import * as assert from "node:assert/strict";
import { describe, it } from "node:test";

import { onInterpreterChange, PythonApi, pythonApi, selectedInterpreter } from "../src/python";

describe("selectedInterpreter", () => {
  it("reads the environments API", async () => {
    const api: PythonApi = {
      environments: {
        getActiveEnvironmentPath: () => ({ path: "/w/.venv", id: "venv" }),
        resolveEnvironment: async (environment) => {
          assert.deepEqual(environment, { path: "/w/.venv", id: "venv" });
          return { executable: { uri: { fsPath: "/w/.venv/bin/python" } } };
        },
      },
      settings: { getExecutionDetails: () => ({ execCommand: ["/old/python"] }) },
    };
    assert.deepEqual(await selectedInterpreter(api), ["/w/.venv/bin/python"]);
  });

  it("falls back to the older execution details", async () => {
    const api: PythonApi = {
      environments: {
        getActiveEnvironmentPath: () => ({ path: "/w/.venv" }),
        resolveEnvironment: async () => undefined,
      },
      settings: { getExecutionDetails: () => ({ execCommand: ["conda", "run", "-n", "x", "python"] }) },
    };
    assert.deepEqual(await selectedInterpreter(api), ["conda", "run", "-n", "x", "python"]);
  });

  it("is undefined without the extension, or when its API fails", async () => {
    assert.equal(await selectedInterpreter(undefined), undefined);
    assert.equal(await selectedInterpreter({}), undefined);
    const broken: PythonApi = {
      environments: {
        getActiveEnvironmentPath: () => {
          throw new Error("not ready");
        },
        resolveEnvironment: async () => undefined,
      },
      settings: { getExecutionDetails: () => ({ execCommand: undefined }) },
    };
    assert.equal(await selectedInterpreter(broken), undefined);
  });
});

describe("pythonApi", () => {
  it("activates the extension when needed", async () => {
    let activated = 0;
    const exports = { settings: {} };
    const extension = { isActive: false, exports: undefined, activate: async () => (activated++, exports) };
    assert.equal(await pythonApi(extension), exports);
    assert.equal(activated, 1);
    assert.equal(await pythonApi({ isActive: true, exports, activate: () => assert.fail("activated") }), exports);
  });

  it("gives up on a missing, failing or hanging extension", async () => {
    assert.equal(await pythonApi(undefined), undefined);
    assert.equal(await pythonApi({ isActive: false, exports: undefined, activate: () => Promise.reject(new Error("x")) }), undefined);
    assert.equal(await pythonApi({ isActive: false, exports: undefined, activate: () => new Promise(() => undefined) }, 20), undefined);
  });
});

describe("onInterpreterChange", () => {
  it("subscribes to whichever event exists", () => {
    let subscribed = "";
    const listener = () => undefined;
    onInterpreterChange(
      {
        environments: {
          getActiveEnvironmentPath: () => undefined,
          resolveEnvironment: async () => undefined,
          onDidChangeActiveEnvironmentPath: (l) => ((subscribed = l === listener ? "environments" : "?"), { dispose: () => undefined }),
        },
      },
      listener,
    );
    assert.equal(subscribed, "environments");
    onInterpreterChange({ settings: { onDidChangeExecutionDetails: () => ((subscribed = "settings"), { dispose: () => undefined }) } }, listener);
    assert.equal(subscribed, "settings");
    assert.equal(onInterpreterChange(undefined, listener), undefined);
  });
});
