"""`cachelint check` file discovery: default skips, virtualenvs, .gitignore, exclude, explicit paths."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

from cachelint.check.config import Config, load_config
from cachelint.check.files import discover
from cachelint.errors import CachelintError


def touch(root: Path, *names: str) -> None:
    for name in names:
        p = root / name
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text("x = 1\n" if name.endswith((".py", ".pyi")) else "", encoding="utf-8")


def rel(paths: list[Path], root: Path) -> list[str]:
    return [Path(os.path.abspath(p)).relative_to(root).as_posix() for p in paths]


def test_walk_finds_py_and_pyi_sorted(tmp_path):
    touch(tmp_path, "b.py", "a.pyi", "pkg/z.py", "pkg/sub/y.py", "notes.txt", "pkg/data.json", "script")
    files = discover([tmp_path], Config(root=tmp_path))
    assert rel(files, tmp_path) == ["a.pyi", "b.py", "pkg/sub/y.py", "pkg/z.py"]


def test_default_skipped_directories(tmp_path):
    skipped = [
        ".git", ".hg", ".svn", ".venv", "venv", ".env", "__pycache__", "build", "dist", "node_modules",
        "site-packages", ".tox", ".nox", ".mypy_cache", ".pytest_cache", ".ruff_cache", ".cachelint_cache",
        "mypkg.egg-info",
    ]  # fmt: skip
    touch(tmp_path, "keep.py", "src/keep.py", *(f"{d}/x.py" for d in skipped), *(f"src/{d}/x.py" for d in skipped))
    files = discover([tmp_path], Config(root=tmp_path))
    assert rel(files, tmp_path) == ["keep.py", "src/keep.py"]


def test_a_package_named_env_is_source_and_a_virtualenv_named_env_is_not(tmp_path):
    # a game environment's package (`fle/env/`) is the app's own code, as ruff sees it; a virtualenv is told by its pyvenv.cfg
    touch(tmp_path, "fle/env/agent.py", "fle/env/tools/manual.py", "env/pyvenv.cfg", "env/lib/python3.11/site-packages/m.py")
    touch(tmp_path, "conda/env/conda-meta/history", "conda/env/lib/os.py", "old/env/bin/activate", "old/env/lib/os.py")
    files = discover([tmp_path], Config(root=tmp_path))
    assert rel(files, tmp_path) == ["fle/env/agent.py", "fle/env/tools/manual.py"]


def test_dot_env_file_is_not_a_directory_rule(tmp_path):
    touch(tmp_path, ".env", "a.py")  # a .env *file* next to code is fine
    assert rel(discover([tmp_path], Config(root=tmp_path)), tmp_path) == ["a.py"]


def test_virtualenv_under_any_name_is_skipped(tmp_path):
    touch(tmp_path, "app.py", "myenv/pyvenv.cfg", "myenv/lib/python3.11/site-packages/pkg/mod.py", "myenv/bin/tool.py")
    touch(tmp_path, "tools/py311/pyvenv.cfg", "tools/py311/x.py", "tools/real.py")
    files = discover([tmp_path], Config(root=tmp_path))
    assert rel(files, tmp_path) == ["app.py", "tools/real.py"]


def test_explicit_files_are_linted_even_in_skipped_places(tmp_path):
    touch(tmp_path, "build/gen.py", ".venv/lib/mod.py", "script")
    files = discover([tmp_path / "build" / "gen.py", tmp_path / ".venv" / "lib" / "mod.py", tmp_path / "script"],
                     Config(root=tmp_path))  # fmt: skip
    assert rel(files, tmp_path) == [".venv/lib/mod.py", "build/gen.py", "script"]


def test_explicit_directory_is_walked_even_if_default_skipped(tmp_path):
    touch(tmp_path, "build/a.py", "build/__pycache__/b.py")
    assert rel(discover([tmp_path / "build"], Config(root=tmp_path)), tmp_path) == ["build/a.py"]


def test_explicit_file_matching_exclude_is_skipped(tmp_path):
    touch(tmp_path, "gen/api_pb2.py", "src/a.py", "src/b_pb2.py")
    cfg = Config(root=tmp_path, exclude=["gen/"], extend_exclude=["*_pb2.py"])
    assert discover([tmp_path / "gen" / "api_pb2.py"], cfg) == []
    assert discover([tmp_path / "src" / "b_pb2.py"], cfg) == []
    assert discover([tmp_path / "gen"], cfg) == []
    assert rel(discover([tmp_path], cfg), tmp_path) == ["src/a.py"]


def test_exclude_from_pyproject_relative_to_root(tmp_path):
    (tmp_path / "pyproject.toml").write_text('[tool.cachelint]\nexclude = ["/migrations/", "legacy_*.py"]\n')
    touch(tmp_path, "migrations/0001.py", "app/migrations/0002.py", "app/legacy_x.py", "app/ok.py")
    cfg = load_config(tmp_path)
    assert rel(discover([tmp_path / "app", tmp_path / "migrations"], cfg), tmp_path) == [
        "app/migrations/0002.py",
        "app/ok.py",
    ]


def test_missing_path_is_an_error(tmp_path):
    touch(tmp_path, "a.py")
    with pytest.raises(CachelintError) as exc:
        discover([tmp_path / "a.py", Path("path/x")], Config(root=tmp_path))
    assert str(exc.value) == "path/x: no such file or directory"


def test_relative_paths_keep_their_form_and_are_deduplicated(tmp_path, monkeypatch):
    touch(tmp_path, "src/pkg/a.py", "src/pkg/b.py")
    monkeypatch.chdir(tmp_path)
    files = discover([Path("src"), Path("./src/pkg/a.py"), Path("src/../src/pkg/b.py"), tmp_path / "src"],
                     Config(root=tmp_path))  # fmt: skip
    assert files == [Path("src/pkg/a.py"), Path("src/pkg/b.py")]
    assert discover([Path(".")], Config(root=tmp_path)) == [Path("src/pkg/a.py"), Path("src/pkg/b.py")]


@pytest.mark.skipif(not hasattr(os, "symlink"), reason="no symlinks")
def test_symlinked_directories_are_not_followed(tmp_path):
    touch(tmp_path, "real/a.py", "outside/b.py")
    try:
        os.symlink(tmp_path / "outside", tmp_path / "real" / "link", target_is_directory=True)
        os.symlink(tmp_path / "real", tmp_path / "real" / "loop", target_is_directory=True)
        os.symlink(tmp_path / "outside" / "b.py", tmp_path / "real" / "c.py")
    except OSError:
        pytest.skip("cannot create symlinks")
    files = discover([tmp_path / "real"], Config(root=tmp_path))
    assert rel(files, tmp_path) == ["real/a.py", "real/c.py"]
    # Named explicitly, a symlinked directory is walked.
    assert rel(discover([tmp_path / "real" / "link"], Config(root=tmp_path)), tmp_path) == ["real/link/b.py"]


# --- .gitignore ---------------------------------------------------------------------------------------


def make_gitignored_tree(root: Path) -> None:
    touch(
        root,
        "app.py",
        "secret_local.py",
        "out/gen.py",
        "pkg/mod.py",
        "pkg/scratch.py",
        "pkg/keep_scratch.py",
        "pkg/deep/tmp_a.py",
        "pkg/deep/ok.py",
        "other/scratch.py",
        "other/tmp_b.py",
    )
    (root / ".gitignore").write_text("# root\n*_local.py\n/out/\n")
    (root / "pkg" / ".gitignore").write_text("scratch.py\n")
    (root / "pkg" / "deep" / ".gitignore").write_text("tmp_*.py\n!keep_*.py\n")


EXPECTED_WITH_GITIGNORE = [
    "app.py",
    "other/scratch.py",
    "other/tmp_b.py",
    "pkg/deep/ok.py",
    "pkg/keep_scratch.py",
    "pkg/mod.py",
]


def test_root_and_nested_gitignore(tmp_path):
    make_gitignored_tree(tmp_path)
    assert rel(discover([tmp_path], Config(root=tmp_path)), tmp_path) == EXPECTED_WITH_GITIGNORE


def test_gitignore_off(tmp_path):
    make_gitignored_tree(tmp_path)
    files = discover([tmp_path], Config(root=tmp_path, respect_gitignore=False))
    assert len(files) == 10


def test_nested_gitignore_can_reinclude(tmp_path):
    touch(tmp_path, "a_gen.py", "sub/b_gen.py", "sub/c.py")
    (tmp_path / ".gitignore").write_text("*_gen.py\n")
    (tmp_path / "sub" / ".gitignore").write_text("!b_gen.py\n")
    assert rel(discover([tmp_path], Config(root=tmp_path)), tmp_path) == ["sub/b_gen.py", "sub/c.py"]


def test_parent_gitignore_applies_when_walking_a_subdirectory(tmp_path):
    make_gitignored_tree(tmp_path)
    (tmp_path / ".git").mkdir()  # the repository root bounds the search for ignore files
    files = discover([tmp_path / "pkg"], Config(root=tmp_path / "pkg"))
    assert rel(files, tmp_path) == ["pkg/deep/ok.py", "pkg/keep_scratch.py", "pkg/mod.py"]
    touch(tmp_path, "pkg/x_local.py")
    assert "pkg/x_local.py" not in rel(discover([tmp_path / "pkg"], Config(root=tmp_path / "pkg")), tmp_path)


def test_explicit_gitignored_paths_are_linted(tmp_path):
    make_gitignored_tree(tmp_path)
    cfg = Config(root=tmp_path)
    assert rel(discover([tmp_path / "secret_local.py"], cfg), tmp_path) == ["secret_local.py"]
    assert rel(discover([tmp_path / "out"], cfg), tmp_path) == ["out/gen.py"]


@pytest.mark.skipif(shutil.which("git") is None, reason="git not installed")
def test_matches_git_check_ignore(tmp_path):
    """Same answer as git itself on a real repository."""
    make_gitignored_tree(tmp_path)
    (tmp_path / ".git_info_test.py").write_text("")
    subprocess.run(["git", "init", "-q", str(tmp_path)], check=True)
    (tmp_path / ".git" / "info").mkdir(parents=True, exist_ok=True)
    (tmp_path / ".git" / "info" / "exclude").write_text(".git_info_test.py\n")
    listed = subprocess.run(
        ["git", "ls-files", "--others", "--exclude-standard", "--", "*.py"],
        cwd=tmp_path, check=True, capture_output=True, text=True,
    ).stdout.split()  # fmt: skip
    files = rel(discover([tmp_path], Config(root=tmp_path)), tmp_path)
    assert files == sorted(listed) == EXPECTED_WITH_GITIGNORE
