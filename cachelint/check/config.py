"""`cachelint check` configuration: `[tool.cachelint]` in pyproject.toml, or a standalone `cachelint.toml`.

Modelled on ruff's configuration:

```toml
[tool.cachelint]
select = ["CL1", "CL2"]           # prefixes: "CL1" is CL101..CL104, "CL" or "ALL" is every rule
ignore = ["CL104"]
extend-select = ["CL501"]
per-file-ignores = { "tests/**" = ["CL1"], "__init__.py" = ["CL201"] }
exclude = ["generated/"]           # gitignore-style globs, relative to the project root
extend-exclude = ["vendor/"]
call-patterns = ["mylib.llm.chat"]
volatile-functions = ["myapp.clock.now"]
model = "claude-sonnet-4-5"
respect-gitignore = true
```

Rule selection follows ruff: within one layer (the configuration file, then the command line) the most
specific selector wins, and `ignore` wins a tie, so `select = ["CL1"]` with `ignore = ["CL101"]` drops
CL101 while `select = ["CL101"]` with `ignore = ["CL1"]` keeps it. Command-line flags form a later layer
(see `Config.with_overrides`). `per-file-ignores` is applied last. CL999 (unanalyzable file) is always on.
"""

from __future__ import annotations

import dataclasses
import functools
import difflib
import hashlib
import json
import os
import re
import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from collections.abc import Iterable
from typing import Any

import pathspec

from cachelint.errors import CachelintError
from cachelint.rules import RULE_META

ALL_CODES: tuple[str, ...] = tuple(sorted(RULE_META))
ALWAYS_ENABLED: frozenset[str] = frozenset({"CL999"})

PYPROJECT = "pyproject.toml"
# Checked in this order in each directory; the first one found wins (as ruff: .ruff.toml, ruff.toml, pyproject).
STANDALONE_NAMES = (".cachelint.toml", "cachelint.toml")

# TOML key -> Config attribute.
_KEYS: dict[str, str] = {
    "select": "select",
    "ignore": "ignore",
    "extend-select": "extend_select",
    "per-file-ignores": "per_file_ignores",
    "exclude": "exclude",
    "extend-exclude": "extend_exclude",
    "call-patterns": "call_patterns",
    "volatile-functions": "volatile_functions",
    "model": "model",
    "respect-gitignore": "respect_gitignore",
    "include-tests": "include_tests",
    "confidence": "confidence",
    "store": "store",  # the proxy's store, for the editor's observed counts (cachelint lsp); the linter does not read it
}
CONFIDENCES = ("certain", "likely")  # most sure first
# A module of a test suite: under a `tests/`, `test/` or `testing/` folder, `test_*.py`, `*_test.py`, `conftest.py`. Its
# requests are fixtures that never run in the app, so nothing found there costs a cache; skipped unless
# `include-tests` is set.
TEST_PATH = re.compile(r"(?:^|/)(?:tests?|testing)/|(?:^|/)(?:test_[^/]*|[^/]*_test|conftest)\.py$")
_SELECTOR_KEYS = ("select", "ignore", "extend-select")
_GLOB_KEYS = ("exclude", "extend-exclude")
_QUALNAME_KEYS = ("call-patterns", "volatile-functions")
_QUALNAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)*$")


# --- selectors ---------------------------------------------------------------------------------------


def _prefix(selector: str) -> str:
    """The code prefix a (normalized) selector stands for; "ALL" is the same as "CL"."""
    return "CL" if selector == "ALL" else selector


def _specificity(selector: str) -> int:
    return len(_prefix(selector))


def _matches(selector: str, code: str) -> bool:
    return code.startswith(_prefix(selector))


def _covers(broad: str, narrow: str) -> bool:
    """True when every code `narrow` selects is also selected by `broad`."""
    return _prefix(narrow).startswith(_prefix(broad))


def normalize_selector(value: object, where: str) -> str:
    """Validate one rule selector ("CL101", "CL1", "CL", "ALL"), returned upper-cased.

    `where` names the setting in the error message, e.g. "select in /p/pyproject.toml" or "--select".
    """
    if not isinstance(value, str):
        raise CachelintError(f"{where}: rule selectors must be strings, got {value!r}")
    sel = value.strip().upper()
    if sel == "ALL" or (sel and any(code.startswith(sel) for code in ALL_CODES)):
        return sel
    hint = difflib.get_close_matches(sel, ALL_CODES, n=1)
    suffix = f" (did you mean '{hint[0]}'?)" if hint else ""
    raise CachelintError(f"unknown rule code or prefix {value!r} for {where}{suffix}")


def _normalize_selectors(values: Iterable[object], where: str) -> list[str]:
    out: list[str] = []
    for v in values:
        sel = normalize_selector(v, where)
        if sel not in out:
            out.append(sel)
    return out


def resolve_codes(select: Iterable[str], ignore: Iterable[str]) -> frozenset[str]:
    """Codes enabled by one layer of selectors: the most specific matching selector decides, ignore wins ties."""
    select = list(select)
    ignore = list(ignore)
    enabled = set()
    for code in ALL_CODES:
        best_sel = max((_specificity(s) for s in select if _matches(s, code)), default=-1)
        best_ign = max((_specificity(s) for s in ignore if _matches(s, code)), default=-1)
        if best_sel >= 0 and best_sel > best_ign:
            enabled.add(code)
    return frozenset(enabled)


# --- the configuration -------------------------------------------------------------------------------


@dataclass(frozen=True)
class _FileIgnore:
    pattern: str
    negated: bool
    spec: pathspec.GitIgnoreSpec
    codes: frozenset[str]


PROJECT_MARKERS = ("pyproject.toml", "setup.py", "setup.cfg", ".git")


@functools.lru_cache(maxsize=1024)
def _project_of(folder: str) -> str | None:
    if any(os.path.exists(os.path.join(folder, marker)) for marker in PROJECT_MARKERS):
        return folder
    parent = os.path.dirname(folder)
    return None if parent == folder else _project_of(parent)


def project_root_of(path: str | Path) -> str | None:
    """The nearest folder above `path` that holds a project's marker (pyproject.toml, setup.py, setup.cfg, .git)."""
    return _project_of(os.path.dirname(os.path.abspath(path)))


def test_path_below(path: str | Path, root: str | Path, is_dir: bool = False) -> bool:
    """Whether `path` is a test module or folder by its path below `root` (by its own name only outside it: the
    folders above a project say nothing about it)."""
    rel = _below(Path(path), Path(root))
    if rel is None:
        rel = os.path.basename(os.path.abspath(path))
    if rel in ("", "."):
        return False
    return TEST_PATH.search(rel + "/" if is_dir else rel) is not None


def _below(path: Path, root: Path) -> str | None:
    """`path` as a POSIX path relative to `root`, None outside it."""
    p = Path(os.path.abspath(path))
    try:
        return p.relative_to(os.path.abspath(root)).as_posix()
    except ValueError:
        pass
    try:  # symlinked checkouts: compare real paths
        return p.resolve().relative_to(Path(root).resolve()).as_posix()
    except (ValueError, OSError):
        return None


@dataclass
class Config:
    select: list[str] = field(default_factory=lambda: list(ALL_CODES))
    ignore: list[str] = field(default_factory=list)
    extend_select: list[str] = field(default_factory=list)
    per_file_ignores: dict[str, list[str]] = field(default_factory=dict)
    exclude: list[str] = field(default_factory=list)
    extend_exclude: list[str] = field(default_factory=list)
    call_patterns: list[str] = field(default_factory=list)
    volatile_functions: list[str] = field(default_factory=list)
    model: str | None = None
    respect_gitignore: bool = True
    include_tests: bool = False  # also check test modules (TEST_PATH), which are skipped by default
    confidence: str = "likely"  # the least sure findings reported: "certain" drops those only a call's shape suggests
    store: str | None = None  # `cachelint lsp`: the recorded traffic whose breaks it shows beside the findings
    root: Path = field(default_factory=Path.cwd)
    source: Path | None = None

    def __post_init__(self) -> None:
        self.root = Path(self.root)
        self._compiled_pfi: tuple[str, list[_FileIgnore]] | None = None
        self._exclude_spec: tuple[tuple[str, ...], pathspec.GitIgnoreSpec] | None = None

    # -- rule selection --

    def selected_codes(self) -> frozenset[str]:
        """Codes enabled by select / extend-select / ignore, before per-file-ignores (CL999 included)."""
        return resolve_codes([*self.select, *self.extend_select], self.ignore) | ALWAYS_ENABLED

    def enabled_codes(self, path: Path) -> frozenset[str]:
        """The codes active for `path` (relative to the current directory or absolute). CL999 is always on."""
        codes = set(self.selected_codes())
        if self.per_file_ignores:
            rel = self.relative(path)
            for entry in self._file_ignores():
                hit = entry.spec.match_file(rel)
                if hit != entry.negated:
                    codes -= entry.codes
        return frozenset(codes | ALWAYS_ENABLED)

    def _file_ignores(self) -> list[_FileIgnore]:
        snapshot = repr(self.per_file_ignores)
        if self._compiled_pfi is None or self._compiled_pfi[0] != snapshot:
            compiled = []
            for pattern, selectors in self.per_file_ignores.items():
                negated = pattern.startswith("!")
                pat = pattern[1:] if negated else pattern
                codes = resolve_codes(selectors, ()) if selectors else frozenset()
                compiled.append(_FileIgnore(pattern, negated, _compile_globs([pat]), codes))
            self._compiled_pfi = (snapshot, compiled)
        return self._compiled_pfi[1]

    # -- paths --

    def relative(self, path: Path) -> str:
        """`path` as a POSIX path relative to the project root; outside the root, the absolute path without its
        leading slash (so only unanchored patterns such as `*.py` or `tests/` can match it)."""
        inside = _below(path, self.root)
        return inside if inside is not None else Path(os.path.abspath(path)).as_posix().lstrip("/")

    def is_excluded(self, path: Path, is_dir: bool = False) -> bool:
        """Whether `path` matches `exclude` or `extend-exclude` (gitignore-style globs relative to the root), or is
        a test module or folder while `include-tests` is off."""
        if self.is_test(path, is_dir):
            return True
        rel = self.relative(path)
        if rel in ("", "."):
            return False
        if not (self.exclude or self.extend_exclude):
            return False
        patterns = (*self.exclude, *self.extend_exclude)
        if self._exclude_spec is None or self._exclude_spec[0] != patterns:
            self._exclude_spec = (patterns, _compile_globs(patterns))
        return bool(self._exclude_spec[1].match_file(rel + "/" if is_dir else rel))

    def is_test(self, path: Path, is_dir: bool = False, base: Path | None = None) -> bool:
        """Whether `path` is a test module or folder that `include-tests` off leaves out, judged by its path below
        the project: the folder of the configuration file; without one, `base` (the editor's workspace), the nearest
        folder with a project's marker, or the current directory, not the first path named (`cachelint check
        app/x.py tests/y.py` judges both alike).
        Outside it, by its own name only: the folders above a project say nothing about it."""
        if self.include_tests:
            return False
        root = self.root if self.source is not None else Path(base or project_root_of(path) or os.getcwd())
        return test_path_below(path, root, is_dir)

    # -- command line --

    def with_overrides(
        self,
        select: Iterable[str] | None = None,
        ignore: Iterable[str] | None = None,
        extend_select: Iterable[str] | None = None,
        per_file_ignores: dict[str, list[str]] | None = None,
        exclude: Iterable[str] | None = None,
        extend_exclude: Iterable[str] | None = None,
        call_patterns: Iterable[str] | None = None,
        volatile_functions: Iterable[str] | None = None,
        model: str | None = None,
        respect_gitignore: bool | None = None,
        include_tests: bool | None = None,
    ) -> Config:
        """A new Config with command-line flags applied over this one (None: flag not given).

        `select` replaces the configured select and extend-select; `ignore` and `extend_select` extend. The
        command line is a later layer, as in ruff: `--ignore CL1` drops CL101 even where the file selects
        CL101 explicitly, and `--extend-select CL101` re-enables a CL101 the file ignores. `per_file_ignores`
        adds patterns (codes for an existing pattern are appended); `exclude` replaces the configured exclude,
        the other lists extend; `model`, `respect_gitignore` and `include_tests` replace.
        """
        new_select = list(self.select)
        new_extend = list(self.extend_select)
        new_ignore = list(self.ignore)
        cli_select = None if select is None else _normalize_selectors(_cli_list(select), "--select")
        cli_extend = [] if extend_select is None else _normalize_selectors(_cli_list(extend_select), "--extend-select")
        cli_ignore = [] if ignore is None else _normalize_selectors(_cli_list(ignore), "--ignore")

        if cli_select is not None:
            new_select, new_extend = list(cli_select), []
        # A command-line ignore beats any configured selector it covers, whatever its specificity.
        if cli_ignore and cli_select is None:
            new_select = [s for s in new_select if not any(_covers(i, s) for i in cli_ignore)]
            new_extend = [s for s in new_extend if not any(_covers(i, s) for i in cli_ignore)]
        # A command-line select beats a configured ignore of the same selector (a broader configured ignore
        # already loses on specificity).
        cli_on = {_prefix(s) for s in [*(cli_select or []), *cli_extend]}
        new_ignore = [i for i in new_ignore if _prefix(i) not in cli_on]
        new_extend = _dedupe([*new_extend, *cli_extend])
        new_ignore = _dedupe([*new_ignore, *cli_ignore])

        pfi = {k: list(v) for k, v in self.per_file_ignores.items()}
        if per_file_ignores:
            for pattern, codes in _validate_per_file_ignores(per_file_ignores, "--per-file-ignores").items():
                pfi[pattern] = _dedupe([*pfi.get(pattern, []), *codes])

        return dataclasses.replace(
            self,
            select=new_select,
            ignore=new_ignore,
            extend_select=new_extend,
            per_file_ignores=pfi,
            exclude=_validate_globs(exclude, "--exclude") if exclude is not None else list(self.exclude),
            extend_exclude=_dedupe([*self.extend_exclude, *_validate_globs(extend_exclude or [], "--extend-exclude")]),
            call_patterns=_dedupe([*self.call_patterns, *_validate_qualnames(call_patterns or [], "--call-patterns")]),
            volatile_functions=_dedupe(
                [*self.volatile_functions, *_validate_qualnames(volatile_functions or [], "--volatile-functions")]
            ),
            model=model if model is not None else self.model,
            respect_gitignore=self.respect_gitignore if respect_gitignore is None else bool(respect_gitignore),
            include_tests=self.include_tests if include_tests is None else bool(include_tests),
        )

    # -- cache key --

    def fingerprint(self) -> str:
        """A stable hex digest of every setting that can change what `check` reports (not root or source)."""
        data = {
            "codes": sorted(self.selected_codes()),
            "per_file_ignores": sorted((k, sorted(set(v))) for k, v in self.per_file_ignores.items()),
            "exclude": sorted(set(self.exclude) | set(self.extend_exclude)),
            "call_patterns": sorted(set(self.call_patterns)),
            "volatile_functions": sorted(set(self.volatile_functions)),
            "model": self.model,
            "respect_gitignore": self.respect_gitignore,
            "include_tests": self.include_tests,
            "confidence": self.confidence,
            "catalog": list(ALL_CODES),
        }
        blob = json.dumps(data, sort_keys=True, separators=(",", ":"))
        return hashlib.sha256(blob.encode()).hexdigest()


def _cli_list(value: Iterable[str] | str) -> list[str]:
    """Command-line values: a list, or one comma-separated string ("CL1,CL201")."""
    out: list = []
    for item in [value] if isinstance(value, str) else list(value):
        if isinstance(item, str):
            out.extend(part.strip() for part in item.split(",") if part.strip())
        else:
            out.append(item)  # rejected by validation with a clear message
    return out


def _dedupe(items: Iterable[str]) -> list[str]:
    return list(dict.fromkeys(items))


def _compile_globs(patterns: Iterable[str]) -> pathspec.GitIgnoreSpec:
    return pathspec.GitIgnoreSpec.from_lines(list(patterns))


# --- validation --------------------------------------------------------------------------------------


def _string_list(value: object, where: str) -> list[str]:
    if isinstance(value, (tuple, set, frozenset)):  # command-line values
        value = list(value)
    if isinstance(value, str) or not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise CachelintError(f"{where} must be a list of strings, got {value!r}")
    return list(value)


def _validate_globs(values: Iterable[str], where: str) -> list[str]:
    values = _string_list(values, where)
    for v in values:
        try:
            _compile_globs([v])
        except (ValueError, TypeError, re.error) as exc:  # pathspec's GitWildMatchPatternError is a ValueError; `[C-8]` a re.error
            raise CachelintError(f"invalid glob {v!r} in {where}: {exc}") from None
    return _dedupe(values)


def _validate_qualnames(values: Iterable[str], where: str) -> list[str]:
    values = _string_list(values, where)
    for v in values:
        if not _QUALNAME.match(v):
            raise CachelintError(f"invalid qualified name {v!r} in {where} (expected e.g. 'mylib.llm.chat')")
    return _dedupe(values)


def _validate_per_file_ignores(value: object, where: str) -> dict[str, list[str]]:
    if not isinstance(value, dict):
        raise CachelintError(f"{where} must be a table of glob = [codes], got {value!r}")
    out: dict[str, list[str]] = {}
    for pattern, codes in value.items():
        sub = f"{where} (pattern {pattern!r})"
        codes = _string_list(codes, sub)
        try:
            _compile_globs([pattern.removeprefix("!")])
        except (ValueError, TypeError, re.error) as exc:
            raise CachelintError(f"invalid glob {pattern!r} in {where}: {exc}") from None
        out[pattern] = _normalize_selectors(codes, sub)
    return out


def config_from_table(table: dict[str, Any], root: Path, source: Path | None, table_name: str | None) -> Config:
    """Build a Config from a parsed `[tool.cachelint]` table (or a standalone file's top level)."""
    where_file = f"{table_name} of {source}" if table_name else str(source)
    for key in table:
        if key not in _KEYS:
            snake = key.replace("_", "-")
            hint = snake if snake in _KEYS else next(iter(difflib.get_close_matches(key, list(_KEYS), n=1)), None)
            suffix = f" (did you mean '{hint}'?)" if hint else ""
            raise CachelintError(f"unknown option {key!r} in {where_file}{suffix}")

    kwargs: dict[str, Any] = {}
    for key, value in table.items():
        where = f"'{key}' in {where_file}"
        if key in _SELECTOR_KEYS:
            kwargs[_KEYS[key]] = _normalize_selectors(_string_list(value, where), where)
        elif key == "per-file-ignores":
            kwargs["per_file_ignores"] = _validate_per_file_ignores(value, where)
        elif key in _GLOB_KEYS:
            kwargs[_KEYS[key]] = _validate_globs(value, where)  # type: ignore[arg-type]
        elif key in _QUALNAME_KEYS:
            kwargs[_KEYS[key]] = _validate_qualnames(value, where)  # type: ignore[arg-type]
        elif key == "model":
            if not isinstance(value, str) or not value.strip():
                raise CachelintError(f"{where} must be a non-empty string, got {value!r}")
            kwargs["model"] = value.strip()
        elif key == "confidence":
            if value not in CONFIDENCES:
                raise CachelintError(f"{where} must be one of {', '.join(map(repr, CONFIDENCES))}, got {value!r}")
            kwargs["confidence"] = value
        elif key == "store":
            if not isinstance(value, str) or not value.strip():
                raise CachelintError(f"{where} must be a non-empty string (a path to the proxy's store), got {value!r}")
            kwargs["store"] = value.strip()
        elif key in ("respect-gitignore", "include-tests"):
            if not isinstance(value, bool):
                raise CachelintError(f"{where} must be true or false, got {value!r}")
            kwargs[_KEYS[key]] = value
    return Config(root=root, source=source, **kwargs)


# --- loading -----------------------------------------------------------------------------------------


def _read_toml(path: Path, *, strict: bool = True) -> dict[str, Any] | None:
    """Parse a TOML file. With strict=False, a broken file that never mentions cachelint returns None."""
    try:
        raw = path.read_bytes()
    except OSError as exc:
        raise CachelintError(f"{path}: cannot read: {exc.strerror or exc}") from None
    try:
        text = raw.decode("utf-8")
        return tomllib.loads(text)
    except UnicodeDecodeError:
        if not strict and b"cachelint" not in raw:
            return None
        raise CachelintError(f"{path}: invalid TOML: not UTF-8") from None
    except tomllib.TOMLDecodeError as exc:
        if not strict and b"cachelint" not in raw:
            return None
        raise CachelintError(_toml_error(path, raw, exc)) from None
    except RecursionError:  # tomllib recurses once per nested array or inline table
        if not strict and b"cachelint" not in raw:
            return None
        raise CachelintError(f"{path}: invalid TOML: nested too deeply to read") from None


def _toml_error(path: Path, raw: bytes, exc: tomllib.TOMLDecodeError) -> str:
    """`path:line:column: invalid TOML: message` (tomllib puts the position in the message text)."""
    text = str(exc)
    m = re.search(r"\s*\(at line (\d+), column (\d+)\)$", text)
    if m:
        return f"{path}:{m.group(1)}:{m.group(2)}: invalid TOML: {text[: m.start()]}"
    m = re.search(r"\s*\(at end of document\)$", text)
    if m:
        lines = raw.decode("utf-8", "replace").splitlines() or [""]
        return f"{path}:{len(lines)}: invalid TOML: {text[: m.start()]} at end of file"
    return f"{path}: invalid TOML: {text}"


def _pyproject_table(path: Path, data: dict[str, Any]) -> dict[str, Any] | None:
    tool = data.get("tool")
    if not isinstance(tool, dict) or "cachelint" not in tool:
        return None
    table = tool["cachelint"]
    if not isinstance(table, dict):
        raise CachelintError(f"[tool.cachelint] in {path} must be a table")
    return table


def _load_file(path: Path) -> Config:
    """Load one configuration file, standalone or pyproject.toml (where [tool.cachelint] may be absent)."""
    root = path.parent
    data = _read_toml(path)
    assert data is not None
    if path.name == PYPROJECT:
        table = _pyproject_table(path, data)
        return config_from_table(table or {}, root, path, "[tool.cachelint]")
    return config_from_table(data, root, path, None)


def find_config_file(start: Path) -> Path | None:
    """The configuration file that applies to `start`: in `start` (or its directory) and then each parent, the
    first of .cachelint.toml, cachelint.toml, or a pyproject.toml that has a [tool.cachelint] table."""
    start = Path(os.path.abspath(start))
    directory = start if start.is_dir() else start.parent
    for d in (directory, *directory.parents):
        for name in STANDALONE_NAMES:
            candidate = d / name
            if candidate.is_file():
                return candidate
        candidate = d / PYPROJECT
        if candidate.is_file():
            data = _read_toml(candidate, strict=False)
            if data is not None and _pyproject_table(candidate, data) is not None:
                return candidate
    return None


def load_config(start: Path, config_file: Path | None = None) -> Config:
    """The configuration for linting `start` (a file or directory).

    With `config_file` (e.g. `--config`), that file is read: a pyproject.toml's [tool.cachelint] table, or
    any other TOML file's top level. Without it the nearest configuration file walking up from `start` is
    used (see `find_config_file`); with none, the defaults, rooted at `start` (its directory for a file).
    """
    if config_file is not None:
        config_file = Path(os.path.abspath(config_file))
        if not config_file.exists():
            raise CachelintError(f"{config_file}: no such file or directory")
        if not config_file.is_file():
            raise CachelintError(f"{config_file}: not a file")
        return _load_file(config_file)
    found = find_config_file(start)
    if found is not None:
        return _load_file(found)
    start = Path(os.path.abspath(start))
    return Config(root=start if start.is_dir() else start.parent, source=None)
