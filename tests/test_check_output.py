"""`cachelint check` output formats as a user (or CI) sees them: text, concise, json, sarif, github."""

from __future__ import annotations

import io
import json
import re
from pathlib import Path

import jsonschema
import pytest

from cachelint import __version__
from cachelint.check.finding import Edit, Finding, Fix
from cachelint.check.output import render
from cachelint.rules import RULE_META

SARIF_SCHEMA = Path(__file__).parent / "schemas" / "sarif-schema-2.1.0.json"

SOURCE = 'import time\n\tprompt = f"日本 {time.time()}"\nsystem = build(user)\n'


def finding(code: str = "CL101", row: int = 2, column: int = 16, end_column: int = 29, *, filename: str = "pkg/app.py",
            message: str = "time.time() reaches the cached prefix", fix: Fix | None = None) -> Finding:
    meta = RULE_META[code]
    return Finding(code, meta.name, message, meta.severity, filename, row, column, row, end_column, fix)


SAFE = Fix("safe", "Freeze the value once per session", (Edit(2, 16, 2, 29, "{STARTED}"),))
UNSAFE = Fix("unsafe", "Move user data after the instructions", (Edit(3, 10, 3, 21, ""), Edit(1, 1, 1, 1, "# moved\n")))


@pytest.fixture
def project(tmp_path, monkeypatch):
    """A project with pkg/app.py, the current directory at its root."""
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "app.py").write_text(SOURCE, encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    return tmp_path


@pytest.fixture
def findings(project):
    return [
        finding(fix=SAFE),  # `{time.time()}`, after a tab and two wide characters
        finding("CL104", 3, 10, 21, message="Per-user data — ‚user‘ — in the system prompt", fix=UNSAFE),
        finding("CL999", 1, 1, 1, filename="gone/missing.py", message="could not read the file"),
    ]


def rendered(items, fmt, **kwargs) -> str:
    out = io.StringIO()
    render(items, fmt, out, **kwargs)
    return out.getvalue()


def sarif(items, **kwargs) -> dict:
    return json.loads(rendered(items, "sarif", **kwargs))


def fingerprint_of(item, **kwargs) -> str:
    return sarif([item], **kwargs)["runs"][0]["results"][0]["partialFingerprints"]["cachelint/v1"]


# --- text ---------------------------------------------------------------------------------------------


def test_text_shows_header_source_line_and_caret(findings):
    out = rendered(findings, "text")
    lines = out.splitlines()
    assert lines[0] == "pkg/app.py:2:16: CL101 [*] time.time() reaches the cached prefix"
    code_line = next(line for line in lines if line.startswith("2 | "))
    caret_line = lines[lines.index(code_line) + 1]
    assert code_line == '2 |     prompt = f"日本 {time.time()}"'  # the tab shown as 4 spaces
    # the underline starts under `{`, one cell further right for each of the two wide characters
    assert caret_line.index("^") == code_line.index("{") + 2
    assert caret_line.endswith("^" * len("{time.time()}") + " CL101")
    assert "  = help: Freeze the value once per session" in lines
    assert "\x1b[" not in out


def test_text_marks_only_safe_fixes_and_skips_unreadable_snippets(findings):
    lines = rendered(findings, "text").splitlines()
    assert "pkg/app.py:3:10: CL104 Per-user data — ‚user‘ — in the system prompt" in lines
    missing = lines.index("gone/missing.py:1:1: CL999 could not read the file")
    assert lines[missing + 1] == ""  # no snippet for a file that cannot be read


def test_text_summary_counts_fixable_and_hidden_fixes(findings):
    tail = rendered(findings, "text").splitlines()[-3:]
    assert tail == [
        "Found 3 errors.",
        "[*] 1 fixable with the --fix option.",
        "(1 hidden fix can be enabled with the --unsafe-fixes option)",
    ]


def test_text_summary_variants(findings):
    assert rendered(findings[:1], "text", show_fixes_hint=False).splitlines()[-1] == "Found 1 error."
    assert rendered(findings, "text", fixed=2).splitlines()[-3] == "Found 5 errors (2 fixed, 3 remaining)."
    assert rendered([], "text", fixed=2).splitlines() == ["Found 2 errors (2 fixed, 0 remaining)."]
    with_unsafe = rendered(findings, "text", unsafe_fixes=True).splitlines()
    assert "pkg/app.py:3:10: CL104 [*] Per-user data — ‚user‘ — in the system prompt" in with_unsafe
    assert with_unsafe[-1] == "[*] 2 fixable with the --fix option."


def test_text_color_is_opt_in(findings):
    out = rendered(findings, "text", color=True)
    assert "\x1b[" in out
    assert re.sub(r"\x1b\[[0-9;]*m", "", out) == rendered(findings, "text")


@pytest.mark.parametrize("fmt", ["text", "concise"])
def test_no_findings_print_all_checks_passed(fmt, project):
    assert rendered([], fmt, files_checked=4) == "All checks passed!\n"


# --- concise ------------------------------------------------------------------------------------------


def test_concise_is_one_line_per_finding_then_the_summary(findings):
    broken = finding("CL101", message="line one\nline two")
    lines = rendered([*findings, broken], "concise").splitlines()
    assert lines[:4] == [
        "pkg/app.py:2:16: CL101 time.time() reaches the cached prefix",
        "pkg/app.py:3:10: CL104 Per-user data — ‚user‘ — in the system prompt",
        "gone/missing.py:1:1: CL999 could not read the file",
        "pkg/app.py:2:16: CL101 line one line two",
    ]
    assert lines[4:] == [
        "Found 4 errors.",
        "[*] 1 fixable with the --fix option.",
        "(1 hidden fix can be enabled with the --unsafe-fixes option)",
    ]


# --- json ---------------------------------------------------------------------------------------------


def test_json_round_trips_through_finding_from_json(findings):
    out = rendered(findings, "json")
    assert out.startswith('[\n  {\n    "code": "CL101"')  # indent 2
    data = json.loads(out)
    assert [Finding.from_json(item) for item in data] == findings
    assert data[1]["message"] == "Per-user data — ‚user‘ — in the system prompt"
    assert data[1]["fix"]["applicability"] == "unsafe"
    assert data[2]["fix"] is None
    assert set(data[0]) == {"code", "name", "message", "severity", "filename", "location", "end_location", "fix", "confidence"}
    assert json.loads(rendered([], "json")) == []


# --- sarif --------------------------------------------------------------------------------------------


def validate_sarif(log: dict) -> None:
    schema = json.loads(SARIF_SCHEMA.read_text(encoding="utf-8"))
    validator = jsonschema.validators.validator_for(schema)  # the draft the schema declares in $schema
    assert validator.META_SCHEMA["$schema"].rstrip("#") == schema["$schema"].rstrip("#")
    validator.check_schema(schema)
    validator(schema, format_checker=validator.FORMAT_CHECKER).validate(log)


def test_vendored_schema_is_the_official_sarif_2_1_0_schema():
    schema = json.loads(SARIF_SCHEMA.read_text(encoding="utf-8"))
    assert schema["title"] == "Static Analysis Results Format (SARIF) Version 2.1.0 JSON Schema"
    assert schema["properties"]["version"]["enum"] == ["2.1.0"]


def test_sarif_validates_against_the_official_schema(findings, project):
    log = sarif(findings, files_checked=7)
    validate_sarif(log)
    validate_sarif(sarif([]))
    assert log["$schema"] == "https://json.schemastore.org/sarif-2.1.0.json"
    assert log["version"] == "2.1.0"
    (run,) = log["runs"]
    driver = run["tool"]["driver"]
    assert (driver["name"], driver["version"]) == ("cachelint", __version__)
    assert driver["informationUri"].startswith("https://")
    assert [rule["id"] for rule in driver["rules"]] == list(RULE_META)
    assert run["originalUriBaseIds"]["%SRCROOT%"]["uri"] == project.as_uri() + "/"
    assert run["columnKind"] == "unicodeCodePoints"
    assert run["properties"]["filesChecked"] == 7


def test_sarif_rules_and_results_agree(findings):
    run = sarif(findings)["runs"][0]
    rules = run["tool"]["driver"]["rules"]
    for item, result in zip(findings, run["results"], strict=True):
        rule = rules[result["ruleIndex"]]
        assert result["ruleId"] == rule["id"] == item.code
        assert rule["name"] == item.name
        assert rule["shortDescription"]["text"] == RULE_META[item.code].summary
        assert rule["helpUri"] == RULE_META[item.code].help_uri
        assert rule["defaultConfiguration"]["level"] == RULE_META[item.code].severity
        assert result["level"] == item.severity
        assert result["message"]["text"] == item.message
    levels = {rule["id"]: rule["defaultConfiguration"]["level"] for rule in rules}
    assert (levels["CL101"], levels["CL104"]) == ("error", "warning")


def test_sarif_locations_are_relative_to_srcroot(findings, project):
    absolute = finding(filename=str(project / "pkg" / "app.py"))
    results = sarif([findings[0], absolute])["runs"][0]["results"]
    for result in results:
        physical = result["locations"][0]["physicalLocation"]
        assert physical["artifactLocation"] == {"uri": "pkg/app.py", "uriBaseId": "%SRCROOT%"}
        assert physical["region"] == {"startLine": 2, "startColumn": 16, "endLine": 2, "endColumn": 29}


def test_sarif_uris_are_escaped_and_paths_outside_the_root_absolute(project, tmp_path_factory):
    elsewhere = tmp_path_factory.mktemp("other") / "x.py"
    log = sarif([finding(filename="my dir/ä.py"), finding(filename=str(elsewhere))])
    validate_sarif(log)
    first, second = (r["locations"][0]["physicalLocation"]["artifactLocation"] for r in log["runs"][0]["results"])
    assert first == {"uri": "my%20dir/%C3%A4.py", "uriBaseId": "%SRCROOT%"}
    assert second == {"uri": elsewhere.as_uri()}


def test_sarif_fixes_carry_the_edits(findings):
    results = sarif(findings)["runs"][0]["results"]
    (fix,) = results[0]["fixes"]
    assert fix["description"]["text"] == SAFE.message
    (change,) = fix["artifactChanges"]
    assert change["artifactLocation"] == {"uri": "pkg/app.py", "uriBaseId": "%SRCROOT%"}
    assert change["replacements"] == [{
        "deletedRegion": {"startLine": 2, "startColumn": 16, "endLine": 2, "endColumn": 29},
        "insertedContent": {"text": "{STARTED}"},
    }]
    unsafe = results[1]["fixes"][0]
    assert unsafe["properties"]["applicability"] == "unsafe"
    deletion, insertion = unsafe["artifactChanges"][0]["replacements"]
    assert "insertedContent" not in deletion  # a pure deletion
    assert insertion["insertedContent"]["text"] == "# moved\n"
    assert "fixes" not in results[2]


def test_sarif_fingerprints_survive_a_line_shift(project):
    app = project / "pkg" / "app.py"
    before = fingerprint_of(finding())
    app.write_text("# a new first line\n\n" + SOURCE, encoding="utf-8")
    after = fingerprint_of(finding(row=4))
    assert before == after
    assert fingerprint_of(finding("CL102", row=4)) != after  # another rule
    assert fingerprint_of(finding(row=5, column=10, end_column=21)) != after  # another line's text


def test_sarif_fingerprints_tell_repeated_lines_apart(project):
    (project / "pkg" / "twice.py").write_text("x = now()\nx = now()\n", encoding="utf-8")
    results = sarif([finding(row=1, filename="pkg/twice.py"), finding(row=2, filename="pkg/twice.py")])
    first, second = (r["partialFingerprints"]["cachelint/v1"] for r in results["runs"][0]["results"])
    assert first != second


# --- github -------------------------------------------------------------------------------------------

GITHUB_LINE = re.compile(
    r"^::(error|warning) file=([^,]+),line=(\d+),col=(\d+),endLine=(\d+),endColumn=(\d+),"
    r"title=cachelint \((CL\d{3})\)::(CL\d{3}) (.*)$"
)


def test_github_annotations_have_the_workflow_command_shape(findings):
    lines = rendered(findings, "github").splitlines()
    assert len(lines) == len(findings)
    parsed = [GITHUB_LINE.match(line) for line in lines]
    assert all(parsed), lines
    assert parsed[0].groups() == ("error", "pkg/app.py", "2", "16", "2", "29", "CL101", "CL101",
                                  "time.time() reaches the cached prefix")
    assert parsed[1].group(1) == "warning"  # CL104 is a warning
    assert parsed[1].group(9) == "Per-user data — ‚user‘ — in the system prompt"
    assert rendered([], "github") == ""


def test_github_escapes_messages_and_properties(project):
    item = finding(filename="odd,name:x.py", message="100% sure\r\nsecond, line: here")
    (line,) = rendered([item], "github").splitlines()
    assert line.startswith("::error file=odd%2Cname%3Ax.py,line=2,")
    assert line.endswith("::CL101 100%25 sure%0D%0Asecond, line: here")


def test_unknown_format_is_an_error(findings):
    with pytest.raises(ValueError, match="unknown output format"):
        rendered(findings, "xml")
