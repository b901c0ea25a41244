"""CL301 rewritten-history."""

from __future__ import annotations

import os
import re

import libcst as cst
from cachelint.rules.base import Invalid, Report, Rule

from cachelint.check.history import at_the_context_window, bound_anew_in, cut_in_large_steps, cut_with_headroom, declared_outside, up_to_the_newest_turn, window_never_fills
from cachelint.check.module import descendants


# what a window that slides (with time, or with a capped walk back) should be instead
FIXED_START = "keep the conversation from a fixed start (or cut it rarely, in one large step)"


class RewrittenHistory(Rule):
    code = "CL301"
    what = """
Finds code that edits, deletes, re-orders or truncates earlier messages of a conversation that is sent to
an LLM turn after turn: `messages = messages[-N:]`, `del messages[0]`, `messages.pop(0)`,
`messages.insert(0, ...)`, `messages[i]["content"] = ...`, `messages.sort()` / `.reverse()` / `.remove()`.
Also a dict that the program updates while the conversation runs (`files[path] = content`) rendered into
the system prompt or the earlier messages: overwriting an entry rewrites text inside the prefix.

Where the request is sent from another module or a framework, the shapes a conversation is cut in are found
by the data's shape (confidence `likely`): a history class or utility that drops its oldest messages itself
(`self.messages.pop(0)` in `truncate()`, `while tokens > budget: messages.pop(0)`; a deque's `popleft()` under a test
of its length against a count: a deque is most often a queue, and a
queue drained or a rate limiter's times are no history), a window of the latest
messages kept (`history[:1] + history[-n:]`, or picked by index: `range(max(len(h) - n, 0), len(h))`), the
newest messages that fit a budget gathered from the end (`for m in reversed(history): if total > budget: break`, over
a copy of it, `ordered = list(turns)`, or by index, `for i in range(n - 1, -1, -1): message = history[i]`, or by an index
counted down by hand, `i = len(h) - 1; while i >= 0: ...`, reported at the test that stops it; a budget in characters
counts about four to a token; a walk back that stops at a count or a size and cuts at the index after it, `cutoff = i + 1`
then `messages[cutoff:]`, or `history = history[i + 1:]` inside the walk; the repair after a cut, `while messages and
messages[0]["role"] != "user": messages.pop(0)`, is not reported itself);
a literal budget of 32k tokens or more is the context window's and is left alone; seeded with the newest few,
`kept = history[-k:]`, then grown back from the older ones, it is one window, reported at the loop), the history from the n-th last
user message on (`start = human_indices[-rounds]; messages[start:]`, the start also worked out by a helper of the
module that returns it), the latest n rounds counted from
the end and written back as the history (`for m in reversed(conv.messages): if rounds >= max_rounds: break` then
`conv.messages = kept[::-1]`, or returned by a trim function), a
`deque(maxlen=n)` that holds the messages, entries older than a point that moves with the conversation dropped or
stubbed out while the history is walked (`trunc_before = self.round - self.len_observations`, then `if m.index <=
trunc_before: continue`; `if curr_step - idx > keep: prompt += "<Done>"`; `for i in range(max(0, n - RECENT)):
history[i] = shorten(history[i])`, or a dict written in its place), in a function that hands the walk's result back
or sends it (not one named for a screen, a log or an archive), the latest n rows of a conversation read back from a database
(`.order_by("-created")[:n]`, `.order_by(Msg.id.desc()).limit(n)`, or a store's method asked for them,
`repo.get_by_conversation(session, cid, n=10)`, walked `reversed(...)`; or asked newest first: `oldest_first=False`, a
method named for the latest rows, `get_recent_messages(limit=10)`, a chat platform channel's
`[m async for m in channel.history(limit=n)]` (or an `async for` over it that makes chat messages), Slack's
`conversations_history(limit=n)` (also with the limit in a `**params` dict, the rows taken from `response["messages"]`),
Telethon's `iter_messages` and Pyrogram's `get_chat_history`, or a store's `read(lines=8)` whose definition in the tree reads newest
first, `lrange` then `[::-1]`; a count that is a setting counts, a page asked with `offset=` does not; Slack's
`conversations_replies` comes oldest first) and turned
into messages (or appended, prepended or inserted into the list or object that keeps the conversation), earlier messages' content replaced by position (all but the last
n tool outputs), a conversation object of another module cut by its caller in a loop (`convo.trim(1, 2)`), and
a package function that trims the history (`messages = tokentrim.trim(messages, ...)`). Framework context and
memory classes too: messages popped from the middle until a token budget fits
(`while count(msgs) > limit: msgs.pop(len(msgs) // 2)`), a window of stored runs whose messages become the
history (`runs = runs[-n:]`, then `for run in runs: messages.extend(run.messages)`), and entries of a kind older
than the latest few replaced by a stub while the history is walked back
(`for m in reversed(memory): seen += 1; if seen > keep: m = Stub(...)`), or cut short once more than a few messages old
(`age = len(messages) - 1 - i; if age > K: content = content[:N] + "..."`). Also a block made for this request added to
the newest user message of the copy sent, found by a walk back past the assistant and tool messages after it
(`for i in range(len(out) - 1, -1, -1): if out[i]["role"] != "user": continue; ... + block; break`): the next user
turn moves it, and the previous turn's tool loop is prefilled again (reported where the block is made). A queue drained with `pop(0)`, system
messages moved into the system parameter, a leading orphan tool result dropped after a cut, format conversions
applied to every message alike (a constant written into, or a key deleted from, every message of the whole
list: `for m in messages: m["role"] = "user"`), a "history" of the code's own records (`history.append(call_hash)`, or dicts stamped with when they were made and
keyed by nothing a message or an agent's step is read by: `{"applied_at": ..., "origin": ..., "payload": ...}`),
a public trim method (`prune_history(keep_last)`) that no file of the tree outside the tests calls, a cut in a
module-level helper that no module of the tree outside the tests mentions (not `main`, a handler, a decorated
function or one whose own loop drives the conversation), the head of a group the loop iterates taken to be kept
(`for chunks in by_id.values(): main = chunks.pop(0)`), messages moved between the parts of one request the
function returns, a store of many conversations by key (`_conversation_cache`, `sessions`; not one that holds role
messages) evicting its oldest entries, a window made into a library's retrieval query or token count
(`retriever.get_relevant_documents(str(history[-10:]))`), a window rendered into a prompt text after this turn's
question (`f"QUESTION: {q} History: {history[-5:]}"`) or after a value drawn anew for each call (a uuid, a nonce;
CL104 says what that costs), a cut of the stored list itself that waits until it passes one bound and keeps three
quarters of it or less, ten entries fewer at the least (`if len(memory) > 100: memory = memory[-50:]`: one cache miss
per cut, many turns apart; not a window taken only to send, nor one cut in the `else:` below the bound), and
compaction functions (`compact_*`, `summarize_*`: one large step) are not reported.

A module-level history that a function cuts (`global history` ... `history = history[-20:]`) is the module's
conversation, kept from one call to the next, whether it is sent as messages or rendered into one prompt text. A
method that caps the count of messages (`while len(self.history) > self.max_messages: self.history.pop(0)`) is a
window whatever it is called (`_manage_overflow`), when the class calls it on the normal path (not only in an
`except` handler after the provider refused; a method that makes a summary is compaction); a list of role messages
cut from the front over a count cap (`self.buffer = self.buffer[2:]`) is a history whatever its name, when it is
handed on as one (returned by `def messages(self)`, or sent as `messages=`); a list kept for display is not. Not
reported either: a cut in an `except` handler for the provider's refusal (`except openai.BadRequestError:`, a recovery
once it refused a request; `except Exception:` is not one), a private method the class hands only to a retry after the
provider refused the input (`retry_once_with_modified_input(modify_input_func=lambda m: self._omit_biggest(m, 3))`),
the buffer of a generator that yields overlapping windows of a document or a stored chat (`yield {"text":
"".join(buf), "sources": sources.copy()}` then `sources.pop(0)`), a getter that returns
the latest `n` messages its caller asks for (`get_recent_messages(count)`), a trim that keeps the start
(`trim_to_tokens(text, n, "start")`).

A framework memory class chosen as the app's history that is a sliding window by design (confidence `likely`):
LangChain's `ConversationBufferWindowMemory(k=...)`, AutoGen's `BufferedChatCompletionContext` /
`HeadAndTailChatCompletionContext`, Strands' `SlidingWindowConversationManager`, CAMEL's
`ChatHistoryMemory(window_size=...)`, Semantic Kernel's history reducers, and the token-budget buffers
(`ConversationTokenBufferMemory`, `ConversationSummaryBufferMemory`, `TokenLimitedChatCompletionContext`,
`ChatMemoryBuffer`, LangChain's `trim_messages` unless `strategy="first"`) when their budget is under 32k tokens:
given as a literal (either branch of a conditional counts), or LangChain's buffers' default of 2,000 tokens; the
other frameworks' defaults keep what fits the context window.

The prefix re-rendered from current state is a rewrite too (confidence `likely`):
- instructions rendered on every request from a dict the agent loop updates between requests
  (`agent.instructions(context_variables)` with tool results merged into `context_variables`,
  `SYSTEM.format(**state)` with `state[key] = ...` in the loop that appends to the history); a batch of
  one-shot requests, or a name bound anew in each pass of the loop, is not;
- a conversion of the whole history that builds every earlier message with the object's current state
  (`[*self._previous_thinking_blocks, text]` for each assistant turn, where another method sets the blocks after
  each response); state set in `__init__`, or given only to the newest message, is not;
- a text renderer that keeps the first item (or an "... N steps omitted" marker) and the latest n items of a
  growing list: once the list is longer than n, the window slides on every turn;
- a history replaced by a summary whose token budget the code bounds at 16,384 tokens or less (a literal, the
  summarizer's default, `min(..., 8192)`, or an attribute assigned such values in the tree's imported modules):
  a coding or agent turn adds one to a few thousand tokens, so the summary fires every few turns. A budget near
  the context window, or one the code does not bound, is compaction done right and is not reported;
- a conversion that renders the newest message unlike the earlier ones (`if i == len(steps) - 1:` wrap the
  observation in instructions, or send the output in full and its summary once older): on the next turn it is
  rendered the other way, so the message the previous request ended with changes; text added after the newest
  message's own (a screenshot) and a `cache_control` breakpoint on it are not reported, nor a conversion whose
  result is neither returned nor sent (a display).

A chat loop's own list counts when the request sends it inside a list that wraps it (`current = [system, *messages,
question]`, `messages=current`). A window of the stored turns counts wherever the request is made: in the function, or in a function or method of
the module or of another module of the tree that sends what it is handed (`self._complete(msgs)`, an imported
`ask(msgs)`, a base class's `_chat_completion(history)` that raises `NotImplementedError` for subclasses). Earlier messages edited through their
attributes (`msg.content = "(omitted)"`, on the stored message or on a copy) count like `m["content"] = ...`.

Chat bots' shapes (confidence `likely`): one conversation of a store kept per chat, user or channel
(`self.messages[chat_id] = self.messages[chat_id][-10:]`; not `messages[i]`, one message); a history kept to the
messages younger than a span of time (`if time.time() - float(m["ts"]) < 86400: context.append(m)`); a conversation
gathered from a reply chain, newest first, and stopped at a message count (`while msg is not None and len(messages) <
max_messages: ...; msg = node.parent_msg`); a history cut at the start of its latest turns counted back
(`for idx in range(len(h) - 1, -1, -1)` with a turn counter, then `h = h[keep_from:]`); entries older than the latest
few edited in place before each request (`for msg in messages[:len(messages) - keep]: msg["content"] = PLACEHOLDER`,
or `if i not in kept:` over the loop's own message); and Anthropic's server-side tool-result clearing with no
`clear_at_least` (`{"type": "clear_tool_uses_20250919", ...}`): once past the trigger each request may clear the
result that just fell out of `keep`, invalidating the cache from there. Not reported: the newest messages that fit a
budget computed from the model's context window, searched for in a loop (`max_size = self.max_context_size - ...`);
a trimming helper called only once the prompt passes such a budget (`limit = self.context_length`, `if count(msgs) >
limit: msgs = trim_prompt_messages(...)`) or after the provider refused the request; a window however it reaches the
trim: litellm's `max_input_tokens`, a budget parameter every caller in the module passes the window to
(`truncate(history, self.context_window - 2000)`, `trim_messages(msgs, self.max_tokens)` after `self.max_tokens =
settings.max_input_tokens`), or a function that returns the history untouched while it fits (`if total <= limit:
return messages`; also one of another module handed the window by this call, `truncate_messages_to_fit(conversation,
max_input_tokens)`); a trimming function imported from a module of the tree, judged by its own body where it cuts
(only a package out of sight, `tokentrim.trim`, is judged by its name); a history cleared up to its
newest user turn in one step (`del messages[1:last_user]`, `del messages[1:-1]`), a reset that then grows again; two
queues merged until both are empty (`while len(a) > 0 or len(b) > 0: ... b.pop(0)`); and a breakpoint put on the
newest user turn while walking from the end (`if seen < 1:`). Also (`likely`): an agent framework made to replay a
fixed number of past runs as history (Agno's `add_history_to_context=True` with `num_history_runs`, 3 when not given;
phidata's `add_history_to_messages` and `num_history_responses`); a graph state's messages merged by a reducer of the
module that keeps the latest n (`messages: Annotated[Sequence[BaseMessage], merge]`, `return merged[-20:]`); and a
kept conversation replaced by a copy without the messages of a kind (`conn.dialogue.messages = [m for m in
conn.dialogue.messages if m.role not in ("tool", "function")]`). Not a window: messages dropped only after a request
was refused (the loop goes on past the request only when it failed: `if isinstance(reply, Message): return reply`),
and a leading message dropped by a setting of the object from the list a caller hands in for one request
(`if self.is_no_prompt: dialogue.pop(0)`).

Also (`likely`): a caller's system message grown in place (`messages[0]["content"] += schema` on the list a caller
hands in or a shallow copy of it, or on the system message picked by its role), so the caller's conversation keeps
the text and the next request adds it again. The images of older messages taken out beyond the newest few, in one
function that counts the images to keep (`images_to_keep`, `self._n_images_to_keep`, `max_recent_turn_with_screenshots`, `IMAGE_RETAIN_TURNS`)
and either writes into the messages it walks (`msg["content"] = new_content`, `fr.parts = None`, `history[i] =
Message(...)`) or replaces the history by a filtered copy (`messages = new_messages`, `return [m for i, m in
enumerate(messages) if i not in to_remove]`); removal in large chunks (`min_removal_threshold`) is left alone.
LangChain's `MessagesPlaceholder("history", n_messages=n)` renders only the last n messages (under 60). A kept
history rebuilt at the start of each turn by a method of its class that rewrites parts of every message
(`self._messages = self._truncate_tool_results(self._messages, max_chars=2048)`, `replace(part, content=...)`),
before a loop that appends to it and sends it, rewrites what earlier requests sent (the same call inside the loop,
with the same arguments, changes nothing and is quiet). A window's start may be counted from a length held in a name
(`n = len(messages)`, `start = n - max_messages`, `messages[start:]`), and the turns of a history kept as a dict may be
windowed through its sorted keys (`sorted_keys[-max_messages:]`, then `{k: history[k] for k in ...}`). Not windows:
a summary kept on the object with the latest messages, whatever the function is called (`def truncate(self): summary
= summarize(...); self.history = [summary, *recent]`: compaction, the history grows again from there; a summary made
again from the whole history on every request is not compaction); the recent turns a side task reads (a class named
for its role, `class QueryRewriter`, `QueryDecomposer`, or for its topic and not as an actor, `SearchQueryBuilder`,
not `SearchAgent`; a call of one, `query_decomposer.decompose(q, history[-5:])`;
LangChain's prompt for the standalone question, `contextualize_q_prompt`); a history rendered as text (`"\n".join(...)`) where every template of the module puts
this turn's question ahead of its slot (`"Question: {question}\n\nChat History: {chat_history}"`: it never was a
cached prefix).
"""
    why = """
The earlier messages are the cached prefix of the next turn. Changing or dropping one makes everything after
it be prefilled again; a sliding window that drops the oldest message every turn never reads the cache at
all.
"""
    example = """
messages = []
while True:
    messages.append({"role": "user", "content": input()})
    messages = messages[-20:]  # keep the last 20 turns
    reply = client.messages.create(model="claude-sonnet-4-5", max_tokens=1024, messages=messages)
"""
    instead = """
messages = []
while True:
    messages.append({"role": "user", "content": input()})
    if len(messages) > 200:  # compact rarely and in one large step, so the new prefix is reused many times
        messages = summarize(messages)
    reply = client.messages.create(model="claude-sonnet-4-5", max_tokens=1024, messages=messages)
"""
    fix_safety = "none."

    VALID = [
        # a breakpoint on the newest message changes no text; a transcript printed for the user is not sent; a
        # screenshot after the newest message's own text: the next request still matches up to that text
        """
def with_screenshot(history, screenshot):
    msgs = []
    for msg in history:
        content = [{"type": "text", "text": msg["content"]}]
        if msg is history[-1]:
            content.append({"type": "image_url", "image_url": {"url": screenshot}})
        msgs.append({"role": msg["role"], "content": content})
    return msgs

def to_messages(history):
    out = []
    for i, m in enumerate(history):
        block = {"type": "text", "text": m["content"]}
        if i == len(history) - 1:
            block["cache_control"] = {"type": "ephemeral"}
        out.append({"role": m["role"], "content": [block]})
    return out

def show(history):
    for i, m in enumerate(history):
        if i == len(history) - 1:
            print(f"> {m['content']}")
        else:
            print(m["content"])
""",
        # every message's text normalized alike: the same on every request
        """
class History:
    def __init__(self):
        self.messages = []

    def normalize(self):
        for msg in self.messages:
            msg.text = msg.text.strip()
""",
        # the messages added since a mark (`start = len(messages)` before appending): read back, not a window
        """
def step(messages, client):
    start = len(messages)
    messages.append({"role": "user", "content": "next"})
    reply = client.chat.completions.create(model="gpt-4o", messages=messages)
    messages.append({"role": "assistant", "content": reply.choices[0].message.content})
    return messages[start:]
""",
        # messages too large on their own skipped while walking back: the same ones on every request
        """
class Memory:
    def __init__(self):
        self.messages = []

    def small_ones(self, max_tokens=3000):
        kept = []
        for msg in reversed(self.messages):
            if len(msg["content"]) // 4 > max_tokens:
                continue
            kept.insert(0, msg)
        return kept
""",
        # the latest turns handed to a method of the class that only logs them: nothing sent is cut
        """
from openai import OpenAI
client = OpenAI()

class Chat:
    def __init__(self):
        self.history = []

    def _log(self, msgs):
        print(len(msgs))

    def send(self, text):
        recent = []
        for turn in self.history[-5:]:
            recent.extend(turn)
        self._log(recent)
        msgs = [{"role": "system", "content": "You are a helpful assistant"}, *self.history, {"role": "user", "content": text}]
        reply = client.chat.completions.create(model="gpt-4o", messages=msgs)
        self.history.append({"role": "user", "content": text})
        return reply
""",
        # the latest turns made into a retrieval query: a look-up, not the history sent
        """
def build_messages(memory, kwargs):
    previous_messages = kwargs["messages"]
    relevant_docs = memory.get_relevant_documents(str(previous_messages[-10:]))
    return [d.page_content for d in relevant_docs]
""",
        # a capped log of the code's own records (a tuple bound to a name first), not a conversation
        """
import time
class Limiter:
    HISTORY_LIMIT = 50
    def __init__(self):
        self._history = []
    def set_limit(self, old, new, reason):
        entry = (time.time(), old, new, reason)
        self._history.append(entry)
        if len(self._history) > self.HISTORY_LIMIT:
            self._history.pop(0)
""",
        # the window is rendered after this turn's question: the prompt differs from there on anyway
        """
class RepoChat:
    def __init__(self, memory_length=5):
        self.history = []
        self.memory_length = memory_length
    def model_input(self, message):
        return f'''QUESTION: {message}
        Chat History: {self.history[-self.memory_length:] if len(self.history) > self.memory_length else self.history}'''
""",
        # a transcript renderer whose text goes after a fresh nonce in a one-shot grading prompt
        """
import secrets
def transcript_text(messages):
    tail = messages[-20:]
    selected = [messages[0]] if messages and messages[0] not in tail else []
    selected.extend(tail)
    return "\\n\\n".join(f"[{m.role}] {m.content}" for m in selected)
def grader_payload(state, iteration):
    transcript = transcript_text(state["messages"])
    nonce = secrets.token_hex(8)
    safe = transcript.replace("</transcript>", "")
    return (f"Grader iteration {iteration}, tags <t-{nonce}>.\\n"
            f"<t-{nonce}>\\n{safe}\\n</t-{nonce}>")
""",
        # the first chunk of each group taken to be kept, the others merged into it: nothing is dropped
        """
def merge_chunks(groups, output):
    for messages in groups.values():
        main = messages.pop(0)
        for other in messages:
            main.merge(other)
        output.append(main)
""",
        # a store of many conversations by key, its oldest entries evicted: no conversation is cut
        """
import time
_conversation_cache = {}
def cache_put(key, conversation):
    if len(_conversation_cache) >= 100:
        oldest = sorted(_conversation_cache.items(), key=lambda kv: kv[1]["time"])
        for k, _ in oldest[:1]:
            _conversation_cache.pop(k, None)
    _conversation_cache[key] = {"conversation": conversation, "time": time.time()}
""",
        """
from langchain.memory import ConversationTokenBufferMemory
def make_memory(llm):
    return ConversationTokenBufferMemory(llm=llm, max_token_limit=120_000)
""",
        """
from anthropic import Anthropic
client = Anthropic()
messages = []
while True:
    messages.append({"role": "user", "content": input()})
    reply = client.messages.create(model="claude-sonnet-4-5", max_tokens=10, messages=messages)
    messages.append({"role": "assistant", "content": reply.content})
""",
        # a one-shot request built fresh each time is not a conversation
        """
from openai import OpenAI
client = OpenAI()
def ask(q):
    messages = [{"role": "user", "content": q}]
    messages[0]["content"] = q.strip()
    return client.chat.completions.create(model="gpt-4o", messages=messages)
""",
        # a batch: every request is a conversation of its own, whatever its system prompt holds
        """
import anthropic
client = anthropic.Anthropic()
SYSTEM = "Label the ticket for team {team}. " + "Rules. " * 400
def label_all(tickets, ctx):
    for ticket in tickets:
        ctx["team"] = ticket.team
        client.messages.create(model="claude-sonnet-4-5", max_tokens=16, system=SYSTEM.format(**ctx),
                               messages=[{"role": "user", "content": ticket.text}])
""",
        # compaction near the context window, in one large step
        """
class HistorySummary:
    def __init__(self, llm, max_tokens=150_000):
        self.llm, self.max_tokens = llm, max_tokens
    def summarize(self, messages):
        return [{"role": "user", "content": self.llm.complete(str(messages))}]
class Chat:
    def __init__(self, llm):
        self.summarizer = HistorySummary(llm)
        self.messages = []
    def after_turn(self):
        if sum(len(m["content"]) for m in self.messages) // 4 > self.summarizer.max_tokens:
            self.messages = self.summarizer.summarize(self.messages)
""",
        # a bounded queue of timestamps beside the conversation (a rate limit), not the conversation
        """
from collections import deque
from openai import OpenAI
client = OpenAI()
class Bot:
    def __init__(self):
        self.request_times = deque(maxlen=60)
        self.history = []
    def ask(self, text, now):
        self.request_times.append(now)
        self.history.append({"role": "user", "content": text})
        return client.chat.completions.create(model="gpt-4o", messages=self.history)
""",
        # a "history" of the code's own records (hashes of tool calls), not of messages
        """
from openai import OpenAI
client = OpenAI()
class LoopGuard:
    def __init__(self, window=20):
        self.window, self.history = window, []
    def seen_before(self, call_hash):
        self.history.append(call_hash)
        self.history = self.history[-self.window:]
        return self.history.count(call_hash) > 3
""",
        # the first rows of a conversation, oldest first: the head stays, no window
        """
from openai import OpenAI
from chats.models import Message
client = OpenAI()
def answer(conversation, text):
    first = Message.objects.filter(conversation=conversation).order_by("created_at")[:10]
    messages = [{"role": m.role, "content": m.content} for m in first]
    return client.chat.completions.create(model="gpt-4o", messages=messages + [{"role": "user", "content": text}])
""",
        # the trimmer keeping the head of the conversation
        """
from langchain_core.messages import trim_messages
from langchain_openai import ChatOpenAI
llm = ChatOpenAI(model="gpt-4o")
trimmer = trim_messages(max_tokens=2000, strategy="first", token_counter=llm)
def chat(history):
    return llm.invoke(trimmer.invoke(history))
""",
        # a list made anew in each pass of a retry loop: the cut never reaches the next request
        """
def answer(llm, prompt, history, retries=2):
    for _ in range(retries + 1):
        msgs = [{"role": "system", "content": prompt}, *history]
        reply = llm.chat(msgs)
        msgs.pop(0)
        if reply:
            return reply
        msgs.append({"role": "user", "content": "Answer again."})
""",
        # the same gathering at the size of the context window: compaction where it must happen
        """
def fit_history(history, count_tokens):
    kept, total = [], 0
    for message in reversed(history):
        if total + count_tokens(message["content"]) > 180_000:
            break
        kept.insert(0, message)
    return kept
""",
        # the newest stored turn picked by index: no window
        """
def last_exchange(chat_history):
    return [chat_history[i] for i in range(max(0, len(chat_history) - 1), len(chat_history))]
""",
        # the same constant written into every message before each request: earlier messages come out the same
        """
from openai import OpenAI
client = OpenAI()
class Model:
    def call(self, messages):
        for msg in messages:
            msg["role"] = "user"
            if "sender" in msg:
                del msg["sender"]
        return client.chat.completions.create(model="o1-mini", messages=messages)
def run(model, task):
    messages = [{"role": "user", "content": task}]
    while True:
        reply = model.call(messages)
        messages.append({"role": "assistant", "content": reply.choices[0].message.content})
""",
    ]
    INVALID = [
        # a window of the stored turns, sent through the class's own wrapper method (round 13: a request made by a
        # method of the class was not followed; only calls named like a request were)
        Invalid("""
from openai import OpenAI
client = OpenAI()

class Chat:
    def __init__(self):
        self.history = []

    def _complete(self, msgs):
        return client.chat.completions.create(model="gpt-4o", messages=msgs)

    def send(self, text):
        msgs = [{"role": "system", "content": "You are a helpful assistant"}]
        for turn in self.history[-5:]:
            msgs.extend(turn)
        msgs.append({"role": "user", "content": text})
        reply = self._complete(msgs)
        self.history.append([{"role": "user", "content": text}, {"role": "assistant", "content": reply}])
        return reply
""", line=14, message="keeps only the latest messages"),
        # the same, handed to a hook that subclasses in other modules implement (`raise NotImplementedError`)
        Invalid("""
class LLMAPI:
    def __init__(self):
        self.message_list = []

    def _chat_completion(self, history):
        raise NotImplementedError

    def send_message(self, text):
        chat = [{"role": "system", "content": "You are a helpful assistant"}]
        for m in self.message_list[-5:]:
            chat.extend(m.ask)
            chat.extend(m.answer)
        chat.append({"role": "user", "content": text})
        return self._chat_completion(chat)
""", line=11, message="keeps only the latest messages"),
        # the start of the window computed in a statement of its own, then adjusted (a sliding-window manager)
        Invalid("""
class SlidingWindowManager:
    def __init__(self, window_size=40):
        self.window_size = window_size

    def reduce_context(self, agent):
        messages = agent.messages
        trim_index = 2 if len(messages) <= 2 else len(messages) - self.window_size
        while trim_index < len(messages) and messages[trim_index]["role"] == "tool":
            trim_index += 1
        messages[:] = messages[trim_index:]
""", line=11, message="keeps only the latest messages"),
        # the newest messages that fit, walked with `[::-1]`
        Invalid("""
class Memory:
    def __init__(self):
        self.messages = []

    def to_messages(self, max_tokens=3000):
        kept, total = [], 0
        for message in self.messages[::-1]:
            total += len(message["content"]) // 4
            if total > max_tokens:
                break
            kept.insert(0, message)
        return kept
""", line=8, message="newest messages that fit a budget"),
        # the same, taking each that still fits the remaining budget and going on (`else: continue`)
        Invalid("""
class History:
    def __init__(self):
        self.messages = []

    def fit(self, max_tokens=3000):
        selected, remaining_tokens = [], max_tokens
        for msg in reversed(self.messages[1:]):
            msg_tokens = len(msg["content"]) // 4
            if msg_tokens <= remaining_tokens:
                selected.insert(0, msg)
                remaining_tokens -= msg_tokens
            else:
                continue
        return [self.messages[0]] + selected
""", line=8, message="newest messages that fit a budget"),
        # a message object's content replaced in place for all but the latest few tool results
        Invalid("""
class History:
    def __init__(self):
        self.messages = []

    def step(self, keep=3):
        n = len(self.messages)
        for i, msg in enumerate(self.messages):
            if msg.role == "tool" and i < n - keep:
                msg.content = "(old output omitted)"
""", line=10, message="replaces the content of earlier messages"),
        # the newest observation wrapped in instructions only while it is the newest (an agent's scratchpad)
        Invalid("""
TOOL_RESPONSE = "TOOL RESPONSE:\\n{obs}\\nThink about what to do next and answer in the required format."

class Agent:
    def __init__(self):
        self.steps = []

    def scratchpad(self):
        parts = []
        for i, (action, obs) in enumerate(self.steps):
            parts.append(action)
            if i == len(self.steps) - 1:
                parts.append(TOOL_RESPONSE.format(obs=obs))
            else:
                parts.append(obs)
        return "\\n".join(parts)
""", line=12, message="rendered unlike the earlier ones"),
        # a tool's output sent in full while it is the newest, and as its summary once older
        Invalid("""
def to_messages(history):
    msgs = []
    for i, step in enumerate(history):
        if i == len(history) - 1:
            msgs.append({"role": "tool", "content": f"Output:\\n{step.output}"})
        else:
            msgs.append({"role": "tool", "content": step.summary})
    return msgs
""", line=5, message="rendered unlike the earlier ones"),
        # the window converted in a comprehension added onto the request's messages
        Invalid("""
from openai import OpenAI
client = OpenAI()

class Chat:
    def __init__(self):
        self.history = []

    def send(self, text):
        msgs = [{"role": "system", "content": "You are a helpful assistant"}]
        msgs += [{"role": t.role, "content": t.text} for t in self.history[-8:]]
        msgs.append({"role": "user", "content": text})
        return client.chat.completions.create(model="gpt-4o", messages=msgs)
""", line=11, message="keeps only the latest messages"),
        # the oldest message moved to an archive: the history sent is still cut (from a review's probes)
        Invalid("""
class ChatMemory:
    def __init__(self, max_messages=20):
        self.messages = []
        self.archive = []
        self.max_messages = max_messages

    def add(self, role, content):
        self.messages.append({"role": role, "content": content})
        while len(self.messages) > self.max_messages:
            old = self.messages.pop(0)
            self.archive.append(old)

    def get(self):
        return self.messages
""", line=11, message="removes the oldest messages"),
        # a list named like a cache that holds role messages and is sent: still a conversation
        Invalid("""
class Agent:
    def __init__(self):
        self.msg_cache = []

    def remember(self, role, content):
        self.msg_cache.append({"role": role, "content": content})
        if len(self.msg_cache) > 30:
            self.msg_cache = self.msg_cache[-30:]

    def context(self):
        return [{"role": "system", "content": "You are helpful."}] + self.msg_cache
""", line=9, message="keeps only the latest messages"),
        # a window handed to a function of this module that sends it: not a look-up
        Invalid("""
from openai import OpenAI
client = OpenAI()

def web_search(question, messages):
    r = client.chat.completions.create(model="gpt-4o-search-preview", messages=messages + [{"role": "user", "content": question}])
    return r.choices[0].message.content

class Chat:
    def __init__(self):
        self.history = []

    def reply(self, text):
        answer = web_search(text, self.history[-10:])
        self.history.append({"role": "user", "content": text})
        self.history.append({"role": "assistant", "content": answer})
        return answer
""", line=14, message="keeps only the latest messages"),
        # (user, bot) pairs bound to a name first: turns of a chat, not records
        Invalid("""
class History:
    def __init__(self):
        self.history = []

    def add(self, user_msg, bot_msg):
        turn = (user_msg, bot_msg)
        self.history.append(turn)
        if len(self.history) > 10:
            self.history.pop(0)

    def to_messages(self):
        out = []
        for u, b in self.history:
            out += [{"role": "user", "content": u}, {"role": "assistant", "content": b}]
        return out
""", line=10, message="removes the oldest messages"),
        # the same window rendered ahead of the question: the rendered history is the prefix, and the cut moves it
        Invalid('''
class RepoChat:
    def __init__(self, memory_length=5):
        self.history = []
        self.memory_length = memory_length
    def model_input(self, message):
        return f"""Chat History: {self.history[-self.memory_length:] if len(self.history) > self.memory_length else self.history}
        QUESTION: {message}"""
''', line=7, message="keeps only the latest messages"),
        # the newest messages that fit a budget, gathered from the end: a window once the chat is over it
        Invalid("""
def fit_history(history, count_tokens, max_tokens=3000):
    kept, total = [], 0
    for message in reversed(history):
        tokens = count_tokens(message["content"])
        if total + tokens > max_tokens:
            break
        kept.insert(0, message)
        total += tokens
    return kept
""", line=4, message="newest messages that fit a budget"),
        # the latest turns of a chat UI's history, converted pair by pair into the request
        Invalid("""
from openai import OpenAI
client = OpenAI()
def respond(message, chat_history):
    messages = [{"role": "system", "content": "You are a helpful assistant."}]
    for user, bot in chat_history[-6:]:
        messages += [{"role": "user", "content": user}, {"role": "assistant", "content": bot}]
    messages.append({"role": "user", "content": message})
    return client.chat.completions.create(model="gpt-4o", messages=messages)
""", line=6, message="keeps only the latest messages of"),
        # the latest rows of a conversation read back from the database
        Invalid("""
from openai import OpenAI
from chats.models import Message
client = OpenAI()
def answer(conversation, text):
    recent = Message.objects.filter(conversation=conversation).order_by("-created_at")[:10]
    messages = [{"role": m.role, "content": m.content} for m in reversed(recent)]
    return client.chat.completions.create(model="gpt-4o", messages=messages + [{"role": "user", "content": text}])
""", line=6, message="latest stored messages"),
        # LangChain's trimmer with a small token budget
        Invalid("""
from langchain_core.messages import trim_messages
from langchain_openai import ChatOpenAI
llm = ChatOpenAI(model="gpt-4o")
trimmer = trim_messages(max_tokens=2000, strategy="last", token_counter=llm)
def chat(history):
    return llm.invoke(trimmer.invoke(history))
""", line=5, message="2,000 tokens"),
        # a queue of fixed length as the history: full, it drops the oldest message on every append
        Invalid("""
from collections import deque
from openai import OpenAI
client = OpenAI()
class Bot:
    def __init__(self):
        self.history = deque(maxlen=20)
    def ask(self, text):
        self.history.append({"role": "user", "content": text})
        reply = client.chat.completions.create(model="gpt-4o", messages=[{"role": "system", "content": "Hi"}, *self.history])
        self.history.append({"role": "assistant", "content": reply.choices[0].message.content})
""", line=7, message="keeps only the latest messages of"),
        # a list of messages under any name (messages with a role are appended to it), sent as a window
        Invalid("""
from openai import OpenAI
client = OpenAI()
sessions = {}
def ask(user, text):
    session = sessions.setdefault(user, [])
    session.append({"role": "user", "content": text})
    reply = client.chat.completions.create(model="gpt-4o", messages=[{"role": "system", "content": "Hi"}] + session[-6:])
    session.append({"role": "assistant", "content": reply.choices[0].message.content})
""", line=8, message="keeps only the latest messages of"),
        # the latest n turns picked by index from stored records: the window slides once the chat is longer
        Invalid("""
from langchain_core.messages import AIMessage, HumanMessage, SystemMessage
def build_messages(system, chat_records, rounds, question):
    first = len(chat_records) - rounds
    past = [[HumanMessage(chat_records[i].question), AIMessage(chat_records[i].answer)]
            for i in range(first if first > 0 else 0, len(chat_records))]
    return [SystemMessage(system), *[m for pair in past for m in pair], HumanMessage(question)]
""", line=6, message="keeps only the latest entries of"),
        # a constant, but only for the older messages: the newest keeps its text until the next turn rewrites it
        Invalid("""
from openai import OpenAI
client = OpenAI()
messages = []
while True:
    messages.append({"role": "user", "content": input()})
    for m in messages[:-2]:
        m["content"] = "[earlier output removed]"
    reply = client.chat.completions.create(model="gpt-4o", messages=messages)
    messages.append({"role": "assistant", "content": reply.choices[0].message.content})
""", line=8, message="edits an earlier message of"),
        Invalid("""
from langchain.memory import ConversationBufferWindowMemory
from langchain.agents import AgentExecutor

def make_agent(agent, tools):
    memory = ConversationBufferWindowMemory(k=10, memory_key="chat_history", return_messages=True)
    return AgentExecutor(agent=agent, tools=tools, memory=memory)
""", line=6, message="latest 10 exchanges"),
        Invalid("""
import json
from openai import OpenAI
client = OpenAI()
def complete(agent, history, context):
    system = agent.instructions(context) if callable(agent.instructions) else agent.instructions
    return client.chat.completions.create(model="gpt-4o", messages=[{"role": "system", "content": system}] + history)
def run(agent, history, context):
    while True:
        reply = complete(agent, history, context).choices[0].message
        history.append(reply.model_dump())
        for call in reply.tool_calls or []:
            context.update(agent.functions[call.function.name](**json.loads(call.function.arguments)))
""", line=6, message="the system prompt is rendered by"),
        Invalid("""
import anthropic
class Provider:
    def __init__(self):
        self.client = anthropic.Anthropic()
        self.last_thinking = []
    def convert(self, messages):
        out = []
        for message in messages:
            if message["role"] == "assistant":
                out.append({"role": "assistant", "content": [*self.last_thinking, {"type": "text", "text": message["content"]}]})
            else:
                out.append(message)
        return out
    def call(self, messages):
        reply = self.client.messages.create(model="claude-sonnet-4-5", max_tokens=2048, messages=self.convert(messages))
        self.last_thinking = [b for b in reply.content if b.type == "thinking"]
        return reply
""", line=11, message="every earlier message"),
        Invalid("""
def history_text(steps_history, limit):
    if len(steps_history) <= limit:
        return "\\n".join(s.describe() for s in steps_history)
    lines = [steps_history[0].describe(), f"[... {len(steps_history) - limit} previous steps omitted ...]"]
    lines.extend(s.describe() for s in steps_history[-(limit - 1):])
    return "\\n".join(lines)
""", line=6, message="renders the first and only the latest"),
        Invalid("""
class HistorySummary:
    def __init__(self, llm, max_tokens=2048):
        self.llm, self.max_tokens = llm, max_tokens
    def summarize(self, messages):
        return [{"role": "user", "content": self.llm.complete(str(messages))}]
class Chat:
    def __init__(self, llm):
        self.summarizer = HistorySummary(llm)
        self.messages = []
    def after_turn(self):
        if sum(len(m["content"]) for m in self.messages) // 4 > self.summarizer.max_tokens:
            self.messages = self.summarizer.summarize(self.messages)
""", line=13, message="passes 2048 tokens"),
        Invalid("""
from anthropic import Anthropic
client = Anthropic()
messages = []
while True:
    messages.append({"role": "user", "content": input()})
    messages = messages[-20:]
    reply = client.messages.create(model="claude-sonnet-4-5", max_tokens=10, messages=messages)
""", line=7, message="truncates"),
        Invalid("""
from openai import OpenAI
client = OpenAI()
def chat(messages):
    for _ in range(5):
        if len(messages) > 10:
            messages.pop(1)
        r = client.chat.completions.create(model="gpt-4o", messages=messages)
        messages.append(r.choices[0].message)
""", line=7),
        Invalid("""
from anthropic import Anthropic
class Agent:
    def __init__(self):
        self.client = Anthropic()
        self.history = []
    def step(self, text):
        self.history.append({"role": "user", "content": text})
        for m in self.history:
            m["content"] = m["content"].strip()
        return self.client.messages.create(model="claude-sonnet-4-5", max_tokens=10, messages=self.history)
""", line=10),
        Invalid("""
from anthropic import Anthropic
client = Anthropic()
def loop(messages, reminder):
    while True:
        messages.insert(0, {"role": "user", "content": reminder})
        client.messages.create(model="claude-sonnet-4-5", max_tokens=10, messages=messages)
""", line=6),
        Invalid("""
from anthropic import Anthropic
client = Anthropic()
files = {}
def read_file(path):
    files[path] = open(path).read()
def system_prompt():
    return "Files in context:\\n" + "\\n".join(f"--- {p} ---\\n{c}" for p, c in files.items())
def turn(history):
    return client.messages.create(model="claude-sonnet-4-5", max_tokens=10, system=system_prompt() + "x" * 5000, messages=history)
""", line=8, message="overwritten in place"),
        # an agent framework that replays only the last n runs of the session as history (likely)
        Invalid("""
from agno.agent import Agent
from agno.db.in_memory import InMemoryDb
agent = Agent(instructions=["You plan tasks."], db=InMemoryDb(), add_history_to_context=True,
              num_history_runs=5)
""", line=5, message="replay only the last 5 runs"),
    ]

    without_sites = True

    def check(self, analysis):
        from cachelint.check.history import (
            context_on_the_last_user_message,
            newest_rendered_apart,
            rerendered_instructions,
            rerendered_past_messages,
            rewrites,
            small_budget_summaries,
        )

        from cachelint.check.age_window import age_windows
        from cachelint.check.chain_walk import capped_chain_walks
        from cachelint.check.context_edits import clearing_without_a_minimum
        from cachelint.check.framework_agents import history_windows, placeholder_windows
        from cachelint.check.grown_system import grown_system_messages
        from cachelint.check.media_windows import media_windows
        from cachelint.check.framework_memory import window_memories
        from cachelint.check.text_history import behind_this_turns_value

        from cachelint.check.countdown_windows import countdown_windows

        for window in countdown_windows(analysis.ctx):
            yield Report(window.node, f"takes `{window.part}` off every entry of `{window.history}` but the newest few, counted in a "
                         "walk back: once a newer entry arrives, the oldest one that kept it loses it, so the prompt changes there "
                         "and every request prefills the history from that entry on again; keep each entry as it was first sent "
                         "(or drop such parts in large steps, rarely)", confidence="likely")
        for window in age_windows(analysis.ctx):
            yield Report(window.node, f"keeps only the messages of `{window.history}` younger than a span of time (in `{window.kept}`): "
                         "as time passes the oldest falls out and the conversation's first message changes, so a request after "
                         f"that reads nothing the previous one cached; {FIXED_START}", confidence="likely")
        for walk in capped_chain_walks(analysis.ctx):
            yield Report(walk.node, f"gathers the conversation into `{walk.messages}` from the newest message back and stops at "
                         f"`{walk.cap}` messages: once the chain is longer, each new message pushes the oldest out, so the first "
                         f"message of the prompt changes on every turn and nothing the previous request cached is read; {FIXED_START}",
                         confidence="likely")
        for edit in clearing_without_a_minimum(analysis.ctx):
            yield Report(edit, "server-side tool-result clearing with no `clear_at_least`: once the prompt passes the trigger, each "
                         "request may clear the one or two results that just fell out of `keep`, and clearing invalidates the "
                         "cached prefix from the first cleared result on, so every turn writes the history after it to the cache "
                         "again; set `clear_at_least` so that each clearing removes a large step and the turns after it read the "
                         "cache", confidence="likely")

        for found in [*history_windows(analysis.ctx), *placeholder_windows(analysis.ctx)]:  # a framework's window by a setting
            yield Report(found.node, f"{found.what}: once a conversation is longer, each request drops the oldest from the front of "
                         "the history, right after the system prompt, so no request reuses the previous one's cached history; send "
                         "the whole history and compact it rarely, in one large step", confidence="likely")
        for found in grown_system_messages(analysis.ctx):
            yield Report(found.node, f"adds to the system message of `{found.messages}`, the list its caller hands in, in place: a shallow "
                         "copy still holds the caller's message, so the caller's conversation keeps the text and the next request "
                         "adds it again; the system prompt grows on every request and nothing after its start is read from cache; "
                         "build a new system message for the request instead", confidence="likely")
        for found in media_windows(analysis.ctx):
            yield Report(found.node, f"takes the images out of older messages, keeping only the newest (`{found.setting}`): each new "
                         "image pushes one more out, so a message the previous request sent with its image is sent without it and "
                         "everything after it is prefilled again on every step; remove them in large chunks (a multiple of a "
                         "threshold at once) or keep them", confidence="likely")
        for found in window_memories(analysis.ctx):
            yield Report(found.node, f"`{found.cls}` {found.how} of the conversation: once it is longer, every turn drops the oldest "
                         "from the front of the history, right after the system prompt, so no request reuses the previous one's "
                         "cached history; keep the whole history and compact rarely, near the context window, in one large step",
                         confidence="likely")
        for found in rerendered_instructions(analysis.ctx):
            yield Report(found.node, f"{found.what}; when an update changes the rendered text, the leading system message changes and "
                         "every cached message after it is prefilled again: render the instructions once per conversation and send "
                         "what changes as a new message", confidence="likely")
        for found in rerendered_past_messages(analysis.ctx):
            yield Report(found.node, f"{found.what}; whenever that state changes, earlier turns change content and the whole history "
                         "after the first of them is prefilled again: keep each message as it was sent (store the state with the "
                         "message it came with)", confidence="likely")
        for found in newest_rendered_apart(analysis.ctx):
            yield Report(found.node, f"{found.what}: on the next turn it is no longer the newest and is rendered the other way, so "
                         "the message the previous request ended with changes and is prefilled again, with everything after it; "
                         "render every message the same way whatever its place, and send what only this turn needs as a new "
                         "message", confidence="likely")
        for found in context_on_the_last_user_message(analysis.ctx):
            yield Report(found.node, f"{found.what}, past the assistant and tool messages after it: the turn's tool loop is cached "
                         "after that block, and on the next user turn the block moves to the new message, so the earlier message "
                         "goes out without it and every tool call and result of the previous turn is prefilled again; send the "
                         "block as a message of its own, kept in the history, or at the very end of the request", confidence="likely")
        for found in small_budget_summaries(analysis.ctx):
            yield Report(found.node, f"{found.what}: compact rarely, near the context window, and in one large step, so each new "
                         "prefix is read from cache for many turns", confidence="likely")
        exempt: set[int] = set()  # cuts left alone here: not reported again below as rewrites of a request's history
        shaped: list[Report] = []  # cuts found by their shape: reported unless a request's history below reports the same statement
        for found in rewrites(analysis.ctx):
            if _manual_trim(analysis.ctx, found.node) or _never_called(analysis.ctx, found.node) or _recovery_only(analysis.ctx, found.node) \
                    or _yielded_as_windows(analysis.ctx, found.node, found.target) or (
                    isinstance(found.node, cst.Subscript) and behind_this_turns_value(analysis.ctx, found.node)):
                exempt.add(id(analysis.ctx.statement_of(found.node)))  # behind this turn's value: nothing after it was ever cached
                continue
            shaped.append(Report(found.node, f"{found.what} the conversation `{found.target}`; its earlier messages are the cached prefix "
                                 "of the next request, so every request after a cut prefills the whole history again: keep history "
                                 "append-only, or compact rarely and in one large step", confidence="likely"))
        for site, fact in analysis.facts({"state_dict"}, args=("system", "instructions", "messages", "input")):
            yield Report.at(site, fact.node, f"the {fact.landing.words} of {analysis.describe_site(site)} renders {fact.label}{fact.origin}, "
                            "a dict updated while the conversation runs: an entry overwritten in place changes text inside the cached "
                            "prefix, and everything after it is prefilled again; append new entries (or new turns) instead")
        ctx = analysis.ctx
        found_in: dict[tuple[int, str], list] = {}  # (region, target) -> its rewrites: many requests share one loop
        cut_reported: set[int] = set()
        sent: set[int] = set()  # statements of cuts reported as rewrites of a request's history
        for site in analysis.sites:
            if not analysis.cacheable(site):
                continue  # nothing of this request is ever cached
            history = _wrapped_history(ctx, site.arg("messages") or site.arg("input"), ctx.loops_around(site.node))
            if not isinstance(history, (cst.Name, cst.Attribute, cst.Subscript)):
                continue  # messages, self.messages, state["messages"]
            for region, target in _conversation_regions(ctx, site, history):
                key = (id(region), target)
                if key not in found_in:
                    found_in[key] = list(_rewrites(ctx, region, target))
                for node, what in found_in[key]:
                    if id(node) in cut_reported:
                        continue  # one report a cut, from the first request that sends the history (many share one loop)
                    cut_reported.add(id(node))
                    if at_the_context_window(ctx, node) or cut_with_headroom(ctx, node) or id(ctx.statement_of(node)) in exempt \
                            or window_never_fills(ctx, node) or cut_in_large_steps(ctx, node):
                        continue  # compaction where it must happen, or down to well under the bound that set it off
                    sent.add(id(ctx.statement_of(node)))
                    yield Report.at(site, node, f"{what} the history `{target}` sent by {analysis.describe_site(site)} every turn; "
                                 "earlier messages are the cached prefix: keep history append-only")
        # one report a cut: the request's, which names it, over the shape's (`self.messages = self.messages[-20:]`)
        yield from (report for report in shaped if id(ctx.statement_of(report.node)) not in sent)


MANUAL_TRIM = re.compile(r"^(?:prune|trim|truncate|clear|reset|delete|drop|shrink|limit|cut|compact)(?:_|$)")


def _manual_trim(ctx, node) -> bool:
    """`def prune_history(self, keep_last): self.history = self.history[-keep_last:]`, a public method named for
    the cut, that no file of the tree outside the tests calls: an API the app's user calls once, by hand, not a
    window that slides on every turn. (A file linted alone has no tree: it is judged as before.)"""
    from cachelint.check.config import test_path_below
    from cachelint.check.tree import first_file, root_of

    function = ctx.enclosing_function(node)
    if function is None or ctx.enclosing(function, (cst.ClassDef,)) is None:
        return False
    name = function.name.value
    if not MANUAL_TRIM.search(name) or not os.path.isfile(ctx.filename):
        return False
    call = re.compile(rf"\.{re.escape(name)}\(")
    root = root_of(ctx.filename)
    return first_file(ctx.filename, f"calls of {name}",
                      lambda path, text: not test_path_below(path, root) and call.search(text) is not None) is None


def _never_called(ctx, node) -> bool:
    """The cut is in a module-level function that no module of the tree outside the tests mentions outside its
    definition (`format_prompt_max_length`, kept for an old provider): nothing runs it. A method, a decorated
    function (a route, a tool), `main`, a handler (`lambda_handler`, named in a deployment's settings) and a cut
    inside a loop of the function (an agent loop, the app's entry) are left alone. (A file linted alone has no tree:
    it is judged as before.)"""
    from cachelint.check.tree import mentions_outside_tests

    function = ctx.enclosing_function(node)
    if function is None or ctx.enclosing(function, (cst.ClassDef, cst.FunctionDef)) is not None:
        return False
    name = function.name.value
    loop = ctx.enclosing(node, (cst.For, cst.While))
    if function.decorators or name == "main" or "handler" in name.lower() or (loop is not None and ctx.contains(function, loop)):
        return False
    counts = mentions_outside_tests(ctx.filename)
    return counts is not None and counts.get(name, 0) == 0


def _wrapped_history(ctx, sent, loops):
    """The history a request sends, seen through the messages written around it: `[system, *history, user]` or
    `[system] + history` in the call or bound once to the name it sends (`current = [system, *messages, question]`
    and `messages=current`): the list that outlives the request is `history` when it is kept on `self` or in state,
    or is a local list of the chat loop the request is sent in (`in_a_loop`; a function's own list, sliced once past
    its system message, is no conversation kept from one request to the next; nor is a list bound anew in each pass,
    `context = example["dialog"]` of a batch)."""
    def kept(behind) -> bool:
        if isinstance(behind, (cst.Attribute, cst.Subscript)):
            return True
        return isinstance(behind, cst.Name) and bool(loops) and not _bound_each_pass(ctx, loops[-1], behind.value)

    if isinstance(sent, cst.Name):
        values = [value for _, value in ctx.assigned_values(sent)]
        if len(values) == 1 and isinstance(values[0], (cst.List, cst.BinaryOperation)):
            behind = _behind_new_messages(values[0])
            if behind is not values[0] and kept(behind):
                return behind
        return sent
    behind = _behind_new_messages(sent)
    return behind if kept(behind) else sent


# a call that runs what it is handed only once the provider refused a request: a retry with the input made smaller
RECOVERY = re.compile(r"retry|too_long|overflow|fallback|on_error|recover|refus|shrink_on", re.IGNORECASE)


def _bound_each_pass(ctx, loop, name: str) -> bool:
    """A statement of the loop's own body (not under an `if`: a "clear" command that resets the chat is not) binds
    `name` to a value that does not read it: `context = example["dialog"]`, a list of this pass."""
    for statement in loop.body.body:
        for small in getattr(statement, "body", []) if isinstance(statement, cst.SimpleStatementLine) else []:
            if isinstance(small, cst.Assign) and any(isinstance(t.target, cst.Name) and t.target.value == name for t in small.targets) \
                    and not any(isinstance(n, cst.Name) and n.value == name for n in (small.value, *descendants(small.value))):
                return True
    return False


def _recovery_only(ctx, node) -> bool:
    """The cut is in a private method that the module only hands to a retry once the provider refused the input
    (`retry_once_with_modified_input(in_input_bad=..., modify_input_func=lambda m: self._omit_biggest(m, 3))`): it
    runs on a copy for one retry after a refusal, not on every turn."""
    function = ctx.enclosing_function(node)
    if function is None or ctx.enclosing(function, (cst.ClassDef,)) is None or not function.name.value.startswith("_"):
        return False
    name = function.name.value
    uses = [n for n in ctx.nodes(cst.Attribute) if n.attr.value == name and ctx.code(n.value) == "self"]
    if not uses:
        return False
    for use in uses:
        # what is handed on: the method itself (`modify=self._omit`), or a lambda that only calls it
        # (`lambda msgs: self._omit(msgs, 3)`); not a request that calls it inside (`retry(lambda: create(messages=self._trim(h)))`)
        handed: cst.CSTNode = use
        parent = ctx.parent(use)
        if isinstance(parent, cst.Call) and parent.func is use:
            lam = ctx.parent(parent)
            if not (isinstance(lam, cst.Lambda) and lam.body is parent):
                return False
            handed = lam
        arg = ctx.parent(handed)
        call = ctx.parent(arg) if isinstance(arg, cst.Arg) else None
        if not (isinstance(call, cst.Call) and (RECOVERY.search(ctx.code(call.func))
                                                or (arg.keyword is not None and RECOVERY.search(arg.keyword.value)))):
            return False
    return True


def _yielded_as_windows(ctx, node, target: str) -> bool:
    """The cut list is the buffer of a generator that yields windows of it (a copy, or its text, inside what it yields)
    and sends no request: `yield {"text": "".join(buf), "sources": sources.copy()}` then `sources.pop(0)` until the
    overlap fits. Each window is a request of its own (chunks of a document or a stored chat), not a conversation
    sent turn after turn. A chat generator that yields the history itself (`yield history`, a Gradio bot) is not."""
    function = ctx.enclosing_function(node)
    if function is None or _sends_a_request(ctx, function):
        return False
    for found in ctx.nodes_in(cst.Yield, function):
        if found.value is None or ctx.enclosing_function(found) is not function or ctx.code(found.value) == target:
            continue
        if any(isinstance(n, (cst.Name, cst.Attribute)) and ctx.code(n) == target
               and isinstance(ctx.parent(n), (cst.Attribute, cst.Arg)) for n in descendants(found.value)):
            return True  # `sources.copy()`, `"".join(buf)`: the window's text or a copy of it
    return False


def _sends_a_request(ctx, function) -> bool:
    """A request in sight is made in the function (its own call sites are the module's)."""
    from cachelint.check.callsites import module_sites

    return any(ctx.enclosing_function(site.node) is function for site in module_sites(ctx))


def _behind_new_messages(sent):
    """The history a request sends behind messages written into it: `[{"role": "system", ...}] + history`,
    `[system, *st.session_state.messages]`; the expression itself otherwise."""
    if isinstance(sent, cst.BinaryOperation) and isinstance(sent.operator, cst.Add):
        kept = [side for side in (sent.left, sent.right) if not isinstance(side, cst.List)]
        return _behind_new_messages(kept[0]) if len(kept) == 1 else sent
    if isinstance(sent, cst.List):
        starred = [e.value for e in sent.elements if isinstance(e, cst.StarredElement)]
        return starred[0] if len(starred) == 1 else sent
    return sent


def _conversation_regions(ctx, site, history):
    """(region, name of the history there) for every place where the history outlives one request."""
    region = _conversation_region(ctx, site, history)
    if region is not None:
        yield region, ctx.code(history)
    function = ctx.enclosing_function(site.node)
    if isinstance(history, cst.Name) and function is not None:  # act(agent, transcript) called from a loop
        params = list(function.params.params)
        index = next((i for i, p in enumerate(params) if p.name.value == history.value), None)
        if index is None:
            return
        owner = ctx.enclosing(function, (cst.ClassDef,))
        method = owner is not None
        from cachelint.check.callsites import module_sites

        sent = {id(s.node) for s in module_sites(ctx)}
        for call in ctx.nodes(cst.Call):
            func = call.func
            name = func.value if isinstance(func, cst.Name) else func.attr.value if isinstance(func, cst.Attribute) else None
            if name != function.name.value or ctx.contains(function, call):
                continue
            if isinstance(func, cst.Attribute) and ctx.code(func.value) in ("self", "cls") and ctx.enclosing(call, (cst.ClassDef,)) is not owner:
                continue  # `self._stream_response(client, params)` of another class runs that class's method
            if id(call) in sent:
                continue  # `self.client.messages.create(**params)` in a method named `create`: the SDK's request, not this method
            for position, arg in enumerate(call.args):
                if arg.star:
                    continue  # `f(*args)`, `f(**params)`: no one parameter
                keyword = arg.keyword.value if arg.keyword is not None else None
                if keyword == history.value or (keyword is None and position == index - (1 if method else 0)):
                    loops = ctx.loops_around(call)
                    caller = loops[-1] if loops else ctx.enclosing_function(call)
                    if caller is not None and isinstance(arg.value, (cst.Name, cst.Attribute, cst.Subscript)):
                        yield caller, ctx.code(arg.value)


def _conversation_region(ctx, site, history):
    """Where the history outlives one request, so rewriting it breaks the next request's prefix:
    a loop around the call, the class of `self.messages`, the module of `st.session_state.messages`, or the
    function that receives the history (`state["messages"]`, a `messages` parameter) and sends it."""
    loops = ctx.loops_around(site.node)
    if loops:
        return loops[-1]
    function = ctx.enclosing_function(site.node)
    if isinstance(history, cst.Attribute):
        if ctx.code(history.value) == "self":
            return ctx.enclosing(site.node, (cst.ClassDef,))
        return ctx.module
    if isinstance(history, cst.Subscript):
        return ctx.module  # state["messages"]: the same state, wherever the module updates it
    if isinstance(history, cst.Name) and function is not None:
        if any(isinstance(b, cst.Param) for b, _ in ctx.assigned_values(history)):
            from cachelint.check.one_shot import one_shot_callers

            # every caller in sight builds the list afresh for one request (`messages = [{"role": "user", ...}]`):
            # what the function edits (a file block put into `messages[0]`) is no conversation another request resends
            return None if one_shot_callers(ctx, function, history.value) else function
        if history.value in declared_outside(function):
            return ctx.module  # global history: the module's conversation, kept from one call to the next
    return None


def _rewrites(ctx, region, target: str, followed: bool = False):
    """(node, description) for statements in `region` that rewrite the list named `target`, and in the helpers of this
    module it is handed to (`truncate_tool_messages(history, size)`, one level deep)."""
    from cachelint.check.history import leading_repair, under_system_role_test

    nodes = descendants(region)
    names = {target}
    changed = True
    while changed:  # for m in history[:-2]: for block in m["content"]: block[...] = ...
        changed = False
        for node in nodes:
            if isinstance(node, cst.For) and isinstance(node.target, cst.Name) and node.target.value not in names:
                if _root(ctx, node.iter) in names:
                    names.add(node.target.value)
                    changed = True
    for node in nodes:
        if isinstance(node, cst.Assign):
            for t in node.targets:
                tgt = t.target
                if ctx.code(tgt) == target and _has_late_slice(ctx, node.value, target):
                    # `if messages[0]["role"] == "system": messages = messages[1:]`; `while messages[0]["role"] == "tool": ...`
                    if not under_system_role_test(ctx, node) and not leading_repair(ctx, node, target):
                        yield node, "truncates"
                elif isinstance(tgt, cst.Subscript) and _root(ctx, tgt) in names and not _is_marker_or_newest(ctx, tgt, target) \
                        and not _same_for_every_message(ctx, node, tgt, node.value, names):
                    yield node, "edits an earlier message of"
        elif isinstance(node, cst.Del):
            for t in _targets(node.target):
                if isinstance(t, cst.Subscript) and _root(ctx, t) in names and not _is_marker_or_newest(ctx, t, target) \
                        and not _same_for_every_message(ctx, node, t, None, names) \
                        and not up_to_the_newest_turn(ctx, ctx.enclosing_function(node), t):
                    yield node, "deletes messages from"
        elif isinstance(node, cst.Call) and isinstance(node.func, cst.Attribute) and ctx.code(node.func.value) == target \
                and not (isinstance(region, (cst.For, cst.While)) and bound_anew_in(ctx, region, target)):
            method = node.func.attr.value
            if method == "pop" and node.args and ctx.code(node.args[0].value) not in ("-1",) and not under_system_role_test(ctx, node) \
                    and not leading_repair(ctx, node, target):
                yield node, "removes an earlier message from"
            elif method == "insert" and node.args and ctx.code(node.args[0].value) not in ("len(%s)" % target,) \
                    and not _system_put_first(ctx, node):
                yield node, "inserts a message into the middle of"
            elif method in ("sort", "reverse", "remove", "clear"):
                yield node, {"sort": "re-orders", "reverse": "re-orders", "remove": "removes a message from", "clear": "clears"}[method]
        elif isinstance(node, cst.Call) and not followed:
            for helper, param in _helpers_given(ctx, node, target):
                for inner, what in _rewrites(ctx, helper, param, followed=True):
                    # messages edited in place in a loop over the list (the caller's list is the same list); a helper
                    # that sets `messages[0]` again puts back what its inputs give, which the caller's walk judges
                    if what == "edits an earlier message of" and isinstance(inner, cst.Assign) \
                            and all(_root(ctx, t.target) != param for t in inner.targets) and _uses_outside_input(ctx, inner):
                        yield inner, what


def _helpers_given(ctx, call: cst.Call, target: str):
    """(function, parameter) for a function of this module (or a method of its class, called on `self`) that `call`
    hands the list named `target` to."""
    from cachelint.check.depends import positional_index

    func = call.func
    if isinstance(func, cst.Name):
        key = func.value
    elif isinstance(func, cst.Attribute) and ctx.code(func.value) in ("self", "cls"):
        cls = ctx.enclosing(call, (cst.ClassDef,))
        key = f"{cls.name.value}.{func.attr.value}" if cls is not None else None
    else:
        key = None
    for function in ctx.functions.get(key, [])[:2] if key else ():
        if ctx.contains(function, call):
            continue
        for position, arg in enumerate(a for a in call.args if not a.star):
            if ctx.code(arg.value) != target:
                continue
            params = [p for p in (*function.params.posonly_params, *function.params.params, *function.params.kwonly_params) if p.name.value not in ("self", "cls")]
            name = arg.keyword.value if arg.keyword is not None else next((p.name.value for p in params if positional_index(function, p.name.value) == position), None)
            if name is not None and not _rebound(ctx, function, name):
                yield function, name


def _rebound(ctx, function: cst.FunctionDef, name: str) -> bool:
    """`history = copy.deepcopy(history)` (or any other value) in the helper: what it edits may be its own copy."""
    return any(isinstance(n, cst.Assign) and any(isinstance(t.target, cst.Name) and t.target.value == name for t in n.targets)
               and ctx.enclosing_function(n) is function for n in descendants(function.body))


def _same_for_every_message(ctx, statement, target: cst.Subscript, value, names: set[str]) -> bool:
    """`for m in messages: m["role"] = "user"` / `del m["sender"]`: a constant written into (or a key deleted from)
    every message of the whole list, perhaps under a test of the message itself (`if "sender" in m:`). Done
    again before each request, it is idempotent: an earlier message comes out the same on every turn, so the
    prefix does not change. A value computed from anything else, a loop over a slice or an index, or a test
    of anything but the message, is a rewrite."""
    loop_var = _root(ctx, target)
    if value is not None and not _constant(value):
        return False
    loop_vars = {n.target.value for n in ctx.ancestors(statement) if isinstance(n, cst.For) and isinstance(n.target, cst.Name)}
    for node in ctx.ancestors(statement):
        if isinstance(node, cst.If) and not _only_mentions(ctx, node.test, {loop_var}):
            return False
        if isinstance(node, cst.For) and isinstance(node.target, cst.Name) and node.target.value == loop_var:
            root = _root(ctx, node.iter)
            if root not in names or _sliced(node.iter):
                return False
            if root not in loop_vars:
                return True  # for m in messages: the whole history
            loop_var = root  # for block in m["content"]: the loop over m decides
        if isinstance(node, (cst.FunctionDef, cst.ClassDef, cst.While)):
            return False
    return False


def _sliced(node) -> bool:
    """`messages[:-12]`, `m["content"][1:]`: a part of the list, anywhere along the subscripts."""
    while isinstance(node, cst.Subscript):
        if any(isinstance(e.slice, cst.Slice) for e in node.slice):
            return True
        node = node.value
    return False


def _constant(node) -> bool:
    if isinstance(node, (cst.SimpleString, cst.Integer, cst.Float)):
        return True
    if isinstance(node, cst.ConcatenatedString):
        return _constant(node.left) and _constant(node.right)
    return isinstance(node, cst.Name) and node.value in ("True", "False", "None")


def _only_mentions(ctx, test, allowed: set[str]) -> bool:
    """The test reads nothing but the loop's message (and constants, `isinstance`, `len`, `str`)."""
    for n in descendants(test):
        if isinstance(n, cst.Name) and n.value not in allowed and n.value not in ("isinstance", "len", "str", "dict", "list",
                                                                                   "True", "False", "None"):
            parent = ctx.parent(n)
            if isinstance(parent, cst.Attribute) and parent.attr is n:
                continue  # m.get / m.role: an attribute of an allowed name
            return False
    return True


def _system_put_first(ctx, insert: cst.Call) -> bool:
    """`history.insert(0, {"role": "system", ...})` (or under `if history[0]["role"] != "system":`): the system
    message put at the head of the list, the layout every request has, not a message slipped between turns."""
    from cachelint.check.callsites import is_system_message
    from cachelint.check.history import leading_repair, under_system_role_test

    if len(insert.args) < 2 or ctx.code(insert.args[0].value) != "0":
        return False
    return is_system_message(insert.args[1].value) or under_system_role_test(ctx, insert)


def _has_late_slice(ctx, value, target: str) -> bool:
    """history[-20:] or [history[0]] + history[-20:] anywhere in the new value."""
    return any(isinstance(n, cst.Subscript) and ctx.code(n.value) == target and _slice_starts_late(n) for n in descendants(value))


def _is_marker_or_newest(ctx, sub: cst.Subscript, target: str) -> bool:
    """Moving a cache_control marker is no rewrite; neither is editing the newest message (history[-1])."""
    keys = []
    node = sub
    while isinstance(node, cst.Subscript):
        index = node.slice[0].slice
        keys.append(ctx.code(index.value) if isinstance(index, cst.Index) else ":")
        node = node.value
    if any(k.strip("'\"") == "cache_control" for k in keys):
        return True
    return ctx.code(node) == target and keys and keys[-1] == "-1"


def _slice_starts_late(sub: cst.Subscript) -> bool:
    for element in sub.slice:
        index = element.slice
        if isinstance(index, cst.Slice) and index.lower is not None:
            return True
    return False


def _uses_outside_input(ctx, assign: cst.Assign) -> bool:
    """`message["content"] = message["content"][:tool_size]`: the value the helper writes depends on something besides
    the message itself (a size, a turn's data), so an earlier message comes out otherwise on a later turn; a helper that
    only normalizes each message from itself (`message["content"].rstrip()`, a role renamed) is left alone."""
    import builtins

    edited = {_root(ctx, t.target) for t in assign.targets}
    nodes = descendants(assign.value)
    bound = {n.value for c in nodes if isinstance(c, cst.CompFor) for n in descendants(c.target) if isinstance(n, cst.Name)}
    return any(isinstance(n, cst.Name) and n.value not in edited and n.value not in bound and not hasattr(builtins, n.value)
               and not (isinstance(ctx.parent(n), cst.Attribute) and ctx.parent(n).attr is n) for n in nodes)


def _root(ctx, node) -> str:
    while isinstance(node, cst.Subscript):
        node = node.value
    return ctx.code(node)


def _targets(node):
    if isinstance(node, (cst.Tuple, cst.List)):
        return [e.value for e in node.elements]
    return [node]
