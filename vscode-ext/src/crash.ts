/** When a server that was running dies: restart it, unless it keeps dying (as vscode-languageclient's default). */

export const MAX_RESTARTS = 4;
export const WINDOW_MS = 3 * 60 * 1000;

export class CrashPolicy {
  private times: number[] = [];

  constructor(
    private readonly maxRestarts = MAX_RESTARTS,
    private readonly windowMs = WINDOW_MS,
    private readonly now: () => number = Date.now,
  ) {}

  /** Record a crash; true when the server should be restarted. */
  shouldRestart(): boolean {
    const time = this.now();
    this.times = [...this.times, time].filter((previous) => time - previous <= this.windowMs);
    return this.times.length <= this.maxRestarts;
  }

  /** Crashes within the window. */
  get crashes(): number {
    return this.times.length;
  }
}
