/**
 * Make `require("vscode")` and `require("vscode-languageclient/node")` load the fakes in this folder. Import
 * this before anything that imports the extension's VS Code-facing modules.
 */
import * as path from "node:path";
import Module = require("node:module");

const aliases: Record<string, string> = {
  vscode: path.join(__dirname, "vscode.js"),
  "vscode-languageclient/node": path.join(__dirname, "languageclient.js"),
};

type Resolve = (request: string, ...rest: unknown[]) => string;
const internals = Module as unknown as { _resolveFilename: Resolve };
const original = internals._resolveFilename;
internals._resolveFilename = function (this: unknown, request: string, ...rest: unknown[]): string {
  return Object.prototype.hasOwnProperty.call(aliases, request) ? aliases[request] : original.call(this, request, ...rest);
};
