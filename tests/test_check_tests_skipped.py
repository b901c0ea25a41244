"""Test modules are skipped by default: their requests are fixtures that never run in the app, so nothing found
there costs a cache (across the benchmark's 15 label sets no problem was ever labelled in a test module, and 46 of
the analyzer's 577 findings on the spent sets' trees were in one). `--include-tests` or `include-tests = true`
checks them. Each case runs the CLI as a user does and reads what the user sees."""

from __future__ import annotations

import json
from pathlib import Path

from test_check_cli import run
from test_check_robust import FIXABLE

from cachelint.check.config import Config
from cachelint.lsp import CachelintServer

TEST_MODULES = ("tests/test_app.py", "test/helpers.py", "pkg/test_client.py", "pkg/client_test.py", "conftest.py",
                "testing/fixtures.py")


def tree(root: Path, config: str = "") -> Path:
    root.mkdir(parents=True, exist_ok=True)
    (root / "pyproject.toml").write_text("[project]\nname = 'app'\n" + config)
    for rel in ("app.py", "pkg/latest.py", "pkg/contest.py", *TEST_MODULES):  # contest.py, latest.py: not tests
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(FIXABLE)
    return root


def reported(out) -> set[str]:
    return {Path(f["filename"]).as_posix() for f in json.loads(out.stdout)}


def test_a_walk_skips_test_modules_and_folders(tmp_path):
    out = run(tree(tmp_path), "check", "--no-cache", "--output-format", "json", ".")
    assert out.returncode == 1, out.stderr
    assert reported(out) == {"app.py", "pkg/latest.py", "pkg/contest.py"}


def test_include_tests_flag_checks_them(tmp_path):
    out = run(tree(tmp_path), "check", "--no-cache", "--include-tests", "--output-format", "json", ".")
    assert reported(out) == {"app.py", "pkg/latest.py", "pkg/contest.py", *TEST_MODULES}


def test_include_tests_in_the_configuration_checks_them(tmp_path):
    out = run(tree(tmp_path, "[tool.cachelint]\ninclude-tests = true\n"), "check", "--no-cache", "--output-format", "json", ".")
    assert reported(out) == {"app.py", "pkg/latest.py", "pkg/contest.py", *TEST_MODULES}


def test_a_test_module_named_on_the_command_line_says_why_nothing_was_checked(tmp_path):
    out = run(tree(tmp_path), "check", "--no-cache", "tests/test_app.py")
    assert out.returncode == 0  # as an excluded file: pre-commit names test files too
    [warning] = [line for line in out.stderr.splitlines() if line]
    assert warning.startswith("cachelint: warning: tests/test_app.py: test modules are skipped") and "--include-tests" in warning


def test_a_project_inside_a_folder_named_tests_is_checked(tmp_path):
    """Only the path below the project's root says whether a module is a test."""
    project = tree(tmp_path / "tests" / "proj")
    out = run(project, "check", "--no-cache", "--output-format", "json", str(project / "app.py"))
    assert out.returncode == 1 and reported(out) == {"app.py"}


def test_a_bad_include_tests_value_is_one_line_and_exit_2(tmp_path):
    out = run(tree(tmp_path, '[tool.cachelint]\ninclude-tests = "yes"\n'), "check", "--no-cache", ".")
    assert out.returncode == 2
    assert out.stderr.strip().count("\n") == 0 and "include-tests" in out.stderr and "true or false" in out.stderr


def test_the_editor_shows_no_findings_in_a_test_module(tmp_path):
    root = tree(tmp_path)
    server = CachelintServer()
    server.root_for = lambda path: root  # the workspace folder an initialized editor sends
    server.configs[root / "tests"] = Config(root=root)
    server.configs[root] = Config(root=root)
    assert server.findings((root / "tests" / "test_app.py").as_uri(), FIXABLE) == []
    assert server.findings((root / "app.py").as_uri(), FIXABLE) != []


def test_outside_the_root_only_a_module_s_own_name_makes_it_a_test(tmp_path):
    config = Config(root=tmp_path / "proj", source=tmp_path / "proj" / "pyproject.toml")
    assert not config.is_test(tmp_path / "tests" / "app.py")  # the folders above the project say nothing
    assert config.is_test(tmp_path / "elsewhere" / "test_app.py")
    assert config.is_test(tmp_path / "proj" / "tests" / "app.py") and config.is_test(tmp_path / "proj" / "tests", is_dir=True)
    assert not Config(root=tmp_path / "proj", include_tests=True).is_excluded(tmp_path / "proj" / "tests" / "app.py")


RETRIEVAL = """from openai import OpenAI
client = OpenAI()
def answer(history, question, store):
    docs = store.similarity_search(question, k=4)
    system = "Answer from the context.\\n\\n" + "\\n".join(d.page_content for d in docs)
    return client.chat.completions.create(model="gpt-4.1", messages=[{"role": "system", "content": system}, *history])
"""


def test_files_named_together_are_judged_alike_without_a_configuration(tmp_path):
    """pre-commit names files; without a configuration file the first one named must not become the project."""
    for rel in ("app/llm.py", "tests/helpers.py"):
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_text(FIXABLE)
    for order in (("app/llm.py", "tests/helpers.py"), ("tests/helpers.py", "app/llm.py")):
        out = run(tmp_path, "check", "--no-cache", "--output-format", "json", *order)
        assert reported(out) == {"app/llm.py"}, order
    out = run(tmp_path, "check", "--no-cache", "tests/")
    assert out.returncode == 0 and "tests: test modules are skipped" in out.stderr


def test_a_configured_project_inside_a_folder_named_tests_is_checked_from_above(tmp_path):
    project = tmp_path / "tests" / "proj"
    project.mkdir(parents=True)
    (project / "pyproject.toml").write_text("[tool.cachelint]\n")
    (project / "app.py").write_text(RETRIEVAL)
    out = run(tmp_path, "check", "--no-cache", "--output-format", "json", "tests/proj")
    assert [f["code"] for f in json.loads(out.stdout)] == ["CL104"], out.stderr


def test_a_tree_search_still_reads_test_modules(tmp_path):
    """Skipping tests is about what is reported: the searches the analysis makes of the tree still see them."""
    from cachelint.check.tree import files

    root = tree(tmp_path)
    assert {Path(p).relative_to(root).as_posix() for p in files(str(root))} >= set(TEST_MODULES)


def test_an_excluded_file_and_a_test_module_named_together_are_both_named(tmp_path):
    root = tree(tmp_path, '[tool.cachelint]\nextend-exclude = ["pkg/"]\n')
    out = run(root, "check", "--no-cache", "pkg/latest.py", "tests/test_app.py")
    warnings = [line for line in out.stderr.splitlines() if line]
    assert len(warnings) == 2 and "pkg/latest.py excluded by the configuration" in warnings[0]
    assert "tests/test_app.py: test modules are skipped" in warnings[1]
