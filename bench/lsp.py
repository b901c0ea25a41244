"""Benchmark `cachelint lsp`: time from didChange to published diagnostics for a 3,000-line file, warm server.

Usage: python bench/lsp.py [--lines 3000] [--repeat 20]
Prints a table and, last, the headline (median and p90), measured against the server's own debounce delay.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import tempfile
import time
from pathlib import Path

from lsprotocol import types
from pytest_lsp import ClientServerConfig, client_capabilities

from cachelint.lsp import DEBOUNCE_S

BLOCK = '''

def handler_{i}(profile: dict, question: str):
    system = f"Now {{datetime.now()}} profile {{json.dumps(profile)}}"
    return client.messages.create(model="claude-sonnet-4-5", max_tokens=100, system=system,
                                  messages=[{{"role": "user", "content": question}}])
'''


def source(lines: int) -> str:
    head = "from datetime import datetime\nimport json\n\nimport anthropic\n\nclient = anthropic.Anthropic()\n"
    body, i = [head], 0
    while sum(part.count("\n") for part in body) < lines:
        body.append(BLOCK.format(i=i))
        i += 1
    return "".join(body)


async def measure(lines: int, repeat: int) -> list[float]:
    config = ClientServerConfig(server_command=[sys.executable, "-m", "cachelint", "lsp"])
    client = await config.start()
    root = Path(tempfile.mkdtemp())
    await client.initialize_session(types.InitializeParams(capabilities=client_capabilities("visual-studio-code"), root_uri=root.as_uri()))
    uri = (root / "big.py").as_uri()
    text = source(lines)
    client.text_document_did_open(types.DidOpenTextDocumentParams(types.TextDocumentItem(uri=uri, language_id="python", version=1, text=text)))
    await client.wait_for_notification(types.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS)
    timings = []
    for version in range(2, repeat + 2):
        text = text.replace("max_tokens=100", f"max_tokens={100 + version}", 1)
        start = time.perf_counter()
        client.text_document_did_change(types.DidChangeTextDocumentParams(
            text_document=types.VersionedTextDocumentIdentifier(uri=uri, version=version),
            content_changes=[types.TextDocumentContentChangeWholeDocument(text=text)]))
        await client.wait_for_notification(types.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS)
        timings.append(time.perf_counter() - start)
    await client.shutdown_session()
    await config.stop() if hasattr(config, "stop") else None
    return timings


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--lines", type=int, default=3000)
    parser.add_argument("--repeat", type=int, default=20)
    args = parser.parse_args()
    timings = asyncio.run(measure(args.lines, args.repeat))
    median, p90 = statistics.median(timings), sorted(timings)[int(0.9 * (len(timings) - 1))]
    print(f"{args.lines} lines, {args.repeat} edits, debounce {DEBOUNCE_S * 1000:.0f} ms")
    print(f"  didChange -> diagnostics  median {median * 1000:7.1f} ms   p90 {p90 * 1000:7.1f} ms")
    print(f"headline: median {median * 1000:.0f} ms, of which {DEBOUNCE_S * 1000:.0f} ms debounce; lint {max(0.0, median - DEBOUNCE_S) * 1000:.0f} ms")


if __name__ == "__main__":
    main()
