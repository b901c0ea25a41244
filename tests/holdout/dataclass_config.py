"""Dataclass-based configuration for the contract-review assistant."""
from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from datetime import datetime
from pathlib import Path

import anthropic


@dataclass(frozen=True)
class CacheConfig:
    system_ttl: str = "1h"
    history_ttl: str = "5m"


@dataclass(frozen=True)
class AssistantConfig:
    model: str = "claude-sonnet-4-5"
    max_tokens: int = 4096
    playbook_path: Path = Path("playbooks/contracts.md")
    cache: CacheConfig = field(default_factory=CacheConfig)
    created_at: datetime = field(default_factory=datetime.now)
    tags: tuple[str, ...] = ("legal", "contracts")

    def fingerprint(self) -> str:
        data = asdict(self)
        data["created_at"] = self.created_at.isoformat()
        return json.dumps(data, default=str)


class ContractAssistant:
    def __init__(self, config: AssistantConfig) -> None:
        self.config = config
        self.client = anthropic.Anthropic()
        self.playbook = config.playbook_path.read_text()
        self.messages: list[dict] = []

    def _system(self) -> list[dict]:
        return [{
            "type": "text",
            "text": self.playbook,
            "cache_control": {"type": "ephemeral", "ttl": self.config.cache.system_ttl},
        }]

    def ask(self, text: str) -> str:
        for m in self.messages:
            for block in m["content"]:
                block.pop("cache_control", None)
        self.messages.append({"role": "user", "content": [
            {"type": "text", "text": text, "cache_control": {"type": "ephemeral", "ttl": self.config.cache.history_ttl}},
        ]})
        resp = self.client.messages.create(
            model=self.config.model,
            max_tokens=self.config.max_tokens,
            system=self._system(),
            messages=self.messages,
        )
        answer = resp.content[0].text
        self.messages.append({"role": "assistant", "content": [{"type": "text", "text": answer}]})
        return answer


if __name__ == "__main__":
    cfg = AssistantConfig()
    print("config", cfg.fingerprint())
    bot = ContractAssistant(cfg)
    while (line := input("> ")).strip():
        print(bot.ask(line))
