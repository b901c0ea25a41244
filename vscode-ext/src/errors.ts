/**
 * Why the server did not start (or stopped), turned into one clear message with buttons. Pure: the inputs are
 * what the spawn, the interpreter check and the process exit recorded.
 */
import { formatCommand, ServerCommand } from "./command";

/** How to install this project: from its repository. `cachelint` on PyPI is another project, never named here. */
export const INSTALL_HINT =
  "install it from a checkout of its repository (`pipx install ./cachelint`, or `pip install ./cachelint` in the interpreter you use; the `cachelint` package on PyPI is a different project)";

export const NOT_INSTALLED_MESSAGE =
  `cachelint is not installed: ${INSTALL_HINT}, or set cachelint.path / cachelint.interpreter`;

export const EXTENSION_ID = "cachelint.cachelint";

export interface MessageAction {
  title: string;
  command: string;
  args?: unknown[];
}

export const OPEN_SETTINGS: MessageAction = {
  title: "Open Settings",
  command: "workbench.action.openSettings",
  args: [`@ext:${EXTENSION_ID}`],
};
export const SHOW_OUTPUT: MessageAction = { title: "Show Output", command: "cachelint.showOutput" };
export const RESTART: MessageAction = { title: "Restart", command: "cachelint.restart" };

export interface StartFailure {
  /** The command that was tried. */
  command?: ServerCommand;
  /** A spawn error (`ENOENT`, `EACCES`, ...) or the language client's start error. */
  error?: unknown;
  /** How the server process ended, when it did. */
  exitCode?: number | null;
  signal?: string | null;
  /** The end of the server's standard error. */
  stderr?: string;
  /** The interpreter ran but has no `cachelint` module. */
  missingModule?: boolean;
  /** The server crashed this many times in a short while and is not restarted again. */
  crashes?: number;
}

export type FailureKind = "notInstalled" | "failed";

export interface FailureReport {
  kind: FailureKind;
  message: string;
  actions: MessageAction[];
}

/** The `code` of a Node.js system error (`ENOENT`, `EACCES`, ...), if it is one. */
export function errorCode(error: unknown): string | undefined {
  if (typeof error === "object" && error !== null && "code" in error) {
    const code = (error as { code: unknown }).code;
    return typeof code === "string" ? code : undefined;
  }
  return undefined;
}

function errorMessage(error: unknown): string {
  if (error instanceof Error) {
    return error.message;
  }
  return typeof error === "string" ? error : String(error);
}

/** The last non-empty line of a process's standard error, trimmed to something a notification can show. */
export function lastLine(text: string | undefined, limit = 300): string | undefined {
  const lines = (text ?? "").split(/\r?\n/).map((line) => line.trim()).filter((line) => line !== "");
  const line = lines[lines.length - 1];
  if (line === undefined) {
    return undefined;
  }
  return line.length > limit ? `${line.slice(0, limit - 1)}…` : line;
}

function tried(command: ServerCommand | undefined): string {
  return command === undefined ? "" : ` (tried \`${formatCommand(command)}\` from ${command.source})`;
}

const MISSING_CACHELINT = /No module named '?cachelint'?(?:\s|$)/;
const MISSING_DEPENDENCY = /No module named '?(pygls|lsprotocol)\b/;
const NO_LSP_COMMAND = /No such command '?"?lsp\b/;

/** One message for a failed start or a stopped server, with the buttons to offer. */
export function describeFailure(failure: StartFailure): FailureReport {
  const code = errorCode(failure.error);
  const stderr = failure.stderr ?? "";
  const where = tried(failure.command);
  if (code === "ENOENT" || failure.missingModule === true || MISSING_CACHELINT.test(stderr)) {
    return { kind: "notInstalled", message: `${NOT_INSTALLED_MESSAGE}${where}.`, actions: [OPEN_SETTINGS, SHOW_OUTPUT] };
  }
  if (code === "EACCES") {
    return {
      kind: "failed",
      message: `cachelint could not be started: permission denied${where}. Make it executable, or set cachelint.path / cachelint.interpreter.`,
      actions: [OPEN_SETTINGS, SHOW_OUTPUT],
    };
  }
  if (NO_LSP_COMMAND.test(stderr)) {
    return {
      kind: "failed",
      message: `This cachelint has no \`lsp\` command${where}: reinstall it from a current checkout of its repository (\`pipx install --force ./cachelint\`).`,
      actions: [OPEN_SETTINGS, SHOW_OUTPUT],
    };
  }
  const dependency = MISSING_DEPENDENCY.exec(stderr);
  if (dependency !== null) {
    return {
      kind: "failed",
      message: `The cachelint language server needs ${dependency[1]}, which is missing${where}: reinstall cachelint from a checkout of its repository (\`pipx install --force ./cachelint\`, or \`pip install ./cachelint\` in the interpreter you use).`,
      actions: [SHOW_OUTPUT, OPEN_SETTINGS],
    };
  }
  const line = lastLine(stderr);
  const said = line === undefined ? "" : `: ${line}`;
  if (failure.crashes !== undefined) {
    return {
      kind: "failed",
      message: `The cachelint server crashed ${failure.crashes} times in the last 3 minutes and will not be restarted${said}. See the output, then run "cachelint: Restart Server".`,
      actions: [SHOW_OUTPUT, RESTART],
    };
  }
  if (typeof failure.exitCode === "number") {
    return {
      kind: "failed",
      message: `The cachelint server exited with code ${failure.exitCode}${where}${said}`,
      actions: [SHOW_OUTPUT, OPEN_SETTINGS],
    };
  }
  if (failure.signal) {
    return { kind: "failed", message: `The cachelint server was killed by ${failure.signal}${where}${said}`, actions: [SHOW_OUTPUT, RESTART] };
  }
  const reason = failure.error === undefined ? "unknown error" : errorMessage(failure.error);
  return { kind: "failed", message: `The cachelint server could not be started${where}: ${reason}`, actions: [SHOW_OUTPUT, OPEN_SETTINGS] };
}
