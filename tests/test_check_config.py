"""`cachelint check` configuration: [tool.cachelint], cachelint.toml, selectors, overrides, fingerprints."""

from __future__ import annotations

from pathlib import Path

import pytest

from cachelint.check.config import ALL_CODES, Config, find_config_file, load_config
from cachelint.errors import CachelintError
from cachelint.rules import RULE_META

CL1 = {"CL101", "CL102", "CL103", "CL104"}


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


def pyproject(directory: Path, body: str) -> Path:
    return write(directory / "pyproject.toml", "[project]\nname = 'x'\n\n[tool.cachelint]\n" + body)


# --- defaults and selectors --------------------------------------------------------------------------


def test_defaults_select_every_rule(tmp_path):
    cfg = load_config(tmp_path)
    assert cfg.source is None
    assert cfg.root == tmp_path
    assert set(cfg.select) == set(RULE_META)
    assert cfg.enabled_codes(tmp_path / "a.py") == frozenset(RULE_META)
    assert cfg.respect_gitignore is True and cfg.model is None


def test_defaults_root_is_directory_of_a_file_start(tmp_path):
    f = write(tmp_path / "pkg" / "a.py", "")
    assert load_config(f).root == tmp_path / "pkg"


@pytest.mark.parametrize(
    ("select", "expected"),
    [
        (["CL1"], CL1),
        (["CL10"], CL1),
        (["CL101"], {"CL101"}),
        (["CL"], set(ALL_CODES)),
        (["ALL"], set(ALL_CODES)),
        (["all"], set(ALL_CODES)),
        (["CL2", "CL503"], {"CL201", "CL202", "CL203", "CL503"}),
    ],
)
def test_prefix_selectors(tmp_path, select, expected):
    pyproject(tmp_path, f"select = {select!r}\n")
    cfg = load_config(tmp_path)
    assert cfg.enabled_codes(tmp_path / "a.py") == frozenset(expected | {"CL999"})


def test_ignore_and_extend_select(tmp_path):
    pyproject(tmp_path, 'select = ["CL1"]\nextend-select = ["CL201"]\nignore = ["CL104"]\n')
    cfg = load_config(tmp_path)
    assert cfg.enabled_codes(tmp_path / "a.py") == frozenset({"CL101", "CL102", "CL103", "CL201", "CL999"})


def test_more_specific_selector_wins_and_ignore_wins_ties():
    assert Config(select=["CL101"], ignore=["CL1"]).selected_codes() == {"CL101", "CL999"}
    assert Config(select=["CL1"], ignore=["CL1"]).selected_codes() == {"CL999"}
    assert Config(select=["CL"], ignore=["CL1"]).selected_codes() == set(ALL_CODES) - CL1


def test_cl999_is_always_enabled(tmp_path):
    pyproject(tmp_path, 'select = ["CL101"]\nignore = ["CL999"]\nper-file-ignores = { "*.py" = ["ALL"] }\n')
    cfg = load_config(tmp_path)
    assert cfg.enabled_codes(tmp_path / "a.py") == {"CL999"}
    assert "CL999" in Config(select=[]).selected_codes()


@pytest.mark.parametrize(
    ("body", "needle"),
    [
        ('select = ["CL6"]', "unknown rule code or prefix 'CL6' for 'select' in [tool.cachelint] of"),
        ('ignore = ["CL1011"]', "'CL1011' for 'ignore'"),
        ('extend-select = ["E501"]', "'E501' for 'extend-select'"),
        ('select = [""]', "'' for 'select'"),
        ('per-file-ignores = { "tests/*" = ["XX1"] }', "'XX1' for 'per-file-ignores'"),
    ],
)
def test_unknown_codes_are_errors(tmp_path, body, needle):
    pyproject(tmp_path, body + "\n")
    with pytest.raises(CachelintError) as exc:
        load_config(tmp_path)
    msg = str(exc.value)
    assert needle in msg
    assert str(tmp_path / "pyproject.toml") in msg
    assert "\n" not in msg


def test_unknown_option_is_an_error(tmp_path):
    path = pyproject(tmp_path, 'selct = ["CL1"]\n')
    with pytest.raises(CachelintError) as exc:
        load_config(tmp_path)
    assert str(exc.value).startswith(f"unknown option 'selct' in [tool.cachelint] of {path}")
    assert "did you mean 'select'" in str(exc.value)


def test_snake_case_key_is_rejected_with_a_hint(tmp_path):
    pyproject(tmp_path, 'extend_select = ["CL1"]\n')
    with pytest.raises(CachelintError, match="did you mean 'extend-select'"):
        load_config(tmp_path)


@pytest.mark.parametrize(
    "body",
    [
        'select = "CL1"',
        "respect-gitignore = 1",
        "model = 3",
        'call-patterns = ["not a name"]',
        'volatile-functions = ["a..b"]',
        'per-file-ignores = ["tests/*"]',
        "exclude = [1]",
        'confidence = "maybe"',
    ],
)
def test_bad_value_types_are_errors(tmp_path, body):
    pyproject(tmp_path, body + "\n")
    with pytest.raises(CachelintError):
        load_config(tmp_path)


def test_all_keys(tmp_path):
    pyproject(
        tmp_path,
        """\
select = ["CL1", "CL2"]
ignore = ["CL202"]
extend-select = ["CL503"]
per-file-ignores = { "tests/**" = ["CL1"] }
exclude = ["generated/"]
extend-exclude = ["vendor/"]
call-patterns = ["mylib.llm.chat"]
volatile-functions = ["myapp.clock.now"]
model = "claude-sonnet-4-5"
respect-gitignore = false
confidence = "certain"
""",
    )
    cfg = load_config(tmp_path / "sub" / "deeper")  # walks up; start need not exist
    assert cfg.source == tmp_path / "pyproject.toml"
    assert cfg.root == tmp_path
    assert cfg.select == ["CL1", "CL2"]
    assert cfg.ignore == ["CL202"]
    assert cfg.extend_select == ["CL503"]
    assert cfg.per_file_ignores == {"tests/**": ["CL1"]}
    assert cfg.exclude == ["generated/"] and cfg.extend_exclude == ["vendor/"]
    assert cfg.call_patterns == ["mylib.llm.chat"]
    assert cfg.volatile_functions == ["myapp.clock.now"]
    assert cfg.model == "claude-sonnet-4-5"
    assert cfg.respect_gitignore is False
    assert cfg.confidence == "certain"


# --- per-file-ignores --------------------------------------------------------------------------------


def test_per_file_ignores(tmp_path):
    pyproject(
        tmp_path,
        """\
[tool.cachelint.per-file-ignores]
"tests/**" = ["CL1"]
"__init__.py" = ["CL201"]
"/scripts/*.py" = ["CL301"]
"!src/**" = ["CL5"]
""",
    )
    cfg = load_config(tmp_path)
    all_codes = frozenset(ALL_CODES)
    cl5 = {c for c in ALL_CODES if c.startswith("CL5")}
    assert cfg.enabled_codes(tmp_path / "tests" / "unit" / "test_a.py") == all_codes - CL1 - cl5
    assert cfg.enabled_codes(tmp_path / "src" / "pkg" / "__init__.py") == all_codes - {"CL201"}
    assert cfg.enabled_codes(tmp_path / "src" / "pkg" / "mod.py") == all_codes
    assert cfg.enabled_codes(tmp_path / "scripts" / "run.py") == all_codes - {"CL301"} - cl5
    # Anchored to the root: a nested scripts/ does not match "/scripts/*.py".
    assert "CL301" in cfg.enabled_codes(tmp_path / "src" / "scripts" / "run.py")


def test_per_file_ignores_relative_path_resolved_against_cwd(tmp_path, monkeypatch):
    pyproject(tmp_path, '[tool.cachelint.per-file-ignores]\n"tests/*.py" = ["CL101"]\n')
    cfg = load_config(tmp_path)
    monkeypatch.chdir(tmp_path)
    assert "CL101" not in cfg.enabled_codes(Path("tests/test_x.py"))
    assert "CL101" in cfg.enabled_codes(Path("src/x.py"))


# --- finding the file --------------------------------------------------------------------------------


def test_nearest_pyproject_with_table_wins(tmp_path):
    pyproject(tmp_path, 'select = ["CL1"]\n')
    write(tmp_path / "pkg" / "pyproject.toml", "[project]\nname = 'inner'\n")  # no [tool.cachelint]
    pyproject(tmp_path / "pkg" / "sub", 'select = ["CL2"]\n')
    assert load_config(tmp_path / "pkg" / "a.py").source == tmp_path / "pyproject.toml"
    inner = load_config(tmp_path / "pkg" / "sub" / "x" / "a.py")
    assert inner.source == tmp_path / "pkg" / "sub" / "pyproject.toml"
    assert inner.root == tmp_path / "pkg" / "sub"
    assert inner.select == ["CL2"]


def test_cachelint_toml_wins_over_pyproject_in_same_directory(tmp_path):
    pyproject(tmp_path, 'select = ["CL1"]\n')
    write(tmp_path / "cachelint.toml", 'select = ["CL2"]\n')
    cfg = load_config(tmp_path)
    assert cfg.source == tmp_path / "cachelint.toml"
    assert cfg.select == ["CL2"]
    write(tmp_path / ".cachelint.toml", 'select = ["CL3"]\n')
    assert load_config(tmp_path).select == ["CL3"]


def test_standalone_file_has_top_level_keys(tmp_path):
    path = write(tmp_path / "cachelint.toml", 'selct = ["CL1"]\n')
    with pytest.raises(CachelintError, match=f"unknown option 'selct' in {path}"):
        load_config(tmp_path)


def test_nearer_pyproject_beats_farther_cachelint_toml(tmp_path):
    write(tmp_path / "cachelint.toml", 'select = ["CL1"]\n')
    pyproject(tmp_path / "inner", 'select = ["CL2"]\n')
    assert load_config(tmp_path / "inner").select == ["CL2"]


def test_explicit_config_file(tmp_path):
    cfg_file = write(tmp_path / "conf" / "custom.toml", 'select = ["CL4"]\n')
    cfg = load_config(tmp_path, config_file=cfg_file)
    assert cfg.source == cfg_file and cfg.root == tmp_path / "conf" and cfg.select == ["CL4"]
    py = pyproject(tmp_path / "other", 'select = ["CL5"]\n')
    assert load_config(tmp_path, config_file=py).select == ["CL5"]
    with pytest.raises(CachelintError, match="no such file"):
        load_config(tmp_path, config_file=tmp_path / "missing.toml")


@pytest.mark.parametrize(
    ("text", "prefix"),
    [
        ('[tool.cachelint]\nselect = "CL1\nignore = []\n', ":2:"),  # unclosed string on line 2
        ('[tool.cachelint]\nselect = ["CL1"\n\n', ":3:"),  # unclosed array: reported at the end
    ],
)
def test_invalid_toml_names_file_and_line(tmp_path, text, prefix):
    path = write(tmp_path / "pyproject.toml", text)
    with pytest.raises(CachelintError) as exc:
        load_config(tmp_path)
    msg = str(exc.value)
    assert msg.startswith(f"{path}{prefix}") and "invalid TOML" in msg and "\n" not in msg


def test_broken_unrelated_pyproject_is_skipped(tmp_path):
    pyproject(tmp_path, 'select = ["CL1"]\n')
    write(tmp_path / "pkg" / "pyproject.toml", "[project\nname = \n")  # broken, no cachelint table
    assert load_config(tmp_path / "pkg").source == tmp_path / "pyproject.toml"
    assert find_config_file(tmp_path / "pkg") == tmp_path / "pyproject.toml"


def test_tool_cachelint_must_be_a_table(tmp_path):
    write(tmp_path / "pyproject.toml", "[tool]\ncachelint = 3\n")
    with pytest.raises(CachelintError, match="must be a table"):
        load_config(tmp_path)


# --- command-line overrides --------------------------------------------------------------------------


def test_cli_select_replaces_and_ignore_extends(tmp_path):
    pyproject(tmp_path, 'select = ["CL1"]\nextend-select = ["CL503"]\nignore = ["CL104"]\n')
    cfg = load_config(tmp_path)
    over = cfg.with_overrides(select=["CL2"])
    assert over.select == ["CL2"] and over.extend_select == []
    assert over.selected_codes() == {"CL201", "CL202", "CL203", "CL999"}
    over = cfg.with_overrides(ignore=["CL101"], extend_select=["CL301"])
    assert over.ignore == ["CL104", "CL101"]
    assert over.selected_codes() == {"CL102", "CL103", "CL301", "CL503", "CL999"}
    # The original is untouched.
    assert cfg.ignore == ["CL104"] and cfg.extend_select == ["CL503"]


def test_cli_layer_beats_file_layer():
    cfg = Config(select=["CL101", "CL2"], ignore=["CL301"])
    # --ignore CL1 drops CL101 even though the file names CL101 exactly.
    assert cfg.with_overrides(ignore=["CL1"]).selected_codes() == {"CL201", "CL202", "CL203", "CL999"}
    # --extend-select CL301 re-enables what the file ignores.
    assert "CL301" in cfg.with_overrides(extend_select=["CL301"]).selected_codes()
    # Within the command line, the more specific selector still wins.
    assert cfg.with_overrides(select=["CL101"], ignore=["CL1"]).selected_codes() == {"CL101", "CL999"}


def test_cli_values_may_be_comma_separated_and_are_validated():
    cfg = Config()
    assert cfg.with_overrides(select="CL1,CL201").selected_codes() == CL1 | {"CL201", "CL999"}
    with pytest.raises(CachelintError, match="'CL7' for --select"):
        cfg.with_overrides(select=["CL7"])
    with pytest.raises(CachelintError, match="--ignore"):
        cfg.with_overrides(ignore=["nope"])


def test_other_overrides(tmp_path):
    cfg = Config(root=tmp_path, exclude=["a/"], call_patterns=["x.y"], per_file_ignores={"t/*": ["CL1"]})
    over = cfg.with_overrides(
        exclude=["b/"],
        extend_exclude=["c/"],
        call_patterns=["z.w"],
        volatile_functions=["clock.now"],
        model="gpt-4o",
        respect_gitignore=False,
        per_file_ignores={"t/*": ["CL2"], "u/*": ["CL3"]},
    )
    assert over.exclude == ["b/"] and over.extend_exclude == ["c/"]
    assert over.call_patterns == ["x.y", "z.w"] and over.volatile_functions == ["clock.now"]
    assert over.model == "gpt-4o" and over.respect_gitignore is False
    assert over.per_file_ignores == {"t/*": ["CL1", "CL2"], "u/*": ["CL3"]}
    assert over.root == tmp_path
    assert cfg.with_overrides() == cfg


# --- exclude -----------------------------------------------------------------------------------------


def test_is_excluded(tmp_path):
    cfg = Config(root=tmp_path, exclude=["generated/", "/top.py"], extend_exclude=["*_pb2.py"])
    assert cfg.is_excluded(tmp_path / "generated", is_dir=True)
    assert cfg.is_excluded(tmp_path / "src" / "generated" / "a.py")
    assert cfg.is_excluded(tmp_path / "top.py")
    assert not cfg.is_excluded(tmp_path / "src" / "top.py")
    assert cfg.is_excluded(tmp_path / "src" / "api_pb2.py")
    assert not cfg.is_excluded(tmp_path / "src" / "api.py")
    assert not cfg.is_excluded(tmp_path, is_dir=True)


# --- fingerprint -------------------------------------------------------------------------------------


def test_fingerprint_is_stable_and_tracks_settings(tmp_path):
    a = Config(root=tmp_path / "a", select=["CL1", "CL2"])
    b = Config(root=tmp_path / "b", select=["CL2", "CL1"])  # same rules, other order, other root
    assert a.fingerprint() == b.fingerprint()
    assert a.fingerprint() == Config(root=tmp_path, select=["CL101", "CL102", "CL103", "CL104", "CL2"]).fingerprint()
    assert len(a.fingerprint()) == 64
    variants = [
        Config(select=["CL1"]),
        Config(select=["CL1", "CL2"], ignore=["CL201"]),
        Config(select=["CL1", "CL2"], per_file_ignores={"t/*": ["CL1"]}),
        Config(select=["CL1", "CL2"], call_patterns=["a.b"]),
        Config(select=["CL1", "CL2"], volatile_functions=["a.b"]),
        Config(select=["CL1", "CL2"], model="claude-sonnet-4-5"),
    ]
    prints = {v.fingerprint() for v in variants}
    assert len(prints) == len(variants)
    assert a.fingerprint() not in prints
