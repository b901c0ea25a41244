#!/usr/bin/env python3
"""review-bot: ask Claude to review the staged diff against the team's guidelines."""
import argparse
import json
import logging
import subprocess
import sys
import time
from datetime import datetime
from pathlib import Path

import anthropic

log = logging.getLogger("review-bot")
MODEL = "claude-sonnet-4-5"
SEVERITIES = {"blocker", "major", "minor", "nit"}


def load_guidelines(root: Path) -> str:
    parts = []
    for path in sorted(root.glob("*.md")):
        parts.append(f"## {path.stem}\n{path.read_text()}")
    return "\n\n".join(parts)


def git_diff(base: str) -> str:
    out = subprocess.run(["git", "diff", "--unified=5", base], capture_output=True, text=True, check=True)
    return out.stdout


def review(client: anthropic.Anthropic, guidelines: str, diff: str, repo_meta: dict) -> str:
    severity_list = ", ".join(sorted(SEVERITIES))
    system = [
        {
            "type": "text",
            "text": "You are a senior reviewer. Label every finding with one of: " + severity_list + ".\n\n" + guidelines,
            "cache_control": {"type": "ephemeral"},
        },
        {"type": "text", "text": "Repository metadata: " + json.dumps(repo_meta, sort_keys=True)},
    ]
    started = time.monotonic()
    response = client.messages.create(
        model=MODEL,
        max_tokens=4096,
        system=system,
        messages=[{"role": "user", "content": f"Review date: {datetime.now():%Y-%m-%d}\n\n```diff\n{diff}\n```"}],
    )
    log.info("review took %.1fs, usage=%s", time.monotonic() - started, response.usage)
    return "".join(b.text for b in response.content if b.type == "text")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--base", default="origin/main")
    parser.add_argument("--guidelines", type=Path, default=Path(".review"))
    parser.add_argument("--out", type=Path)
    args = parser.parse_args(argv)

    diff = git_diff(args.base)
    if not diff.strip():
        print("nothing to review", file=sys.stderr)
        return 0
    meta = {"base": args.base}
    meta["branch"] = subprocess.run(["git", "branch", "--show-current"], capture_output=True, text=True).stdout.strip()
    text = review(anthropic.Anthropic(), load_guidelines(args.guidelines), diff, meta)
    out = args.out or Path(f"review-{datetime.now():%Y%m%d-%H%M%S}.md")
    out.write_text(text)
    print(f"wrote {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
