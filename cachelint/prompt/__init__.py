"""The canonical prompt model and the provider adapters that build it."""

from cachelint.prompt.load import Exchange, LoadedRequest, build_prompt, exchange_from_json, load_request
from cachelint.prompt.model import Block, Prompt

__all__ = ["Block", "Exchange", "LoadedRequest", "Prompt", "build_prompt", "exchange_from_json", "load_request"]
