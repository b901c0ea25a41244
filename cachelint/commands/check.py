"""`cachelint check`."""

from __future__ import annotations

import os
import sys

import click



@click.command()
@click.argument("paths", nargs=-1, type=click.Path(path_type=str))
@click.option("--fix", is_flag=True, help="Apply safe fixes.")
@click.option("--unsafe-fixes", is_flag=True, help="Also apply fixes that may change behaviour (with --fix), and show them.")
@click.option("--diff", "show_diff", is_flag=True, help="Show the fixes as a diff instead of writing them.")
@click.option("--select", help="Codes or prefixes to enable, comma-separated (replaces the configured ones).")
@click.option("--extend-select", help="More codes or prefixes to enable.")
@click.option("--ignore", help="Codes or prefixes to disable.")
@click.option("--output-format", "output_format", type=click.Choice(["text", "concise", "json", "sarif", "github"]), default=None, help="Output format [default: text; github under GitHub Actions].")
@click.option("--stdin-filename", help="Lint source read from standard input, reported under this name.")
@click.option("--exit-zero", is_flag=True, help="Exit 0 even when there are findings.")
@click.option("--no-cache", is_flag=True, help="Do not read or write .cachelint_cache/.")
@click.option("--config", "config_file", type=click.Path(dir_okay=False), help="A pyproject.toml or cachelint.toml to use.")
@click.option("--jobs", "-j", type=click.IntRange(min=1), help="Processes to lint with [default: CPU count, at most 8].")
@click.option("--statistics", is_flag=True, help="Show the number of findings per rule instead of the findings.")
@click.option("--include-tests", is_flag=True, default=None,
              help="Also check test modules (tests/, test/, testing/, test_*.py, *_test.py, conftest.py), skipped by default.")
def check(paths, fix, unsafe_fixes, show_diff, select, extend_select, ignore, output_format, stdin_filename, exit_zero, no_cache, config_file, jobs,
          statistics, include_tests) -> None:
    """Find code that breaks LLM prompt caching (Python apps on the anthropic / openai / litellm SDKs).

    PATHS are files or directories (default: the current directory). Exit code 0 when clean, 1 when there
    are findings, 2 on an error. Test modules are skipped unless --include-tests (or include-tests = true):
    their requests never run in the app.

    \b
    Example:
      cachelint check src/
      cachelint check --fix app.py
      cachelint check --output-format sarif . > cachelint.sarif
    """
    from pathlib import Path

    from cachelint.check.config import load_config
    from cachelint.check.output import render
    from cachelint.check.finding import seen_from
    from cachelint.check.run import fix_source, options_for, run_check

    fmt = output_format or ("github" if os.environ.get("GITHUB_ACTIONS") == "true" else "text")
    start = Path(stdin_filename).parent if stdin_filename else Path(paths[0]) if paths else Path.cwd()
    config = load_config(start if start.exists() else Path.cwd(), Path(config_file) if config_file else None)
    config = config.with_overrides(select=select, ignore=ignore, extend_select=extend_select, include_tests=include_tests or None)
    if stdin_filename:
        data = sys.stdin.buffer.read()
        codes = config.enabled_codes(Path(stdin_filename))
        try:
            source = data.decode("utf-8-sig")
        except UnicodeDecodeError:
            from cachelint.check.engine import lint_source

            render(lint_source(data, stdin_filename, codes, options_for(config)), fmt, sys.stdout, files_checked=1)
            sys.exit(0 if exit_zero else 1)
        new_source, applied, findings = fix_source(source, stdin_filename, codes, options_for(config), unsafe_fixes) if (fix or show_diff) else (source, 0, None)
        if findings is None:
            from cachelint.check.engine import lint_source

            findings = lint_source(source, stdin_filename, codes, options_for(config))
        findings = seen_from(findings, stdin_filename)  # the document on stdin is what is checked
        if fix and not show_diff:
            sys.stdout.write(new_source)
            sys.exit(0 if exit_zero or not findings else 1)
        if show_diff:
            from cachelint.check.run import unified_diff

            sys.stdout.write(unified_diff(source, new_source, stdin_filename))
            sys.exit(0 if exit_zero or not applied else 1)
        render(findings, fmt, sys.stdout, files_checked=1, unsafe_fixes=unsafe_fixes)
        sys.exit(0 if exit_zero or not findings else 1)
    targets = [Path(p) for p in paths] or [Path.cwd()]
    with progress_bar() as progress:
        run = run_check(targets, config, fix=fix and not show_diff, unsafe_fixes=unsafe_fixes, diff=show_diff, use_cache=not no_cache,
                        processes=jobs, progress=progress)
    if run.files == 0:
        excluded = [t for t in targets if t.exists() and config.is_excluded(t, is_dir=t.is_dir())]
        tests = [t for t in excluded if config.is_test(t, is_dir=t.is_dir())]
        others = [t for t in excluded if t not in tests]
        if others:  # as ruff with --force-exclude: pre-commit passes file names, and the configuration still holds
            source = f" ({config.source})" if config.source else ""
            click.echo(f"cachelint: warning: {', '.join(str(t) for t in others)} excluded by the configuration{source}: nothing checked", err=True)
        if tests:
            click.echo(f"cachelint: warning: {', '.join(str(t) for t in tests)}: test modules are skipped (--include-tests, "
                       "or include-tests = true, checks them): nothing checked", err=True)
        if not excluded:
            click.echo(f"cachelint: warning: no Python files found in {', '.join(str(t) for t in targets)}", err=True)
    for line in run.warnings:
        click.echo(f"cachelint: warning: {line}", err=True)
    if show_diff:
        sys.stdout.write("".join(run.diffs))
        sys.exit(0 if exit_zero or not run.diffs else 1)
    if statistics:
        from cachelint.check.output import statistics_text

        sys.stdout.write(statistics_text(run.findings, fmt))
    else:
        render(run.findings, fmt, sys.stdout, files_checked=run.files, fixed=run.fixed, unsafe_fixes=unsafe_fixes)
    sys.exit(0 if exit_zero or not run.findings else 1)


PROGRESS_AFTER_FILES = 200  # a run over fewer files ends before a bar is worth drawing


class progress_bar:
    """A rich progress bar on stderr while files are linted, only when stderr is a terminal and the run is long
    (nothing at all when piped or redirected, so logs and CI output stay clean). The context value is the
    `progress(done, total)` callback for run_check, or None."""

    def __init__(self) -> None:
        self._progress = None
        self._task = None

    def __enter__(self):
        if not sys.stderr.isatty() or os.environ.get("TERM") == "dumb":
            return None
        return self._update

    def _update(self, done: int, total: int) -> None:
        if total < PROGRESS_AFTER_FILES:
            return
        if self._progress is None:
            from rich.console import Console
            from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

            self._progress = Progress(TextColumn("checking"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
                                      console=Console(stderr=True), transient=True)
            self._progress.start()
            self._task = self._progress.add_task("check", total=total)
        self._progress.update(self._task, completed=done)

    def __exit__(self, *exc) -> None:
        if self._progress is not None:
            self._progress.stop()
