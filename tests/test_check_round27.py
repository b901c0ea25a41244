"""Round 27: what a spent set (holdout31) taught. Each class is written here in its own words, with the shape
beside it that must stay quiet."""

from __future__ import annotations

from _lint import lint

# --- CL103: prompt text made from a set, in string-hash order -----------------------------------------------------

SET_PARTS = '''
from enum import Enum


class Modality(str, Enum):
    TEXT = "text"
    IMAGE = "image"


EXAMPLES = {Modality.TEXT: "Text field: ...", Modality.IMAGE: "Image field: ..."}


class PromptFactory:
    def _get_example_fields(self, modalities: set[Modality]) -> str:
        text = ""
        for modality in modalities:
            text += EXAMPLES[modality]
        return text

    def _get_counts(self, ids: set[int]) -> str:
        out = ""
        for i in ids:
            out += str(i)
        return out

    def _get_sorted_fields(self, modalities: set[Modality]) -> str:
        text = ""
        for modality in sorted(modalities):
            text += EXAMPLES[modality]
        return text
'''


def test_a_set_parameter_written_out_by_a_prompt_part_builder_is_reported():
    found = lint(SET_PARTS, {"CL103"})
    assert [(f.row, f.confidence) for f in found] == [(15, "likely")], found
    assert "PYTHONHASHSEED" in found[0].message and "`text`" not in found[0].message


DOCS_JOINED = '''
def retrieve_tools(plan, recommender) -> str:
    tool_docs = []
    for step in plan:
        tool_docs.extend(e["doc"] for e in recommender.top_k(step))
    tool_docs_str = "\\n\\n".join(set(tool_docs))
    return tool_docs_str


def distinct_users(rows) -> str:
    names = ", ".join(set(r.user for r in rows))
    return names


def membership(tool_docs, name) -> bool:
    seen = set(tool_docs)
    return name in seen
'''


def test_docs_deduplicated_through_a_set_and_joined_are_reported_with_a_sorting_fix():
    found = lint(DOCS_JOINED, {"CL103"})
    assert [f.row for f in found] == [5], found
    assert "`tool_docs_str`" in found[0].message and found[0].fix is not None


SAMPLES = '''
def get_schema(hits, keys):
    properties = []
    for key in keys:
        samples: set[str] = set()
        for hit in hits:
            samples.add(str(hit[key]))
        sample_list = list(samples)
        properties.append({"name": key, "examples": sample_list})
        counts = list(samples)
        properties.append({"name": key, "count": len(counts)})
    return properties
'''


def test_a_set_listed_as_a_fields_examples_is_reported():
    found = lint(SAMPLES, {"CL103"})
    assert [f.row for f in found] == [7], found
    assert 'the entry "examples"' in found[0].message


# --- CL103: few-shot files read by a reader named for its format (read_jsonl) --------------------------------------

DEMOS = '''
import os
from app.io import read_jsonl


def load_examples(folder: str):
    examples = []
    for f in os.listdir(folder):
        if f.endswith("jsonl"):
            examples.extend(read_jsonl(os.path.join(folder, f)))
    return examples


def load_sorted_examples(folder: str):
    examples = []
    for f in sorted(os.listdir(folder)):
        examples.extend(read_jsonl(os.path.join(folder, f)))
    return examples
'''


def test_examples_read_by_a_jsonl_reader_in_listing_order_are_reported():
    found = lint(DEMOS, {"CL103"})
    assert [f.row for f in found] == [7], found
