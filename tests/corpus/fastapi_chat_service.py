"""FastAPI backend for the in-app assistant (OpenAI Chat Completions, async client)."""

from __future__ import annotations

import logging
import time
import uuid
from datetime import datetime, timezone

from fastapi import Depends, FastAPI, Request
from openai import AsyncOpenAI
from pydantic import BaseModel

from .auth import User, current_user
from .store import ConversationStore

app = FastAPI()
llm = AsyncOpenAI()
store = ConversationStore()
log = logging.getLogger("assistant")

POLICY = (
    "You are Ledgerly's in-app assistant. You help small-business owners categorize expenses, reconcile "
    "bank feeds and understand their reports. Never give tax or legal advice; point to an accountant instead. "
    "Answer in the user's language and keep answers under 200 words."
) + "\n" + "Formatting: short paragraphs, numbered steps for procedures, amounts in the user's currency. " * 60


class ChatIn(BaseModel):
    conversation_id: str
    message: str


@app.middleware("http")
async def timing(request: Request, call_next):
    started = time.perf_counter()
    response = await call_next(request)
    response.headers["x-elapsed-ms"] = f"{(time.perf_counter() - started) * 1000:.0f}"
    return response


@app.post("/chat")
async def chat(body: ChatIn, user: User = Depends(current_user)):
    request_id = uuid.uuid4().hex  # expect: CL101
    history = await store.load(body.conversation_id)
    system = (
        f"Request-ID: {request_id}\n"
        f"The user is {user.full_name} from {user.company}.\n"  # expect: CL104
        f"{POLICY}"
    )
    messages = [{"role": "system", "content": system}, *history, {"role": "user", "content": body.message}]
    completion = await llm.chat.completions.create(model="gpt-4.1-mini", messages=messages, user=user.id)
    answer = completion.choices[0].message.content
    await store.append(body.conversation_id, [
        {"role": "user", "content": body.message},
        {"role": "assistant", "content": answer},
    ])
    log.info("chat %s done at %s", request_id, datetime.now(timezone.utc).isoformat())
    return {"answer": answer, "request_id": request_id}


@app.post("/chat/v2")
async def chat_v2(body: ChatIn, user: User = Depends(current_user)):
    """The fixed endpoint: static policy first, per-user facts after it, the id only in the logs."""
    request_id = uuid.uuid4().hex
    history = await store.load(body.conversation_id)
    system = f"{POLICY}\n\nThe user is {user.full_name} from {user.company}."
    messages = [{"role": "system", "content": system}, *history, {"role": "user", "content": body.message}]
    completion = await llm.chat.completions.create(model="gpt-4.1-mini", messages=messages, user=user.id)
    answer = completion.choices[0].message.content
    await store.append(body.conversation_id, [
        {"role": "user", "content": body.message},
        {"role": "assistant", "content": answer},
    ])
    log.info("chat %s done in %s", request_id, datetime.now(timezone.utc).isoformat())
    return {"answer": answer, "request_id": request_id}
