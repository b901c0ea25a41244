/**
 * The vscode-languageclient side: one `LanguageClient` per server command, started through our own spawn so
 * that a failed start has a clear reason (spawn error, exit code, standard error) instead of the client's
 * generic "couldn't create connection to server".
 */
import * as vscode from "vscode";
import {
  CloseAction,
  CloseHandlerResult,
  ErrorAction,
  ErrorHandlerResult,
  LanguageClient,
  LanguageClientOptions,
  RevealOutputChannelOn,
  ServerOptions,
  State,
} from "vscode-languageclient/node";

import { ServerCommand } from "./command";
import { ClientEvents, ClientHandle } from "./controller";
import { CrashPolicy } from "./crash";
import { StartFailure } from "./errors";
import { Exit, ServerProcess, spawnServer } from "./process";
import { SECTION } from "./settings";

export const CLIENT_ID = "cachelint";
export const CLIENT_NAME = "cachelint";
/** Config files whose changes the server hears about (it re-reads `[tool.cachelint]`). */
export const CONFIG_GLOBS = ["**/pyproject.toml", "**/cachelint.toml", "**/.cachelint.toml"];
export const DOCUMENT_SELECTOR = [
  { scheme: "file", language: "python" },
  { scheme: "untitled", language: "python" },
];

/**
 * The client reports failures itself, some as forced notifications; this extension reports them once, with
 * the reason and buttons, so the client's notifications are written to the output only.
 */
class CachelintLanguageClient extends LanguageClient {
  override error(message: string, data?: unknown, _showNotification?: boolean | "force"): void {
    super.error(message, data, false);
  }
}

function waitForExit(server: ServerProcess | undefined, ms: number): Promise<Exit | undefined> {
  if (server === undefined) {
    return Promise.resolve(undefined);
  }
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<undefined>((resolve) => (timer = setTimeout(() => resolve(undefined), ms)));
  return Promise.race([server.exited, timeout]).finally(() => clearTimeout(timer));
}

export interface ClientEnvironment {
  outputChannel: vscode.OutputChannel;
  /** The server's working directory: the first workspace folder. */
  cwd?: string;
}

export function createClient(command: ServerCommand, events: ClientEvents, environment: ClientEnvironment): ClientHandle {
  const watchers = CONFIG_GLOBS.map((glob) => vscode.workspace.createFileSystemWatcher(glob));
  const crashes = new CrashPolicy();
  let server: ServerProcess | undefined;
  let spawnError: unknown;
  let wasRunning = false;
  let stopping = false;
  // The client restarts a crashed server itself: its state passes through "stopped" on the way.
  let restarting = false;
  let crashedOut = false;

  const serverOptions: ServerOptions = async () => {
    spawnError = undefined;
    try {
      server = await spawnServer(command, { cwd: environment.cwd });
    } catch (error) {
      spawnError = error;
      throw error;
    }
    return server.child;
  };

  const failure = async (extra: Partial<StartFailure> = {}): Promise<StartFailure> => {
    const exit = await waitForExit(server, 3000); // a busy machine starts and ends processes late
    return { command, error: spawnError, exitCode: exit?.code, signal: exit?.signal, stderr: server?.stderrTail(), ...extra };
  };

  const clientOptions: LanguageClientOptions = {
    documentSelector: DOCUMENT_SELECTOR,
    synchronize: { configurationSection: SECTION, fileEvents: watchers },
    outputChannel: environment.outputChannel,
    revealOutputChannelOn: RevealOutputChannelOn.Never,
    // A server that fails to initialize is reported by `start()`; do not retry.
    initializationFailedHandler: () => false,
    errorHandler: {
      error: (_error, _message, count): ErrorHandlerResult => {
        if (count !== undefined && count <= 3) {
          return { action: ErrorAction.Continue, handled: true };
        }
        return { action: ErrorAction.Shutdown, handled: true };
      },
      closed: (): CloseHandlerResult => {
        // A server that never came up is not restarted: `start()` reports why.
        if (!wasRunning || stopping) {
          return { action: CloseAction.DoNotRestart, handled: true };
        }
        if (crashes.shouldRestart()) {
          restarting = true;
          return { action: CloseAction.Restart, handled: true };
        }
        crashedOut = true;
        return { action: CloseAction.DoNotRestart, handled: true };
      },
    },
  };

  const client = new CachelintLanguageClient(CLIENT_ID, CLIENT_NAME, serverOptions, clientOptions);
  const stateListener = client.onDidChangeState((change) => {
    if (stopping) {
      return;
    }
    if (change.newState === State.Running) {
      wasRunning = true;
      events.onState("running");
    } else if (change.newState === State.Starting && wasRunning) {
      events.onState("starting");
    } else if (change.newState === State.Stopped && wasRunning) {
      if (restarting) {
        restarting = false;
        return;
      }
      // It kept crashing, the connection kept failing, or a restart after a crash failed.
      void failure(crashedOut ? { crashes: crashes.crashes } : {}).then((reason) => events.onStopped(reason));
    }
  });

  return {
    async start(): Promise<void> {
      try {
        await client.start();
      } catch (error) {
        throw await failure(spawnError === undefined ? { error } : {});
      }
    },
    async stop(): Promise<void> {
      stopping = true;
      try {
        if (client.state === State.Running) {
          await client.stop(2000);
        }
      } catch {
        // stopped anyway below
      }
      stateListener.dispose();
      for (const watcher of watchers) {
        watcher.dispose();
      }
      const running = server;
      if (running !== undefined && (await waitForExit(running, 2000)) === undefined) {
        running.kill();
      }
    },
  };
}
