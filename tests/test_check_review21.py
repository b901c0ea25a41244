"""Round 21's change, reviewed: each shape a reviewer reproduced on it (tests/fixtures/review21/, one small app each),
with the findings it must make. Before the mends each of these was wrong: a false finding on code the rule should
leave alone, or a real one the change had hidden."""

from __future__ import annotations

from pathlib import Path

import pytest

from cachelint.check.engine import ALL_CODES, lint_file

HERE = Path(__file__).parent / "fixtures" / "review21"

CASES = [
    # a clock filled into the user message, the newest turn (what the rule itself recommends)
    ("user_tpl_sent.py", "CL101", []),
    # a placeholder of a log file's name, in a module that speaks of prompts elsewhere
    ("logname.py", "CL101", []),
    # placeholder fills of environment values do not crowd out a real clock in a system prompt builder
    ("crowd.py", "CL101", [42]),
    # an early return when the new text is over the window says nothing of the cut after it
    ("guard.py", "CL301", [15]),
    # a small budget an app named max_prompt_tokens is no context window
    ("max_prompt.py", "CL301", [10]),
    # a method one caller hands the window and another a small budget
    ("method_callers.py", "CL301", [13]),
    # min(window, 4000) is a budget of the app's own
    ("min_budget.py", "CL301", [8]),
    # a system note appended to a list made anew on each pass opens the request
    ("fresh_list.py", "CL101", [10]),
    # OpenAI's extra headers key no cache
    ("headers402.py", "CL402", []),
    # a name bound to the same schema class is the same schema
    ("alias402.py", "CL402", []),
    # a local dict filled by walking a registry other functions fill has the registration order
    ("registry_walk.py", "CL201", [16]),
    # a trimming helper of the tree that slices its list is still a cut at its call
    ("sliced/pkg/agent.py", "CL301", [7]),
    # a default filled from a listing under `if not names:` runs for a caller passing []
    ("empty/pkg/agent_empty.py", "CL103", ["primitives.py:6"]),  # reported where the listing is made
]


@pytest.mark.parametrize(("name", "code", "rows"), CASES, ids=[c[0] for c in CASES])
def test_reviewed_shape(name, code, rows):
    path = HERE / name
    found = [f for f in lint_file(path, str(path), ALL_CODES, None) if f.code == code]
    # a row of the linted file, or `file:row` for a value made in another module of the tree and reported there
    assert [f.row if f.filename == str(path) else f"{Path(f.filename).name}:{f.row}" for f in found] == rows, found
