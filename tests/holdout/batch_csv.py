"""Classify support tickets from a CSV export in one pass, writing labels to a new CSV."""
import csv
import json
import os
import sys
import time
import uuid
from datetime import date
from pathlib import Path

from openai import OpenAI

client = OpenAI()
MODEL = "gpt-4o-mini"
LABELS = {"billing", "bug", "feature_request", "account", "other"}
EXAMPLES_DIR = Path(__file__).parent / "examples"


def load_examples() -> str:
    shots = []
    for name in sorted(os.listdir(EXAMPLES_DIR)):
        record = json.loads((EXAMPLES_DIR / name).read_text())
        shots.append(json.dumps(record, sort_keys=True))
    return "\n".join(shots)


SYSTEM_PROMPT = (
    "Classify each support ticket into exactly one label from: "
    + ", ".join(sorted(LABELS))
    + ".\nReply with JSON {\"label\": ..., \"confidence\": 0-1}.\n\nExamples:\n"
    + load_examples()
)


def classify(row: dict[str, str], batch_id: str) -> dict:
    ticket = {"subject": row["subject"], "body": row["body"], "product": row.get("product", "")}
    completion = client.chat.completions.create(
        model=MODEL,
        messages=[
            {"role": "system", "content": SYSTEM_PROMPT},
            {"role": "user", "content": f"Date: {date.today()}\nTicket: {json.dumps(ticket)}"},
        ],
        response_format={"type": "json_object"},
        user=f"batch-{batch_id}",
        metadata={"request_id": str(uuid.uuid4())},
        store=True,
    )
    return json.loads(completion.choices[0].message.content)


def main(src: str, dst: str) -> None:
    batch_id = uuid.uuid4().hex[:8]
    started = time.time()
    with open(src, newline="") as fin, open(dst, "w", newline="") as fout:
        reader = csv.DictReader(fin)
        writer = csv.DictWriter(fout, fieldnames=[*reader.fieldnames, "label", "confidence"])
        writer.writeheader()
        for i, row in enumerate(reader, 1):
            result = classify(row, batch_id)
            writer.writerow({**row, "label": result.get("label"), "confidence": result.get("confidence")})
            if i % 100 == 0:
                print(f"{i} rows in {time.time() - started:.0f}s", file=sys.stderr)


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
