"""Record the demo session's traffic through the real `cachelint proxy`, for `cachelint demo`'s proxy report.

The six demo requests (cachelint/demo/data/turn-*.json) are sent through the proxy to the local provider
stand-in used by the tests (tests/upstream.py: Anthropic's wire format, SSE, and usage from a prefix cache
with the real 1,024-token minimum), and the recorded exchanges are written to
cachelint/demo/data/traffic.jsonl. Run from the repository root: python examples/make_demo_traffic.py
"""

from __future__ import annotations

import json
import sqlite3
import sys
import tempfile
from pathlib import Path

import httpx

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))

from test_proxy import Proxy  # noqa: E402
from upstream import Upstream  # noqa: E402

DATA = ROOT / "cachelint" / "demo" / "data"


def main() -> None:
    turns = sorted(DATA.glob("turn-*.json"), key=lambda p: int(p.stem.split("-")[1]))
    with tempfile.TemporaryDirectory() as tmp, Upstream(event_delay=0.001, anthropic_min_tokens=1024) as upstream:
        proxy = Proxy(upstream.url, Path(tmp) / "demo.db")
        try:
            for path in turns:
                request = json.loads(path.read_text())["request"]
                headers = {**request["headers"], "x-api-key": "sk-ant-demo", "x-claude-code-session-id": "demo-session"}
                with httpx.Client() as http:
                    with http.stream("POST", proxy.url + request["path"], json=request["body"], headers=headers, timeout=60) as response:
                        for _ in response.iter_raw():
                            pass
        finally:
            proxy.stop()
        db = sqlite3.connect(Path(tmp) / "demo.db")
        db.row_factory = sqlite3.Row
        with open(DATA / "traffic.jsonl", "w") as out:
            for row in db.execute("SELECT * FROM exchanges ORDER BY id"):
                out.write(json.dumps({
                    "started_at": row["started_at"],
                    "request": {"method": row["method"], "url": row["url"], "headers": json.loads(row["request_headers"]), "body": json.loads(row["request_body"])},
                    "response": {"status": row["status"], "headers": json.loads(row["response_headers"]), "body": row["response_body"]},
                }) + "\n")
    print(f"wrote {DATA / 'traffic.jsonl'}")


if __name__ == "__main__":
    main()
