/**
 * cachelint for VS Code: starts `cachelint lsp` (a pygls language server over stdio) for Python files.
 * The logic lives in small modules (command, settings, status, errors, controller) that the unit tests call
 * without VS Code; this file only wires them to the VS Code API.
 */
import * as os from "node:os";
import * as vscode from "vscode";

import { createClient } from "./client";
import { CommandContext } from "./command";
import { ServerController } from "./controller";
import { FailureReport, OPEN_SETTINGS } from "./errors";
import { preflight } from "./process";
import { onInterpreterChange, PYTHON_EXTENSION_ID, pythonApi, PythonApi, selectedInterpreter } from "./python";
import { readSettings, SECTION, Settings } from "./settings";
import { statusView } from "./status";

let controller: ServerController | undefined;

function firstFolder(): vscode.WorkspaceFolder | undefined {
  return vscode.workspace.workspaceFolders?.find((folder) => folder.uri.scheme === "file");
}

export async function activate(context: vscode.ExtensionContext): Promise<void> {
  const output = vscode.window.createOutputChannel("cachelint");
  const status = vscode.window.createStatusBarItem("cachelint.status", vscode.StatusBarAlignment.Right, 100);
  status.name = "cachelint";
  context.subscriptions.push(output, status);

  const log = (message: string) => output.appendLine(`[${new Date().toLocaleTimeString()}] ${message}`);

  const runAction = (title: string | undefined, report: FailureReport) => {
    const action = report.actions.find((candidate) => candidate.title === title);
    if (action !== undefined) {
      void vscode.commands.executeCommand(action.command, ...(action.args ?? []));
    }
  };

  let python: PythonApi | undefined;
  let pythonWatched = false;
  const commandContext = async (settings: Settings): Promise<CommandContext> => {
    const folder = firstFolder();
    const result: CommandContext = { home: os.homedir(), workspaceFolder: folder?.uri.fsPath, env: process.env };
    if (settings.path.length === 0 && settings.interpreter.length === 0) {
      python ??= await pythonApi(vscode.extensions.getExtension(PYTHON_EXTENSION_ID));
      if (python !== undefined && !pythonWatched) {
        pythonWatched = true;
        const watch = onInterpreterChange(python, () => void controller?.onInterpreterChanged());
        if (watch !== undefined) {
          context.subscriptions.push(watch);
        }
      }
      result.pythonInterpreter = await selectedInterpreter(python, folder?.uri);
    }
    return result;
  };

  const server = new ServerController({
    readSettings: () => readSettings(vscode.workspace.getConfiguration(SECTION)),
    commandContext,
    preflight: (command) => preflight(command, undefined, firstFolder()?.uri.fsPath),
    createClient: (command, events) => createClient(command, events, { outputChannel: output, cwd: firstFolder()?.uri.fsPath }),
    setStatus: (state, detail) => {
      const view = statusView(state, detail);
      status.text = view.text;
      status.tooltip = view.tooltip;
      status.command = view.command;
      status.backgroundColor = view.backgroundColor === undefined ? undefined : new vscode.ThemeColor(view.backgroundColor);
      status.show();
    },
    report: (report) => {
      const show = report.kind === "notInstalled" ? vscode.window.showWarningMessage : vscode.window.showErrorMessage;
      void Promise.resolve(show(report.message, ...report.actions.map((action) => action.title))).then((title) => runAction(title, report));
    },
    log,
  });
  controller = server;

  context.subscriptions.push(
    vscode.commands.registerCommand("cachelint.restart", async () => {
      if (!readSettings(vscode.workspace.getConfiguration(SECTION)).enable) {
        const choice = await vscode.window.showInformationMessage(
          "cachelint is disabled (cachelint.enable is false).",
          OPEN_SETTINGS.title,
        );
        if (choice === OPEN_SETTINGS.title) {
          await vscode.commands.executeCommand(OPEN_SETTINGS.command, ...(OPEN_SETTINGS.args ?? []));
        }
        return;
      }
      await server.restart();
    }),
    vscode.commands.registerCommand("cachelint.showOutput", () => output.show()),
    vscode.workspace.onDidChangeConfiguration((event) => void server.onConfigurationChanged(event)),
    vscode.workspace.onDidGrantWorkspaceTrust(() => void server.restart()),
    { dispose: () => void server.dispose() },
  );

  await server.start();
}

export async function deactivate(): Promise<void> {
  const server = controller;
  controller = undefined;
  await server?.dispose();
}
