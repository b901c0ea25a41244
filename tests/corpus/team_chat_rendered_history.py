"""Team-chat assistant: the conversation lives in Postgres and is rendered into the prompt each turn (OpenAI)."""

from __future__ import annotations

import time

import psycopg
from openai import OpenAI

client = OpenAI()
MODEL = "gpt-4.1"
SYSTEM = (
    "You are the assistant in a team chat. Several people talk to you; each message says who wrote it "
    "and when. Address people by name and keep track of who asked for what."
)
DEFAULT_SETTINGS = {"language": "en", "tone": "neutral"}


def _ago(ts: float) -> str:
    minutes = int((time.time() - ts) // 60)  # expect: CL101
    return "just now" if minutes < 1 else f"{minutes} min ago"


def load_history(conn: psycopg.Connection, channel_id: int) -> list[tuple]:
    return conn.execute(
        "SELECT author, role, body, created_at FROM chat WHERE channel_id = %s ORDER BY id", (channel_id,)
    ).fetchall()


def load_settings(conn: psycopg.Connection, channel_id: int) -> dict:
    settings = dict(DEFAULT_SETTINGS)
    for key, value in conn.execute("SELECT key, value FROM channel_settings WHERE channel_id = %s", (channel_id,)):
        settings[key] = value
    return settings


def reply(conn: psycopg.Connection, channel_id: int, author: str, text: str) -> str:
    rows = load_history(conn, channel_id)
    settings = load_settings(conn, channel_id)
    system = {"role": "system", "content": f"{SYSTEM}\nChannel settings: {settings}"}  # expect: CL102
    history = [
        {"role": role, "content": f"{who} ({_ago(created_at)}): {body}"}
        for who, role, body, created_at in rows
    ]
    messages = [system] + history + [{"role": "user", "content": f"{author} (just now): {text}"}]
    started = time.time()
    response = client.chat.completions.create(model=MODEL, messages=messages)
    answer = response.choices[0].message.content
    with conn.transaction():
        conn.execute("INSERT INTO chat (channel_id, author, role, body, created_at) VALUES (%s, %s, 'user', %s, %s)",
                     (channel_id, author, text, started))
        conn.execute("INSERT INTO chat (channel_id, author, role, body, created_at) VALUES (%s, 'bot', 'assistant', %s, %s)",
                     (channel_id, answer, time.time()))
    return answer
