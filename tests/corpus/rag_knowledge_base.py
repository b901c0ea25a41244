"""Docs assistant: a small knowledge base in the system prompt plus retrieved chunks per question."""

from __future__ import annotations

import json
from pathlib import Path

import anthropic
from myapp.vectorstore import VectorIndex

client = anthropic.Anthropic()
index = VectorIndex.load("indexes/docs")
MODEL = "claude-sonnet-4-5"
KB_DIR = Path(__file__).parent / "kb"

INSTRUCTIONS = (
    "You are the documentation assistant for the Helios deployment platform. Answer only from the "
    "knowledge base and the retrieved sources. Cite sources as [doc-id]. If the answer is not in the "
    "sources, say so and suggest where in the docs the user could look."
) + "\n" + "Style: quote commands in code blocks, name the Helios version an answer applies to. " * 60
KNOWLEDGE_BASE = "\n\n".join(page.read_text() for page in KB_DIR.glob("*.md"))  # expect: CL103
GLOSSARY = "\n".join(f"{p.stem}: {p.read_text().strip()}" for p in sorted(KB_DIR.glob("glossary/*.txt")))


def _format_hits(hits) -> str:
    ordered = sorted(hits, key=lambda h: (-h.score, h.id))
    return "\n".join(
        f'<doc id="{h.id}">\n{h.text}\n{json.dumps(h.metadata, sort_keys=True)}\n</doc>' for h in ordered
    )


def answer(question: str, k: int = 6) -> str:
    sources = _format_hits(index.search(question, k=k))
    response = client.messages.create(
        model=MODEL,
        max_tokens=1500,
        system=[
            {"type": "text", "text": INSTRUCTIONS},
            {"type": "text", "text": KNOWLEDGE_BASE + "\n\n" + GLOSSARY, "cache_control": {"type": "ephemeral", "ttl": "1h"}},
        ],
        messages=[{"role": "user", "content": f"<sources>\n{sources}\n</sources>\n\n{question}"}],
    )
    return response.content[0].text


def answer_inline(question: str, k: int = 6) -> str:
    """Older endpoint, kept for the Slack bot: the sources go into the system prompt."""
    hits = index.search(question, k=k)
    sources = _format_hits(hits)
    response = client.messages.create(
        model=MODEL,
        max_tokens=1500,
        system=f"<sources>\n{sources}\n</sources>\n\n{INSTRUCTIONS}",  # expect: CL104
        messages=[{"role": "user", "content": question}],
    )
    return response.content[0].text
