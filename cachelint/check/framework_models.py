"""The frameworks' Claude chat models: classes an app makes to talk to Anthropic through a framework.

One table for both the gate (which modules may make one) and CL501 (a model made in a tree that sets no
breakpoint anywhere).
"""

from __future__ import annotations

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
