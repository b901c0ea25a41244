"""Slack bot (Bolt) that answers questions in threads, keeping each thread's history."""
import os
import time
from collections import defaultdict

import anthropic
from slack_bolt import App

app = App(token=os.environ["SLACK_BOT_TOKEN"], signing_secret=os.environ["SLACK_SIGNING_SECRET"])
client = anthropic.Anthropic()
MODEL = "claude-sonnet-4-5"

INSTRUCTIONS = """You are HelpBot for the platform engineering team.
Answer questions about our deploy pipeline, on-call rotation and internal tooling.
Use Slack mrkdwn. Keep answers short; link to runbooks where you can."""

threads: dict[str, list[dict]] = defaultdict(list)
COMPACT_AT = 300


def summarize(history: list[dict]) -> list[dict]:
    resp = client.messages.create(
        model=MODEL,
        max_tokens=1024,
        system="Summarize this support thread so the conversation can continue from the summary.",
        messages=history + [{"role": "user", "content": "Summarize the thread so far."}],
    )
    return [
        {"role": "user", "content": "Summary of earlier discussion:\n" + resp.content[0].text},
        {"role": "assistant", "content": "Understood."},
    ]


@app.event("app_mention")
def on_mention(event, say):
    thread_ts = event.get("thread_ts") or event["ts"]
    history = threads[thread_ts]
    user_name = app.client.users_info(user=event["user"])["user"]["real_name"]
    history.append({"role": "user", "content": f"{user_name} ({time.strftime('%H:%M')}): {event['text']}"})
    if len(history) > COMPACT_AT:
        history[:] = summarize(history)
    system = [
        {"type": "text", "text": INSTRUCTIONS},
        {"type": "text", "text": f"Workspace: {event.get('team', 'unknown')}"},
    ]
    started = time.perf_counter()
    reply = client.messages.create(model=MODEL, max_tokens=1024, system=system, messages=history)
    text = reply.content[0].text
    history.append({"role": "assistant", "content": text})
    say(text=text, thread_ts=thread_ts)
    app.logger.info(
        "answered in %.2fs (cache read %s)", time.perf_counter() - started, reply.usage.cache_read_input_tokens
    )


if __name__ == "__main__":
    app.start(port=int(os.environ.get("PORT", "3000")))
