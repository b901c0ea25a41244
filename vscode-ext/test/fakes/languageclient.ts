/**
 * A fake of `vscode-languageclient/node` (which needs a running VS Code). Its `start()` really calls the
 * extension's `serverOptions` (so the real spawn code runs) and counts the server as initialized when the
 * fake server announces itself on stderr (or, for a silent process, is still alive after `initializeMs`);
 * a process that exits before that fails the start, as a closed connection fails the real client's
 * `initialize`. Waiting for the announcement rather than a short timer keeps the tests right on a busy machine.
 */
import type { ChildProcess } from "node:child_process";

import { EventEmitter } from "./vscode";

export enum State {
  Stopped = 1,
  Running = 2,
  Starting = 3,
}
export enum ErrorAction {
  Continue = 1,
  Shutdown = 2,
}
export enum CloseAction {
  DoNotRestart = 1,
  Restart = 2,
}
export enum RevealOutputChannelOn {
  Debug = 0,
  Info = 1,
  Warn = 2,
  Error = 3,
  Never = 4,
}

interface CloseResult {
  action: CloseAction;
  handled?: boolean;
}

type Options = any;

export class LanguageClient {
  static instances: LanguageClient[] = [];
  static initializeMs = 30_000;

  state: State = State.Stopped;
  process: ChildProcess | undefined;
  notifications: Array<{ message: string; show: boolean | "force" | undefined }> = [];
  private readonly stateChanged = new EventEmitter<{ oldState: State; newState: State }>();
  readonly onDidChangeState = this.stateChanged.event;

  constructor(
    readonly id: string,
    readonly name: string,
    readonly serverOptions: () => Promise<ChildProcess>,
    readonly clientOptions: Options,
  ) {
    LanguageClient.instances.push(this);
  }

  private setState(state: State): void {
    const oldState = this.state;
    this.state = state;
    if (oldState !== state) {
      this.stateChanged.fire({ oldState, newState: state });
    }
  }

  async start(): Promise<void> {
    this.setState(State.Starting);
    try {
      const child = await this.serverOptions();
      this.process = child;
      const exited =
        child.exitCode !== null || child.signalCode !== null
          ? Promise.resolve()
          : new Promise<void>((resolve) => child.once("exit", () => resolve()));
      // "up" once the fake server says so on stderr (it has recorded its arguments by then); a process that
      // exits first failed to start. The timer is only a fallback for servers that never say anything.
      const said = new Promise<"up">((resolve) => {
        let seen = "";
        child.stderr?.on("data", (chunk: Buffer) => {
          seen += chunk.toString();
          if (seen.includes("fake server started")) {
            resolve("up");
          }
        });
      });
      let timer: NodeJS.Timeout | undefined;
      const outcome = await Promise.race([
        exited.then(() => "exited" as const),
        said,
        new Promise<"up">((resolve) => (timer = setTimeout(() => resolve("up"), LanguageClient.initializeMs))),
      ]).finally(() => clearTimeout(timer));
      if (outcome === "exited") {
        throw new Error("Pending response rejected since connection got disposed");
      }
      this.setState(State.Running);
    } catch (error) {
      // As the real client: a forced notification, unless the extension overrides `error`.
      this.error("cachelint client: couldn't create connection to server.", error, "force");
      this.setState(State.Stopped);
      throw error;
    }
  }

  async stop(_timeout?: number): Promise<void> {
    if (this.state !== State.Running) {
      throw new Error(`Client is not running and can't be stopped. It's current state is: ${this.state}`);
    }
    // The real client sends shutdown and exit; the fake servers exit when their standard input closes.
    this.process?.stdin?.end();
    this.setState(State.Stopped);
  }

  error(message: string, _data?: unknown, showNotification: boolean | "force" = true): void {
    this.notifications.push({ message, show: showNotification });
  }

  /** The connection closed under a running client: ask the error handler, then restart or stop as told. */
  async simulateClosed(): Promise<CloseResult> {
    const result: CloseResult = await this.clientOptions.errorHandler.closed();
    this.setState(State.Stopped);
    if (result.action === CloseAction.Restart) {
      await this.start().catch(() => undefined);
    }
    return result;
  }
}
