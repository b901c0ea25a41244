/**
 * Which command starts the server, from the settings alone (no file system, no VS Code): pure, so the tests
 * call it with plain objects.
 *
 * 1. `cachelint.path[0]`         -> `<path> lsp ...args`
 * 2. `cachelint.interpreter[0]`  -> `<python> -m cachelint lsp ...args`
 * 3. the Python extension's selected interpreter (when installed) -> `<python> -m cachelint lsp ...args`,
 *    then `cachelint` on PATH in case that interpreter lacks cachelint (e.g. cachelint installed with pipx)
 * 4. `cachelint lsp ...args` from PATH
 */
import { Settings } from "./settings";

export type CommandSource = "cachelint.path" | "cachelint.interpreter" | "Python extension" | "PATH";

export interface ServerCommand {
  /** The executable. */
  command: string;
  /** Its arguments, ending with `lsp` and `cachelint.args`. */
  args: string[];
  /** Which setting (or fallback) it came from; shown in messages. */
  source: CommandSource;
  /** For a command run through a Python interpreter: the argv that starts that Python (executable first). */
  python?: string[];
}

export interface CommandContext {
  /** The Python extension's selected interpreter as an argv (e.g. `["/venv/bin/python"]`), if any. */
  pythonInterpreter?: string[];
  /** For `~` and `${userHome}`. */
  home?: string;
  /** For `${workspaceFolder}`: the first workspace folder. */
  workspaceFolder?: string;
  /** For `${env:NAME}`. */
  env?: Record<string, string | undefined>;
}

export const EXECUTABLE = "cachelint";

/** Expand `~`, `${userHome}`, `${workspaceFolder}` and `${env:NAME}` in a path setting; unknown variables stay. */
export function expandPath(value: string, context: CommandContext = {}): string {
  let result = value;
  if (context.home !== undefined && (result === "~" || result.startsWith("~/") || result.startsWith("~\\"))) {
    result = context.home + result.slice(1);
  }
  return result.replace(/\$\{(userHome|workspaceFolder|env:([A-Za-z_][A-Za-z0-9_]*))\}/g, (whole, name: string, envName?: string) => {
    if (name === "userHome") {
      return context.home ?? whole;
    }
    if (name === "workspaceFolder") {
      return context.workspaceFolder ?? whole;
    }
    return context.env?.[envName as string] ?? "";
  });
}

function throughPython(python: string[], args: string[], source: CommandSource): ServerCommand {
  return { command: python[0], args: [...python.slice(1), "-m", EXECUTABLE, "lsp", ...args], source, python: [...python] };
}

/** Every command worth trying, best first (more than one only for the Python extension's interpreter). */
export function serverCommands(settings: Settings, context: CommandContext = {}): ServerCommand[] {
  const onPath: ServerCommand = { command: EXECUTABLE, args: ["lsp", ...settings.args], source: "PATH" };
  if (settings.path.length > 0) {
    return [{ command: expandPath(settings.path[0], context), args: ["lsp", ...settings.args], source: "cachelint.path" }];
  }
  if (settings.interpreter.length > 0) {
    return [throughPython([expandPath(settings.interpreter[0], context)], settings.args, "cachelint.interpreter")];
  }
  const selected = (context.pythonInterpreter ?? []).filter((part) => part !== "");
  if (selected.length > 0) {
    return [throughPython(selected, settings.args, "Python extension"), onPath];
  }
  return [onPath];
}

/** The command the server is started with when everything it names exists. */
export function resolveServerCommand(settings: Settings, context: CommandContext = {}): ServerCommand {
  return serverCommands(settings, context)[0];
}

/** A command line for logs and messages, quoted where a part has spaces or quotes. */
export function formatCommand(command: Pick<ServerCommand, "command" | "args">): string {
  return [command.command, ...command.args].map((part) => (part === "" || /[\s"'\\$`]/.test(part) ? JSON.stringify(part) : part)).join(" ");
}
