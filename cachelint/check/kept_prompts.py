"""A system prompt built once per conversation and kept: what its builder draws at random or reads from the clock is
fixed for that conversation.

A builder like `make_system_prompt()` may pick a conversation starter with `random.choice` or write the time of
day into the prompt. Called for every request, that would change the cached prefix each time; but where every
caller in the tree keeps what it returns (in an `__init__`, in an attribute of the object set by a method that runs
once for a conversation (`start_session`, `set_instructions`), or through a setter of the object,
`self._update_system_prompt(instructions.make_system_prompt())`), the prompt is made once when the conversation
starts and every later request of that conversation sends the same text. Nothing is reported there.

Read from the tree's text (no parse): the calls of the builder's name outside tests and load tests, each judged by
its line and the function it is in.
"""

from __future__ import annotations

import re
from pathlib import Path

from cachelint.check import tree

MAX_CALLS = 12  # calls judged before the builder is taken to be used in every way
# a method of the object that keeps what it is handed: self.set_system_prompt(...), self._update_system_prompt(...)
KEEPER = re.compile(r"\bself\._?(?:set|update|store|save|reset)(?:_\w*)?\(\s*$")
# an attribute of the object assigned: `self.system_prompt = ...`, `self.chat_history[0] = ...`
ON_SELF = re.compile(r"^\s*self\.[\w.]+(?:\[[^\]]*\])?\s*(?::[^=]*)?=(?!=)")
# a method that runs once for a conversation: where an attribute set from the builder is kept, not refreshed
ONCE = re.compile(r"^(?:__init__|__post_init__|_?(?:set|setup|start|reset|begin|new)_\w*|_?(?:setup|start|reset))$")
# a tree's load tests and benchmarks make requests to measure a server, not the app's conversations
NOT_THE_APP = re.compile(r"(?:^|/)(?:load_?tests?|benchmarks?|bench)(?:/|$)")
_KEPT: dict = {}


def kept_by_every_caller(filename: str, name: str) -> bool:
    """Every call of `name` in the tree (at least one) keeps what it returns for the conversation."""
    return bool(tree.tree_pass(filename, _KEPT, lambda root: _judge(root, name), name))


def _judge(root: str, name: str) -> tuple[bool, list[str]]:
    from cachelint.check.config import test_path_below

    call = re.compile(rf"(?<!def )\b{re.escape(name)}\s*\(")
    read: list[str] = []
    kept = 0
    for path in tree.files_calling(root, name):
        relative = Path(path).relative_to(root).as_posix() if Path(path).is_relative_to(root) else path
        if test_path_below(path, root) or NOT_THE_APP.search(relative):
            continue
        read.append(path)
        text = Path(path).read_text(encoding="utf-8", errors="replace")
        lines = text.split("\n")
        for match in call.finditer(text):
            number = text.count("\n", 0, match.start())
            line = lines[number]
            if line.lstrip().startswith("#"):
                continue  # a comment that names the builder
            function = tree.enclosing_def(lines, number)
            if function == name:
                continue  # one builder handing on to another of its name (`return Smalltalk().make_system_prompt()`)
            column = match.start() - text.rfind("\n", 0, match.start()) - 1
            once = function is not None and ONCE.match(function) is not None
            if not (once and ON_SELF.match(line)) and function != "__init__" and not _inside_keeper(line, column):
                return False, read
            kept += 1
            if kept > MAX_CALLS:
                return False, read
    return kept > 0, read


def _inside_keeper(line: str, column: int) -> bool:
    """The call is an argument of a keeping method's call on the same line: `self._update_system_prompt(x.make(...))`."""
    before = line[:column]
    opened = before.rfind("(")
    while opened >= 0:
        if KEEPER.search(before[:opened + 1]):
            return True
        opened = before.rfind("(", 0, opened)
    return False
