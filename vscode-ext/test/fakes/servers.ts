/**
 * Stand-ins for `cachelint` and `python` as small Node.js scripts with a shebang (POSIX only): they record
 * their arguments and behave like a server that runs until its standard input closes, like an old cachelint
 * without `lsp`, or like an interpreter with or without the cachelint module.
 */
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";

export const POSIX = process.platform !== "win32";
export const skipOnWindows = POSIX ? false : "the fake executables are shebang scripts";

const made: string[] = [];

export function tempDir(): string {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "cachelint-vscode-"));
  made.push(dir);
  return dir;
}

export function removeTempDirs(): void {
  for (const dir of made.splice(0)) {
    fs.rmSync(dir, { recursive: true, force: true });
  }
}

export function writeScript(dir: string, name: string, body: string): string {
  const file = path.join(dir, name);
  fs.writeFileSync(file, `#!${process.execPath}\n${body}\n`, { mode: 0o755 });
  return file;
}

/** Runs until stdin closes; writes its arguments to `argv.json` (appending one line per start). */
const SERVE = `
const fs = require("fs");
const path = require("path");
fs.appendFileSync(path.join(__dirname, "argv.json"), JSON.stringify(process.argv.slice(2)) + "\\n");
process.stderr.write("fake server started\\n");
process.stdin.resume();
process.stdin.on("end", () => process.exit(0));
`;

export function fakeCachelint(dir: string): string {
  return writeScript(dir, "cachelint", SERVE);
}

export function oldCachelint(dir: string): string {
  return writeScript(
    dir,
    "cachelint",
    `process.stderr.write("Usage: cachelint [OPTIONS] COMMAND [ARGS]...\\nTry 'cachelint --help' for help.\\n\\nError: No such command 'lsp'.\\n"); process.exit(2);`,
  );
}

/** `-c CODE` exits 0 (has cachelint) or 3 (the extension's import check); `-m cachelint lsp` serves. */
export function fakePython(dir: string, hasCachelint: boolean, name = "python"): string {
  return writeScript(
    dir,
    name,
    `
if (process.argv[2] === "-c") {
  process.exit(${hasCachelint ? 0 : 3});
}
if (!${hasCachelint}) {
  process.stderr.write(process.argv[1] + ": No module named cachelint\\n");
  process.exit(1);
}
${SERVE}`,
  );
}

/** Every argument list the fake servers in `dir` were started with. */
export function startedWith(dir: string): string[][] {
  const file = path.join(dir, "argv.json");
  if (!fs.existsSync(file)) {
    return [];
  }
  return fs
    .readFileSync(file, "utf8")
    .split("\n")
    .filter((line) => line !== "")
    .map((line) => JSON.parse(line) as string[]);
}
