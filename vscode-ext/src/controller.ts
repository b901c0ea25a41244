/**
 * The server's life cycle: start, stop, restart, and what a configuration change does. Everything outside
 * (VS Code, the language client, processes) comes in through `ControllerDeps`, so the tests drive it with
 * fakes. Operations run one at a time, in the order they were asked for.
 */
import { CommandContext, formatCommand, ServerCommand, serverCommands } from "./command";
import { describeFailure, FailureReport, StartFailure } from "./errors";
import { ConfigurationAction, configurationAction, ConfigurationChangeLike, Settings } from "./settings";
import { ServerState } from "./status";

/** A started language client for one server command. */
export interface ClientHandle {
  /** Resolves once the server is initialized; rejects with a `StartFailure`. */
  start(): Promise<void>;
  /** Stop the server (and make sure its process is gone); never rejects. */
  stop(): Promise<void>;
}

/** What a client reports after it started. */
export interface ClientEvents {
  /** The client restarts the server after a crash ("starting"), and it is up again ("running"). */
  onState(state: "starting" | "running"): void;
  /** The server stopped on its own and will not come back (it kept crashing, or the connection failed). */
  onStopped(failure: StartFailure): void;
}

export interface ControllerDeps {
  readSettings(): Settings;
  /** Where `~`, `${workspaceFolder}` and the Python extension's interpreter come from. */
  commandContext(settings: Settings): Promise<CommandContext>;
  /** Why `command` cannot start, before starting it; undefined when it looks fine. */
  preflight(command: ServerCommand): Promise<StartFailure | undefined>;
  createClient(command: ServerCommand, events: ClientEvents): ClientHandle;
  setStatus(state: ServerState, detail?: string): void;
  report(report: FailureReport): void;
  log(message: string): void;
}

function asFailure(error: unknown, command: ServerCommand): StartFailure {
  if (typeof error === "object" && error !== null && ("error" in error || "exitCode" in error || "missingModule" in error)) {
    return { command, ...(error as StartFailure) };
  }
  return { command, error };
}

export class ServerController {
  private settings: Settings;
  private client: ClientHandle | undefined;
  private command: ServerCommand | undefined;
  private queue: Promise<unknown> = Promise.resolve();
  private current: ServerState = "stopped";
  private disposed = false;

  constructor(private readonly deps: ControllerDeps) {
    this.settings = deps.readSettings();
  }

  get state(): ServerState {
    return this.current;
  }

  /** The command of the running (or last started) server. */
  get serverCommand(): ServerCommand | undefined {
    return this.command;
  }

  get enabled(): boolean {
    return this.settings.enable;
  }

  start(): Promise<void> {
    return this.enqueue(() => this.doStart());
  }

  stop(): Promise<void> {
    return this.enqueue(() => this.doStop(this.settings.enable ? "stopped" : "disabled"));
  }

  restart(): Promise<void> {
    return this.enqueue(async () => {
      await this.doStop("stopped");
      await this.doStart();
    });
  }

  /** Apply a configuration change; returns what it did. */
  async onConfigurationChanged(event: ConfigurationChangeLike): Promise<ConfigurationAction> {
    const before = this.settings;
    const after = this.deps.readSettings();
    const action = configurationAction(event, before, after);
    if (action === "none") {
      return action;
    }
    this.settings = after;
    this.deps.log(`Settings changed: ${action} the server.`);
    if (action === "stop") {
      await this.stop();
    } else if (action === "start") {
      await this.start();
    } else {
      await this.restart();
    }
    return action;
  }

  /** The Python extension selected another interpreter: restart if the server came from it (or from PATH). */
  async onInterpreterChanged(): Promise<boolean> {
    const settings = this.deps.readSettings();
    if (!settings.enable || settings.path.length > 0 || settings.interpreter.length > 0) {
      return false;
    }
    this.deps.log("The Python extension's interpreter changed: restart the server.");
    await this.restart();
    return true;
  }

  async dispose(): Promise<void> {
    this.disposed = true;
    await this.enqueue(() => this.doStop("stopped"));
  }

  private enqueue(operation: () => Promise<void>): Promise<void> {
    const next = this.queue.then(operation, operation);
    this.queue = next.catch(() => undefined);
    return next;
  }

  private setStatus(state: ServerState, detail?: string): void {
    this.current = state;
    this.deps.setStatus(state, detail);
  }

  private fail(failure: StartFailure): void {
    const report = describeFailure(failure);
    this.deps.log(report.message);
    if (failure.stderr) {
      this.deps.log(`Its standard error ended with:\n${failure.stderr.trimEnd()}`);
    }
    this.setStatus(report.kind === "notInstalled" ? "notInstalled" : "stopped", report.message);
    this.deps.report(report);
  }

  private async doStart(): Promise<void> {
    if (this.disposed) {
      return;
    }
    this.settings = this.deps.readSettings();
    if (!this.settings.enable) {
      this.setStatus("disabled");
      return;
    }
    if (this.client !== undefined) {
      return;
    }
    this.setStatus("starting");
    let command: ServerCommand | undefined;
    let firstFailure: StartFailure | undefined;
    for (const candidate of serverCommands(this.settings, await this.deps.commandContext(this.settings))) {
      const found = await this.deps.preflight(candidate);
      if (found === undefined) {
        command = candidate;
        break;
      }
      const failure: StartFailure = { command: candidate, ...found };
      this.deps.log(`Cannot start \`${formatCommand(candidate)}\` (from ${candidate.source}): ${describeFailure(failure).message}`);
      firstFailure ??= failure;
    }
    if (command === undefined) {
      this.fail(firstFailure ?? { error: new Error("no server command") });
      return;
    }
    const line = `${formatCommand(command)} (from ${command.source})`;
    this.deps.log(`Starting ${line}`);
    this.setStatus("starting", line);
    const events: ClientEvents = {
      onState: (state) => {
        if (this.client === client) {
          this.setStatus(state, line);
        }
      },
      onStopped: (failure) => {
        if (this.client === client) {
          this.client = undefined;
          void client.stop();
          this.fail({ command, ...failure });
        }
      },
    };
    const client = this.deps.createClient(command, events);
    this.client = client;
    this.command = command;
    try {
      await client.start();
    } catch (error) {
      if (this.client === client) {
        this.client = undefined;
      }
      await client.stop();
      this.fail(asFailure(error, command));
      return;
    }
    if (this.client === client) {
      this.setStatus("running", line);
    }
  }

  private async doStop(state: ServerState): Promise<void> {
    const client = this.client;
    this.client = undefined;
    if (client !== undefined) {
      this.deps.log("Stopping the server.");
      await client.stop();
    }
    this.setStatus(state);
  }
}
