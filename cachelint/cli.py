"""The `cachelint` command line."""

from __future__ import annotations

import json
import os
import sys
from typing import Any

import click
from rich.console import Console

from cachelint import __version__
from cachelint.errors import CachelintError

FORMATS = click.Choice(["text", "json"])


def _stdout() -> Console:
    return Console(highlight=False, soft_wrap=True)


def _print_json(data: Any) -> None:
    click.echo(json.dumps(data, indent=2, ensure_ascii=False))


@click.group(context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 100})
@click.version_option(__version__, "--version", "-V", prog_name="cachelint")
def cli() -> None:
    """Make LLM prompt caching visible and correct.

    Providers and engines reuse KV state only for an exact token prefix. cachelint finds the code that breaks
    it (check, lsp), watches live traffic and explains every break (proxy, report), measures the real reuse on
    a vLLM and what a fix buys (replay), explains one break (diff) and prices the KV cache (kv). Start with
    `cachelint demo`.
    """


@cli.command()
@click.argument("before", type=click.Path(dir_okay=False, allow_dash=False))
@click.argument("after", type=click.Path(dir_okay=False, allow_dash=False))
@click.option("--format", "fmt", type=FORMATS, default="text", show_default=True, help="Output format.")
@click.option("--tokenizer", type=click.Path(file_okay=False), help="Local Hugging Face model dir: exact tokens and chat template.")
def diff(before: str, after: str, fmt: str, tokenizer: str | None) -> None:
    """Explain how AFTER's cached prefix relates to BEFORE's.

    BEFORE and AFTER are request bodies (Anthropic Messages, OpenAI Chat Completions or Responses) or
    recorded exchanges ({"request": ..., "response": ...}). Exit code 0 whether or not the prefix broke.

    \b
    Example:
      cachelint diff turn3.json turn4.json
      cachelint diff turn3.json turn4.json --format json
    """
    from cachelint.diff import explain
    from cachelint.diff.render import describe, fix, render_text
    from cachelint.prompt import load_request
    from cachelint.prompt.usage import estimate_error

    b = load_request(before, tokenizer_path=tokenizer)
    a = load_request(after, tokenizer_path=tokenizer)
    if b.prompt.provider != a.prompt.provider:
        raise CachelintError(f"BEFORE is an {b.prompt.provider} request and AFTER an {a.prompt.provider} request; compare requests to one API")
    from cachelint.tokens import counter_for

    counter = counter_for(a.prompt.provider, a.prompt.model, tokenizer)
    brk = explain(b.prompt, a.prompt, counter)
    if tokenizer:
        _exact_tokens(brk, b.prompt, a.prompt, counter)
    if fmt == "json":
        data = brk.to_json()
        data["explanation"] = describe(brk)
        data["fix"] = fix(brk)
        data["provider"] = a.prompt.provider
        data["tokenizer"] = a.prompt.tokenizer
        data["token_estimate"] = {
            "before": estimate_error(b.prompt.prompt_tokens, b.usage),
            "after": estimate_error(a.prompt.prompt_tokens, a.usage),
        }
        _print_json(data)
        return
    console = _stdout()
    render_text(brk, console)
    for label, loaded in (("BEFORE", b), ("AFTER", a)):
        err = estimate_error(loaded.prompt.prompt_tokens, loaded.usage)
        if err:
            console.print(
                f"  tokens   {label}: estimated {err['estimated_prompt_tokens']:,}, provider reported "
                f"{err['reported_prompt_tokens']:,} ({err['error_pct']:+.1f}%, {loaded.prompt.tokenizer})",
                style="dim",
            )


def _exact_tokens(brk, before, after, counter) -> None:
    """Replace estimated token numbers by the engine's own: both prompts rendered with the chat template."""
    from cachelint.diff.locate import common_prefix_items
    from cachelint.prompt.chat import to_chat

    ids_b = counter.chat_ids(*to_chat(before))
    ids_a = counter.chat_ids(*to_chat(after))
    brk.before_prompt_tokens, brk.after_prompt_tokens = len(ids_b), len(ids_a)
    brk.common_prefix_tokens = common_prefix_items(ids_b, ids_a)
    brk.extra["token_source"] = "chat_template"


@cli.command()
@click.argument("model")
@click.option("--kv-dtype", type=click.Choice(["auto", "bf16", "fp16", "fp8", "fp32"]), default="auto", show_default=True, help="KV cache dtype (auto: the model's dtype).")
@click.option("--weight-dtype", type=click.Choice(["auto", "bf16", "fp16", "fp8", "fp32", "int4"]), default="auto", show_default=True, help="Weights dtype for the memory budget (auto: from the config's dtype and quantization).")
@click.option("--gpu-memory", "gpu_memory", metavar="SIZE", help="GPU memory, e.g. 24GiB, 24GB, 80G or bytes.")
@click.option("--gpu-util", type=click.FloatRange(0.01, 1.0), default=0.9, show_default=True, help="Fraction of GPU memory the engine may use (vLLM's --gpu-memory-utilization).")
@click.option("--session-tokens", type=click.IntRange(min=1), help="Tokens per session, for the concurrency cliff.")
@click.option("--format", "fmt", type=FORMATS, default="text", show_default=True, help="Output format.")
def kv(model: str, kv_dtype: str, weight_dtype: str, gpu_memory: str | None, gpu_util: float, session_tokens: int | None, fmt: str) -> None:
    """The simulated KV-cache cost of MODEL, per token, per session and per GPU.

    MODEL is a local config.json or model dir, a bundled config (works offline; see the list below), or a
    Hugging Face id (fetched through transformers' AutoConfig).

    \b
    Example:
      cachelint kv Qwen/Qwen3-4B --kv-dtype fp8
      cachelint kv Qwen/Qwen3-4B --kv-dtype fp8 --weight-dtype fp8 --gpu-memory 24GiB --session-tokens 22800
    """
    from cachelint.kv import capacity, model_kv_cost
    from cachelint.kv.units import parse_size

    memory = parse_size(gpu_memory) if gpu_memory else None
    cost = model_kv_cost(model, kv_dtype=kv_dtype, weight_dtype=weight_dtype)
    report = capacity(cost, memory, session_tokens, gpu_util)
    if fmt == "json":
        _print_json(report)
        return
    _render_kv(report, _stdout())


def _render_kv(r: dict[str, Any], console: Console) -> None:
    from cachelint.kv.units import human_bytes

    console.print(f"[bold]{r['model']}[/]  ({r['attention']}, {r['layers']} layers: " + ", ".join(f"{n} {k}" for k, n in r["layer_types"].items() if n) + ")")
    console.print(f"  KV per token      {r['bytes_per_token']:,} B ({human_bytes(r['bytes_per_token'])})   "
                  f"= {'2 x ' if r['attention'] != 'mla' else ''}{r['layer_types']['full']} layers x {r['kv_heads']} kv heads x {r['head_dim']} head dim x {r['dtype_bytes']:g} B")
    if r["per_sequence_fixed_bytes"]:
        console.print(f"  fixed per session {human_bytes(r['per_sequence_fixed_bytes'])}")
    for note in r["notes"]:
        console.print(f"  [dim]{note}[/]")
    if "session_bytes" in r:
        console.print(f"  one session       {r['session_tokens']:,} tokens -> {human_bytes(r['session_bytes'])}")
    if "kv_budget_bytes" in r:
        console.print(f"  GPU               {human_bytes(r['gpu_memory_bytes'])} x {r['gpu_utilization']:g} - weights {human_bytes(r['weights_bytes'])} "
                      f"= KV budget {human_bytes(r['kv_budget_bytes'])}")
        console.print(f"  tokens in cache   {r['max_tokens_in_cache']:,}")
    if "max_concurrent_sessions" in r:
        console.print(f"  [bold]sessions at once  {r['max_concurrent_sessions']:,}[/] of {r['session_tokens']:,} tokens (the concurrency cliff)")


@cli.command()
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
def check(paths, fix, unsafe_fixes, show_diff, select, extend_select, ignore, output_format, stdin_filename, exit_zero, no_cache, config_file, jobs) -> None:
    """Find code that breaks LLM prompt caching (Python apps on the anthropic / openai / litellm SDKs).

    PATHS are files or directories (default: the current directory). Exit code 0 when clean, 1 when there
    are findings, 2 on an error.

    \b
    Example:
      cachelint check src/
      cachelint check --fix app.py
      cachelint check --output-format sarif . > cachelint.sarif
    """
    from pathlib import Path

    from cachelint.check.config import load_config
    from cachelint.check.output import render
    from cachelint.check.run import fix_source, options_for, run_check

    fmt = output_format or ("github" if os.environ.get("GITHUB_ACTIONS") == "true" else "text")
    start = Path(stdin_filename).parent if stdin_filename else Path(paths[0]) if paths else Path.cwd()
    config = load_config(start if start.exists() else Path.cwd(), Path(config_file) if config_file else None)
    config = config.with_overrides(select=select, ignore=ignore, extend_select=extend_select)
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
    run = run_check(targets, config, fix=fix and not show_diff, unsafe_fixes=unsafe_fixes, diff=show_diff, use_cache=not no_cache, processes=jobs)
    if show_diff:
        sys.stdout.write("".join(run.diffs))
        sys.exit(0 if exit_zero or not run.diffs else 1)
    render(run.findings, fmt, sys.stdout, files_checked=run.files, fixed=run.fixed, unsafe_fixes=unsafe_fixes)
    sys.exit(0 if exit_zero or not run.findings else 1)


@cli.command()
@click.argument("code", required=False)
@click.option("--all", "show_all", is_flag=True, help="Every rule.")
@click.option("--format", "fmt", type=click.Choice(["text", "markdown", "json"]), default="text", show_default=True)
def rule(code: str | None, show_all: bool, fmt: str) -> None:
    """Explain a rule: what it does, why it is bad, an example, what to use instead, and its fix.

    \b
    Example:
      cachelint rule CL101
      cachelint rule --all --format markdown > docs/rules.md
    """
    from cachelint.check.registry import all_rules
    from cachelint.check.registry import rule as find_rule

    if show_all == bool(code):
        raise click.UsageError("give a rule code or --all")
    rules = list(all_rules()) if show_all else [find_rule(code)]  # type: ignore[arg-type]
    if rules == [None]:
        from cachelint.rules import RULE_META

        meta = RULE_META.get(str(code).upper())
        if meta is None:
            raise CachelintError(f"unknown rule {code!r} (see `cachelint rule --all`)")
        click.echo(f"## {meta.code} {meta.name}\n\n{meta.summary}\n")  # a code without a rule class (CL999)
        return
    if fmt == "json":
        data = [_rule_json(r) for r in rules]
        _print_json(data if show_all else data[0])
    elif fmt == "markdown" and show_all:
        click.echo("# Rules\n\nGenerated by `cachelint rule --all --format markdown`.\n")
        click.echo("\n".join(r.doc_markdown() for r in rules), nl=False)
    else:
        click.echo("\n".join(r.doc_markdown() for r in rules), nl=False)


def _rule_json(r) -> dict[str, Any]:
    m = r.meta()
    return {"code": m.code, "name": m.name, "summary": m.summary, "severity": m.severity, "help_uri": m.help_uri,
            "what": r.what.strip(), "why": r.why.strip(), "example": r.example.strip("\n"), "instead": r.instead.strip("\n"),
            "fix": r.fix_safety, "options": r.options.strip()}


@cli.command()
@click.option("--upstream", help="Reverse mode: the API to forward to, e.g. https://api.anthropic.com.")
@click.option("--port", type=click.IntRange(1, 65535), default=8082, show_default=True)
@click.option("--mode", type=click.Choice(["reverse", "regular"]), default="reverse", show_default=True, help="reverse (point the SDK's base URL at the proxy) or regular (HTTPS_PROXY with mitmproxy's CA).")
@click.option("--listen-host", default="127.0.0.1", show_default=True, help="Address to listen on; anything but loopback prints a warning.")
@click.option("--db", type=click.Path(dir_okay=False), help="SQLite store [default: ~/.local/share/cachelint/cachelint.db].")
@click.option("--store", "store_mode", type=click.Choice(["full", "hashes"]), default="full", show_default=True, help="Keep request and response bodies, or only hashes, token counts and diff excerpts.")
@click.option("--kv-model", default="Qwen/Qwen3-8B", show_default=True, help="Model config for the simulated KV cost (a bundled id, a config.json or a Hugging Face id).")
@click.option("--no-dashboard", is_flag=True, help="Print one line per exchange instead of the live dashboard.")
@click.option("--metrics-port", type=click.IntRange(1, 65535), help="Serve Prometheus metrics on this port.")
@click.option("--prices", type=click.Path(exists=True, dir_okay=False), help="A price table in LiteLLM's model_prices_and_context_window.json format.")
def proxy(upstream, port, mode, listen_host, db, store_mode, kv_model, no_dashboard, metrics_port, prices) -> None:
    """Record LLM API traffic (Claude Code, the anthropic / openai SDKs) and explain every cache break.

    \b
    Reverse mode (default):
      cachelint proxy --upstream https://api.anthropic.com --port 8082
      ANTHROPIC_BASE_URL=http://127.0.0.1:8082 claude
      OPENAI_BASE_URL=http://127.0.0.1:8082/v1 python app.py   (with --upstream https://api.openai.com)
    Forward mode:
      cachelint proxy --mode regular --port 8082
      HTTPS_PROXY=http://127.0.0.1:8082 NODE_EXTRA_CA_CERTS=~/.mitmproxy/mitmproxy-ca-cert.pem claude
    """
    import asyncio

    from cachelint.extras import require

    require("proxy", "cachelint proxy")
    from cachelint.kv import model_kv_cost
    from cachelint.proxy.run import ProxyConfig, serve
    from cachelint.record.store import default_path

    if mode == "reverse":
        if not upstream:
            raise click.UsageError("reverse mode needs --upstream (for example https://api.anthropic.com)")
        if not upstream.startswith(("http://", "https://")):
            raise CachelintError(f"--upstream must be an http:// or https:// URL, not {upstream!r}")
    if listen_host not in ("127.0.0.1", "localhost", "::1"):
        click.echo(f"cachelint: warning: listening on {listen_host}: anyone who can reach it can use your API credentials through the proxy", err=True)
    model_kv_cost(kv_model)  # fail now, with one clear line, not inside the proxy
    table = None
    if prices:
        from cachelint.pricing import load_litellm_prices

        table = load_litellm_prices(prices)
    config = ProxyConfig(upstream=upstream, port=port, listen_host=listen_host, mode=mode, db=str(db or default_path()),
                         store_bodies=store_mode == "full", kv_model=kv_model, dashboard=not no_dashboard,
                         metrics_port=metrics_port, prices=table)
    try:
        asyncio.run(serve(config, _stdout()))
    except OSError as exc:
        raise CachelintError(f"cannot listen on {listen_host}:{port}: {exc.strerror or exc}") from None


@cli.command()
@click.option("--db", type=click.Path(dir_okay=False), help="SQLite store [default: the proxy's].")
@click.option("--session", help="Only this session.")
@click.option("--format", "fmt", type=click.Choice(["text", "json", "html"]), default="text", show_default=True)
@click.option("-o", "--output", type=click.Path(dir_okay=False), help="Write to this file instead of standard output.")
def report(db, session, fmt, output) -> None:
    """Hit rate, tokens, money and every cache break of the recorded sessions.

    \b
    Example:
      cachelint report
      cachelint report --format html -o cachelint.html
    """
    from cachelint.record.report import build_report, dumps, render_html, render_text
    from cachelint.record.store import Store, default_path

    store = Store(db or default_path(), readonly=True)
    data = build_report(store, session)
    if session and not data["sessions"]:
        raise CachelintError(f"no session {session!r} in {store.path}")
    text = dumps(data) if fmt == "json" else render_html(data) if fmt == "html" else "\n".join(render_text(data))
    if output:
        from pathlib import Path

        Path(output).write_text(text + "\n", encoding="utf-8")
    else:
        click.echo(text)


@cli.command()
@click.argument("source", type=click.Path(dir_okay=False))
@click.option("--session", help="Only this session of SOURCE.")
@click.option("--base-url", help="A running vLLM server: its root (http://host:8000) or its /v1 URL.")
@click.option("--model", help="The served model name [default: the one model the server serves; with --launch, the directory's name].")
@click.option("--launch", "launch_dir", type=click.Path(file_okay=False), help="Start vLLM on this model directory for the replay, and stop it afterwards.")
@click.option("--vllm-python", help="The Python that has vLLM installed, for --launch [default: $CACHELINT_VLLM_PYTHON, else this one].")
@click.option("--launch-arg", "launch_args", multiple=True, help="One more argument for the launched server (repeat), e.g. --launch-arg=--max-model-len=8192.")
@click.option("--concurrency", type=click.IntRange(1, 256), default=1, show_default=True, help="Sessions replayed at once (1: every request in recorded order).")
@click.option("--speed", type=click.FloatRange(min=0.001), help="Keep the recorded gaps between requests, divided by this [default: no waiting].")
@click.option("--max-tokens", type=click.IntRange(1), default=1, show_default=True, help="Output tokens per request (prefill is what is measured).")
@click.option("--what-if", "what_if", help="Also replay fixed copies: freeze-volatile, sort-tools, keep-history, all (comma-separated).")
@click.option("--check", is_flag=True, help="Exit 1 when any request's measured reuse differs from the prediction.")
@click.option("--timeout", type=click.FloatRange(min=1), default=300.0, show_default=True, help="Seconds to wait for one request.")
@click.option("--format", "fmt", type=FORMATS, default="text", show_default=True, help="Output format.")
def replay(source, session, base_url, model, launch_dir, vllm_python, launch_args, concurrency, speed, max_tokens, what_if, check, timeout, fmt) -> None:
    """Replay recorded traffic on a vLLM server with prefix caching and measure the real reuse.

    SOURCE is the proxy's store (see --session) or a file `cachelint import` reads (HAR, JSONL). Every
    request is also predicted by cachelint's vLLM prefix-cache simulator; --what-if measures what a fix buys.

    \b
    Examples:
      cachelint replay ~/.local/share/cachelint/cachelint.db --base-url http://127.0.0.1:8000 --model qwen
      cachelint replay traffic.jsonl --launch ./Qwen3-4B --what-if freeze-volatile,sort-tools --check
    """
    from contextlib import nullcontext
    from pathlib import Path

    from cachelint.extras import require

    require("replay", "cachelint replay")
    from cachelint.replay import whatif
    from cachelint.replay.engine import Engine
    from cachelint.replay.launch import VllmServer
    from cachelint.replay.render import check_lines, render_text
    from cachelint.replay.run import Replay, ReplayOptions
    from cachelint.replay.source import load

    variants = whatif.parse_variants(what_if)
    if launch_dir and base_url:
        raise click.UsageError("give --base-url (a running server) or --launch (start one), not both")
    if not launch_dir and not base_url:
        raise click.UsageError("give --base-url of a running vLLM server, or --launch MODEL_DIR to start one")
    recorded = load(source, session)
    if launch_dir:
        model = model or Path(launch_dir).resolve().name
        server = VllmServer(launch_dir, model, python=vllm_python, extra_args=launch_args)
        if fmt == "text":
            click.echo(f"starting vLLM on {launch_dir} (log {server.log_path}) ...", err=True)
    with server if launch_dir else nullcontext(base_url) as url:
        with Engine(url, model or "", timeout=timeout) as engine:
            if not model:
                served = engine.served_models()
                if len(served) != 1:
                    raise CachelintError(f"the server serves {len(served)} models ({', '.join(served)}): choose one with --model")
                engine.model = served[0]
            progress = (lambda message: click.echo(f"replaying {message}", err=True)) if fmt == "text" else None
            options = ReplayOptions(concurrency=concurrency, speed=speed, max_tokens=max_tokens, variants=variants)
            result = Replay(engine, recorded, options, progress).run()
    if fmt == "json":
        _print_json(result.to_json())
    else:
        render_text(result, _stdout())
    if check:
        lines = check_lines(result)
        for line in lines:
            click.echo(f"cachelint: {line}", err=True)
        if lines:
            sys.exit(1)


@cli.command("import")
@click.argument("files", nargs=-1, required=True, type=click.Path(dir_okay=False))
@click.option("--db", type=click.Path(dir_okay=False), help="SQLite store [default: the proxy's].")
@click.option("--store", "store_mode", type=click.Choice(["full", "hashes"]), default="full", show_default=True)
@click.option("--kv-model", default="Qwen/Qwen3-8B", show_default=True)
def import_(files, db, store_mode, kv_model) -> None:
    """Load recorded traffic into the store: HAR 1.2, JSONL of exchanges, or claude-trace logs.

    Each exchange goes through the proxy's own pipeline (sessions, breaks, simulator, KV, money);
    credentials in the files are dropped.

    \b
    Example:
      cachelint import session.har && cachelint report
    """
    from cachelint.record.analyze import Recorder, RecorderOptions
    from cachelint.record.importers import read
    from cachelint.record.store import Store, default_path

    batches = [(f, read(f)) for f in files]  # read everything first: a bad file stores nothing
    store = Store(db or default_path())
    recorder = Recorder(store, RecorderOptions(store_bodies=store_mode == "full", kv_model=kv_model))
    for name, captured in batches:
        for exchange in sorted(captured, key=lambda c: c.started_at):
            recorder.record(exchange)
        click.echo(f"{name}: {len(captured)} exchanges imported into {store.path}")


@cli.command()
@click.argument("directory", required=False, type=click.Path(file_okay=False))
@click.option("--format", "fmt", type=click.Choice(["text", "json"]), default="text", show_default=True)
def sessions(directory, fmt) -> None:
    """Hit rate, tokens and cost per agent session, from the agents' own transcripts: Claude Code
    (~/.claude/projects) and Codex rollouts (~/.codex/sessions).

    Transcripts hold no request bodies, so they cannot say why a cache broke: run `cachelint proxy` for that.
    The session ids printed are those `cachelint report --session` takes for the same conversation.
    """
    from cachelint.record.transcripts import read_sessions

    found = read_sessions(directory)
    if fmt == "json":
        _print_json([s.to_json() for s in found])
        return
    for s in (x.to_json() for x in found):
        click.echo(f"{s['session']}  {s['agent']}  {s['project']}  {s['requests']} responses  hit rate {s['hit_rate']:.0%}  read {s['cache_read_tokens']:,}  "
                   f"written {s['cache_write_tokens']:,}  output {s['output_tokens']:,}  ${s['cost']:.4f}  low-hit responses {s['low_hit_responses']}")
    click.echo(f"{len(found)} sessions. Transcripts hold no request bodies, so causes cannot be named here: run `cachelint proxy` to see why a cache broke.")


@cli.command()
def lsp() -> None:
    """Run the language server on standard input and output (for editors; see vscode-ext/)."""
    from cachelint.lsp import main as serve

    serve()


@cli.command()
@click.option("--format", "fmt", type=FORMATS, default="text", show_default=True, help="Output format.")
def demo(fmt: str) -> None:
    """Show what cachelint is for, offline, on a bundled recorded agent session."""
    from cachelint.demo import run_demo

    run_demo(fmt, _stdout())


def main(argv: list[str] | None = None) -> None:
    try:
        cli.main(args=argv, prog_name="cachelint", standalone_mode=False)
    except click.exceptions.Abort:
        click.echo("cachelint: aborted", err=True)
        sys.exit(130)
    except click.ClickException as exc:
        exc.show()
        sys.exit(2 if exc.exit_code == 2 else exc.exit_code)
    except CachelintError as exc:
        click.echo(f"cachelint: error: {exc}", err=True)
        sys.exit(2)
    except (KeyboardInterrupt, BrokenPipeError):
        sys.exit(130)
    except Exception as exc:  # a bug: one line, not a traceback, unless asked
        if os.environ.get("CACHELINT_DEBUG"):
            raise
        click.echo(f"cachelint: internal error: {type(exc).__name__}: {exc} (set CACHELINT_DEBUG=1 for a traceback)", err=True)
        sys.exit(2)
    sys.exit(0)
