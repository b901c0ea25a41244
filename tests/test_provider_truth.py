"""Provider truth: the providers' own cache diagnostics beside cachelint's cause, idle expiry and provider-side
misses told apart from content breaks, and the TTL advisor, on traffic from the real SDK clients to the
stand-in provider (tests/upstream.py), analyzed by the real Recorder."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

import anthropic
import openai
import pytest

from cachelint.record.analyze import Recorder, RecorderOptions
from cachelint.record.diagnosis import compare, parse_diagnosis
from cachelint.record.exchange import Captured
from cachelint.record.store import Row, Store
from cachelint.record.ttl import advise, anthropic_ttl_seconds, entry_ttl_seconds
from upstream import Upstream

BETA = "cache-diagnosis-2026-04-07"
MODEL = "claude-sonnet-4-5"
GUIDE = " ".join(f"Rule {i}: answer the customer politely, cite the policy section, never guess a refund amount."
                 for i in range(160))  # ~2,500 tokens: over every Claude model's minimum
TOOLS = [
    {"name": "lookup_order", "description": "Find an order by id.",
     "input_schema": {"type": "object", "properties": {"id": {"type": "string"}}, "required": ["id"]}},
    {"name": "refund", "description": "Refund an order.",
     "input_schema": {"type": "object", "properties": {"id": {"type": "string"}, "amount": {"type": "number"}}}},
]


@dataclass
class Clock:
    now: float = 1_000.0

    def __call__(self) -> float:
        return self.now


@dataclass
class Harness:
    """One conversation: each request goes out through a real SDK client to the stand-in, and the exchange as it
    crossed the wire (the stand-in's record of it) is handed to the Recorder with the fake clock's time."""

    up: Upstream
    recorder: Recorder
    clock: Clock
    rows: list[Row] = field(default_factory=list)

    def capture(self) -> Row:
        req, resp = self.up.requests[-1], self.up.responses[-1]
        at = self.clock.now
        captured = Captured(
            started_at=at, method="POST", url=self.up.url + req.path, request_headers=list(req.raw_headers),
            request_body=bytes(req.body), status=resp.status, response_headers=list(resp.headers),
            response_body=bytes(resp.body), first_byte_at=at + 0.4, ended_at=at + 1.0, streamed=resp.stream,
        )
        row = self.recorder.record(captured)
        self.rows.append(row)
        return row


def claude(up: Upstream) -> anthropic.Anthropic:
    return anthropic.Anthropic(base_url=up.url, api_key="test-key", max_retries=0)


def ask(h: Harness, client: anthropic.Anthropic, *, messages, system=GUIDE, tools=TOOLS, model=MODEL,
        previous: str | None | bool = False, stream=False, betas=(BETA,), headers=None, session: str | None = "conv-1",
        **extra) -> tuple[Row, str]:
    """One Messages request (with diagnostics when `previous` is not False), naming its conversation as Claude Code
    does (`x-claude-code-session-id`); returns the row and the message id."""
    kwargs: dict[str, Any] = dict(model=model, max_tokens=64, system=[{"type": "text", "text": system,
                                  "cache_control": {"type": "ephemeral"}}], tools=tools, messages=messages, **extra)
    if previous is not False:
        kwargs["diagnostics"] = {"previous_message_id": previous}
    if betas:
        kwargs["betas"] = list(betas)
    headers = dict(headers or {})
    if session:
        headers["x-claude-code-session-id"] = session
    if headers:
        kwargs["extra_headers"] = headers
    if stream:
        with client.beta.messages.stream(**kwargs) as s:
            message = s.get_final_message()
    else:
        message = client.beta.messages.create(**kwargs)
    return h.capture(), message.id


def user(text: str, cache: bool = True) -> dict[str, Any]:
    block: dict[str, Any] = {"type": "text", "text": text}
    if cache:
        block["cache_control"] = {"type": "ephemeral"}
    return {"role": "user", "content": [block]}


def turns(n: int) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for i in range(n):
        out.append(user(f"Question {i}: where is order {1000 + i}?", cache=(i == n - 1)))
        if i < n - 1:
            out.append({"role": "assistant", "content": f"Order {1000 + i} shipped on day {i}."})
    return out


@pytest.fixture
def env(tmp_path):
    clock = Clock()
    with Upstream(clock=clock) as up:
        store = Store(tmp_path / "db.sqlite")
        yield Harness(up, Recorder(store, RecorderOptions()), clock), up, store
        store.close()


def breaks(rows: list[Row]) -> list[tuple[Any, Any, Any]]:
    return [(r.brk.get("cause"), (r.brk.get("provider_diagnosis") or {}).get("type"), r.brk.get("agreement"))
            for r in rows if r.brk]


# --- the provider's diagnosis, read and compared -----------------------------------------------------------------------


@pytest.mark.parametrize("stream", [False, True])
def test_anthropic_content_breaks_agree_with_the_providers_diagnosis(env, stream):
    h, up, store = env
    client = claude(up)
    row1, m1 = ask(h, client, messages=turns(1), previous=None, stream=stream)
    assert row1.brk is None  # first turn: diagnostics null, nothing to compare
    row2, m2 = ask(h, client, messages=turns(2), previous=m1, stream=stream)
    assert row2.brk["cause"] == "none" and row2.brk["provider_diagnosis"]["type"] == "none"
    assert row2.brk["agreement"] is None and row2.cache_read_tokens > 2000
    # a timestamp in the system prompt
    row3, m3 = ask(h, client, messages=turns(3), previous=m2, stream=stream, system=GUIDE + " Today is 2026-12-01 10:31.")
    assert row3.brk["cause"] == "system_changed"
    assert row3.brk["provider_diagnosis"] == {"source": "anthropic", "type": "system_changed",
                                              "missed_input_tokens": row3.brk["provider_diagnosis"]["missed_input_tokens"],
                                              "pending": False}
    assert row3.brk["provider_diagnosis"]["missed_input_tokens"] > 2000
    assert row3.brk["agreement"] == "agree" and row3.wasted_prefill_tokens > 2000
    # tools reordered
    row4, m4 = ask(h, client, messages=turns(4), previous=m3, stream=stream, tools=TOOLS[::-1],
                   system=GUIDE + " Today is 2026-12-01 10:31.")
    assert (row4.brk["cause"], row4.brk["provider_diagnosis"]["type"], row4.brk["agreement"]) == \
        ("tools_changed", "tools_changed", "agree")
    # the model switched
    row5, _ = ask(h, client, messages=turns(5), previous=m4, stream=stream, tools=TOOLS[::-1],
                  system=GUIDE + " Today is 2026-12-01 10:31.", model="claude-opus-4-8")
    assert (row5.brk["cause"], row5.brk["provider_diagnosis"]["type"], row5.brk["agreement"]) == \
        ("model_changed", "model_changed", "agree")
    stored = {r.seq: r for r in Store(store.path, readonly=True).rows()}
    assert stored[row3.seq].brk["agreement"] == "agree"  # kept in the store as JSON
    totals = h.recorder.totals[row5.session]
    assert totals.agreements == {"agree": 3}


def test_without_a_session_id_a_reordered_tool_list_starts_a_new_session_the_provider_still_compares(env):
    """Without the agent's session id, cachelint's lineage sees a new conversation (neither the first message nor
    the tool list is shared... the tool list differs); the provider, told the previous message, names the break."""
    h, up, _ = env
    client = claude(up)
    _, m1 = ask(h, client, messages=turns(1), previous=None, session=None)
    row, _ = ask(h, client, messages=turns(2), previous=m1, session=None, tools=TOOLS[::-1])
    assert row.seq == 1 and row.brk["detail"] == "no_previous_request"
    assert (row.brk["provider_diagnosis"]["type"], row.brk["agreement"]) == ("tools_changed", "provider-only")


def test_params_and_history_edits_agree(env):
    h, up, _ = env
    client = claude(up)
    _, m1 = ask(h, client, messages=turns(2), previous=None)
    row, m2 = ask(h, client, messages=turns(3), previous=m1, tool_choice={"type": "any"})
    assert (row.brk["cause"], row.brk["provider_diagnosis"]["type"], row.brk["agreement"]) == \
        ("params_changed", "unavailable", "agree")
    edited = turns(4)
    edited[0] = user("Question 0: where is order 1000? (edited)", cache=False)
    row, _ = ask(h, client, messages=edited, previous=m2, tool_choice={"type": "any"})
    assert (row.brk["cause"], row.brk["provider_diagnosis"]["type"], row.brk["agreement"]) == \
        ("messages_changed", "messages_changed", "agree")


def test_pending_and_not_found_leave_cachelint_alone(env):
    h, up, _ = env
    client = claude(up)
    _, m1 = ask(h, client, messages=turns(1), previous=None)
    up.queue_faults("diagnosis-pending")
    row, m2 = ask(h, client, messages=turns(2), previous=m1, system=GUIDE + " v2")
    assert row.brk["provider_diagnosis"] == {"source": "anthropic", "type": None, "missed_input_tokens": None,
                                             "pending": True}
    assert (row.brk["cause"], row.brk["agreement"]) == ("system_changed", "cachelint-only")
    row, _ = ask(h, client, messages=turns(3), previous="msg_unknown", system=GUIDE + " v3")
    assert row.brk["provider_diagnosis"]["type"] == "previous_message_not_found"
    assert (row.brk["cause"], row.brk["agreement"]) == ("system_changed", "cachelint-only")


def test_a_changed_beta_set_and_a_speed_change_agree(env):
    """The anthropic-beta header set is part of the cache key (the provider: `unavailable`); `speed` is rendered
    into the system prompt (the provider: `system_changed`, cachelint: `params_changed` in section system)."""
    h, up, _ = env
    client = claude(up)
    _, m1 = ask(h, client, messages=turns(1), previous=None)
    row, m2 = ask(h, client, messages=turns(2), previous=m1, betas=(BETA, "context-1m-2025-08-07"))
    assert row.cache_read_tokens == 0
    assert (row.brk["cause"], row.brk["provider_diagnosis"]["type"], row.brk["agreement"]) == \
        ("params_changed", "unavailable", "agree")
    row, _ = ask(h, client, messages=turns(3), previous=m2, betas=(BETA, "context-1m-2025-08-07"),
                 extra_body={"speed": "fast"})
    assert (row.brk["cause"], row.brk["section"], row.brk["provider_diagnosis"]["type"], row.brk["agreement"]) == \
        ("params_changed", "system", "system_changed", "agree")


# --- idle expiry and provider-side misses --------------------------------------------------------------------------


def test_idle_expiry_is_ttl_expired_not_a_content_break(env):
    h, up, _ = env
    client = claude(up)
    _, m1 = ask(h, client, messages=turns(1), previous=None)
    h.clock.now += 7 * 60  # longer than the 5-minute TTL
    row, m2 = ask(h, client, messages=turns(2), previous=m1)
    assert row.cache_read_tokens == 0 and row.cache_write_tokens > 2000
    assert row.brk["cause"] == "ttl_expired" and row.brk["idle_seconds"] == pytest.approx(420.0)
    assert row.brk["ttl_seconds"] == 300.0 and row.wasted_prefill_tokens == row.brk["missed_tokens"] > 2000
    assert row.brk["provider_diagnosis"]["type"] == "none" and row.brk["agreement"] == "agree"
    assert row.findings == [] and row.wasted_cost > 0
    # within the TTL the entry is read again: no cause, no waste
    h.clock.now += 60
    row, _ = ask(h, client, messages=turns(3), previous=m2)
    assert row.brk["cause"] == "none" and row.wasted_prefill_tokens == 0 and row.cache_read_tokens > 2000


def test_a_one_hour_entry_survives_a_gap_a_five_minute_one_does_not(env):
    h, up, _ = env
    client = claude(up)
    system = [{"type": "text", "text": GUIDE, "cache_control": {"type": "ephemeral", "ttl": "1h"}}]
    headers = {"x-claude-code-session-id": "conv-1h"}
    client.beta.messages.create(model=MODEL, max_tokens=64, system=system, tools=TOOLS, messages=turns(1),
                                betas=[BETA], extra_headers=headers)
    first = h.capture()
    assert first.cache_write_1h_tokens > 2000 and first.cache_write_5m_tokens  # system 1h, the last message 5m
    h.clock.now += 20 * 60
    client.beta.messages.create(model=MODEL, max_tokens=64, system=system, tools=TOOLS, messages=turns(2),
                                betas=[BETA], extra_headers=headers)
    row = h.capture()
    assert row.cache_read_tokens == first.cache_write_1h_tokens  # the 1-hour system entry was still there
    assert row.brk["cause"] == "none" and row.wasted_prefill_tokens == 0  # the 5m tail lost: a few tokens


def test_a_miss_within_the_ttl_on_identical_bytes_is_provider_side(env):
    h, up, _ = env
    client = claude(up)
    _, m1 = ask(h, client, messages=turns(1), previous=None)
    h.clock.now += 30
    up.clear_cache()  # evicted on the provider's side (the fingerprints stay)
    row, _ = ask(h, client, messages=turns(2), previous=m1)
    assert row.brk["cause"] == "provider_side" and row.brk["detail"] == "unexplained"
    assert row.brk["idle_seconds"] == pytest.approx(30.0) and row.brk["ttl_seconds"] == 300.0
    assert row.wasted_prefill_tokens > 2000
    assert (row.brk["provider_diagnosis"]["type"], row.brk["agreement"]) == ("none", "agree")


def test_a_read_larger_than_expected_is_not_waste(env):
    h, up, _ = env
    client = claude(up)
    ask(h, client, messages=turns(3), previous=None)  # caches the longer conversation first
    up.queue_faults(None)
    row, _ = ask(h, client, messages=turns(1), previous=None, system=GUIDE + " other")
    row, _ = ask(h, client, messages=turns(3), previous=None)  # reads more than its predecessor cached
    assert row.wasted_prefill_tokens == 0


# --- OpenAI Responses ------------------------------------------------------------------------------------------------


INSTRUCTIONS = GUIDE


def respond(h: Harness, client: openai.OpenAI, *, model="gpt-5.6-terra", compare_with: str | None = None,
            stream=False, instructions=INSTRUCTIONS, tools=None, effort=None, n=1):
    """One Responses request of an `n`-turn conversation whose history is sent in full, as Codex does."""
    items: list[dict[str, Any]] = []
    for i in range(n):
        items.append({"role": "user", "content": f"Where is order {1000 + i}?"})
        if i < n - 1:
            items.append({"role": "assistant", "content": f"Order {1000 + i} shipped."})
    body: dict[str, Any] = {}
    if compare_with is not None:
        body["prompt_cache_options"] = {"comparison_response_id": compare_with}
    kwargs: dict[str, Any] = dict(model=model, instructions=instructions, input=items, extra_body=body,
                                  prompt_cache_key="conv-1")
    if tools:
        kwargs["tools"] = tools
    if effort:
        kwargs["reasoning"] = {"effort": effort}
    if stream:
        with client.responses.stream(**kwargs) as s:
            response = s.get_final_response()
    else:
        response = client.responses.create(**kwargs)
    return h.capture(), response.id


FUNCTIONS = [{"type": "function", "name": "get_time", "parameters": {"type": "object", "properties": {}}}]


@pytest.mark.parametrize("stream", [False, True])
def test_openai_prompt_cache_diagnostics(env, stream):
    h, up, _ = env
    client = openai.OpenAI(base_url=up.url + "/v1", api_key="test-key", max_retries=0)
    _, r1 = respond(h, client, stream=stream)
    row, r2 = respond(h, client, compare_with=r1, stream=stream, n=2)
    assert row.brk["provider_diagnosis"]["type"] == "cache_hit" and row.brk["agreement"] is None
    row, r3 = respond(h, client, compare_with=r2, stream=stream, instructions=INSTRUCTIONS + " v2", n=3)
    assert row.brk["provider_diagnosis"]["source"] == "openai"
    assert (row.brk["cause"], row.brk["provider_diagnosis"]["type"], row.brk["agreement"]) == \
        ("system_changed", "input_changed", "agree")
    row, r4 = respond(h, client, compare_with=r3, stream=stream, instructions=INSTRUCTIONS + " v2", tools=FUNCTIONS,
                      n=4)
    assert (row.brk["cause"], row.brk["provider_diagnosis"]["type"], row.brk["agreement"]) == \
        ("tools_changed", "tools_changed", "agree")
    row, _ = respond(h, client, compare_with="resp_gone", stream=stream, instructions=INSTRUCTIONS + " v3",
                     tools=FUNCTIONS, n=5)
    assert row.brk["provider_diagnosis"]["type"] == "comparison_response_not_found"
    assert row.brk["agreement"] == "cachelint-only"


def test_openai_in_memory_expiry(env):
    h, up, _ = env
    client = openai.OpenAI(base_url=up.url + "/v1", api_key="test-key", max_retries=0)
    respond(h, client, model="gpt-5.1-codex")
    h.clock.now += 11 * 60  # the stand-in drops an idle prefix after 10 minutes
    row, _ = respond(h, client, model="gpt-5.1-codex", n=2)
    assert row.cache_read_tokens == 0
    assert row.brk["cause"] == "ttl_expired" and row.brk["ttl_seconds"] == 300.0
    assert row.wasted_cost == pytest.approx(row.wasted_prefill_tokens * (1.25 - 0.125) / 1e6)


# --- the TTL advisor -------------------------------------------------------------------------------------------------


def test_ttl_advisor_prices_a_recorded_session(env):
    h, up, store = env
    client = claude(up)
    _, m = ask(h, client, messages=turns(1), previous=None)
    for n, gap in ((2, 60), (3, 12 * 60), (4, 90), (5, 25 * 60), (6, 2 * 3600)):
        h.clock.now += gap
        _, m = ask(h, client, messages=turns(n), previous=m)
    causes = [r.brk["cause"] for r in h.rows[1:]]
    assert causes == ["none", "ttl_expired", "none", "ttl_expired", "ttl_expired"]
    rows = list(Store(store.path, readonly=True).rows())
    advice = advise({rows[0].session: rows})
    json.dumps(advice)  # JSON-able
    session = advice["sessions"][rows[0].session]
    assert session["option"] == "anthropic_1h_ttl" and session["provider"] == "anthropic"
    assert session["expired_within_1h"] == 2  # the 12- and 25-minute gaps; not the 2-hour one
    rescued = sum(r.brk["missed_tokens"] for r in rows if r.brk and r.brk["cause"] == "ttl_expired"
                  and r.brk["idle_seconds"] <= 3600)
    assert session["rescued_tokens"] == rescued > 4000
    writes = sum(r.cache_write_5m_tokens for r in rows)
    assert session["extra_write_cost"] == pytest.approx((writes - rescued) * (6.0 - 3.75) / 1e6, rel=1e-6)
    assert session["saved_cost"] == pytest.approx(rescued * (3.75 - 0.30) / 1e6, rel=1e-6)
    assert session["net_saving"] == pytest.approx(session["saved_cost"] - session["extra_write_cost"])
    assert session["verdict"] == ("worth it" if session["net_saving"] > 0 else "not worth it")
    total = advice["total"]["anthropic_1h_ttl"]
    assert total["sessions"] == 1 and total["net_saving"] == session["net_saving"]


def test_ttl_advisor_openai_extended_retention_and_unknown_prices():
    def row(seq, model, cause=None, idle=None, missed=0, provider="openai-responses", **kw):
        brk = {"cause": cause, "idle_seconds": idle, "missed_tokens": missed} if cause else None
        return Row(session="s", seq=seq, started_at=float(seq), provider=provider, model=model, brk=brk,
                   prompt_tokens=5000, **kw)

    advice = advise({
        "codex": [row(1, "gpt-5.1-codex"), row(2, "gpt-5.1-codex", "ttl_expired", 1800.0, 4096)],
        "mystery": [row(1, "gpt-9-unknown"), row(2, "gpt-9-unknown", "ttl_expired", 1800.0, 4096)],
        "extended": [row(1, "gpt-5.5"), row(2, "gpt-5.5")],
        "claude": [row(1, "claude-haiku-4-5", provider="anthropic", cache_write_tokens=3000,
                       cache_write_5m_tokens=3000, cache_write_1h_tokens=0)],
    })
    codex = advice["sessions"]["codex"]
    assert codex["option"] == "openai_extended_retention" and codex["extra_write_cost"] == 0.0
    assert codex["saved_cost"] == pytest.approx(4096 * (1.25 - 0.125) / 1e6) and codex["verdict"] == "worth it"
    assert advice["sessions"]["mystery"]["net_saving"] is None  # unknown, never $0
    assert advice["sessions"]["mystery"]["verdict"].startswith("unknown")
    assert advice["sessions"]["extended"]["verdict"] == "already on 24h retention"
    claude_ = advice["sessions"]["claude"]
    assert claude_["net_saving"] == pytest.approx(-3000 * (2.0 - 1.25) / 1e6)
    assert claude_["verdict"] == "no expiry a longer lifetime would have prevented"
    assert advice["total"]["openai_extended_retention"]["net_saving"] is None
    assert advice["total"]["openai_extended_retention"]["unpriced_sessions"] == 1


# --- the parsing and the mapping, plain -----------------------------------------------------------------------------


def test_parse_and_compare_edges():
    assert parse_diagnosis("anthropic", '{"id": "msg_1", "diagnostics": null}') is None  # not known to be asked
    asked = {"diagnostics": {"previous_message_id": "msg_0"}}
    assert parse_diagnosis("anthropic", '{"diagnostics": null}', asked)["type"] == "none"
    assert parse_diagnosis("anthropic", "not json") is None
    assert parse_diagnosis("openai-chat", '{"prompt_cache_diagnostics": {"type": "cache_hit"}}') is None
    assert parse_diagnosis("openai-responses", '{"prompt_cache_diagnostics": {"type": "cache_miss", '
                           '"reason": "reasoning_effort_changed", "cache_missed_tokens": 5}}') == \
        {"source": "openai", "type": "reasoning_effort_changed", "missed_input_tokens": 5, "pending": False}
    assert compare(None, None) is None and compare("none", None) is None
    assert compare("system_changed", {"type": "tools_changed", "pending": False}) == "disagree"
    assert compare(None, {"type": "messages_changed", "pending": False}) == "provider-only"
    assert compare("none", {"type": "system_changed", "pending": False}) == "provider-only"
    assert compare("ttl_expired", {"type": "messages_changed", "pending": False}) == "disagree"
    assert compare("compaction", {"type": "messages_changed", "pending": False}) == "agree"
    assert compare("params_changed", {"type": "system_changed", "pending": False}) == "disagree"
    assert compare("params_changed", {"type": "system_changed", "pending": False}, "system") == "agree"


def test_ttl_of_an_entry():
    one_hour = {"system": [{"type": "text", "text": "x", "cache_control": {"type": "ephemeral", "ttl": "1h"}}],
                "messages": []}
    assert anthropic_ttl_seconds(one_hour) == 3600.0
    assert anthropic_ttl_seconds(one_hour, write_5m=100, write_1h=0) == 300.0  # silently downgraded: usage wins
    assert anthropic_ttl_seconds({"cache_control": {"type": "ephemeral"}}) == 300.0
    assert entry_ttl_seconds("openai-responses", "gpt-5.1", {"prompt_cache_retention": "24h"}) == 86400.0
    assert entry_ttl_seconds("openai-responses", "gpt-5.5", {}) == 86400.0
    assert entry_ttl_seconds("openai-chat", "gpt-4o", {}) == 300.0


def test_a_request_sent_before_its_predecessors_response_began_is_a_race_not_the_providers():
    """The entry becomes readable once the writing request's response starts: a request sent earlier misses by
    the client's timing. Synthetic exchanges (the stand-in makes entries readable at once)."""
    recorder = Recorder(None, RecorderOptions())
    body = {"model": MODEL, "max_tokens": 8, "system": [{"type": "text", "text": GUIDE,
                                                        "cache_control": {"type": "ephemeral"}}],
            "messages": turns(1)}

    def exchange(at: float, first_byte: float, usage: dict[str, int], messages) -> Row:
        request = json.dumps({**body, "messages": messages}).encode()
        response = json.dumps({"id": "msg_x", "type": "message", "role": "assistant", "content": [],
                               "usage": {"output_tokens": 1, **usage}}).encode()
        return recorder.record(Captured(started_at=at, method="POST", url="https://api.anthropic.com/v1/messages",
                                        request_headers=[("x-claude-code-session-id", "race")],
                                        request_body=request, status=200, response_body=response,
                                        first_byte_at=first_byte, ended_at=first_byte + 1))

    exchange(100.0, 103.0, {"input_tokens": 10, "cache_creation_input_tokens": 3000, "cache_read_input_tokens": 0},
             turns(1))
    row = exchange(101.0, 104.0, {"input_tokens": 10, "cache_creation_input_tokens": 3020,
                                  "cache_read_input_tokens": 0}, turns(2))
    assert row.brk["cause"] == "none" and row.brk["not_yet_written"] is True
    assert row.wasted_prefill_tokens == row.brk["missed_tokens"] == 3000


# --- asking the provider: the AskDiagnostics addon in a real mitmproxy ----------------------------------------------


class InProcessProxy:
    """mitmproxy's DumpMaster on its own thread, in reverse mode to the stand-in, with the given addons."""

    def __init__(self, upstream_url: str, *addons) -> None:
        import asyncio
        import socket
        import threading
        import time

        from mitmproxy import options
        from mitmproxy.tools.dump import DumpMaster

        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            self.port = s.getsockname()[1]
        self.url = f"http://127.0.0.1:{self.port}"
        ready = threading.Event()

        async def main() -> None:
            opts = options.Options(listen_host="127.0.0.1", listen_port=self.port, mode=[f"reverse:{upstream_url}"])
            self.master = DumpMaster(opts, with_termlog=False, with_dumper=False)
            self.master.addons.add(*addons)
            self.loop = asyncio.get_running_loop()
            ready.set()
            await self.master.run()

        self.thread = threading.Thread(target=asyncio.run, args=(main(),), daemon=True)
        self.thread.start()
        ready.wait(30)
        deadline = time.time() + 30
        while time.time() < deadline:
            try:
                with socket.create_connection(("127.0.0.1", self.port), timeout=0.5):
                    return
            except OSError:
                time.sleep(0.05)
        raise RuntimeError("the proxy did not start")

    def stop(self) -> None:
        self.loop.call_soon_threadsafe(self.master.shutdown)
        self.thread.join(30)


@pytest.mark.parametrize("stream", [False, True])
def test_ask_diagnostics_through_a_real_proxy(tmp_path, stream):
    pytest.importorskip("mitmproxy")
    from cachelint.proxy.addon import CacheLintAddon
    from cachelint.proxy.diagnose import BETA as ASKED_BETA, AskDiagnostics

    store = Store(tmp_path / "db.sqlite")
    recorder = Recorder(store, RecorderOptions())
    rows: list[Row] = []
    ask_addon = AskDiagnostics()
    with Upstream() as up:
        proxy = InProcessProxy(up.url, CacheLintAddon(recorder, on_row=rows.append), ask_addon)
        try:
            client = anthropic.Anthropic(base_url=proxy.url, api_key="test-key", max_retries=0,
                                         default_headers={"x-claude-code-session-id": "asked",
                                                          "anthropic-beta": "context-1m-2025-08-07"})

            def send(n: int, system: str = GUIDE, **extra) -> None:
                kwargs = dict(model=MODEL, max_tokens=32, tools=TOOLS, messages=turns(n),
                              system=[{"type": "text", "text": system, "cache_control": {"type": "ephemeral"}}], **extra)
                if stream:
                    with client.messages.stream(**kwargs) as s:
                        s.get_final_message()
                else:
                    client.messages.create(**kwargs)

            send(1)
            send(2)
            send(3, system=GUIDE + " Today is 2026-12-01.")
            # a client that asks itself is left alone, body and headers
            client.post("/v1/messages", cast_to=object, body={
                "model": MODEL, "max_tokens": 8, "messages": turns(1),
                "diagnostics": {"previous_message_id": "msg_mine"}})
        finally:
            proxy.stop()
        sent = [r.json for r in up.requests]
        assert [b["diagnostics"]["previous_message_id"] for b in sent[:3]] == [None, "msg_000001", "msg_000002"]
        for request in up.requests[:3]:
            assert request.headers["anthropic-beta"] == f"context-1m-2025-08-07,{ASKED_BETA}"
            raw = bytes(request.body)
            assert raw.endswith(b',"diagnostics":{"previous_message_id":' + json.dumps(
                request.json["diagnostics"]["previous_message_id"]).encode() + b"}}")
        assert sent[3]["diagnostics"] == {"previous_message_id": "msg_mine"}
        assert up.requests[3].headers["anthropic-beta"] == "context-1m-2025-08-07"  # as the client sent it
        assert ask_addon.asked == 3
        assert up.responses[1].usage["cache_read_input_tokens"] > 2000  # the header, added from the start, costs nothing
    recorded = sorted((r for r in rows if r.session == "asked"), key=lambda r: r.seq)
    assert len(recorded) == 3
    assert recorded[1].brk["cause"] == "none" and recorded[1].brk["provider_diagnosis"]["type"] == "none"
    assert (recorded[2].brk["cause"], recorded[2].brk["provider_diagnosis"]["type"], recorded[2].brk["agreement"]) == \
        ("system_changed", "system_changed", "agree")
    store.close()


def test_splicing_keeps_every_other_byte():
    from cachelint.proxy.diagnose import message_id, with_beta, with_diagnostics

    raw = b'{"model": "m",\n "messages": [{"role": "user", "content": "caf\\u00e9"}]}\n'
    out = with_diagnostics(raw, "msg_1")
    assert out == b'{"model": "m",\n "messages": [{"role": "user", "content": "caf\\u00e9"}],' \
                  b'"diagnostics":{"previous_message_id":"msg_1"}}\n'
    assert json.loads(out)["diagnostics"] == {"previous_message_id": "msg_1"}
    assert with_diagnostics(b"{}", None) == b'{"diagnostics":{"previous_message_id":null}}'
    assert with_diagnostics(b'{"diagnostics": {}}', "x") is None and with_diagnostics(b"[1]", "x") is None
    assert with_beta([]) == ["cache-diagnosis-2026-04-07"]
    assert with_beta(["a,b"]) == ["a,b,cache-diagnosis-2026-04-07"]
    assert with_beta(["a", "cache-diagnosis-2026-04-07"]) == ["a", "cache-diagnosis-2026-04-07"]
    assert message_id(b'event: message_start\ndata: {"type":"message_start","message":{"id":"msg_9"}}\n\n') == "msg_9"
    assert message_id(b'{"id": "msg_8"}') == "msg_8" and message_id(b"event: ping\n\n") is None


def test_imported_traffic_carries_the_diagnosis_and_the_idle_expiry(tmp_path):
    """`cachelint import` of exchanges recorded elsewhere (the stand-in's own wire records): the same analysis."""
    import subprocess
    import sys

    clock = Clock()
    lines = []
    with Upstream(clock=clock) as up:
        client = claude(up)
        previous = None
        for n, (gap, system, stream) in enumerate([(0, GUIDE, False), (30, GUIDE, True), (9 * 60, GUIDE, False),
                                                   (20, GUIDE + " v2", True)], start=1):
            clock.now += gap
            kwargs = dict(model=MODEL, max_tokens=16, tools=TOOLS, messages=turns(n), betas=[BETA],
                          system=[{"type": "text", "text": system, "cache_control": {"type": "ephemeral"}}],
                          diagnostics={"previous_message_id": previous},
                          extra_headers={"x-claude-code-session-id": "imported"})
            if stream:
                with client.beta.messages.stream(**kwargs) as s:
                    previous = s.get_final_message().id
            else:
                previous = client.beta.messages.create(**kwargs).id
            req, resp = up.requests[-1], up.responses[-1]
            lines.append(json.dumps({"started_at": clock.now, "request": {
                "method": "POST", "path": req.path, "headers": dict(req.headers), "body": req.json},
                "response": {"status": resp.status, "headers": dict(resp.headers), "body": resp.text}}))
    source = tmp_path / "traffic.jsonl"
    source.write_text("\n".join(lines) + "\n")
    db = tmp_path / "store.db"
    out = subprocess.run([sys.executable, "-m", "cachelint", "import", str(source), "--db", str(db)],
                         capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    rows = sorted(Store(db, readonly=True).rows(), key=lambda r: r.seq)
    assert [r.brk["cause"] if r.brk else None for r in rows] == [None, "none", "ttl_expired", "system_changed"]
    assert rows[2].brk["idle_seconds"] == pytest.approx(540.0) and rows[2].brk["agreement"] == "agree"
    assert rows[3].brk["provider_diagnosis"]["type"] == "system_changed" and rows[3].brk["agreement"] == "agree"


def test_an_unknown_model_costs_unknown_never_zero(env):
    h, up, _ = env
    client = claude(up)
    row, m1 = ask(h, client, messages=turns(1), previous=None, model="claude-opus-9")
    assert row.cost is None and row.wasted_cost is None
    row, _ = ask(h, client, messages=turns(2), previous=m1, model="claude-opus-9", system=GUIDE + " v2")
    assert row.wasted_prefill_tokens > 2000 and row.wasted_cost is None and row.cost is None
    assert h.recorder.totals[row.session].unpriced == 2


def test_a_one_hour_entry_expires_after_an_hour(env):
    h, up, _ = env
    client = claude(up)
    system = [{"type": "text", "text": GUIDE, "cache_control": {"type": "ephemeral", "ttl": "1h"}}]
    headers = {"x-claude-code-session-id": "conv-1h"}
    for gap in (0, 70 * 60):
        h.clock.now += gap
        client.beta.messages.create(model=MODEL, max_tokens=16, system=system, tools=TOOLS, messages=turns(1),
                                    betas=[BETA], extra_headers=headers)
        row = h.capture()
    assert row.cache_read_tokens == 0
    assert (row.brk["cause"], row.brk["ttl_seconds"], row.brk["idle_seconds"]) == ("ttl_expired", 3600.0, 4200.0)
    one_hour = row.cache_write_1h_tokens  # written again at the 1-hour price, the tail at the 5-minute one
    assert 0 < one_hour < row.wasted_prefill_tokens
    assert row.wasted_cost == pytest.approx((one_hour * (6.0 - 0.3) + (row.wasted_prefill_tokens - one_hour)
                                             * (3.75 - 0.3)) / 1e6)


def test_chains_per_conversation_and_tool_set():
    from cachelint.proxy.diagnose import chain_key

    session = {"x-claude-code-session-id": "s1"}
    main = chain_key(session, {"tools": TOOLS, "messages": []})
    assert chain_key(session, {"tools": TOOLS[::-1], "messages": []}) == main  # reordered: the same chain
    assert chain_key(session, {"tools": TOOLS[:1], "messages": []}) != main  # a sub-agent's own tools
    assert chain_key(session, {"messages": []}) != main  # a side call
    assert chain_key({"x-claude-code-session-id": "s2"}, {"tools": TOOLS, "messages": []}) != main
    body = {"system": "guide", "messages": [{"role": "user", "content": "hi"}], "tools": TOOLS}
    assert chain_key({}, body) == chain_key({}, {**body, "messages": body["messages"] * 3})  # the lineage


def test_a_refused_request_wastes_nothing(tmp_path):
    """A 529 (or 429) after a content change: the provider prefilled nothing, so nothing was wasted, whatever
    the diff says the change would have cost."""
    recorder = Recorder(Store(tmp_path / "s.db"))
    body = {"model": MODEL, "max_tokens": 10, "system": [{"type": "text", "text": GUIDE, "cache_control": {"type": "ephemeral"}}],
            "messages": [{"role": "user", "content": "hi"}, {"role": "assistant", "content": GUIDE}, {"role": "user", "content": "ok"}]}
    usage = {"input_tokens": 3, "cache_creation_input_tokens": 2600, "cache_read_input_tokens": 0, "output_tokens": 1}
    ok = json.dumps({"id": "msg_1", "type": "message", "role": "assistant", "model": MODEL, "content": [], "usage": usage}).encode()
    refused = json.dumps({"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}).encode()
    changed = dict(body, messages=[{"role": "user", "content": "hi (sent 2026-12-01 10:46)"}, *body["messages"][1:],
                                   {"role": "assistant", "content": "Done."}, {"role": "user", "content": "refund order 7"}])
    rows = [recorder.record(Captured(1000.0 + i, "POST", "http://127.0.0.1:1/v1/messages", [("content-type", "application/json")],
                                     json.dumps(b).encode(), status=status, response_body=resp, ended_at=1000.5 + i))
            for i, (b, status, resp) in enumerate([(body, 200, ok), (changed, 529, refused)])]
    assert rows[1].brk["cause"] != "none"  # the break is named: the next successful request will pay it
    assert rows[1].brk["reprefilled_tokens"] > 0 and rows[1].wasted_prefill_tokens == 0


def test_proxy_ask_diagnostics_flag_end_to_end(tmp_path):
    """`cachelint proxy --ask-diagnostics` (the real CLI): the provider's diagnosis is asked for, stored and shown
    beside cachelint's cause in `cachelint report`; without the flag the request bytes are the client's."""
    from test_proxy import Proxy, report

    for asked in (True, False):
        with Upstream() as up:
            proxy = Proxy(up.url, tmp_path / f"{asked}.db", *(["--ask-diagnostics"] if asked else []))
            try:
                client = anthropic.Anthropic(base_url=proxy.url, api_key="test-key", max_retries=0,
                                             default_headers={"x-claude-code-session-id": "cli"})
                for n, system in ((1, GUIDE), (2, GUIDE), (3, GUIDE + " Today is 2026-12-01.")):
                    client.messages.create(model=MODEL, max_tokens=16, tools=TOOLS, messages=turns(n),
                                           system=[{"type": "text", "text": system, "cache_control": {"type": "ephemeral"}}])
            finally:
                proxy.stop()
            bodies = [r.json for r in up.requests]
        data = report(proxy.db)
        [brk] = [b for s in data["sessions"] for b in s["breaks"]]
        if asked:
            assert [b["diagnostics"]["previous_message_id"] for b in bodies] == [None, "msg_000001", "msg_000002"]
            assert (brk["cause"], brk["provider_diagnosis"]["type"], brk["agreement"]) == ("system_changed", "system_changed", "agree")
        else:
            assert all("diagnostics" not in b for b in bodies)
            assert brk["cause"] == "system_changed" and not brk.get("provider_diagnosis")
