"""Customer-success agent on the OpenAI Responses API, chaining turns with previous_response_id."""
import json
import uuid
from datetime import datetime, timezone

from openai import OpenAI

client = OpenAI()
MODEL = "gpt-5"
INSTRUCTIONS = """You are a customer-success agent for Lumen Analytics.
Look up the account before answering; never guess plan limits.
When you change anything, summarize the change at the end of your reply."""

TOOLS = sorted(
    [
        {"type": "function", "name": "get_account", "description": "Fetch an account by id.",
         "parameters": {"type": "object", "properties": {"account_id": {"type": "string"}}, "required": ["account_id"]}},
        {"type": "function", "name": "update_seats", "description": "Change the seat count.",
         "parameters": {"type": "object",
                        "properties": {"account_id": {"type": "string"}, "seats": {"type": "integer"}},
                        "required": ["account_id", "seats"]}},
    ],
    key=lambda t: t["name"],
)


def call_tool(name: str, args: dict) -> str:
    if name == "get_account":
        result = {"id": args["account_id"], "plan": "growth", "seats": 25, "renews": "2025-11-01"}
    else:
        result = {"id": args["account_id"], "seats": args["seats"], "status": "updated"}
    result["fetched_at"] = datetime.now(timezone.utc).isoformat()
    return json.dumps(result)


class Session:
    def __init__(self, account_id: str, effort: str = "medium") -> None:
        self.account_id = account_id
        self.effort = effort
        self.previous_id: str | None = None
        self.cache_key = f"cs-{uuid.uuid4()}"

    def send(self, text: str) -> str:
        stamp = datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
        pending: list[dict] = [{"role": "user", "content": f"[{stamp}] {text}"}]
        while True:
            resp = client.responses.create(
                model=MODEL,
                instructions=INSTRUCTIONS,
                input=pending,
                tools=TOOLS,
                previous_response_id=self.previous_id,
                reasoning={"effort": self.effort},
                prompt_cache_key=self.cache_key,
                metadata={"account": self.account_id},
            )
            self.previous_id = resp.id
            calls = [item for item in resp.output if item.type == "function_call"]
            if not calls:
                return resp.output_text
            pending = [
                {"type": "function_call_output", "call_id": c.call_id, "output": call_tool(c.name, json.loads(c.arguments))}
                for c in calls
            ]


if __name__ == "__main__":
    session = Session("acct_42", effort="low")
    while (line := input("customer> ").strip()):
        print(session.send(line))
