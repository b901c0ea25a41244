/**
 * The `cachelint.*` settings, read through a minimal configuration interface so that tests can pass a plain
 * object, and the decision what a configuration change means for the running server.
 */

export const SECTION = "cachelint";

export interface Settings {
  /** `cachelint.enable`: run the server at all. */
  enable: boolean;
  /** `cachelint.path`: a `cachelint` executable; the first entry is used. */
  path: string[];
  /** `cachelint.interpreter`: a Python that has cachelint; the first entry is used. */
  interpreter: string[];
  /** `cachelint.args`: extra arguments appended to `cachelint lsp`. */
  args: string[];
}

export const DEFAULT_SETTINGS: Readonly<Settings> = Object.freeze({ enable: true, path: [], interpreter: [], args: [] });

/** The part of `vscode.WorkspaceConfiguration` that is read here. */
export interface ConfigurationLike {
  get<T>(section: string): T | undefined;
}

/** The part of `vscode.ConfigurationChangeEvent` that is read here. */
export interface ConfigurationChangeLike {
  affectsConfiguration(section: string): boolean;
}

function stringList(value: unknown): string[] {
  // A string where a list is expected (a hand-edited settings.json) counts as a one-element list.
  const items = typeof value === "string" ? [value] : Array.isArray(value) ? value : [];
  return items.filter((item): item is string => typeof item === "string").map((item) => item.trim()).filter((item) => item !== "");
}

/** `cachelint.*` from a configuration scoped to the `cachelint` section; wrong types fall back to the defaults. */
export function readSettings(config: ConfigurationLike): Settings {
  const enable = config.get<unknown>("enable");
  // Arguments are passed as they are: an empty string can be a meaningful argument, only non-strings go.
  const args = config.get<unknown>("args");
  return {
    enable: typeof enable === "boolean" ? enable : DEFAULT_SETTINGS.enable,
    path: stringList(config.get<unknown>("path")),
    interpreter: stringList(config.get<unknown>("interpreter")),
    args: Array.isArray(args) ? args.filter((arg): arg is string => typeof arg === "string") : [],
  };
}

export type ConfigurationAction = "none" | "start" | "stop" | "restart";

/**
 * What a configuration change means for the server: nothing unless a `cachelint.*` setting changed; stop when
 * `cachelint.enable` became false; start when it became true; otherwise restart, so that a new path,
 * interpreter, argument or trace level takes effect.
 */
export function configurationAction(event: ConfigurationChangeLike, before: Settings, after: Settings): ConfigurationAction {
  if (!event.affectsConfiguration(SECTION)) {
    return "none";
  }
  if (!after.enable) {
    return before.enable ? "stop" : "none";
  }
  if (!before.enable) {
    return "start";
  }
  return "restart";
}
