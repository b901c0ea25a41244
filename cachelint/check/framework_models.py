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
})

# the modules they are imported from (a module of the table's shorter names covers its longer ones)
CLAUDE_MODULES = frozenset(name.rsplit(".", 1)[0] for name in CLAUDE_MODELS)
