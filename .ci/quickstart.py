"""Print the README's Quickstart commands, one per line, exactly as written (CI runs them word for word)."""

import re
import sys
from pathlib import Path

readme = (Path(__file__).resolve().parent.parent / "README.md").read_text()
section = readme.split("\n## Quickstart\n", 1)[1].split("\n## ", 1)[0]
commands = [block.strip() for block in re.findall(r"```sh\n(.*?)```", section, re.S)]
if len(commands) != 2 or any("\n" in c for c in commands):
    sys.exit(f"the README's Quickstart should have two one-line sh blocks, found {commands!r}")
print("\n".join(commands))
