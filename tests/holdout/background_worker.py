"""Background worker: pulls agent jobs from Redis and runs each as a multi-step tool-using conversation."""
import json
import logging
import os
import signal
from pathlib import Path

import anthropic
import redis

log = logging.getLogger(__name__)
r = redis.Redis.from_url(os.environ.get("REDIS_URL", "redis://localhost:6379/0"))
client = anthropic.Anthropic(max_retries=3)

SYSTEM = "You are an operations agent. Use the tools to investigate and fix the reported incident."
TOOLS = [json.loads(p.read_text()) for p in Path("tool_specs").glob("*.json")]  # expect: CL201
running = True


def stop(*_):
    global running
    running = False


def execute(name: str, args: dict) -> str:
    return json.dumps({"tool": name, "ok": True, "args": args}, sort_keys=True)


def refresh_task(job: dict) -> str:
    status = r.get(f"incident-status:{job['incident_id']}") or b"unknown"
    return f"{job['description']}\n\nLatest incident status: {status.decode()}"


def run_job(job: dict) -> str:
    messages = [{"role": "user", "content": job["description"]}]
    for step in range(job.get("max_steps", 15)):
        model = "claude-opus-4-1" if step == 0 else "claude-sonnet-4-5"  # expect: CL401
        thinking = {"type": "enabled", "budget_tokens": 4000} if job.get("hard") and step < 3 else {"type": "disabled"}  # expect: CL401
        resp = client.messages.create(
            model=model, max_tokens=8000, system=SYSTEM, tools=TOOLS, thinking=thinking, messages=messages,
        )
        messages.append({"role": "assistant", "content": resp.content})
        if resp.stop_reason != "tool_use":
            break
        results = [
            {"type": "tool_result", "tool_use_id": b.id, "content": execute(b.name, b.input)}
            for b in resp.content if b.type == "tool_use"
        ]
        messages.append({"role": "user", "content": results})
        messages[-1]["content"][-1]["cache_control"] = {"type": "ephemeral"}  # expect: CL503
        messages[0]["content"] = refresh_task(job)  # expect: CL301
    return "".join(getattr(b, "text", "") for b in resp.content)


def main() -> None:
    signal.signal(signal.SIGTERM, stop)
    while running:
        item = r.blpop("agent-jobs", timeout=5)
        if item is None:
            continue
        job = json.loads(item[1])
        try:
            result = run_job(job)
            r.set(f"agent-result:{job['id']}", result)
        except anthropic.APIError:
            log.exception("job %s failed", job.get("id"))
            r.rpush("agent-jobs-dead", item[1])


if __name__ == "__main__":
    main()
