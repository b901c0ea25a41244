"""Score `cachelint check` (and the peers pcdlint / cachedrift) against the hand labels of bench/realworld/.

Usage: python bench/realworld/score.py [--mirror DIR] [--peer-bin DIR] [--json OUT] [--repo NAME ...]
                                       [--no-file-times] [--jobs N] [--timeout S]

Each repository of repos.toml is exported at its pinned commit from a local git mirror (`DIR/owner+name`,
a git dir or a folder holding one, e.g. `DIR/owner+name/repo`) into a temporary folder; a repository that is
missing from the mirror, or whose mirror lacks the commit, is reported and skipped. No network is used.

Each tool runs on the whole exported tree (so that imports between modules can be followed); only findings in
the files that repos.toml lists as reviewed are scored. A finding matches a problem label when it is in the
same file, its line is within [line - 3, end_line + 3] (end_line defaults to line), and its rule family
(CL1xx, CL2xx, ..., CL5xx) is the label's; exact-code matches are counted too. A finding in a reviewed file
that matches no problem label is a false positive (one inside a `clean` label's window is marked as a trap
hit). A problem label that no finding matches is a miss. Precision = matched findings / findings in reviewed
files; recall = matched problem labels / problem labels.

The peers have their own rule codes; each is mapped to the CL families it covers (PEER_FAMILIES below, read
from the peers' rule descriptions) and they are also scored on location alone (any code in the window).
Their low-severity findings (pcdlint INFO, cachedrift info) are scored separately ("incl. info").

Timing: the whole run per repository per tool (wall clock), and with file times on, each tool once more on
each reviewed file alone (in the same tree, so imports still resolve), wall clock including the tool's
start-up, which is measured on an empty file and printed beside them.
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
import tempfile
import threading
import time
import tomllib
from dataclasses import asdict, dataclass
from pathlib import Path

HERE = Path(__file__).resolve().parent
WINDOW = 3  # lines either side of a label's [line, end_line]
FAMILIES = ("CL1", "CL2", "CL3", "CL4", "CL5")

# Peer rule -> the CL families it speaks to (from the rules' own descriptions).
PEER_FAMILIES = {
    "PCL001": {"CL1"},  # dynamic value placed before static prompt text (CL101 / CL104)
    "PCL002": {"CL1"},  # json.dumps without sort_keys reaching a prompt (CL102)
    "PCL003": {"CL1"},  # unsorted set iterated while building prompt text (CL103)
    "PCL004": {"CL2"},  # tools list assembled in a non-deterministic order (CL201)
    "PCL005": {"CL1", "CL5"},  # dynamic value before a cache_control breakpoint (CL101 / CL502)
    "CD01": {"CL1"},  # time call feeding a prompt
    "CD02": {"CL1"},  # random / unique id near prompt assembly
    "CD03": {"CL1", "CL2"},  # tools / prompt built from a set literal
    "CD04": {"CL2"},  # tool list iterated without a sort
    "CD05": {"CL4"},  # tool_choice computed dynamically
    "CD06": {"CL1"},  # file re-encoded to base64 inline
    "CD07": {"CL1"},  # timestamp stamped into a template
    "CD08": {"CL1"},  # dict serialized without sort_keys
    "CD09": {"CL1", "CL3"},  # whitespace mutation on a prompt string
    "CD10": {"CL4"},  # model id read from env per call
}


@dataclass
class Label:
    repo: str
    file: str
    line: int
    family: str
    why: str
    confidence: str
    end_line: int | None = None

    @property
    def lo(self) -> int:
        return self.line - WINDOW

    @property
    def hi(self) -> int:
        return (self.end_line or self.line) + WINDOW

    @property
    def problem(self) -> bool:
        return self.family != "clean"


@dataclass
class Finding:
    tool: str
    repo: str
    file: str
    line: int
    code: str
    message: str
    low: bool = False  # a peer's info-level finding
    confidence: str = ""  # cachelint's: certain | likely


def families_of(code: str) -> set[str]:
    """The CL families a finding's code speaks to (its own family for cachelint's codes)."""
    if code.startswith("CL") and len(code) >= 3:
        return {code[:3]}
    return set(PEER_FAMILIES.get(code, set()))


def load_labels(path: Path) -> list[Label]:
    labels = []
    for n, raw in enumerate(path.read_text().splitlines(), 1):
        if raw.strip():
            d = json.loads(raw)
            try:
                labels.append(Label(d["repo"], d["file"], int(d["line"]), d["family"], d.get("why", ""),
                                    d.get("confidence", ""), int(d["end_line"]) if d.get("end_line") else None))
            except (KeyError, ValueError) as exc:
                raise SystemExit(f"{path}:{n}: bad label ({exc})") from None
    return labels


def load_repos(path: Path) -> list[dict]:
    return tomllib.loads(path.read_text())["repo"]


HOLDOUTS = tuple(f"holdout{n}" for n in range(1, 43))
SETS = ("dev", *HOLDOUTS, "all")


def set_files(name: str, here: Path | None = None) -> tuple[list[Path], list[Path]]:
    """(label files, repo files) of a label set. `dev`: labels.jsonl / repos.toml, the set round 1 was tuned on.
    `holdout1`: holdout1/labels_*.jsonl / repos_*.toml, labelled blind, scored once after round 1, then tuned on
    in round 2 (spent). `holdout2`: holdout2/, labelled blind after round 1, scored once after round 2, then spent.
    `holdout3`: holdout3/, labelled blind after round 2, spent in round 3. `holdout4`: holdout4/, labelled blind
    after round 3, scored blind at the start of round 4, then spent. `holdout5`: holdout5/, labelled blind during
    round 4, scored blind at its end, then spent. `holdout6`: holdout6/, labelled blind at the start of round 5,
    scored blind at its start and end, then spent. `holdout7`: holdout7/, labelled blind during round 5, spent in
    round 6. `holdout8`: holdout8/, labelled blind during round 6, spent in round 7. `holdout9`: holdout9/,
    labelled blind at the start of round 7, spent in round 8. `holdout10`: holdout10/, labelled blind at the
    start of round 8, scored blind at its start and after its first classes, then spent. `holdout11`: holdout11/,
    labelled blind during round 8. `all`: every set."""
    here = here or HERE
    found = {"dev": ([here / "labels.jsonl"], [here / "repos.toml"])}
    for held in HOLDOUTS:
        found[held] = (sorted((here / held).glob("labels_*.jsonl")), sorted((here / held).glob("repos_*.toml")))
    if name != "all":
        return found[name]
    return [p for labels, _ in found.values() for p in labels], [p for _, repos in found.values() for p in repos]


# ---------------------------------------------------------------- matching (pure; tested on its own)


def in_window(f: Finding, lab: Label) -> bool:
    return f.repo == lab.repo and f.file == lab.file and lab.lo <= f.line <= lab.hi


def match(findings: list[Finding], labels: list[Label], reviewed: dict[str, set[str]]) -> dict:
    """Score `findings` (one tool) against `labels`; `reviewed` maps repo -> the files reviewed in full.

    Returns the findings in reviewed files, each classed `tp` (matches a problem label's window and family),
    or `fp` (with `trap` when it falls in a clean label's window and `near` naming the problem labels of
    another family whose window it is in), and per label whether it was found by family, by exact code and by
    location (any code).
    """
    scored = [f for f in findings if f.file in reviewed.get(f.repo, set())]
    problems = [lab for lab in labels if lab.problem]
    cleans = [lab for lab in labels if not lab.problem]
    rows = []
    for f in scored:
        fams = families_of(f.code)
        hits = [lab for lab in problems if in_window(f, lab) and lab.family[:3] in fams]
        near = [lab for lab in problems if in_window(f, lab) and lab.family[:3] not in fams]
        traps = [lab for lab in cleans if in_window(f, lab)]
        rows.append({"finding": f, "tp": bool(hits), "labels": hits, "near": near, "traps": traps})
    per_label = []
    for lab in problems:
        around = [f for f in scored if in_window(f, lab)]
        per_label.append({
            "label": lab,
            "family": any(lab.family[:3] in families_of(f.code) for f in around),
            "exact": any(f.code == lab.family for f in around),
            "location": bool(around),
            "around": around,
        })
    return {"rows": rows, "labels": per_label, "unscored": len(findings) - len(scored)}


def summarize(result: dict, family: str | None = None) -> dict:
    """Counts, precision and recall, for one family (CL1..CL5) or overall (None)."""
    rows = [r for r in result["rows"] if family is None or family in families_of(r["finding"].code)]
    labs = [p for p in result["labels"] if family is None or p["label"].family.startswith(family)]
    tp = sum(r["tp"] for r in rows)
    fp = len(rows) - tp
    found = sum(p["family"] for p in labs)
    return {
        "findings": len(rows), "tp": tp, "fp": fp, "fp_on_clean": sum(1 for r in rows if not r["tp"] and r["traps"]),
        "precision": tp / len(rows) if rows else None,
        "labels": len(labs), "found": found, "recall": found / len(labs) if labs else None,
        "found_exact": sum(p["exact"] for p in labs), "found_location": sum(p["location"] for p in labs),
        "found_high": sum(p["family"] for p in labs if p["label"].confidence == "high"),
        "labels_high": sum(1 for p in labs if p["label"].confidence == "high"),
    }


# ---------------------------------------------------------------- running the tools


def git_dir(mirror: Path, name: str) -> Path | None:
    base = mirror / name.replace("/", "+")
    candidates = [base, base / "repo", *sorted(base.glob("*.git"))] if base.is_dir() else []
    for c in candidates:
        if (c / "HEAD").is_file() and (c / "objects").is_dir():
            return c
    return None


def export(gitdir: Path, commit: str, dest: Path) -> tuple[str | None, list[str]]:
    """Write the files of `commit` into `dest`: (an error line or None, the paths whose content the mirror lacks).

    Mirrors may leave their largest blobs out, so the tree is listed and each blob that is present is written
    (`git archive` would stop at the first absent one). Submodules and symbolic links are left out.
    """
    git = ["git", "--git-dir", str(gitdir)]
    listing = subprocess.run([*git, "ls-tree", "-r", "-z", commit], capture_output=True)
    if listing.returncode:
        lines = listing.stderr.decode(errors="replace").strip().splitlines()
        return (lines[-1] if lines else "git ls-tree failed"), []
    entries = []  # (sha, path)
    for item in listing.stdout.split(b"\0"):
        if not item:
            continue
        meta, _, path = item.partition(b"\t")
        mode, kind, sha = meta.split()
        if kind == b"blob" and mode != b"120000":
            entries.append((sha.decode(), path.decode(errors="surrogateescape")))
    shas = "".join(f"{sha}\n" for sha, _ in entries).encode()
    check = subprocess.run([*git, "cat-file", "--batch-check"], input=shas, capture_output=True)
    present = {line.split()[0].decode() for line in check.stdout.splitlines() if not line.endswith(b" missing")}
    missing = [path for sha, path in entries if sha not in present]
    wanted = [(sha, path) for sha, path in entries if sha in present]
    with subprocess.Popen([*git, "cat-file", "--batch"], stdin=subprocess.PIPE, stdout=subprocess.PIPE) as proc:
        assert proc.stdin is not None and proc.stdout is not None
        writer = threading.Thread(target=_feed, args=(proc.stdin, [sha for sha, _ in wanted]), daemon=True)
        writer.start()
        for sha, path in wanted:
            header = proc.stdout.readline().split()
            size = int(header[2])
            data = proc.stdout.read(size)
            proc.stdout.read(1)  # the newline after each object
            target = dest / path
            if ".." in Path(path).parts or Path(path).is_absolute():
                continue
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(data)
        writer.join()
    return None, missing


def _feed(stdin, shas: list[str]) -> None:
    for sha in shas:
        stdin.write(f"{sha}\n".encode())
    stdin.close()


def run_tool(argv: list[str], cwd: Path, timeout: float) -> tuple[str, float, str | None]:
    start = time.perf_counter()
    try:
        proc = subprocess.run(argv, cwd=cwd, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        return "", time.perf_counter() - start, f"timed out after {timeout:.0f} s"
    seconds = time.perf_counter() - start
    error = None
    if proc.returncode not in (0, 1) and not proc.stdout.strip():
        error = f"exit {proc.returncode}: " + (proc.stderr.strip().splitlines() or [""])[-1][:200]
    return proc.stdout, seconds, error


def _rel(path: str, tree: Path) -> str:
    p = Path(path)
    if p.is_absolute():
        try:
            p = p.relative_to(tree)
        except ValueError:
            pass
    return p.as_posix().removeprefix("./")


class Tool:
    name = ""

    def argv(self, paths: list[str]) -> list[str]:
        raise NotImplementedError

    def parse(self, out: str, repo: str, tree: Path) -> list[Finding]:
        raise NotImplementedError


class Cachelint(Tool):
    name = "cachelint"

    def __init__(self, command: list[str], jobs: int):
        self.command, self.jobs = command, jobs

    def argv(self, paths: list[str]) -> list[str]:
        return [*self.command, "check", "--output-format", "json", "--no-cache", "--exit-zero", "-j", str(self.jobs),
                *paths]

    def parse(self, out: str, repo: str, tree: Path) -> list[Finding]:
        return [Finding(self.name, repo, _rel(f["filename"], tree), f["location"]["row"], f["code"], f["message"],
                        confidence=f.get("confidence", ""))
                for f in json.loads(out or "[]")]


class Pcdlint(Tool):
    name = "pcdlint"

    def __init__(self, command: str):
        self.command = command

    def argv(self, paths: list[str]) -> list[str]:
        return [self.command, "--format", "json", *paths]

    def parse(self, out: str, repo: str, tree: Path) -> list[Finding]:
        return [Finding(self.name, repo, _rel(f["file_path"], tree), f["lineno"], f.get("rule_id") or "?",
                        f.get("message", ""), str(f.get("severity", "")).upper() == "INFO")
                for f in json.loads(out or "[]")]


class Cachedrift(Tool):
    name = "cachedrift"

    def __init__(self, command: str):
        self.command = command

    def argv(self, paths: list[str]) -> list[str]:
        return [self.command, "--format", "json", "--min-severity", "info", *paths]

    def parse(self, out: str, repo: str, tree: Path) -> list[Finding]:
        return [Finding(self.name, repo, _rel(f["file"], tree), f["line"], f["rule"], f.get("message", ""),
                        f.get("severity") == "info")
                for f in json.loads(out or "{}").get("findings", [])]


def find_tools(args: argparse.Namespace) -> tuple[list[Tool], list[str]]:
    # -P: the scored tree is the working directory, and a module of its own (a top-level `rules`, `proxy`, ...) must
    # never stand in for one of cachelint's imports
    command = args.cachelint.split() if args.cachelint else [sys.executable, "-P", "-m", "cachelint"]
    tools: list[Tool] = [Cachelint(command, args.jobs)]
    notes = []
    for name, cls in (("pcdlint", Pcdlint), ("cachedrift", Cachedrift)):
        candidate = args.peer_bin / name if args.peer_bin else None
        command = str(candidate) if candidate and candidate.exists() else shutil.which(name)
        if command:
            tools.append(cls(command))
        else:
            notes.append(f"{name}: not found (see --peer-bin); skipped")
    return tools, notes


def dedupe(findings: list[Finding]) -> list[Finding]:
    seen, out = set(), []
    for f in findings:
        key = (f.file, f.line, f.code, f.message)
        if key not in seen:
            seen.add(key)
            out.append(f)
    return out


def run_repo(repo: dict, tools: list[Tool], args: argparse.Namespace, tmp: Path) -> dict:
    name, commit = repo["name"], repo["commit"]
    record: dict = {"repo": name, "commit": commit, "findings": {}, "seconds": {}, "file_seconds": {}, "errors": [],
                    "missing_files": []}
    gitdir = git_dir(args.mirror, name)
    if gitdir is None:
        record["skipped"] = f"not in the mirror ({args.mirror / name.replace('/', '+')})"
        return record
    tree = tmp / name.replace("/", "+")
    tree.mkdir()
    error, record["absent_blobs"] = export(gitdir, commit, tree)
    if error:
        record["skipped"] = f"commit {commit[:12]} not exported: {error}"
        return record
    reviewed = [f for f in repo["files"] if (tree / f).is_file()]
    record["missing_files"] = [f for f in repo["files"] if f not in reviewed]
    for tool in tools:
        # the whole tree, plus the reviewed files named explicitly (a walk may skip a tracked file an ignore file names)
        # (Python files only: a reviewed prompt template, `extract-action.j2`, is not source to lint)
        named = [f for f in reviewed if f.endswith((".py", ".pyi"))]
        out, seconds, error = run_tool(tool.argv([".", *named]), tree, args.timeout)
        record["seconds"][tool.name] = seconds
        try:
            record["findings"][tool.name] = dedupe(tool.parse(out, name, tree))
        except (json.JSONDecodeError, KeyError, TypeError) as exc:
            error = error or f"unreadable output ({exc})"
            record["findings"][tool.name] = []
        if error:
            record["errors"].append(f"{tool.name}: {error}")
        if args.file_times:
            times = {}
            for f in named:
                _, secs, _ = run_tool(tool.argv([f]), tree, args.timeout)
                times[f] = secs
            record["file_seconds"][tool.name] = times
    shutil.rmtree(tree, ignore_errors=True)
    return record


def measure_startup(tools: list[Tool], tmp: Path, timeout: float) -> dict[str, float]:
    empty = tmp / "empty"
    empty.mkdir()
    (empty / "empty.py").write_text("")
    out = {}
    for tool in tools:
        runs = [run_tool(tool.argv(["empty.py"]), empty, timeout)[1] for _ in range(3)]
        out[tool.name] = sorted(runs)[1]
    return out


# ---------------------------------------------------------------- report


def pct(x: float | None) -> str:
    return "  -  " if x is None else f"{x:5.2f}"


def scoring_variants(tool: str, findings: list[Finding]) -> list[tuple[str, list[Finding]]]:
    main = [f for f in findings if not f.low]
    variants = [(tool, main)]
    if len(main) != len(findings):
        variants.append((f"{tool} incl. info", findings))
    return variants


def report(records: list[dict], labels: list[Label], repos: list[dict], tools: list[Tool], startup: dict,
           notes: list[str], *, counts_only: bool = False) -> dict:
    ran = [r for r in records if "skipped" not in r]
    ran_names = {r["repo"] for r in ran}
    reviewed = {r["name"]: set(r["files"]) for r in repos if r["name"] in ran_names}
    used = [lab for lab in labels if lab.repo in ran_names]
    stray = [lab for lab in used if lab.file not in reviewed[lab.repo]]
    problems = sum(lab.problem for lab in used)
    print(f"{len(ran)}/{len(records)} repositories, {sum(len(v) for v in reviewed.values())} reviewed files, "
          f"{len(used)} labels ({problems} problems, {len(used) - problems} clean); match window: "
          f"[line-{WINDOW}, end_line+{WINDOW}], same family (CL1xx..CL5xx)")
    for r in records:
        if "skipped" in r:
            print(f"SKIPPED {r['repo']}: {r['skipped']}")
        if r.get("absent_blobs"):
            print(f"NOTE {r['repo']}: {len(r['absent_blobs'])} files of the commit are absent from the mirror and "
                  f"were not exported (e.g. {r['absent_blobs'][0]})")
        for f in r.get("missing_files", []):
            print(f"MISSING reviewed file {r['repo']}:{f} (not in the tree at {r['commit'][:12]})")
        for e in r.get("errors", []):
            print(f"ERROR {r['repo']}: {e}")
    for lab in stray:
        if not counts_only:
            print(f"NOTE label on a file not listed as reviewed: {lab.repo}:{lab.file}:{lab.line}")
    for n in notes:
        print(n)

    out: dict = {"window": WINDOW, "repos": [], "tools": {}, "startup_seconds": startup}
    results = {}
    print()
    print(f"{'tool':<24}{'findings':>9}{'TP':>5}{'FP':>5}{'on clean':>9}{'prec':>7}"
          f"{'found':>7}{'/':>1}{'labels':<6}{'recall':>7}{'exact':>7}{'any code':>9}{'high':>8}{'other files':>12}")
    for tool in tools:
        allf = [f for r in ran for f in r["findings"].get(tool.name, [])]
        for variant, findings in scoring_variants(tool.name, allf):
            res = match(findings, used, reviewed)
            results[variant] = res
            s = summarize(res)
            print(f"{variant:<24}{s['findings']:>9}{s['tp']:>5}{s['fp']:>5}{s['fp_on_clean']:>9}"
                  f"{pct(s['precision']):>7}"
                  f"{s['found']:>7}/{s['labels']:<6}{pct(s['recall']):>7}{s['found_exact']:>7}{s['found_location']:>9}"
                  f"{s['found_high']:>4}/{s['labels_high']:<3}{res['unscored']:>12}")
            out["tools"][variant] = {"overall": s, "families": {fam: summarize(res, fam) for fam in FAMILIES}}
    print("  prec = TP / findings in reviewed files; found = problem labels matched by family; exact = by exact code; "
          "any code = a finding of any code in the window;\n  high = found / labels of high confidence; "
          "other files = findings outside the reviewed files (not scored)")

    print("\nper family (precision by the finding's family; recall by the label's family)")
    print(f"{'tool':<24}" + "".join(f"{fam + 'xx':>16}" for fam in FAMILIES))
    for variant, res in results.items():
        cells = []
        for fam in FAMILIES:
            s = summarize(res, fam)
            cells.append(f"P {pct(s['precision']).strip():>4} R {s['found']}/{s['labels']}")
        print(f"{variant:<24}" + "".join(f"{c:>16}" for c in cells))
    confidences = [(variant, res) for variant, res in results.items() if any(r["finding"].confidence for r in res["rows"])]
    if confidences:
        print("\nprecision by the finding's confidence (certain: the flow reaches a recognized request; likely: the "
              "data's shape)")
        for variant, res in confidences:
            cells = []
            for level in ("certain", "likely"):
                rows = [r for r in res["rows"] if r["finding"].confidence == level]
                tp = sum(r["tp"] for r in rows)
                cells.append(f"{level} {tp}/{len(rows)} (P {pct(tp / len(rows) if rows else None).strip()})")
                out["tools"][variant].setdefault("confidence", {})[level] = {"findings": len(rows), "tp": tp}
            print(f"{variant:<24}" + "   ".join(cells))
    print("\nrecall per label code")
    codes = sorted({lab.family for lab in used if lab.problem})
    print(f"{'tool':<24}" + "".join(f"{c:>7}" for c in codes))
    for variant, res in results.items():
        print(f"{variant:<24}" + "".join(
            f"{sum(p['family'] for p in res['labels'] if p['label'].family == c):>3}/"
            f"{sum(1 for p in res['labels'] if p['label'].family == c):<3}" for c in codes))

    for variant, res in results.items():
        if counts_only:  # a blind set scored without showing which labels were missed
            break
        fps = [r for r in res["rows"] if not r["tp"]]
        print(f"\n{variant}: false positives ({len(fps)})")
        for r in sorted(fps, key=lambda r: (r["finding"].repo, r["finding"].file, r["finding"].line)):
            f = r["finding"]
            tag = ""
            if r["traps"]:
                tag += " [clean trap: " + "; ".join(f"{t.line}: {t.why[:90]}" for t in r["traps"]) + "]"
            if r["near"]:
                tag += " [near " + ", ".join(f"{n.family}@{n.line}" for n in r["near"]) + "]"
            print(f"  {f.repo}:{f.file}:{f.line} {f.code} {f.message[:160]}{tag}")
        misses = [p for p in res["labels"] if not p["family"]]
        print(f"{variant}: misses ({len(misses)})")
        for p in misses:
            lab = p["label"]
            span = f"{lab.line}-{lab.end_line}" if lab.end_line else str(lab.line)
            other = f" [in window: {', '.join(sorted({f.code for f in p['around']}))}]" if p["around"] else ""
            print(f"  {lab.repo}:{lab.file}:{span} {lab.family} ({lab.confidence}) {lab.why[:160]}{other}")

    print("\ntiming (s, wall clock; whole tree per repository)")
    print(f"{'repository':<36}" + "".join(f"{t.name:>12}" for t in tools))
    for r in ran:
        print(f"{r['repo']:<36}" + "".join(f"{r['seconds'].get(t.name, 0):>12.2f}" for t in tools))
    print(f"{'total':<36}" + "".join(f"{sum(r['seconds'].get(t.name, 0) for r in ran):>12.2f}" for t in tools))
    print("start-up on an empty file: " + ", ".join(f"{k} {v:.2f} s" for k, v in startup.items()))
    for t in tools:
        times = [(secs, r["repo"], f) for r in ran for f, secs in r["file_seconds"].get(t.name, {}).items()]
        if times:
            times.sort(reverse=True)
            print(f"slowest reviewed files, {t.name} (each alone, wall clock incl. start-up): " +
                  "; ".join(f"{repo}:{f} {secs:.2f}" for secs, repo, f in times[:8]))

    for r in records:
        out["repos"].append({k: v for k, v in r.items() if k != "findings"} |
                            {"findings": {t: [asdict(f) for f in fs] for t, fs in r.get("findings", {}).items()}})
    for variant, res in results.items():
        if counts_only:  # a blind set: the findings stay (per repository, above), which label each met does not
            continue
        out["tools"][variant]["false_positives"] = [
            asdict(r["finding"]) | {"clean_traps": [asdict(t) for t in r["traps"]],
                                    "near": [asdict(n) for n in r["near"]]}
            for r in res["rows"] if not r["tp"]]
        out["tools"][variant]["true_positives"] = [
            asdict(r["finding"]) | {"labels": [asdict(lab) for lab in r["labels"]]} for r in res["rows"] if r["tp"]]
        out["tools"][variant]["misses"] = [
            asdict(p["label"]) | {"in_window": [asdict(f) for f in p["around"]]}
            for p in res["labels"] if not p["family"]]
        out["tools"][variant]["found"] = [
            asdict(p["label"]) | {"exact": p["exact"]} for p in res["labels"] if p["family"]]
    return out


def reused(path: Path, tools: set[str]) -> dict[tuple[str, str], dict]:
    """The repository records of a previous --json that ran every one of `tools`, by (repo, commit)."""
    try:
        data = json.loads(path.read_text())
    except (OSError, json.JSONDecodeError) as exc:
        raise SystemExit(f"error: --reuse {path}: {exc}") from None
    out = {}
    for r in data.get("repos", []):
        if "skipped" in r or not tools <= set(r.get("findings", {})):
            continue
        r["findings"] = {t: [Finding(**f) for f in fs] for t, fs in r["findings"].items()}
        out[(r["repo"], r["commit"])] = r
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Score cachelint and its peers on the hand-labelled public repos.")
    parser.add_argument("--mirror", type=Path, default=Path("/work/.mirror"), help="Folder of owner+name git mirrors.")
    parser.add_argument("--peer-bin", type=Path, help="Folder with the pcdlint and cachedrift commands.")
    parser.add_argument("--cachelint", help="Command for cachelint (default: this Python's -P -m cachelint).")
    parser.add_argument("--json", type=Path, help="Write everything (findings, matches, misses, timing) here.")
    parser.add_argument("--repo", action="append", help="Only this repository (owner/name); repeatable.")
    parser.add_argument("--set", choices=SETS, default="dev",
                        help=f"Label set: dev, holdout1..{HOLDOUTS[-1]} (see bench/realworld/README.md for which are still blind) or all (default dev).")
    parser.add_argument("--counts-only", action="store_true",
                        help="Print the tables only: no false-positive or miss lines (keeps a blind set blind).")
    parser.add_argument("--labels", type=Path, action="append", help="A labels file instead of the set's (repeatable).")
    parser.add_argument("--repos", type=Path, action="append", help="A repos file instead of the set's (repeatable).")
    parser.add_argument("--no-file-times", dest="file_times", action="store_false",
                        help="Skip running each tool on each reviewed file alone.")
    parser.add_argument("--no-peers", action="store_true", help="Run cachelint only.")
    parser.add_argument("--reuse", type=Path, help="A previous --json OUT: its results for repositories at the same "
                        "commit are scored again instead of re-running the tools (stale once the tools change).")
    parser.add_argument("--jobs", type=int, default=2, help="cachelint processes (default 2).")
    parser.add_argument("--timeout", type=float, default=600.0, help="Seconds one tool run may take (default 600).")
    args = parser.parse_args(argv)
    if not args.mirror.is_dir():
        print(f"error: --mirror {args.mirror}: no such folder", file=sys.stderr)
        return 2
    label_files, repo_files = set_files(args.set)
    label_files, repo_files = args.labels or label_files, args.repos or repo_files
    if not label_files or not repo_files:
        print(f"error: the {args.set} set has no labels yet (its folder has no labels_*.jsonl / repos_*.toml)", file=sys.stderr)
        return 2
    try:
        labels = [lab for path in label_files for lab in load_labels(path)]
        repos = [repo for path in repo_files for repo in load_repos(path)]
    except (OSError, tomllib.TOMLDecodeError, json.JSONDecodeError) as exc:
        print(f"error: cannot read the labels: {exc}", file=sys.stderr)
        return 2
    if args.repo:
        unknown = set(args.repo) - {r["name"] for r in repos}
        if unknown:
            print(f"error: not in repos.toml: {', '.join(sorted(unknown))}", file=sys.stderr)
            return 2
        repos = [r for r in repos if r["name"] in args.repo]
    tools, notes = find_tools(args)
    if args.no_peers:
        tools, notes = tools[:1], []
    previous = reused(args.reuse, {t.name for t in tools}) if args.reuse else {}
    with tempfile.TemporaryDirectory(prefix="cachelint-realworld-") as tmp:
        startup = measure_startup(tools, Path(tmp), args.timeout)
        records = []
        for repo in repos:
            old = previous.get((repo["name"], repo["commit"]))
            if old is not None:
                records.append(old)
                continue
            print(f"... {repo['name']}", file=sys.stderr, flush=True)
            records.append(run_repo(repo, tools, args, Path(tmp)))
    out = report(records, labels, repos, tools, startup, notes, counts_only=args.counts_only)
    if args.json:
        args.json.write_text(json.dumps(out, indent=1, default=str) + "\n")
        print(f"\nwrote {args.json}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
