"""`python -m cachelint`: the command line, with the working directory taken off the import path first.

`python -m` puts the directory it runs in at the head of `sys.path`. cachelint is usually run from the root
of the project it lints, and a top-level module there would stand in for one of cachelint's own imports:
AiNiee's `hyperscan.py` replaced the package pathspec looks for, and every check there ended in an internal
error. The `cachelint` console script has no such entry; this makes `python -m cachelint` the same.
"""

import os
import sys


def drop_working_directory(path: list[str], cwd: str) -> None:
    """Remove the entry `python -m` adds for the working directory (the first one, when it names it)."""
    if path and path[0] in ("", ".", cwd):
        del path[0]


drop_working_directory(sys.path, os.getcwd())

from cachelint.cli import main  # noqa: E402  (after the import path is mended)

main()
