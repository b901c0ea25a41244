"""LLM-as-judge grader for RAG answers, run over an eval set with litellm."""
from __future__ import annotations

import json
from dataclasses import dataclass, field

import litellm

JUDGE_MODEL = "anthropic/claude-sonnet-4-5"
CRITERIA = {"faithfulness", "relevance", "completeness", "citation_quality"}
SCALE = {1: "unacceptable", 2: "poor", 3: "acceptable", 4: "good", 5: "excellent"}


@dataclass
class EvalCase:
    case_id: str
    question: str
    context: list[str]
    answer: str
    tags: dict[str, str] = field(default_factory=dict)


def rubric() -> str:
    lines = [f"- {name}: score 1-5" for name in CRITERIA]  # expect: CL103
    scale = "\n".join(f"{k} = {v}" for k, v in SCALE.items())
    return "Grade the answer on each criterion:\n" + "\n".join(lines) + "\nScale:\n" + scale


def judge(case: EvalCase, run_config: dict) -> dict[str, int]:
    system = (
        "You are a strict evaluator of retrieval-augmented answers.\n"
        + rubric()
        + "\nRun configuration: "
        + json.dumps(run_config)  # one config per run, built in one order: no CL102
    )
    user = (
        f"Question: {case.question}\n\nContext:\n" + "\n---\n".join(case.context)
        + f"\n\nAnswer:\n{case.answer}\n\nReturn JSON mapping each criterion to a score."
    )
    resp = litellm.completion(
        model=JUDGE_MODEL,
        messages=[{"role": "system", "content": system}, {"role": "user", "content": user}],
        temperature=0,
        max_tokens=300,
    )
    return json.loads(resp.choices[0].message.content)


def evaluate(cases: list[EvalCase], run_config: dict) -> dict[str, float]:
    totals = {c: 0.0 for c in sorted(CRITERIA)}
    for case in cases:
        scores = judge(case, run_config)
        for criterion in totals:
            totals[criterion] += scores.get(criterion, 0)
    return {c: total / max(len(cases), 1) for c, total in totals.items()}


if __name__ == "__main__":
    with open("eval_set.jsonl") as f:
        data = [EvalCase(**json.loads(line)) for line in f]
    config = {"retriever": "bm25", "k": 8}
    config.update(json.load(open("overrides.json")))
    print(json.dumps(evaluate(data, config), indent=2))
