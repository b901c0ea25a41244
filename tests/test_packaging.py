"""The wheel users install: what it ships and the import names it claims."""

from __future__ import annotations

import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture(scope="module")
def wheel(tmp_path_factory) -> zipfile.ZipFile:
    out = tmp_path_factory.mktemp("dist")
    # an isolated build, as pip builds it for a user: the build backend pyproject.toml names, whatever
    # setuptools the test environment happens to hold
    build = subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", "-w", str(out), str(ROOT)],
        capture_output=True, text=True, timeout=600,
    )
    assert build.returncode == 0, build.stderr
    return zipfile.ZipFile(next(out.glob("cachelint-*.whl")))


def test_only_the_cachelint_import_name_is_installed(wheel):
    top_level = {name.split("/")[0] for name in wheel.namelist() if not name.startswith("cachelint-")}
    assert top_level == {"cachelint"}


def test_data_files_ship(wheel):
    names = set(wheel.namelist())
    assert "cachelint/kv/configs/Qwen--Qwen3-4B.json" in names
    assert "cachelint/demo/data/turn-4.json" in names


def test_console_script(wheel):
    entry_points = next(n for n in wheel.namelist() if n.endswith("entry_points.txt"))
    assert "cachelint = cachelint.cli:main" in wheel.read(entry_points).decode()


def test_every_source_module_is_in_the_wheel(wheel):
    names = set(wheel.namelist())
    sources = {p.relative_to(ROOT).as_posix() for p in (ROOT / "cachelint").rglob("*.py")}
    sources |= {"cachelint/rules/" + p.relative_to(ROOT / "rules").as_posix() for p in (ROOT / "rules").rglob("*.py")}
    assert sources <= names, sorted(sources - names)


def test_rules_install_as_cachelint_rules():
    from cachelint.rules import NAMES

    assert NAMES["CL101"] == "volatile-value-in-prefix"
