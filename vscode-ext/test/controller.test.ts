import * as assert from "node:assert/strict";
import { describe, it } from "node:test";

import { CommandContext, ServerCommand } from "../src/command";
import { ClientEvents, ClientHandle, ControllerDeps, ServerController } from "../src/controller";
import { FailureReport, NOT_INSTALLED_MESSAGE, StartFailure } from "../src/errors";
import { DEFAULT_SETTINGS, Settings } from "../src/settings";
import { ServerState } from "../src/status";

class FakeClient implements ClientHandle {
  started = 0;
  stopped = 0;
  running = false;
  constructor(
    readonly command: ServerCommand,
    readonly events: ClientEvents,
    private readonly failWith?: StartFailure,
    private readonly log?: string[],
  ) {}
  async start(): Promise<void> {
    this.started += 1;
    this.log?.push(`start ${this.command.command}`);
    await new Promise((resolve) => setTimeout(resolve, 5));
    if (this.failWith !== undefined) {
      throw this.failWith;
    }
    this.running = true;
  }
  async stop(): Promise<void> {
    this.stopped += 1;
    this.log?.push(`stop ${this.command.command}`);
    await new Promise((resolve) => setTimeout(resolve, 5));
    this.running = false;
  }
}

interface Harness {
  controller: ServerController;
  settings: Settings;
  context: CommandContext;
  /** Commands whose preflight fails, with the failure. */
  broken: Map<string, StartFailure>;
  /** The next client's start fails with this. */
  startFailure: StartFailure | undefined;
  clients: FakeClient[];
  statuses: Array<[ServerState, string | undefined]>;
  reports: FailureReport[];
  log: string[];
}

function harness(settings: Partial<Settings> = {}, context: CommandContext = {}): Harness {
  const h = {
    settings: { ...DEFAULT_SETTINGS, ...settings },
    context,
    broken: new Map<string, StartFailure>(),
    startFailure: undefined as StartFailure | undefined,
    clients: [] as FakeClient[],
    statuses: [] as Array<[ServerState, string | undefined]>,
    reports: [] as FailureReport[],
    log: [] as string[],
  } as Harness;
  const deps: ControllerDeps = {
    readSettings: () => h.settings,
    commandContext: async () => h.context,
    preflight: async (command) => h.broken.get(command.command),
    createClient: (command, events) => {
      const client = new FakeClient(command, events, h.startFailure, h.log);
      h.clients.push(client);
      return client;
    },
    setStatus: (state, detail) => h.statuses.push([state, detail]),
    report: (report) => h.reports.push(report),
    log: () => undefined,
  };
  h.controller = new ServerController(deps);
  return h;
}

function changed(...keys: string[]) {
  return { affectsConfiguration: (section: string) => keys.some((key) => key === section || key.startsWith(`${section}.`)) };
}

const enoent = (command: string): StartFailure => ({ error: Object.assign(new Error(`${command} not found`), { code: "ENOENT" }) });

describe("ServerController", () => {
  it("starts the resolved command and shows starting, then running", async () => {
    const h = harness({ path: ["/bin/cachelint"], args: ["--x"] });
    await h.controller.start();
    assert.equal(h.clients.length, 1);
    assert.deepEqual(h.clients[0].command, { command: "/bin/cachelint", args: ["lsp", "--x"], source: "cachelint.path" });
    assert.deepEqual(
      h.statuses.map(([state]) => state),
      ["starting", "starting", "running"],
    );
    assert.equal(h.statuses.at(-1)?.[1], "/bin/cachelint lsp --x (from cachelint.path)");
    assert.equal(h.controller.state, "running");
  });

  it("reports not installed, once, without starting a client", async () => {
    const h = harness();
    h.broken.set("cachelint", enoent("cachelint"));
    await h.controller.start();
    assert.equal(h.clients.length, 0);
    assert.equal(h.controller.state, "notInstalled");
    assert.equal(h.reports.length, 1);
    assert.equal(h.reports[0].kind, "notInstalled");
    assert.ok(h.reports[0].message.startsWith(NOT_INSTALLED_MESSAGE));
    assert.equal(h.reports[0].actions[0].title, "Open Settings");
  });

  it("falls back from the Python extension's interpreter to PATH", async () => {
    const h = harness({}, { pythonInterpreter: ["/env/bin/python"] });
    h.broken.set("/env/bin/python", { missingModule: true });
    await h.controller.start();
    assert.equal(h.clients[0].command.source, "PATH");
    assert.equal(h.reports.length, 0);
  });

  it("reports the interpreter when neither it nor PATH has cachelint", async () => {
    const h = harness({}, { pythonInterpreter: ["/env/bin/python"] });
    h.broken.set("/env/bin/python", { missingModule: true });
    h.broken.set("cachelint", enoent("cachelint"));
    await h.controller.start();
    assert.equal(h.reports.length, 1);
    assert.match(h.reports[0].message, /tried `\/env\/bin\/python -m cachelint lsp` from Python extension/);
  });

  it("does not fall back from an explicit interpreter setting", async () => {
    const h = harness({ interpreter: ["/env/bin/python"] });
    h.broken.set("/env/bin/python", { missingModule: true });
    await h.controller.start();
    assert.equal(h.clients.length, 0);
    assert.equal(h.controller.state, "notInstalled");
  });

  it("reports a failed start with its reason and stops that client", async () => {
    const h = harness();
    h.startFailure = { exitCode: 2, stderr: "Error: No such command 'lsp'.\n" };
    await h.controller.start();
    assert.equal(h.controller.state, "stopped");
    assert.equal(h.clients[0].stopped, 1);
    assert.match(h.reports[0].message, /no `lsp` command/);
  });

  it("restarts on a cachelint.* change and ignores other changes", async () => {
    const h = harness();
    await h.controller.start();
    assert.equal(await h.controller.onConfigurationChanged(changed("python.analysis.typeCheckingMode")), "none");
    assert.equal(h.clients.length, 1);

    h.settings = { ...h.settings, args: ["--verbose"] };
    assert.equal(await h.controller.onConfigurationChanged(changed("cachelint.args")), "restart");
    assert.equal(h.clients.length, 2);
    assert.equal(h.clients[0].stopped, 1);
    assert.deepEqual(h.clients[1].command.args, ["lsp", "--verbose"]);
    assert.equal(h.controller.state, "running");
  });

  it("stops when disabled and starts when enabled again", async () => {
    const h = harness();
    await h.controller.start();
    h.settings = { ...h.settings, enable: false };
    assert.equal(await h.controller.onConfigurationChanged(changed("cachelint.enable")), "stop");
    assert.equal(h.clients[0].stopped, 1);
    assert.equal(h.controller.state, "disabled");
    assert.equal(await h.controller.onConfigurationChanged(changed("cachelint.path")), "none");

    h.settings = { ...h.settings, enable: true };
    assert.equal(await h.controller.onConfigurationChanged(changed("cachelint.enable")), "start");
    assert.equal(h.clients.length, 2);
    assert.equal(h.controller.state, "running");
  });

  it("does not start while disabled", async () => {
    const h = harness({ enable: false });
    await h.controller.start();
    await h.controller.restart();
    assert.equal(h.clients.length, 0);
    assert.equal(h.controller.state, "disabled");
  });

  it("runs operations one at a time, in order", async () => {
    const h = harness();
    await Promise.all([h.controller.start(), h.controller.restart(), h.controller.restart(), h.controller.stop(), h.controller.start()]);
    assert.deepEqual(h.log, ["start cachelint", "stop cachelint", "start cachelint", "stop cachelint", "start cachelint", "stop cachelint", "start cachelint"]);
    assert.equal(h.clients.filter((client) => client.running).length, 1);
  });

  it("shows a server the client restarts after a crash, and reports one that stays down", async () => {
    const h = harness();
    await h.controller.start();
    const client = h.clients[0];
    client.events.onState("starting");
    assert.equal(h.controller.state, "starting");
    client.events.onState("running");
    assert.equal(h.controller.state, "running");
    client.events.onStopped({ crashes: 5, exitCode: 1, stderr: "RuntimeError: boom\n" });
    assert.equal(h.controller.state, "stopped");
    assert.match(h.reports[0].message, /crashed 5 times/);
    assert.equal(client.stopped, 1);
    // Events from a client that is gone change nothing.
    client.events.onState("running");
    assert.equal(h.controller.state, "stopped");
    await h.controller.restart();
    assert.equal(h.controller.state, "running");
  });

  it("restarts on an interpreter change only when the interpreter is not set explicitly", async () => {
    const h = harness();
    await h.controller.start();
    assert.equal(await h.controller.onInterpreterChanged(), true);
    assert.equal(h.clients.length, 2);
    h.settings = { ...h.settings, interpreter: ["/py"] };
    assert.equal(await h.controller.onInterpreterChanged(), false);
    assert.equal(h.clients.length, 2);
  });

  it("stops on dispose and starts nothing after", async () => {
    const h = harness();
    await h.controller.start();
    await h.controller.dispose();
    assert.equal(h.clients[0].stopped, 1);
    await h.controller.start();
    assert.equal(h.clients.length, 1);
  });
});
