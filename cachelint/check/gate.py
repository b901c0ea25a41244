"""Which modules get the analysis at all: cheap text tests, run on the source before any metadata is computed.

Most files of a tree never build or send a prompt; for them the costly part (scopes, names, data flow) is
skipped. Each test here is one regular expression or a short scan, named for the shape it looks for. A rule
that judges prompt-shaped data without a request in sight adds its own test here, so the gate stays in one place.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass

from cachelint.check.countdown_windows import QUICK as COUNTDOWN_QUICK
from cachelint.check.framework_agents import QUICK as AGENT_SWITCH
from cachelint.check.module import TEMPLATE_NAME
from cachelint.check.grown_system import QUICK as GROWN_SYSTEM
from cachelint.check.media_windows import QUICK as MEDIA_KEEP
from cachelint.check.framework_memory import WINDOWS
from cachelint.check.framework_models import CLAUDE_MODULES
from cachelint.check.framework_rag import FRAMEWORK_RAG
from cachelint.check.history import FORMAT_QUICK, mentions_history_rewrite
from cachelint.check.model_routing import QUICK as ROUTED_QUICK
from cachelint.check.renderers import FILL_VOLATILE, PLACEHOLDER_FILL
from cachelint.check.schema_after_question import QUICK as QUESTION_SLOT, SCHEMA as SCHEMA_SLOT
from cachelint.check.schema_sets import SCHEMA_CHOICES
from cachelint.check.set_text import MATERIAL as SET_MATERIAL, QUICK as SET_TEXT
from cachelint.check.text_history import HISTORY_WORDS


@dataclass(frozen=True, slots=True)
class Needs:
    """A named pattern and the texts every match of it holds (at least one of `texts`; lower-case ones for a
    pattern that ignores case). `search` runs the regular expression only on a source that holds one: a plain
    substring test is many times cheaper, and most modules of a tree hold none. Same answers as the pattern's own
    `search`."""

    pattern: re.Pattern[str]
    texts: tuple[str, ...]

    def search(self, source: str) -> re.Match[str] | None:
        text = source
        if self.pattern.flags & re.IGNORECASE:
            if any(char in source for char in _FOLDED_TO_ASCII):
                return self.pattern.search(source)
            text = source.lower()
        if not any(needed in text for needed in self.texts):
            return None
        return self.pattern.search(source)


# the characters IGNORECASE matches to an ASCII letter (i, s, k) that str.lower() does not turn into that letter
# alone: a source with one is searched as is
_FOLDED_TO_ASCII = "\u0130\u0131\u017f\u212a"


SDK_IMPORT = re.compile(r"^[ \t]*(?:from[ \t]+(?:anthropic|openai|litellm)\b|import[ \t][^#\n]*\b(?:anthropic|openai|litellm)\b)", re.M)
# a completion call on a client the module never imports (a framework injects it): recognized by shape
CALL_SHAPE = re.compile(r"\.(?:chat\.completions|messages|responses)(?:\.with_raw_response|\.with_streaming_response)?\.(?:create|acreate|stream|parse)\("
                        r"|(?i:llm|client|model|provider)\w*\.a?(?:chat_|create_|get_|create_chat_)?completion\((?=[\s\S]{0,400}?\bmessages\s*=)")
BEDROCK_CALL = re.compile(r"\.(?:converse|converse_stream|invoke_model|invoke_model_with_response_stream)\(")
# a message list built here and sent elsewhere: {"role": "system", ...}
SYSTEM_MESSAGE = re.compile(r"""["']role["']\s*:\s*["'](?:system|developer)["']|\bdict\(\s*role\s*=\s*["'](?:system|developer)["']""")
# a request posted to a provider's HTTP API without an SDK (callsites._http_site): its endpoint, or Anthropic's header
HTTP_API = re.compile(r"""/v1/messages\b|/chat/completions\b|/v1/responses\b|["']anthropic-version["']""")

PROMPT_SHAPED_CODES = frozenset({"CL201", "CL301", "CL401"})  # rules with checks that need no request in sight
# messages rendered from a history (CL102 / CL103: renderers.py): a message or text block, and an unordered source or json.dumps
RENDERED_MESSAGE = Needs(re.compile(r"""["']role["']\s*:|\brole\s*=|["']type["']\s*:\s*["']text["']"""), ("role", "'text'", '"text"'))
RENDERED_HAZARD = re.compile(r"json\.dumps|\bset\(|\bfrozenset\(|listdir|scandir|glob|iterdir|\.join\(\s*\{|\{(?:[^{}\n]|\{[^{}\n]*\})*\bfor\b")
# a fresh id or time written into rendered messages (CL101: renderers.py)
RENDERED_VOLATILE = re.compile(r"\buuid\d?\(|\.now\(|\btime\(\)|\brandom\.|\btoken_hex\(|\burandom\(")
# ... in a loop over stored turns (renderers.STORED_TURNS)
LOOP_OVER_TURNS = re.compile(r"\bfor\b[^\n]*\bin\b[^\n]*(?:histor|messages|msgs|conversation|convo|turns|records|quer|exchanges|dialog|transcript|chat|memor|trajector)", re.I)

# a system prompt built as a message object or by a builder named for it, sent elsewhere (CL101-CL103: renderers.py)
SYSTEM_PROMPT_BUILT = Needs(re.compile(r"""\brole\s*=\s*(?:["'](?:system|developer)["']|[\w.]*system\w*role)|SystemMessage\(|\(\s*["']system["']\s*,|def\s+\w*(?:system_?(?:prompt|message|msg|instructions?)|sys_?prompt)s?\(|\b(?:system_?(?:prompt|message|msg)|sys_?prompt)s?\s*=(?!=)"""),
                            ("role", "SystemMessage(", "system", "sys_p", "sysp"))


# a module-level function named for prompts or templates, or taking one: a renderer other modules may share
SHARED_RENDERER_DEF = re.compile(r"^(?:async[ \t]+)?def[ \t]+\w*(?:prompt|template|instruction)\w*[ \t]*\(", re.M | re.I)

# requests of one conversation that differ (CL401 / CL402): an LLM handed out per call by a factory
# (`self.get_llm(NAME)`), or a forced tool_choice reset once tools were used
CONVERSATION_SWITCH = Needs(re.compile(r"""\b_?(?:(?:get|make|create|build|new|load|select|pick|choose|resolve)_(?:llm|lm|chat_model|llm_client|agent_llm)|(?:get|select|pick|choose|resolve)_model)\(|(?:\.tool_choice|\[["']tool_choice["']\]|replace\([^()]*\btool_choice)\s*=\s*(?:None|["'](?:auto|none)["'])|^[ \t]*\w*tool_choice[ \t]+=[ \t]+(?:None|["'](?:auto|none)["'])""", re.M),
                            ("_llm(", "_lm(", "_chat_model(", "_llm_client(", "get_model(", "select_model(", "pick_model(", "choose_model(",
                             "resolve_model(", "tool_choice"))

# a framework's Claude chat model (CL501: cl501's _framework_models): llama_index's Anthropic, langchain's ChatAnthropic
FRAMEWORK_CLAUDE_IMPORT = re.compile(r"^[ \t]*from[ \t]+(?:" + "|".join(re.escape(m) for m in sorted(CLAUDE_MODULES)) + r")\b", re.M)

# an agent middleware's hook around each model call (CL202: middleware.py)
MODEL_CALL_HOOK = re.compile(r"def\s+a?(?:wrap_model_call|modify_model_request)\(")

# a framework memory class that keeps a sliding window (CL301: framework_memory.py)
WINDOW_MEMORY = re.compile(r"\b(?:" + "|".join(sorted({name.rsplit(".", 1)[-1] for name in WINDOWS})) + r")\b")

# a request body with Anthropic's required keys, in a module that names Anthropic or Claude
ANTHROPIC_PAYLOAD = re.compile(r"""["']max_tokens["']\s*:""")
CLAUDE_WORD = re.compile(r"anthropic|claude", re.I)

# a framework's message that its serializer marks with cache_control (CL502): UserMessage(content=..., cache=True)
CACHE_FLAG = re.compile(r"Message\([^()]*\bcache\s*=\s*True")

# tools merged from several providers or kept in a set (CL201): `client.get_tools()`, `for t in client.tools:`,
# `for conn, listed in zip(self.connections, results):`, `self.enabled_tools = set()`, `for tool_name in set(names):`
TOOL_SOURCES = Needs(re.compile(r"list_tools\(|get_tools\(|\bin\s+\w+\.tools\s*:|\bin\s+zip\([\w.]*(?:server|client|connection|session)|self\.\w*(?:tool|function)\w*\s*(?::\s*[\w.]*Set\b[^=\n]*)?=\s*set\(\)"
                               r"|\bfor\s+\w*(?:tool|function)\w*\s+in\s+(?:list\()?(?:set|frozenset)\("
                               r"|(?:list|tuple)\(\s*(?:set|frozenset)\([^\n]*\n(?:[^\n]*\n){0,12}?[^\n]*\b\w*(?:tool|function)s?\w*\[\w+\]\s*="  # names = list(set(a + b)) ... tools[name] = ...
                               r"|\b\w*(?:tool|function|enabled|allowed|selected)\w*\s*:\s*(?:frozen|abstract)?set\[", re.I),  # def run(enabled: set[str])
                     ("list_tools(", "get_tools(", ".tools", "zip(", "set()", "set(", "et["))

# a tool added to an agent or a list of tools: add_tool(agent, t), self.tools.append(t), tools_to_add.append(t)
TOOL_LOADING = re.compile(r"\b_?(?:load|register)_(?:\w+_)?(?:tools?|actions?|plugins?)_(?:file|def|definition|spec|schema)s?\(|\b_?(?:add|register|append|attach|include)_(?:\w+_)?tools?\(|\w*tools?\w*\.(?:append|extend|add|insert|register)\(", re.I)
# a generator named for the tools it yields (listings.TOOL_YIELDER), in a module that yields
TOOL_GENERATOR = re.compile(r"def\s+\w*(?:tools?|tool_?class|plugins?)\w*\(", re.I)

# tools set to nothing on a request object or passed as nothing: `self.req.func_tool = None`, `_build(..., tools=None)`
TOOLS_DROPPED = re.compile(r"\.\w*tools?(?:\s*:[^=\n]+)?\s*=\s*(?:None|\[\])|\.\w*tools?\.clear\(\)|\[[\"']tools[\"']\]\s*=\s*(?:None|\[\])|[(,]\s*tools\s*=\s*None\s*[,)]"
                           r"|\._?(?:reset|clear|remove|disable|drop|unset)_(?:\w+_)?(?:tools?|functions?|function_choice|tool_choice)(?:_settings)?\(")

# the end of a function's signature: `def run(self, tools=None):`, `        tools=None) -> str:`
SIGNATURE_END = re.compile(r"^\s*(?:async\s+)?def\b|\)\s*(?:->[^:\n]*)?:\s*(?:#.*)?$")


# `if turn == max_turns - 1:` / `elif count >= self.tool_call_limit:` followed by a tool list set on the next line
# round 19's shapes a module can hold with no request in sight: a list of tools handed to a discovery call in a loop
# over servers (conversation._list_handed_to_discovery); a conversation cut by age (age_window.py) or gathered back
# along a reply chain up to a count (chain_walk.py); tool-result clearing with no minimum (context_edits.py)
HANDED_DISCOVERY = Needs(re.compile(r"discover\w*\([^)]{0,300}?\b\w*tools\b", re.I), ("discover",))
AGE_WINDOW = Needs(re.compile(r"(?:time\(\)|now\(\)|utcnow\(\))\s*-"), ("time()", "now()"))
CHAIN_CAP = Needs(re.compile(r"\bwhile\b[^\n]*\blen\(\w*(?:messages|msgs|history|turns|chain|conversation)\)\s*<"), ("while",))
CONTEXT_EDIT = Needs(re.compile(r"clear_tool_uses_"), ("clear_tool_uses_",))
# a point that moves with the conversation: `self.round - self.len_observations`, `curr_step - idx`, `n - self.RECENT`
# (history.aged_out: the entries older than it dropped or stubbed out)
MOVING_CUTOFF = Needs(re.compile(r"(?:(?<!\w)\w*(?:round|step|turn|iteration)|len\([^()\n]*\))\s*-\s*(?:self\.)?[A-Za-z_]\w*|\bn - (?:self\.)?[A-Za-z_]"),
                      ("round", "step", "turn", "iteration", "len(", "n - "))

# `enable_tools=enable_tools and loops <= self.max_loops` (dropped_tools.tools_flag_off_past_a_limit); `current_tools =
# None` a few lines before a `continue` (dropped_tools._goes_round)
TOOLS_FLAG_LIMIT = re.compile(r"\b(?:enable|use|allow|include|with|send)_tools?(?:_use)?\s*=(?:\s*False\b|[^=\n][^\n]*[<>])", re.I)
TOOLS_OFF_GO_ROUND = re.compile(r"^[ \t]*\w*tools[ \t]*=[ \t]*(?:None|\[\])[ \t]*(?:#[^\n]*)?\n(?:[^\n]*\n){0,8}?[ \t]*continue\b", re.M)

RETRY_NOTE = re.compile(r"(?i)^[ \t]*\w*retry\w*[ \t]*(?:\+=|=[^=\n]*\+)[ \t]*\w*(?:prompt|message|query|instruction|task|input|request)\w*[ \t]*$", re.M)
FIRST_PASS_TOOL = re.compile(r"^[ \t]*if\b[^\n]*\b(?:depth|level|step|iteration|turn|round)\s*(?:==\s*0|<\s*1)\b[^\n]*:[ \t]*\n[ \t]*[\w.]*(?:tools?|functions|tool_list)\.(?:append|extend|insert)\(",
                             re.M | re.I)
DESCRIPTION_FILLED = re.compile(r"""\[["']description["']\]\s*=\s*(?:f["']|[^=\n]*\.format\()""")
LAST_PASS_TOOLS = re.compile(r"^[ \t]*(?:el)?if\b[^\n]*(?:max|limit|last|final)\w*[^\n]*:[ \t]*\n[ \t]*[\w.]*(?:tools?|tool_definitions|tool_defs|tool_specs|functions|tool_list)[ \t]*=[^=]",
                             re.M | re.I)


def holds_shared_renderer(source: str) -> bool:
    """A function named for prompts with a clock or a random value in the module: a prompt renderer other modules may
    call (shared_prompts.py), judged on CL101 alone (the module is not otherwise one that builds requests)."""
    return SHARED_RENDERER_DEF.search(source) is not None and RENDERED_VOLATILE.search(source) is not None


def _drops_tools(source: str) -> bool:
    """TOOLS_DROPPED outside a function's signature, where `tools=None` is a parameter's default."""
    for match in TOOLS_DROPPED.finditer(source):
        start, end = source.rfind("\n", 0, match.start()) + 1, source.find("\n", match.end())
        if not SIGNATURE_END.search(source[start:end if end >= 0 else len(source)]):
            return True
    return False


# a model set (`model = ...`, `self.model = ...`, `params["model"] = ...`), in a module that speaks of images or sizes
MODEL_SET = re.compile(r"""(?:\.|\b)(?:model|model_name|model_id|llm_model|current_model|selected_model|chat_model)\s*=(?!=)|\[["']model["']\]\s*=(?!=)""")

# a dict that spreads the tools beside other arguments: `{**base_kwargs, **tools_kwargs}`
SPREAD_TOOLS = re.compile(r"\{\s*\*\*[\w.]+\s*,\s*\*\*[\w.]*tool\w*\s*\}|\{\s*\*\*[\w.]*tool\w*\s*,\s*\*\*[\w.]+\s*\}")

# a call that hands a name as `messages=` and `tools=` (CL501: sender_calls.loops_through_a_sender)
TEMPLATE_ASSIGN = re.compile(rf"^{TEMPLATE_NAME}(?:\s*:\s*(?:str|(?:typing\.)?Final(?:\[str\])?))?\s*=\s*\(?\s*"
                             r"(?:(?:textwrap\.)?dedent\(\s*|(?:inspect\.)?cleandoc\(\s*)?[rRuU]?(?:\"\"\"|\'\'\')", re.M)
PROMPT_SENDER_LOOP = re.compile(r"\b(?:prompt|user_prompt|system_prompt|user_message|instructions?)\s*=\s*[A-Za-z_]")
PROMPT_JOIN = re.compile(r"\.join\(|\.format\(")
SENDER_LOOP = re.compile(r"\bmessages\s*=\s*[A-Za-z_]\w*\s*,(?:[^()]|\n)*?\btools\s*=|\btools\s*=\s*[\w.]+\s*,(?:[^()]|\n)*?\bmessages\s*=\s*[A-Za-z_]\w*\s*[,)]")

# text retrieved for the newest turn put into a system message (CL104: retrieved.py): `messages[0]["content"] +=`,
# or a line that names the system prompt and what was retrieved
RETRIEVED_INTO_SYSTEM = Needs(re.compile(r"(?:messages|msgs|history)\[0\](?:\[[^\]\n]+\]|\.content)\s*\+=|(?i:system)[^\n]*\b(?:knowledge|retriev\w*|memories|snippets)"
                                         r"|\b(?:knowledge|retriev\w*|memories|snippets)\b[^\n]*(?i:system)|\bpage_content\b"
                                         r"|\b(?:query|search|run|ask|retrieve|fetch)_\w*rag\w*\(|\brag_(?:search|query|retriev\w*|lookup|fetch)\w*\("),
                              ("messages[0]", "msgs[0]", "history[0]", "knowledge", "retriev", "memories", "snippets", "page_content",
                               "_rag", "rag_"))

# a conversation rendered into a prompt text (CL104: text_history.py): a `{history}` placeholder or an f-string's
# history expression, or `.format(chat_history=...)` of a template written elsewhere
TEXT_HISTORY = Needs(re.compile(rf"\{{[^{{}}\n]*(?:{HISTORY_WORDS})[^{{}}\n]*\}}|\.format\([^)]*\b\w*(?:{HISTORY_WORDS})\w*\s*=", re.I),
                     tuple(HISTORY_WORDS.split("|")))

# files listed from a directory (CL103: listings.py), in a module that speaks of prompt material
LISTING = Needs(re.compile(r"\b(?:glob|iglob|rglob|listdir|scandir|iterdir)\(|os\.walk\("), ("glob(", "listdir(", "scandir(", "iterdir(", "os.walk("))
PROMPT_MATERIAL_WORD = re.compile(r"prompt|example|instruction|template|few_?shot|knowledge|persona|guideline|skill|haystack|_manuals?\b|\bmanuals?\b", re.I)

# a tool list extended on each step (CL202: conversation.step_state_tools), sent as `tools=tools`
STEP_TOOLS = re.compile(r"\btools\.(?:append|extend)\(")


def sends_requests(source: str, call_patterns: Iterable[str] = ()) -> bool:
    """Whether the module imports an LLM SDK, calls a completion method by its shape, builds a system message
    or imports a configured call pattern's module: only then can the analysis find a request, so only then is
    the costly scope and name metadata computed."""
    if SDK_IMPORT.search(source) or CALL_SHAPE.search(source) or SYSTEM_MESSAGE.search(source) or HTTP_API.search(source):
        return True
    if "bedrock-runtime" in source and BEDROCK_CALL.search(source):
        return True  # a Bedrock runtime client's Converse or InvokeModel request (callsites._bedrock_site)
    roots = {name.split(".")[0] for name in call_patterns}
    return any(re.search(rf"^[ \t]*(?:from|import)[ \t]+{re.escape(root)}\b", source, re.M) for root in roots)


SET_TOOLS_HANDED = re.compile(r"\btools\s*=\s*(?:list|tuple)\(\s*\w+\s*\)")
TEMPLATE_CLOCK = re.compile(r"\{\{[^{}]*?\bnow\(\)")
# a constant named for a prompt or a system message, in any quote style (template_clocks.py)
PROMPT_ASSIGN = re.compile(r"^[A-Z0-9_]*(?:PROMPT|INSTRUCTIONS?|SYSTEM)[A-Z0-9_]*\s*(?::[^=\n]+)?=", re.M)

# a user message written ahead of a starred history in one list: `Message.user(question), *message_history`
QUESTION_FIRST = re.compile(r"(?:\.user\(|\b(?:HumanMessage|UserMessage)\(|[\"']role[\"']\s*:\s*[\"']user[\"']|\(\s*[\"'](?:user|human)[\"']\s*,)"
                            r"[^\[\]*]{0,200}(?:\*\s*|\]\s*\+\s*|\][^\[\]]{0,200}?\.extend\(\s*)[\w.]*"
                            r"(?:history|messages|msgs|conversation|convo|chat\w*|turns|dialog\w*|transcript)\b")

# a call that narrows a tool list given the run's state: `filter_tools_by_group_and_state(..., current_state=request.state)`
STATE_TOOL_FILTER = re.compile(r"(?i)\b(?:\w*(?:filter|allowed|visible|permitted|available)\w*tool\w*|tools?_(?:allowed|visible|permitted|for_state)\w*)"
                               r"\([\s\S]{0,300}?"
                               r"(?:state|last_function_response|last_tool|step|turn|iteration)")
# a model object bound with tools and sent a conversation: `llm.bind_tools(tools)`, `create_extractor(llm, tools=[...])`,
# then `chain.ainvoke(messages)` (CL202: bound_tools.py)
BOUND_TOOLS = re.compile(r"\.bind_tools\(|\btools\s*=")
BOUND_SEND = re.compile(r"\.a?(?:invoke|stream)\(\s*(?:\{\s*[\"']messages[\"']|\w*(?:messages|history|conversation|convo|chat|msgs|transcript|payload|input))")
# a clock, a random value or an id passed by keyword to a template's `.format(...)` (CL101: template_fill_clocks.py)
FILLED_CLOCK = re.compile(r"\b\w+\s*=\s*(?:[\w.]+\.)?(?:now|utcnow|time|strftime|uuid[14]|random|randint|choice)\(")
# a prompt builder filled section by section: `builder.add_section(...)`, `prompt_builder.add_customer_identity(...)`
BUILDER_ADD = re.compile(r"\b\w*(?:builder|prompt)\w*\.add\w*\(", re.I)


def narrow_shapes(source: str, codes: frozenset[str]) -> frozenset[str]:
    """The rules that judge a module no other gate opens, for one shape of it alone (each rule then runs only the
    check that shape is for, where `opened_alone` says so): a prompts module whose long templates other modules fill
    (CL104, static_tail.templates_filled_elsewhere), a loop that hands the app's sender a prompt built from the
    sections it wrote so far (CL501, sender_calls.py)."""
    found = set()
    if "CL104" in codes and TEMPLATE_ASSIGN.search(source) and long_template(source, 4096):
        found.add("CL104")
    if "CL101" in codes and ".format(" in source and FILLED_CLOCK.search(source) and long_template(source, 4096):
        found.add("CL101")  # a clock filled into a long template ahead of its static text (template_fill_clocks.py)
    if "CL101" in codes and "now()" in source and PROMPT_ASSIGN.search(source) and TEMPLATE_CLOCK.search(source):
        found.add("CL101")  # a clock read in a prompt template's own Jinja text (template_clocks.py)
    if "CL201" in codes and SET_TOOLS_HANDED.search(source) and re.search(r"\b(?:set|frozenset)\(|:\s*(?:set|Set|frozenset)\[", source):
        found.add("CL201")  # tools handed on as `tools=list(a_set)` (conversation._local_set_tools)
    if "CL104" in codes and QUESTION_FIRST.search(source):
        found.add("CL104")  # the newest question written ahead of a starred history (question_first.py)
    if "CL103" in codes and SET_TEXT.search(source) and SET_MATERIAL.search(source):
        found.add("CL103")  # prompt text made from a set (set_text.py)
    if "CL501" in codes and PROMPT_SENDER_LOOP.search(source) and re.search(r"\.(?:append|extend)\(", source) and PROMPT_JOIN.search(source):
        found.add("CL501")
    if AGENT_SWITCH.search(source):
        found |= codes & {"CL101", "CL301"}  # an agent framework's switch: a clock in the system message, a window over past runs
    if "CL104" in codes and RETRY_NOTE.search(source):
        found.add("CL104")  # a retry's note put ahead of the prompt just sent (retry_notes.py)
    if "CL104" in codes and QUESTION_SLOT.search(source) and SCHEMA_SLOT.search(source) and long_template(source, 300):
        found.add("CL104")  # a question asked before the database's description in a template (schema_after_question.py)
    if "CL202" in codes and STATE_TOOL_FILTER.search(source):
        found.add("CL202")  # tools narrowed per step by the run's state (state_tool_filters.py)
    if "CL202" in codes and BOUND_TOOLS.search(source) and BOUND_SEND.search(source):
        found.add("CL202")  # tools bound to a model object, switched within one conversation (bound_tools.py)
    if "CL203" in codes and FIRST_PASS_TOOL.search(source):
        found.add("CL203")  # a tool added on the first pass of a function that calls itself (dropped_tools.tools_added_on_the_first_pass)
    return frozenset(found)


def opened_alone(source: str) -> bool:
    """Whether a module is analysed only through `narrow_shapes`: no request in it, and no other shape."""
    return not sends_requests(source) and not holds_prompt_shapes(source, EVERY_CODE)


# every rule a gate can open a module for
EVERY_CODE = frozenset({"CL101", "CL102", "CL103", "CL104", "CL201", "CL202", "CL203", "CL301", "CL401", "CL402", "CL501",
                        "CL502", "CL503", "CL504", "CL505"})


def long_template(source: str, chars: int = 2048) -> bool:
    """A triple-quoted string of at least `chars` characters: half of static_tail.MIN_TAIL_CHARS (about 1,024
    tokens), which a prompt may reach in two sections."""
    for quote in ('"""', "'''"):
        start = source.find(quote)
        while start >= 0:
            end = source.find(quote, start + 3)
            if end < 0:
                break
            if end - start >= chars:
                return True
            start = source.find(quote, end + 3)
    return False


def holds_prompt_shapes(source: str, codes: frozenset[str]) -> bool:
    """Whether a module with no request in sight may still hold prompt-shaped data a rule judges on its own
    (a history class that cuts its messages, tools merged from servers, a model router)."""
    if codes & {"CL401", "CL402"} and CONVERSATION_SWITCH.search(source):
        return True
    if "CL401" in codes and MODEL_SET.search(source) and ROUTED_QUICK.search(source):
        return True  # a model picked from what the conversation holds (model_routing.py)
    if "CL401" in codes and FORMAT_QUICK.search(source):
        return True  # a side request of the conversation in another output format (history.format_switches)
    if "CL501" in codes and ("Anthropic" in source or "claude-" in source) and FRAMEWORK_CLAUDE_IMPORT.search(source):
        return True
    if "CL501" in codes and "tools" in source and SENDER_LOOP.search(source) and re.search(r"\.(?:append|extend)\(", source):
        return True  # a loop that hands its growing messages to the app's own sending function (sender_calls.py)
    if "CL501" in codes and "max_tokens" in source and ANTHROPIC_PAYLOAD.search(source) and CLAUDE_WORD.search(source):
        return True  # an Anthropic request body built here and posted elsewhere (cl501's _unsent_payloads)
    if "CL202" in codes and "tools" in source and MODEL_CALL_HOOK.search(source):
        return True  # tools filtered in an agent middleware's per-call hook (middleware.py)
    if "CL301" in codes and WINDOW_MEMORY.search(source):
        return True  # a framework's sliding-window memory class (framework_memory.py)
    if "CL301" in codes and "system" in source and GROWN_SYSTEM.search(source):
        return True  # the system message of a caller's list grown in place (grown_system.py)
    if "CL301" in codes and MEDIA_KEEP.search(source):
        return True  # the images of older messages stripped beyond the newest few (media_windows.py)
    if "CL502" in codes and CACHE_FLAG.search(source):
        return True
    if "CL201" in codes and HANDED_DISCOVERY.search(source):
        return True
    if "CL103" in codes and "set" in source and SCHEMA_CHOICES.search(source):
        return True  # a schema's choices made from a set (schema_sets.py)
    if "CL301" in codes and COUNTDOWN_QUICK.search(source) and "-= 1" in source:
        return True  # a part kept on the newest entries only, counted down in a walk back (countdown_windows.py)
    if "CL301" in codes and (AGE_WINDOW.search(source) or CHAIN_CAP.search(source) or CONTEXT_EDIT.search(source)
                             or MOVING_CUTOFF.search(source)):
        return True
    if ("CL201" in codes and TOOL_SOURCES.search(source)) or ("CL202" in codes and "tools=tools" in source and STEP_TOOLS.search(source)):
        return True
    if codes & {"CL101", "CL102", "CL103"} and SYSTEM_PROMPT_BUILT.search(source):
        return True
    if "CL104" in codes and RETRIEVED_INTO_SYSTEM.search(source):
        return True
    if "CL104" in codes and FRAMEWORK_RAG.search(source):
        return True  # a framework's prompt or chat engine that puts retrieved text in the system prompt (framework_rag.py)
    if codes & {"CL101", "CL104"} and TEXT_HISTORY.search(source):
        return True  # a history rendered into a prompt text behind this turn's values, or a clock (text_history.py)
    if "CL104" in codes and long_template(source) and (RENDERED_MESSAGE.search(source) is not None or BUILDER_ADD.search(source)):
        return True  # a prompt template long enough to be cached, in a message or a prompt builder's section (static_tail.py)
    if "CL203" in codes and LAST_PASS_TOOLS.search(source):
        return True  # tools emptied or narrowed once the steps reach their limit (dropped_tools.tools_dropped_on_a_last_pass)
    if "CL203" in codes and SPREAD_TOOLS.search(source):
        return True  # a step sent `{**base, **tools_kwargs}` in a loop, then `base` alone (dropped_tools.tools_left_out_after_the_loop)
    if "CL203" in codes and (TOOLS_FLAG_LIMIT.search(source) or TOOLS_OFF_GO_ROUND.search(source)):
        return True  # tools switched off past a step limit, or before the loop goes round (dropped_tools.py)
    if "CL203" in codes and _drops_tools(source):
        return True  # tools taken off a last step or a retry of the conversation (dropped_tools.py)
    if "CL202" in codes and DESCRIPTION_FILLED.search(source):
        return True  # a tool's description written with this turn's data (tool_descriptions.py)
    if "CL201" in codes and LISTING.search(source) and (TOOL_LOADING.search(source) or ("yield" in source and TOOL_GENERATOR.search(source))):
        return True  # tools loaded in a loop over a directory listing (listings.tools_loaded_from_listings)
    if "CL103" in codes and LISTING.search(source) and PROMPT_MATERIAL_WORD.search(source):
        return True  # prompt material read from a directory listing (listings.py)
    if "CL101" in codes and FILL_VOLATILE.search(source) and PLACEHOLDER_FILL.search(source) and re.search("prompt", source, re.I):
        return True  # a prompt template's placeholder filled with a clock (renderers.placeholder_fills)
    if "CL101" in codes and RENDERED_MESSAGE.search(source) is not None and RENDERED_VOLATILE.search(source) is not None \
            and LOOP_OVER_TURNS.search(source) is not None:
        return True  # a fresh id or time in messages rendered per turn (renderers.py)
    return (bool(codes & PROMPT_SHAPED_CODES) and mentions_history_rewrite(source)) or (
        bool(codes & {"CL102", "CL103"}) and RENDERED_MESSAGE.search(source) is not None and RENDERED_HAZARD.search(source) is not None)
