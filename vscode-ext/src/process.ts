/**
 * Starting the server process, and the cheap checks before it: is the executable there, does the interpreter
 * have a `cachelint` module. Node.js only (no VS Code), so the tests run real processes.
 */
import { ChildProcess, execFile, spawn } from "node:child_process";
import * as fs from "node:fs";
import * as path from "node:path";

import { ServerCommand } from "./command";
import { StartFailure } from "./errors";

/** Whether `file` is a file this process may execute. */
export function isExecutableFile(file: string, platform: NodeJS.Platform = process.platform): boolean {
  try {
    if (!fs.statSync(file).isFile()) {
      return false;
    }
    if (platform !== "win32") {
      fs.accessSync(file, fs.constants.X_OK);
    }
    return true;
  } catch {
    return false;
  }
}

export interface FindOptions {
  env?: Record<string, string | undefined>;
  cwd?: string;
  platform?: NodeJS.Platform;
  isExecutable?: (file: string) => boolean;
}

/** Where `command` would be run from: a path (relative to `cwd`) as is, a bare name searched on PATH. */
export function findExecutable(command: string, options: FindOptions = {}): string | undefined {
  const platform = options.platform ?? process.platform;
  const env = options.env ?? process.env;
  const isExecutable = options.isExecutable ?? ((file: string) => isExecutableFile(file, platform));
  const paths = platform === "win32" ? path.win32 : path.posix;
  const extensions =
    platform === "win32" && paths.extname(command) === ""
      ? (env.PATHEXT ?? env.Pathext ?? ".COM;.EXE;.BAT;.CMD").split(";").filter((ext) => ext !== "")
      : [""];
  const candidates = (base: string) => extensions.map((ext) => base + ext);
  const hasSeparator = command.includes("/") || (platform === "win32" && command.includes("\\"));
  if (hasSeparator || paths.isAbsolute(command)) {
    const full = paths.isAbsolute(command) || options.cwd === undefined ? command : paths.resolve(options.cwd, command);
    return candidates(full).find(isExecutable);
  }
  const searchPath = env.PATH ?? env.Path ?? "";
  for (const directory of searchPath.split(paths.delimiter)) {
    if (directory === "") {
      continue;
    }
    const found = candidates(paths.join(directory, command)).find(isExecutable);
    if (found !== undefined) {
      return found;
    }
  }
  return undefined;
}

export interface RunResult {
  code: number | null;
  stderr: string;
  error?: unknown;
}

/** Run a short command; never rejects. */
export function runQuick(argv: string[], options: { cwd?: string; timeoutMs?: number } = {}): Promise<RunResult> {
  return new Promise((resolve) => {
    execFile(
      argv[0],
      argv.slice(1),
      { cwd: options.cwd, timeout: options.timeoutMs ?? 15_000, windowsHide: true, encoding: "utf8" },
      (error, _stdout, stderr) => {
        if (error === null) {
          resolve({ code: 0, stderr });
        } else if (typeof error.code === "number") {
          resolve({ code: error.code, stderr });
        } else {
          resolve({ code: null, stderr, error });
        }
      },
    );
  });
}

/** Exits 0 when `cachelint` is importable, 3 when not; finds the module without importing it. */
export const HAS_CACHELINT = 'import importlib.util, sys; sys.exit(0 if importlib.util.find_spec("cachelint") else 3)';
export const MISSING_MODULE_EXIT = 3;

export interface PreflightDeps {
  findExecutable(command: string, cwd?: string): string | undefined;
  runPython(argv: string[], cwd?: string): Promise<RunResult>;
}

export const realPreflightDeps: PreflightDeps = {
  findExecutable: (command, cwd) => findExecutable(command, { cwd }),
  runPython: (argv, cwd) => runQuick(argv, { cwd }),
};

function notFound(command: ServerCommand): StartFailure {
  const error = Object.assign(new Error(`${command.command} was not found`), { code: "ENOENT" });
  return { command, error };
}

/**
 * Why `command` cannot start, before trying: its executable is missing, or its interpreter has no cachelint.
 * Undefined when it looks startable (the real start can still fail, and is reported then).
 */
export async function preflight(command: ServerCommand, deps: PreflightDeps = realPreflightDeps, cwd?: string): Promise<StartFailure | undefined> {
  if (deps.findExecutable(command.command, cwd) === undefined) {
    return notFound(command);
  }
  if (command.python === undefined) {
    return undefined;
  }
  const result = await deps.runPython([...command.python, "-c", HAS_CACHELINT], cwd);
  if (result.code === 0) {
    return undefined;
  }
  if (result.code === MISSING_MODULE_EXIT) {
    return { command, missingModule: true, exitCode: result.code, stderr: result.stderr };
  }
  if (result.error !== undefined) {
    return { command, error: result.error, stderr: result.stderr };
  }
  return { command, exitCode: result.code, stderr: result.stderr };
}

export interface Exit {
  code: number | null;
  signal: NodeJS.Signals | null;
}

export interface ServerProcess {
  readonly child: ChildProcess;
  /** Settles when the process has exited. */
  readonly exited: Promise<Exit>;
  /** The exit, once it happened. */
  exit(): Exit | undefined;
  /** The last few KiB of standard error. */
  stderrTail(): string;
  /** Terminate the process if it still runs. */
  kill(): void;
}

const STDERR_TAIL = 8 * 1024;

/**
 * Spawn the server with pipes for stdio; resolves once the process runs, rejects with the spawn error
 * (`ENOENT` when the executable is missing), so a failed start has a clear reason.
 */
export function spawnServer(command: ServerCommand, options: { cwd?: string; env?: NodeJS.ProcessEnv } = {}): Promise<ServerProcess> {
  return new Promise((resolve, reject) => {
    let child: ChildProcess;
    try {
      child = spawn(command.command, command.args, {
        cwd: options.cwd,
        env: options.env ?? process.env,
        stdio: ["pipe", "pipe", "pipe"],
        shell: false,
        windowsHide: true,
      });
    } catch (error) {
      reject(error);
      return;
    }
    let tail = "";
    let exit: Exit | undefined;
    const exited = new Promise<Exit>((settle) => {
      child.once("exit", (code, signal) => {
        exit = { code, signal };
        settle(exit);
      });
    });
    child.stderr?.setEncoding("utf8");
    child.stderr?.on("data", (data: string) => {
      tail = (tail + data).slice(-STDERR_TAIL);
    });
    const handle: ServerProcess = {
      child,
      exited,
      exit: () => exit,
      stderrTail: () => tail,
      kill: () => {
        if (exit === undefined && child.pid !== undefined) {
          child.kill();
        }
      },
    };
    child.once("error", (error) => {
      // `error` before `spawn`: the process never ran.
      if (child.pid === undefined) {
        reject(error);
      }
    });
    child.once("spawn", () => resolve(handle));
  });
}
