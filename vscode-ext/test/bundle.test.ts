/**
 * The esbuild bundle (dist/extension.js, what the .vsix ships) loads with nothing but `vscode` external and
 * exports activate/deactivate. Skipped before `npm run build`. vscode-languageclient subclasses VS Code's
 * classes at load time, so here the fake `vscode` module answers every name it does not define with a
 * stand-in class.
 */
import "./fakes/register";

import * as assert from "node:assert/strict";
import * as fs from "node:fs";
import * as path from "node:path";
import { describe, it } from "node:test";

const bundle = path.resolve(__dirname, "..", "..", "dist", "extension.js");

describe("dist/extension.js", { skip: fs.existsSync(bundle) ? false : "not built (npm run build)" }, () => {
  it("loads and exports activate and deactivate", () => {
    const fakePath = require.resolve("vscode");
    require(fakePath);
    const cached = require.cache[fakePath] as NodeModule;
    const exports = cached.exports as Record<string | symbol, unknown>;
    class StandIn {}
    cached.exports = new Proxy(exports, { get: (target, name) => (name in target ? target[name] : StandIn) });

    const loaded = require(bundle) as Record<string, unknown>;
    assert.equal(typeof loaded.activate, "function");
    assert.equal(typeof loaded.deactivate, "function");
    const text = fs.readFileSync(bundle, "utf8");
    const requires = new Set([...text.matchAll(/require\("([^"]+)"\)/g)].map((match) => match[1]));
    const external = [...requires].filter((name) => !name.startsWith("node:") && !require("node:module").builtinModules.includes(name));
    assert.deepEqual(external, ["vscode"]);
  });
});
