/** What the status bar item shows in each server state. Pure: `extension.ts` copies it onto the item. */
import { NOT_INSTALLED_MESSAGE, OPEN_SETTINGS, SHOW_OUTPUT } from "./errors";

export type ServerState = "starting" | "running" | "stopped" | "notInstalled" | "disabled";

export interface StatusView {
  /** With codicons, e.g. `$(check) cachelint`. */
  text: string;
  tooltip: string;
  /** The command a click runs. */
  command: { command: string; title: string; arguments?: unknown[] };
  /** A theme color id for the item's background, for states that need attention. */
  backgroundColor?: "statusBarItem.errorBackground" | "statusBarItem.warningBackground";
}

const showOutput = { command: SHOW_OUTPUT.command, title: SHOW_OUTPUT.title };
const openSettings = { command: OPEN_SETTINGS.command, title: OPEN_SETTINGS.title, arguments: OPEN_SETTINGS.args };

/** `detail` (the command line, or why it stopped) is added to the tooltip. */
export function statusView(state: ServerState, detail?: string): StatusView {
  const more = detail ? `\n${detail}` : "";
  switch (state) {
    case "starting":
      return { text: "$(sync~spin) cachelint", tooltip: `cachelint: starting the language server${more}`, command: showOutput };
    case "running":
      return { text: "$(check) cachelint", tooltip: `cachelint: the language server is running${more}\nClick to show its output.`, command: showOutput };
    case "stopped":
      return {
        text: "$(error) cachelint",
        tooltip: `cachelint: the language server is stopped${more}\nRun "cachelint: Restart Server" to start it again.`,
        command: showOutput,
        backgroundColor: "statusBarItem.errorBackground",
      };
    case "notInstalled":
      return {
        text: "$(warning) cachelint",
        tooltip: `${NOT_INSTALLED_MESSAGE}${more}`,
        command: openSettings,
        backgroundColor: "statusBarItem.warningBackground",
      };
    case "disabled":
      return {
        text: "$(circle-slash) cachelint",
        tooltip: "cachelint is disabled (cachelint.enable is false).",
        command: openSettings,
      };
  }
}
