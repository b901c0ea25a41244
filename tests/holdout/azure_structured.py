"""Async invoice extraction with Azure OpenAI structured outputs (chat.completions.parse)."""
import asyncio
import json
import os
import sys
from pathlib import Path

from openai import AsyncAzureOpenAI
from pydantic import BaseModel, Field

API_VERSION = "2024-10-21"
DEPLOYMENT = os.environ.get("AZURE_OPENAI_DEPLOYMENT", "gpt-4o-extract")
client = AsyncAzureOpenAI(azure_endpoint=os.environ["AZURE_OPENAI_ENDPOINT"], api_version=API_VERSION)


class LineItem(BaseModel):
    description: str
    quantity: float
    unit_price: float


class Invoice(BaseModel):
    vendor: str
    invoice_number: str
    currency: str = Field(description="ISO 4217 code")
    total: float
    due_date: str | None = None
    items: list[LineItem]


CURRENCIES = frozenset({"USD", "EUR", "GBP", "JPY", "CHF"})
FIELD_HINTS = {
    "vendor": "legal name as printed on the invoice",
    "total": "grand total including tax",
    "due_date": "ISO 8601 date, or null when absent",
}

SYSTEM = (
    "Extract the invoice into the given schema. Do not invent values.\n"
    f"Allowed currencies: {', '.join(sorted(CURRENCIES))}.\n"
    + "\n".join(f"- {name}: {hint}" for name, hint in FIELD_HINTS.items())
    + "\nDeployment: " + json.dumps({"deployment": DEPLOYMENT, "api_version": API_VERSION})
)


async def extract(path: Path, sem: asyncio.Semaphore) -> Invoice | None:
    async with sem:
        text = path.read_text(errors="replace")
        completion = await client.chat.completions.parse(
            model=DEPLOYMENT,
            messages=[
                {"role": "system", "content": SYSTEM},
                {"role": "user", "content": f"File: {path.name}\n\n{text}"},
            ],
            response_format=Invoice,
            temperature=0,
        )
        return completion.choices[0].message.parsed


async def main(folder: str) -> None:
    sem = asyncio.Semaphore(8)
    files = sorted(Path(folder).glob("*.txt"))
    results = await asyncio.gather(*(extract(p, sem) for p in files))
    out = {p.name: (r.model_dump() if r else None) for p, r in zip(files, results)}
    Path("invoices.json").write_text(json.dumps(out, indent=2))
    print(f"extracted {sum(r is not None for r in results)} of {len(files)}", file=sys.stderr)


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1] if len(sys.argv) > 1 else "inbox"))
