import * as assert from "node:assert/strict";
import { describe, it } from "node:test";

import { CrashPolicy } from "../src/crash";

describe("CrashPolicy", () => {
  it("restarts four times within three minutes, then gives up", () => {
    let now = 0;
    const policy = new CrashPolicy(4, 180_000, () => now);
    const decisions = [1, 2, 3, 4, 5].map(() => ((now += 1000), policy.shouldRestart()));
    assert.deepEqual(decisions, [true, true, true, true, false]);
    assert.equal(policy.crashes, 5);
  });

  it("forgets crashes older than the window", () => {
    let now = 0;
    const policy = new CrashPolicy(1, 1000, () => now);
    assert.equal(policy.shouldRestart(), true);
    now = 5000;
    assert.equal(policy.shouldRestart(), true);
    assert.equal(policy.shouldRestart(), false);
  });
});
