"""From a captured exchange to a stored row: usage, the break against the session's previous request, the
provider cache simulator's prediction, the KV cost, money, and the dynamic rules.

The proxy calls `Recorder.record` from a worker thread, never from mitmproxy's event loop.
"""

from __future__ import annotations

import hashlib
import json
import threading
import time
from collections import OrderedDict
from dataclasses import dataclass, field
from typing import Any

from cachelint.diff import explain
from cachelint.errors import CachelintError
from cachelint.prompt.load import build_prompt, exchange_from_json
from cachelint.prompt.model import Prompt
from cachelint.prompt.usage import Usage, estimate_error, from_response_body
from cachelint.record.diagnosis import compare, parse_diagnosis
from cachelint.record.exchange import Captured, route_provider
from cachelint.record.secrets import clean_headers, clean_url
from cachelint.record.sessions import LastRequest, Sessions, SessionState, conversation_key
from cachelint.record.store import Row, Store
from cachelint.rules import NAMES
from cachelint.record.ttl import lost_entry_ttl_seconds
from cachelint.simulate.models import OPENAI_MINIMUM_TOKENS, openai_cacheable
from cachelint.simulate import DEFAULT_MIN_SLACK_TOKENS, DEFAULT_TOLERANCE
from cachelint.tokens import counter_for

DEFAULT_KV_MODEL = "Qwen/Qwen3-8B"
BREAKPOINT_LIMIT = 4
# the simulator's reasons for a miss that lie in the request itself, not in time or on the provider's side
STRUCTURAL_MISSES = ("no_breakpoint", "lookback_exceeded", "below_minimum")
RECENT_PROMPTS = 500


# Sessions a new recorder may carry on: the most recent ones of the store, active within the last hours (each is
# rebuilt from its body, so the number is bounded to keep start-up quick).
RESUME_SESSIONS = 50
RESUME_WITHIN_S = 6 * 3600


@dataclass(slots=True)
class Totals:
    """Live numbers per session, for the dashboard and the metrics endpoint."""

    requests: int = 0
    prompt_tokens: int = 0
    cache_read_tokens: int = 0
    cache_write_tokens: int = 0
    output_tokens: int = 0
    wasted_prefill_tokens: int = 0
    cost: float = 0.0
    wasted_cost: float = 0.0
    errors: int = 0
    unpriced: int = 0  # requests whose model has no price: their cost is unknown, not in `cost`
    last_break: dict[str, Any] | None = None
    model: str | None = None
    agreements: dict[str, int] = field(default_factory=dict)  # agree / disagree / provider-only / cachelint-only

    @property
    def hit_rate(self) -> float:
        return self.cache_read_tokens / self.prompt_tokens if self.prompt_tokens else 0.0


@dataclass(slots=True)
class RecorderOptions:
    store_bodies: bool = True  # False: hashes, token counts and excerpts only
    kv_model: str = DEFAULT_KV_MODEL
    prices: Any = None  # a price table from cachelint.pricing, or None for the bundled one


class Recorder:
    def __init__(self, store: Store | None, options: RecorderOptions | None = None) -> None:
        self.store = store
        self.options = options or RecorderOptions()
        self.sessions = Sessions()
        if store is not None:  # a restarted proxy (or a second one on this store) carries on recent conversations
            since = time.time() - RESUME_WITHIN_S
            self.sessions.resume(r for r in store.latest_rows(RESUME_SESSIONS) if r.started_at >= since)
        self.totals: dict[str, Totals] = {}
        self._simulators: dict[tuple[str, str], Any] = {}
        self._lock = threading.Lock()
        self._kv = None
        # The latest prompt per conversation (or per API and model): the next request reuses its blocks.
        self._recent: OrderedDict[tuple[str, str], Prompt] = OrderedDict()

    # --- the pipeline -----------------------------------------------------------------------------------------

    def record(self, captured: Captured) -> Row:
        with self._lock:
            row = self._analyze(captured)
            if self.store is not None:
                self.store.add(row)
            self._update_totals(row)
            return row

    def _analyze(self, captured: Captured) -> Row:
        headers = clean_headers(captured.request_headers)
        decoded = captured.request_decoded()  # once: the store keeps its text, the analysis parses its bytes
        raw_text = decoded.decode("utf-8", "replace") if decoded is not None else None
        body = captured.request_json(decoded)
        response_text = captured.response_text()
        row = Row(
            session="unrecognized",
            seq=0,
            started_at=captured.started_at,
            method=captured.method,
            url=clean_url(captured.url),
            status=captured.status,
            error=captured.error,
            ttft=(captured.first_byte_at - captured.started_at) if captured.first_byte_at else None,
            duration=(captured.ended_at - captured.started_at) if captured.ended_at else None,
            request_headers=headers,
            response_headers=clean_headers(captured.response_headers),
            streamed=captured.streamed,
            request_sha256=hashlib.sha256(captured.request_body).hexdigest(),
        )
        if self.options.store_bodies:
            row.request_body = raw_text if raw_text is not None else captured.request_body.decode("utf-8", "replace")
            row.response_body = response_text
        provider = route_provider(captured.path)
        if body is None or provider is None:
            row.error = row.error or "request body is not JSON"
            return row
        try:
            exchange = exchange_from_json({"request": {"path": captured.path, "headers": headers, "body": body}})
            previous_key = (conversation_key(headers, body) or provider, str(body.get("model")) if isinstance(body, dict) else "")
            prompt = build_prompt(exchange, previous=self._recent.get(previous_key))
        except CachelintError as exc:
            row.error = row.error or str(exc)
            return row
        usage = from_response_body(prompt.provider, response_text) if response_text and (captured.status or 0) < 400 else None
        if usage is None and captured.status and captured.status < 400 and not row.error:
            row.error = "no usage in the response"
        if usage is not None and row.error and (captured.status or 0) < 400 and response_complete(prompt.provider, response_text):
            # the whole response arrived (Codex closes the connection right after response.completed): not an error
            row.error = None
        self._recent[previous_key] = prompt
        self._recent.move_to_end(previous_key)
        while len(self._recent) > RECENT_PROMPTS:
            self._recent.popitem(last=False)
        session = self.sessions.assign(prompt, headers, body)
        if session.requests == 0 and self.store is not None:
            session.requests = self.store.last_seq(session.id)  # a conversation the store already holds goes on
        diagnosis = parse_diagnosis(prompt.provider, response_text, body) if (captured.status or 0) < 400 else None
        self._fill(row, prompt, usage, session, captured, body, diagnosis)
        session.last, session.last_usage = prompt, usage
        session.last_request = LastRequest(captured.started_at, captured.first_byte_at, body)
        return row

    def _fill(self, row: Row, prompt: Prompt, usage: Usage | None, session: SessionState, captured: Captured,
              body: Any = None, diagnosis: dict[str, Any] | None = None) -> None:
        session.requests += 1
        row.session, row.seq = session.id, session.requests
        row.provider, row.model = prompt.provider, prompt.model
        row.estimated_prompt_tokens, row.tokenizer = prompt.prompt_tokens, prompt.tokenizer
        if usage is not None:
            row.prompt_tokens, row.cache_read_tokens = usage.prompt_tokens, usage.cache_read_tokens
            row.cache_write_tokens, row.output_tokens = usage.cache_write_tokens, usage.output_tokens
            row.cache_write_5m_tokens, row.cache_write_1h_tokens = usage.cache_write_5m_tokens, usage.cache_write_1h_tokens
            row.hit_rate = round(usage.hit_rate, 4)
        brk = None
        row.prediction, row.mismatch = self._simulate(prompt, usage, captured)
        if session.last is not None:
            brk = explain(session.last, prompt, counter_for(prompt.provider, prompt.model))
            if session.pending_compaction and brk.cause != "none":
                brk = as_compaction(brk)
            session.pending_compaction = False
            data = brk.to_json()
            estimate = estimate_error(prompt.prompt_tokens, usage)
            if estimate:
                data["token_estimate"] = estimate
            reason = uncacheable(session.last, session.last_usage)
            if reason is not None and brk.cause != "none":
                # nothing could have been read: the previous request was never cached. Not a break, no waste.
                data["cause"], data["not_cacheable"] = "none", reason
                brk = None
            elif brk.cause == "none" and reason is None:
                # the bytes extend the previous request: a miss now is the clock's or the provider's
                lost = self._lost_entry(prompt, usage, session, captured.started_at, row.mismatch, row.prediction)
                if lost is not None:
                    data.update(lost)
                    row.wasted_prefill_tokens = lost["missed_tokens"]
            elif (captured.status or 0) < 400:  # a refused request (429, 529, ...) prefilled nothing
                row.wasted_prefill_tokens = self._wasted(brk, usage, session.last_usage)
            row.brk = data
        if diagnosis is not None:
            if row.brk is None:  # no earlier request of this session to compare with: cachelint said nothing
                row.brk = {"cause": "none", "detail": "no_previous_request"}
                cause = None
            else:
                cause = row.brk.get("cause")
            row.brk["provider_diagnosis"] = diagnosis
            row.brk["agreement"] = compare(cause, diagnosis, row.brk.get("section"))
        row.kv_model, row.kv_bytes, row.wasted_kv_bytes = self._kv_cost(usage.prompt_tokens if usage else prompt.prompt_tokens, row.wasted_prefill_tokens)
        row.cost, row.wasted_cost = self._money(prompt.model, usage, row.wasted_prefill_tokens)
        if row.brk is not None and row.brk.get("cause") in ("ttl_expired", "provider_side"):
            brk = None  # not a content break: no rule findings
        row.findings = dynamic_findings(prompt, brk)

    @staticmethod
    def _wasted(brk, usage: Usage | None, previous: Usage | None) -> int:
        """Tokens prefilled again because a content break lost the cache: from the provider's numbers when both
        turns report usage (min(previous prompt, this prompt) - cache reads), else the diff's estimate."""
        if brk.cause == "none":
            return 0
        if usage is not None and isinstance(previous, Usage):
            return max(0, min(previous.prompt_tokens, usage.prompt_tokens) - usage.cache_read_tokens)
        return brk.reprefilled_tokens

    def _lost_entry(self, prompt: Prompt, usage: Usage | None, session: SessionState, started_at: float,
                    mismatch: str | None, prediction: dict[str, Any] | None = None) -> dict[str, Any] | None:
        """The cause of a miss on a prefix byte-identical to what the session's previous request cached, or None
        when the provider read what it had cached (or more: a read larger than expected is not waste).

        `ttl_expired` when the idle gap since the previous request (request starts, as the providers measure)
        is longer than the lifetime that request's entries got (usage's cache_creation split, else its
        breakpoints; OpenAI: its retention). A request sent before its predecessor's response began keeps cause
        "none" with `not_yet_written: true`: a race the client made, the entry was not readable yet (still waste).
        Otherwise `provider_side`: the bytes and the timing both say it should have been read (detail
        `not_yet_written` when the predecessor's response start is unknown and the simulator suspects a race, else
        `unexplained`: eviction, routing, a provider bug). A miss the request's own structure explains (no
        breakpoint that reads the cached prefix, beyond the lookback window, under the minimum: the simulator's
        reason) is neither: it stays a finding of the request, not of the clock or the provider."""
        previous = session.last_usage
        if usage is None or not isinstance(previous, Usage):
            return None
        if isinstance(prediction, dict) and prediction.get("reason") in STRUCTURAL_MISSES:
            return None
        expected = expected_read(prompt.provider, previous, usage)
        missed = expected - usage.cache_read_tokens
        slack = max(DEFAULT_MIN_SLACK_TOKENS, DEFAULT_TOLERANCE * expected)
        if missed <= slack:
            return None
        last = session.last_request
        last_at, last_ready, last_body = (last.started_at, last.first_byte_at, last.body) if last is not None else (None, None, None)
        idle = started_at - last_at if last_at is not None else None
        ttl = lost_entry_ttl_seconds(prompt.provider, prompt.model, last_body, previous, usage.cache_read_tokens, slack)
        found: dict[str, Any] = {"missed_tokens": missed, "expected_read_tokens": expected, "ttl_seconds": ttl,
                                 "idle_seconds": round(idle, 3) if idle is not None else None}
        if idle is not None and idle > ttl:
            found.update(cause="ttl_expired", detail="idle_gap", rule=None)
        elif last_ready is not None and started_at < last_ready:
            # sent before the previous response began: its entries were not readable yet (a race the client made)
            found["not_yet_written"] = True
        else:
            found.update(cause="provider_side", rule=None,
                         detail="not_yet_written" if mismatch == "not_yet_written" else "unexplained")
        return found

    def _simulate(self, prompt: Prompt, usage: Usage | None, captured: Captured) -> tuple[dict[str, Any] | None, str | None]:
        from cachelint.simulate import explain_mismatch, simulator_for

        key = (prompt.provider, prompt.model or "")
        simulator = self._simulators.get(key)
        if simulator is None:
            simulator = self._simulators[key] = simulator_for(prompt.provider)
        try:
            prediction = simulator.record(prompt, at=captured.started_at, response_started_at=captured.first_byte_at, usage=usage)
            mismatch = explain_mismatch(prediction, usage) if usage is not None else None
        except Exception as exc:  # a simulator bug must never lose the exchange
            return {"error": f"{type(exc).__name__}: {exc}"}, None
        return prediction.to_json(), mismatch

    def _kv_cost(self, tokens: int, wasted: int) -> tuple[str, int, int]:
        if self._kv is None:
            from cachelint.kv import model_kv_cost

            self._kv = model_kv_cost(self.options.kv_model)
        return self._kv.model, self._kv.session_bytes(tokens), self._kv.bytes_per_token * wasted

    def _money(self, model: str | None, usage: Usage | None, wasted: int) -> tuple[float | None, float | None]:
        from cachelint import pricing

        if usage is None:
            return None, None
        try:
            total = round(pricing.cost(model, usage, self.options.prices).total, 8)
        except (AttributeError, TypeError, KeyError, CachelintError):
            total = None
        wasted_usd = pricing.wasted_prefill_usd(wasted, model, self.options.prices, prompt_tokens=usage.prompt_tokens,
                                                one_hour_tokens=usage.cache_write_1h_tokens or 0)
        return total, round(wasted_usd, 8) if wasted_usd is not None else None

    def _update_totals(self, row: Row) -> None:
        t = self.totals.setdefault(row.session, Totals())
        t.requests += 1
        t.model = row.model
        t.prompt_tokens += row.prompt_tokens or 0
        t.cache_read_tokens += row.cache_read_tokens or 0
        t.cache_write_tokens += row.cache_write_tokens or 0
        t.output_tokens += row.output_tokens or 0
        t.wasted_prefill_tokens += row.wasted_prefill_tokens or 0
        t.cost += row.cost or 0.0
        t.wasted_cost += row.wasted_cost or 0.0
        t.unpriced += 1 if row.cost is None and row.prompt_tokens is not None else 0
        t.errors += 1 if row.error or (row.status or 0) >= 400 else 0
        if row.brk and row.brk.get("cause") != "none":
            t.last_break = {"seq": row.seq, **{k: row.brk.get(k) for k in ("cause", "detail", "rule", "location")}}
        agreement = row.brk.get("agreement") if row.brk else None
        if agreement:
            t.agreements[agreement] = t.agreements.get(agreement, 0) + 1




def expected_read(provider: str, previous: Usage, usage: Usage) -> int:
    """How many tokens a request that extends the previous one byte for byte should read: all the previous
    request cached (Anthropic: read + written, up to its last breakpoint; OpenAI GPT-5.6+: the same from its
    reported writes), or for classic OpenAI caching its prompt floored to 1,024 + k x 128; never more than this
    request's own prompt."""
    if provider == "anthropic" or previous.cache_write_tokens:
        cached = previous.cache_read_tokens + previous.cache_write_tokens
    else:
        cached = openai_cacheable(previous.prompt_tokens)
    return min(cached, usage.prompt_tokens)


def uncacheable(prompt: Prompt, usage: Usage | None) -> str | None:
    """Why `prompt` could not have been cached at all (so a later request could read nothing of it), or None.
    Anthropic writes only at a breakpoint whose prefix reaches the model's minimum cacheable length; OpenAI
    caches prompts of 1024 tokens or more. The provider's own count wins over the estimate where there is one."""
    if isinstance(usage, Usage) and (usage.cache_read_tokens or usage.cache_write_tokens):
        return None
    if prompt.provider == "anthropic":
        from cachelint.simulate.models import anthropic_minimum

        marks = prompt.breakpoints()
        if not marks and prompt.top_level_cache_control is None:
            return "no cache_control breakpoint"
        last = len(prompt.blocks) - 1 if prompt.top_level_cache_control is not None else marks[-1]
        tokens = sum(b.tokens for b in prompt.blocks[: last + 1])
        if isinstance(usage, Usage):
            tokens = min(tokens, usage.prompt_tokens)
        minimum = anthropic_minimum(prompt.model)
        return f"its prefix (about {tokens} tokens) is below the minimum cacheable length of {minimum}" if tokens < minimum else None
    tokens = usage.prompt_tokens if isinstance(usage, Usage) else prompt.prompt_tokens
    if tokens < OPENAI_MINIMUM_TOKENS:
        return f"{tokens} tokens, below the minimum cacheable length of {OPENAI_MINIMUM_TOKENS}"
    return None


def as_compaction(brk):
    """A break right after the agent compacted its history (a compaction call was seen in between): the history
    was replaced by a summary, so what differs in the system prompt and the conversation is the compaction, not
    an edit (no CL301, no CL101). A model switch or a changed tool list stays its own cause (it reaches the cache
    key first); the compaction is then listed with the divergences."""
    divergences = brk.extra.get("divergences") or []
    rewritten = [d for d in divergences if d.get("section") in ("system", "messages") and d["cause"] != "compaction"]
    kept = [d for d in divergences if d not in rewritten]
    pointer = (rewritten[0].get("location") or {}).get("pointer") if rewritten else None
    entry = {"cause": "compaction", "detail": "history_summarized", "rule": None, "section": "messages",
             "location": {"pointer": pointer, "char": None}, "before": rewritten[0]["before"] if rewritten else "",
             "after": rewritten[0]["after"] if rewritten else "", "first": False}
    if brk.cause in ("system_changed", "messages_changed"):
        brk.extra["compacted_from"] = {"cause": brk.cause, "detail": brk.detail}
        brk.cause, brk.detail, brk.rule, brk.value_kind = "compaction", "history_summarized", None, None
        entry["first"] = True
    order = {"tools": 0, "schema": 1}
    at = next((i for i, d in enumerate(kept) if d.get("section") not in order), len(kept))
    brk.extra["divergences"] = kept[:at] + [entry] + kept[at:]
    return brk


def response_complete(provider: str, text: str | None) -> bool:
    """Whether a response body arrived whole: a JSON body that parses, or a stream that reached its final event."""
    if not text:
        return False
    stripped = text.lstrip()
    if stripped.startswith("{"):
        try:
            json.loads(stripped)
        except ValueError:
            return False
        return True
    final = {"anthropic": "message_stop", "openai-responses": "response.completed", "openai-chat": "[DONE]"}.get(provider)
    return bool(final) and final in text


def dynamic_findings(prompt: Prompt, brk) -> list[dict[str, Any]]:
    """The catalog's rules that can be judged on a recorded request."""
    findings = []
    breakpoints = prompt.breakpoints()
    count = len(breakpoints) + (1 if prompt.top_level_cache_control else 0)
    if prompt.provider == "anthropic" and count > BREAKPOINT_LIMIT:
        findings.append(_finding("CL503", f"{count} cache breakpoints; the API accepts at most {BREAKPOINT_LIMIT}"))
    if prompt.provider == "anthropic" and breakpoints:
        from cachelint.simulate.models import anthropic_minimum

        minimum = anthropic_minimum(prompt.model)
        first = breakpoints[0]
        tokens = sum(b.tokens for b in prompt.blocks[: first + 1])
        if tokens < minimum:
            findings.append(_finding("CL504", f"the prefix up to the first breakpoint ({prompt.blocks[first].pointer}) is about {tokens} tokens, below the minimum of {minimum}"))
    if brk is not None and brk.cause != "none":
        if brk.rule:
            findings.append(_finding(brk.rule, f"{brk.cause}/{brk.detail} at {brk.pointer}"))
        changed = next((b for b in prompt.blocks if brk.pointer and brk.pointer.startswith(b.pointer)), None)
        if changed is not None and changed.cache_control is not None and changed.section != "messages":
            findings.append(_finding("CL502", f"the breakpoint at {changed.pointer} sits on a block that changed since the previous request"))
    return findings


def _finding(code: str, message: str) -> dict[str, Any]:
    return {"code": code, "name": NAMES.get(code, ""), "message": message}
