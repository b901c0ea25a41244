"""Research assistant on the OpenAI Responses API, chaining turns with previous_response_id."""

from __future__ import annotations

import os
from datetime import datetime
from zoneinfo import ZoneInfo

from openai import OpenAI

client = OpenAI()
MODEL = "gpt-5"
TZ = ZoneInfo(os.environ.get("APP_TZ", "Europe/Berlin"))

BASE_INSTRUCTIONS = """You are a research assistant. Search before you answer, quote your sources,
and separate what the sources say from your own assessment. Use metric units."""

TOOLS = [
    {"type": "web_search"},
    {
        "type": "function",
        "name": "save_note",
        "description": "Save a note to the user's notebook.",
        "parameters": {"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]},
        "strict": True,
    },
]


def instructions_for(locale: str) -> str:
    now = datetime.now(TZ)  # expect: CL101
    return f"{BASE_INSTRUCTIONS}\nLocale: {locale}\nCurrent local time: {now:%Y-%m-%d %H:%M}"


def research_session(questions: list[str]) -> list[str]:
    answers = []
    previous_id = None
    for question in questions:
        hard = len(question) > 200 or "compare" in question.lower()
        response = client.responses.create(
            model=MODEL,
            instructions=instructions_for("de-DE"),
            input=question,
            tools=TOOLS,
            previous_response_id=previous_id,
            reasoning={"effort": "high" if hard else "low"},  # expect: CL401
        )
        previous_id = response.id
        answers.append(response.output_text)
    return answers


def quick_answer(question: str) -> str:
    stamp = datetime.now(TZ).strftime("%Y-%m-%d %H:%M")
    response = client.responses.create(
        model=MODEL,
        instructions=BASE_INSTRUCTIONS,
        input=[{"role": "user", "content": f"(Local time {stamp}) {question}"}],
        reasoning={"effort": "low"},
    )
    return response.output_text


def session_report(started: datetime, answers: list[str]) -> str:
    elapsed = datetime.now(TZ) - started
    return f"{len(answers)} answers in {elapsed.total_seconds():.0f}s"
