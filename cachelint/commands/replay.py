"""`cachelint replay`."""

from __future__ import annotations

import sys

import click

from cachelint.commands.common import print_json, stdout_console
from cachelint.errors import CachelintError


@click.command()
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
@click.option("--sessions", "sessions_spec", metavar="COUNTS", help="Session sweep: replay the recording as N concurrent sessions for each N (1,2,4,8 or 1-16), next to `cachelint kv`'s prediction.")
@click.option("--kv-model", help="With --sessions: the model config for the kv prediction (a config.json or model dir, a bundled or Hugging Face id) [default: the --launch directory, else the served model name when kv knows it].")
@click.option("--api", type=click.Choice(["auto", "messages", "chat"]), default="auto", show_default=True, help="Recorded Anthropic requests: as recorded to vLLM's /v1/messages (messages), converted to chat requests (chat), or messages when the server has it (auto; chat with --what-if).")
@click.option("--check", is_flag=True, help="Exit 1 when any request's measured reuse differs from the prediction.")
@click.option("--timeout", type=click.FloatRange(min=1), default=300.0, show_default=True, help="Seconds one call to the engine may take, its whole answer included (a server that trickles or stalls is cut off).")
@click.option("--format", "fmt", type=click.Choice(["text", "json", "html"]), default="text", show_default=True, help="Output format (html: the session sweep's cliff as a page, with --sessions).")
def replay(source, session, base_url, model, launch_dir, vllm_python, launch_args, concurrency, speed, max_tokens, what_if, sessions_spec, kv_model, api, check, timeout, fmt) -> None:
    """Replay recorded traffic on a vLLM server with prefix caching and measure the real reuse.

    SOURCE is the proxy's store (see --session) or a file `cachelint import` reads (HAR, JSONL). Every
    request is also predicted by cachelint's vLLM prefix-cache simulator; --what-if measures what a fix buys.

    \b
    Examples:
      cachelint replay ~/.local/share/cachelint/cachelint.db --base-url http://127.0.0.1:8000 --model qwen
      cachelint replay traffic.jsonl --launch ./Qwen3-4B --what-if freeze-volatile,sort-tools --check
      cachelint replay traffic.db --base-url http://127.0.0.1:8000 --sessions 1-16 --kv-model Qwen/Qwen3-4B
    """
    from contextlib import nullcontext
    from pathlib import Path

    from cachelint.extras import require

    require("replay", "cachelint replay")
    from cachelint.replay import whatif
    from cachelint.replay.engine import Engine
    from cachelint.replay.launch import VllmServer
    from cachelint.replay.render import check_lines, render_sweep_text, render_text
    from cachelint.replay.run import Replay, ReplayOptions
    from cachelint.replay.source import load
    from cachelint.replay.sweep import Sweep, parse_sessions

    variants = whatif.parse_variants(what_if)
    counts = parse_sessions(sessions_spec) if sessions_spec else None
    if fmt == "html" and not counts:
        raise click.UsageError("--format html draws the session sweep: use it with --sessions")
    if counts and (variants or check or concurrency != 1 or speed):
        raise click.UsageError("--sessions runs its own concurrency: not with --what-if, --check, --concurrency or --speed")
    if launch_dir and base_url:
        raise click.UsageError("give --base-url (a running server) or --launch (start one), not both")
    if not launch_dir and not base_url:
        raise click.UsageError("give --base-url of a running vLLM server, or --launch MODEL_DIR to start one")
    recorded = load(source, session)
    if launch_dir:
        model = model or Path(launch_dir).resolve().name
        server = VllmServer(launch_dir, model, python=vllm_python, extra_args=launch_args)
        if fmt != "json":
            click.echo(f"starting vLLM on {launch_dir} (log {server.log_path}) ...", err=True)
    with server if launch_dir else nullcontext(base_url) as url:
        with Engine(url, model or "", timeout=timeout) as engine:
            if not model:
                served = engine.served_models()
                if len(served) != 1:
                    raise CachelintError(f"the server serves {len(served)} models ({', '.join(served)}): choose one with --model")
                engine.model = served[0]
            progress = (lambda message: click.echo(f"replaying {message}", err=True)) if fmt != "json" else None
            if counts:
                config = kv_model or (launch_dir if launch_dir else _known_model(engine.model))
                swept = Sweep(engine, recorded, counts, max_tokens=max_tokens, kv_model=config, progress=progress).run()
            else:
                options = ReplayOptions(concurrency=concurrency, speed=speed, max_tokens=max_tokens, variants=variants, api=api)
                result = Replay(engine, recorded, options, progress).run()
    if counts:
        if fmt == "html":
            from cachelint.replay.sweep_html import render_sweep_html

            click.echo(render_sweep_html(swept.to_json()))
        else:
            print_json(swept.to_json()) if fmt == "json" else render_sweep_text(swept, stdout_console())
        return
    if fmt == "json":
        print_json(result.to_json())
    else:
        render_text(result, stdout_console())
    if check:
        lines = check_lines(result)
        for line in lines:
            click.echo(f"cachelint: {line}", err=True)
        if lines:
            sys.exit(1)


def _known_model(name: str) -> str | None:
    """The served model name as a kv model when kv knows it (a bundled id or a local path), else None:
    a served name is often an alias, and the sweep never waits on the Hugging Face Hub unasked."""
    from pathlib import Path

    from cachelint.kv import bundled_models

    lowered = name.lower()
    if Path(name).exists() or any(lowered in (b.lower(), b.lower().split("/", 1)[1]) for b in bundled_models()):
        return name
    return None
