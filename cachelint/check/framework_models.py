"""The frameworks' Claude chat models: classes an app makes to talk to Anthropic through a framework.

One table for both the gate (which modules may make one) and CL501 (a model made in a tree that sets no
breakpoint anywhere), with what each framework is told to cache with.
"""

from __future__ import annotations

import re

CLAUDE_MODELS = frozenset({
    "llama_index.llms.anthropic.Anthropic", "llama_index.llms.anthropic.base.Anthropic",
    "llama_index.multi_modal_llms.anthropic.AnthropicMultiModal", "llama_index.multi_modal_llms.anthropic.base.AnthropicMultiModal",
    "langchain_anthropic.ChatAnthropic", "langchain_anthropic.chat_models.ChatAnthropic",
    "langchain_community.chat_models.ChatAnthropic", "langchain_community.chat_models.anthropic.ChatAnthropic",
    "langchain.chat_models.ChatAnthropic",
    # agent SDKs: strands (AWS), pydantic-ai, agno, autogen
    "strands.models.anthropic.AnthropicModel", "strands.models.AnthropicModel",
    "pydantic_ai.models.anthropic.AnthropicModel",
    "agno.models.anthropic.Claude", "agno.models.anthropic.claude.Claude",
    "autogen_ext.models.anthropic.AnthropicChatCompletionClient",
})

# framework models that serve Claude among other models: they count where the model they are made with is a Claude
# model (written there, or a setting in a project that names one); Bedrock's strands model serves Claude when no
# model is given
ANY_PROVIDER_MODELS = frozenset({
    "strands.models.bedrock.BedrockModel", "strands.models.BedrockModel",
    "strands.models.litellm.LiteLLMModel", "strands.models.LiteLLMModel",
    "agno.models.aws.Claude", "agno.models.aws.claude.Claude",
    "langchain_aws.ChatBedrock", "langchain_aws.ChatBedrockConverse", "langchain_aws.chat_models.ChatBedrock",
    "langchain_aws.chat_models.ChatBedrockConverse", "langchain_aws.chat_models.bedrock.ChatBedrock",
    "langchain_aws.chat_models.bedrock_converse.ChatBedrockConverse",
    "langchain_litellm.ChatLiteLLM", "langchain_community.chat_models.ChatLiteLLM",
    "langchain_community.chat_models.litellm.ChatLiteLLM",
})

# serves Claude when no model is named
CLAUDE_BY_DEFAULT = frozenset({"strands.models.bedrock.BedrockModel", "strands.models.BedrockModel",
                               "agno.models.aws.Claude", "agno.models.aws.claude.Claude"})

# the keywords a framework model turns its own prompt caching on with (strands `cache_prompt="default"` /
# `cache_tools=`, agno `cache_system_prompt=True`, pydantic-ai's `anthropic_cache_*` settings)
CACHE_SWITCH = ("cache_prompt", "cache_tools", "cache_config", "cache_system_prompt", "anthropic_cache_instructions",
                "anthropic_cache_tool_definitions", "anthropic_cache_messages", "anthropic_cache")

# an agent made with a model string, which names the provider: pydantic-ai's `Agent("anthropic:claude-sonnet-4-5")`
AGENT_WITH_MODEL_STRING = frozenset({"pydantic_ai.Agent", "pydantic_ai.agent.Agent"})

# the modules they are imported from (a module of the table's shorter names covers its longer ones)
CLAUDE_MODULES = frozenset(name.rsplit(".", 1)[0] for name in CLAUDE_MODELS | ANY_PROVIDER_MODELS | AGENT_WITH_MODEL_STRING)

# the keywords a framework model is told its model with
MODEL_KEYWORDS = ("model", "model_name", "model_id", "id")

# a parameter that names the model itself (not a judge's, a summarizer's or another role's)
MODEL_PARAM = re.compile(r"^(?:model|model_name|model_id|llm|llm_model|llm_name|chat_model|default_model)$")
# a default naming another provider's model or the provider itself
OTHER_PROVIDER_MODEL = re.compile(r"^(?:openai|azure|gemini|google|mistral|groq|ollama|gpt-|o[134]\b|o[134]-|chatgpt|llama|qwen|deepseek)", re.I)

# pydantic-ai's Agent made with a model string: "anthropic:claude-sonnet-4-5", "bedrock:us.anthropic.claude-..."
PYDANTIC_CLAUDE = re.compile(r"^(?:anthropic|bedrock|google-vertex):.*claude-(?!2|instant)", re.I)


def caching_advice(name: str) -> str:
    """How the framework that makes the model `name` (a qualified name of the tables above) is told to set the
    breakpoints itself."""
    short = name.rsplit(".", 1)[-1]
    package = name.split(".")[0]
    if package == "strands" and short == "BedrockModel":
        return 'make it with `cache_config=CacheConfig(strategy="auto")` (or put a cachePoint block after the system prompt)'
    if package == "strands" and short == "LiteLLMModel":
        return 'pass `cache_control_injection_points` in its params (`[{"location": "message", "role": "system"}]`)'
    if package == "strands":
        return 'give the agent its system prompt as content blocks with a `{"cachePoint": {"type": "default"}}` block after them'
    if package == "agno":
        return "make it with `cache_system_prompt=True`"
    if package == "pydantic_ai":
        return "turn on `anthropic_cache_instructions` (and `anthropic_cache_tool_definitions`) in its model settings"
    if package == "autogen_ext":
        return "this client sets no breakpoint of its own: send the long prefix through a client that marks it with cache_control"
    return "mark the static prefix (the system prompt, or the last message) with cache_control"
