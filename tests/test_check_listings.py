"""CL103 on prompt material (few-shot examples, docs, skills) read from a directory listing in the file system's
order (issue 14): the prompt is assembled elsewhere, so the shape is judged where the files are listed."""

from __future__ import annotations

import textwrap

from cachelint.check.engine import lint_source


def findings(source: str, filename: str = "examples.py"):
    source = textwrap.dedent(source).lstrip("\n")
    return [f for f in lint_source(source, filename) if f.code == "CL103"]


def rows(source: str) -> list[int]:
    return [f.row for f in findings(source)]


EXAMPLES = """
    import glob
    from os import path

    def load_examples(folder):
        example_files = {listing}
        pool = []
        for yaml_path in example_files:
            conversation = Conversation.from_yaml(yaml_path)
            if conversation.enabled:
                pool.append(conversation)
        return pool
"""


def test_few_shot_examples_loaded_in_glob_order():
    found = findings(EXAMPLES.replace("{listing}", 'glob.glob(path.join(folder, "*.yaml"))'))
    assert [f.row for f in found] == [5]
    assert found[0].confidence == "likely" and "`pool`" in found[0].message and found[0].fix is not None


def test_the_same_listing_sorted_is_quiet():
    assert rows(EXAMPLES.replace("{listing}", 'sorted(glob.glob(path.join(folder, "*.yaml")))')) == []
    assert rows(EXAMPLES.replace("{listing}", 'glob.glob(path.join(folder, "*.yaml"))').replace("        pool = []", "        example_files.sort()\n        pool = []")) == []


def test_docs_concatenated_from_a_filtered_rglob():
    source = """
        from pathlib import Path

        def build_docs_prompt(root: Path) -> str:
            md_files = list(root.glob("**/*.md"))
            md_files = [f for f in md_files if "/drafts/" not in str(f)]
            docs_prompt = ""
            for file in md_files:
                docs_prompt += f"==file name:==\\n\\n{file.name}\\n\\n==file content:==\\n\\n{file.read_text()}\\n"
            return docs_prompt
    """
    assert rows(source) == [4]


def test_instructions_read_from_os_walk_file_names():
    source = """
        import os

        def collect_instructions(folder):
            texts = []
            for root, dirs, files in os.walk(folder):
                for name in files:
                    with open(os.path.join(root, name)) as handle:
                        texts.append(handle.read())
            return texts
    """
    assert rows(source) == [5]


def test_skill_code_read_to_be_executed_is_not_prompt_material():
    source = """
        import glob, os

        def import_skills(self):
            code_to_run = ""
            for file in glob.glob(os.path.join(self.path, "*.py")):
                with open(file) as f:
                    code_to_run += f.read() + "\\n"
            return self.computer.run("python", code_to_run)
    """
    assert rows(source) == []


def test_plugins_loaded_from_a_listing_are_not_prompt_material():
    source = """
        import os
        import importlib

        def load_plugins(folder):
            modules = []
            for name in os.listdir(folder):
                modules.append(importlib.import_module(name))
            return modules
    """
    assert rows(source) == []


def test_a_listing_only_counted_is_quiet():
    source = """
        import glob

        def count_examples(folder):
            example_files = glob.glob(folder + "/*.yaml")
            return len(example_files)
    """
    assert rows(source) == []


def test_listing_functions_imported_by_name():
    source = EXAMPLES.replace("import glob\n", "from glob import glob\n").replace("{listing}", 'glob(path.join(folder, "*.yaml"))')
    assert rows(source) == [5]


def test_skills_loaded_from_an_unsorted_listing_through_a_loader_method():
    source = """
        import os

        class SkillLoader:
            def _load_skills_recursive(self, dir_path, source):
                skills = []
                entries = os.listdir(dir_path)
                for entry in entries:
                    full_path = os.path.join(dir_path, entry)
                    if not entry.endswith(".md"):
                        continue
                    result = self._load_skill_from_file(full_path, source)
                    skills.extend(result.skills)
                return skills
    """
    found = findings(source)
    assert [f.row for f in found] == [6] and "`skills`" in found[0].message
    assert findings(source.replace("entries = os.listdir(dir_path)", "entries = sorted(os.listdir(dir_path))")) == []
