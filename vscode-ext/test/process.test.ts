import * as assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import * as fs from "node:fs";
import * as path from "node:path";
import { after, describe, it } from "node:test";

import { ServerCommand } from "../src/command";
import { describeFailure, NOT_INSTALLED_MESSAGE } from "../src/errors";
import { findExecutable, HAS_CACHELINT, preflight, PreflightDeps, runQuick, spawnServer } from "../src/process";
import { fakeCachelint, fakePython, removeTempDirs, skipOnWindows, startedWith, tempDir } from "./fakes/servers";

after(removeTempDirs);

describe("spawnServer", () => {
  it("rejects with ENOENT for a missing executable, which reads as not installed", async () => {
    const command: ServerCommand = { command: path.join(tempDir(), "no-such-cachelint"), args: ["lsp"], source: "cachelint.path" };
    const error = await spawnServer(command).then(
      () => assert.fail("spawned"),
      (reason: unknown) => reason,
    );
    assert.equal((error as NodeJS.ErrnoException).code, "ENOENT");
    const report = describeFailure({ command, error });
    assert.equal(report.kind, "notInstalled");
    assert.ok(report.message.startsWith(NOT_INSTALLED_MESSAGE));
  });

  it("records the exit code and the end of standard error", async () => {
    const script = 'process.stderr.write("x".repeat(20000) + "\\nError: No such command \'lsp\'.\\n"); process.exit(2)';
    const server = await spawnServer({ command: process.execPath, args: ["-e", script], source: "cachelint.path" });
    server.child.stdout?.resume();
    assert.deepEqual(await server.exited, { code: 2, signal: null });
    assert.deepEqual(server.exit(), { code: 2, signal: null });
    assert.ok(server.stderrTail().length <= 8 * 1024);
    assert.match(server.stderrTail(), /No such command 'lsp'/);
  });

  it("gives the server stdin and stdout pipes and the arguments", { skip: skipOnWindows }, async () => {
    const dir = tempDir();
    const server = await spawnServer({ command: fakeCachelint(dir), args: ["lsp", "--flag", "a b"], source: "cachelint.path" }, { cwd: dir });
    assert.ok(server.child.stdin && server.child.stdout);
    server.child.stdin.end();
    assert.equal((await server.exited).code, 0);
    assert.deepEqual(startedWith(dir), [["lsp", "--flag", "a b"]]);
  });

  it("kill() ends a server that does not stop", async () => {
    const server = await spawnServer({ command: process.execPath, args: ["-e", "setInterval(() => {}, 1000)"], source: "PATH" });
    server.kill();
    assert.equal((await server.exited).signal, "SIGTERM");
    server.kill(); // no-op once exited
  });
});

describe("findExecutable", () => {
  const executables = new Set(["/a/bin/cachelint", "/b/bin/cachelint", "/w/.venv/bin/python"]);
  const isExecutable = (file: string) => executables.has(file);

  it("searches PATH in order", () => {
    const env = { PATH: "/x:/b/bin:/a/bin" };
    assert.equal(findExecutable("cachelint", { env, platform: "linux", isExecutable }), "/b/bin/cachelint");
    assert.equal(findExecutable("ruff", { env, platform: "linux", isExecutable }), undefined);
    assert.equal(findExecutable("cachelint", { env: {}, platform: "linux", isExecutable }), undefined);
  });

  it("takes paths as they are, relative ones from cwd", () => {
    assert.equal(findExecutable("/a/bin/cachelint", { env: {}, platform: "linux", isExecutable }), "/a/bin/cachelint");
    assert.equal(findExecutable(".venv/bin/python", { cwd: "/w", env: {}, platform: "linux", isExecutable }), "/w/.venv/bin/python");
    assert.equal(findExecutable("/a/bin/missing", { env: {}, platform: "linux", isExecutable }), undefined);
  });

  it("tries PATHEXT on Windows", () => {
    const windows = new Set(["C:\\py\\Scripts\\cachelint.EXE"]);
    const found = findExecutable("cachelint", {
      env: { Path: "C:\\x;C:\\py\\Scripts", PATHEXT: ".COM;.EXE" },
      platform: "win32",
      isExecutable: (file) => windows.has(file),
    });
    assert.equal(found, "C:\\py\\Scripts\\cachelint.EXE");
  });

  it("checks the real file system", { skip: skipOnWindows }, () => {
    const dir = tempDir();
    const script = fakeCachelint(dir);
    fs.writeFileSync(path.join(dir, "not-executable"), "", { mode: 0o644 });
    assert.equal(findExecutable("cachelint", { env: { PATH: dir } }), script);
    assert.equal(findExecutable(path.join(dir, "not-executable")), undefined);
    assert.equal(findExecutable(dir), undefined, "a directory is not an executable");
  });
});

describe("preflight", () => {
  function deps(found: string[], pythonExit: number | null = 0): PreflightDeps & { ran: string[][] } {
    const ran: string[][] = [];
    return {
      ran,
      findExecutable: (command) => (found.includes(command) ? command : undefined),
      runPython: async (argv) => {
        ran.push(argv);
        return { code: pythonExit, stderr: pythonExit === 1 ? "boom\n" : "" };
      },
    };
  }
  const onPath: ServerCommand = { command: "cachelint", args: ["lsp"], source: "PATH" };
  const viaPython: ServerCommand = { command: "/py", args: ["-m", "cachelint", "lsp"], source: "cachelint.interpreter", python: ["/py"] };

  it("passes a command whose executable exists", async () => {
    assert.equal(await preflight(onPath, deps(["cachelint"])), undefined);
  });

  it("fails a missing executable with ENOENT (not installed)", async () => {
    const failure = await preflight(onPath, deps([]));
    assert.equal(describeFailure(failure ?? {}).kind, "notInstalled");
    assert.equal((failure?.error as NodeJS.ErrnoException).code, "ENOENT");
  });

  it("checks that the interpreter has the cachelint module", async () => {
    const present = deps(["/py"], 0);
    assert.equal(await preflight(viaPython, present), undefined);
    assert.deepEqual(present.ran, [["/py", "-c", HAS_CACHELINT]]);

    const missing = await preflight(viaPython, deps(["/py"], 3));
    assert.equal(missing?.missingModule, true);
    assert.equal(describeFailure(missing ?? {}).kind, "notInstalled");

    const broken = await preflight(viaPython, deps(["/py"], 1));
    assert.deepEqual(broken, { command: viaPython, exitCode: 1, stderr: "boom\n" });

    const noPython = await preflight(viaPython, deps([], 0));
    assert.equal(describeFailure(noPython ?? {}).kind, "notInstalled");
  });

  it("runs a fake interpreter for real", { skip: skipOnWindows }, async () => {
    const dir = tempDir();
    const withIt = fakePython(dir, true, "python-with");
    const without = fakePython(dir, false, "python-without");
    const command = (python: string): ServerCommand => ({ command: python, args: ["-m", "cachelint", "lsp"], source: "cachelint.interpreter", python: [python] });
    assert.equal(await preflight(command(withIt)), undefined);
    assert.equal((await preflight(command(without)))?.missingModule, true);
  });
});

const python3 = ["python3", "python"].find((name) => spawnSync(name, ["--version"]).status === 0);

describe("HAS_CACHELINT", { skip: python3 === undefined ? "no Python on PATH" : false }, () => {
  it("exits 0 when cachelint is importable and 3 when not, without importing it", async () => {
    const root = tempDir();
    fs.mkdirSync(path.join(root, "cachelint"));
    // Importing this package would fail: find_spec must not import it.
    fs.writeFileSync(path.join(root, "cachelint", "__init__.py"), "raise SystemExit(7)\n");
    const empty = tempDir();
    // -I -S: only the standard library and the folder given, whatever this Python has installed.
    const code = (dir: string) =>
      runQuick([python3 as string, "-I", "-S", "-c", `import sys; sys.path.insert(0, ${JSON.stringify(dir)}); exec(${JSON.stringify(HAS_CACHELINT)})`]);
    assert.equal((await code(root)).code, 0);
    assert.equal((await code(empty)).code, 3);
  });
});
