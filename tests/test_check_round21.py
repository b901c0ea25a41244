"""Round 21: what a spent set (holdout25) and a slow real shape taught.

- Many requests on one history in one function (a generated client, a long scripted conversation): each request
  is compared with the requests just before it, and what the loop does to the history is judged once, so the
  work grows with the requests, not with their square (100 requests took about a minute before). The findings are
  the same: the one request that switches the model is reported, and a cut of the history once, not once per
  request that sends it.
"""

from __future__ import annotations

from _lint import lint


def many_requests(count: int, last_model: str = "gpt-4o", cut: bool = False) -> str:
    lines = ["from openai import OpenAI", "", "client = OpenAI()", "", "",
             "def run(task):",
             "    history = [{'role': 'system', 'content': PROMPT}, {'role': 'user', 'content': task}]",
             "    for _ in range(10):"]
    for i in range(count):
        model = last_model if i == count - 1 else "gpt-4o"
        lines.append(f"        reply{i} = client.chat.completions.create(model='{model}', messages=history)")
        lines.append(f"        history.append({{'role': 'assistant', 'content': reply{i}.choices[0].message.content}})")
    if cut:
        lines.append("        history.pop(2)")
    return "\n".join(lines) + "\n"


def test_one_switched_model_among_many_requests_is_reported_once():
    found = lint(many_requests(120, last_model="gpt-4o-mini"), {"CL402"})
    assert [f.row for f in found] == [9 + 2 * 119], found
    assert "gpt-4o-mini" in found[0].message


def test_many_requests_on_one_model_are_quiet():
    assert lint(many_requests(120), {"CL402", "CL203"}) == []


def test_a_cut_of_a_history_many_requests_send_is_reported_once():
    found = lint(many_requests(120, cut=True), {"CL301"})
    assert [f.row for f in found] == [9 + 2 * 120], found
