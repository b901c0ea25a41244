"""Chat client for MCP servers (shaped after the MCP quickstart client), Claude as the model."""

from __future__ import annotations

import asyncio
import sys
from contextlib import AsyncExitStack

from anthropic import AsyncAnthropic
from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client

MODEL = "claude-sonnet-4-5"


class MCPClient:
    def __init__(self) -> None:
        self.session: ClientSession | None = None
        self.sessions: dict[str, ClientSession] = {}
        self.exit_stack = AsyncExitStack()
        self.anthropic = AsyncAnthropic()

    async def connect_to_server(self, name: str, script: str) -> None:
        command = "python" if script.endswith(".py") else "node"
        params = StdioServerParameters(command=command, args=[script], env=None)
        read, write = await self.exit_stack.enter_async_context(stdio_client(params))
        session = await self.exit_stack.enter_async_context(ClientSession(read, write))
        await session.initialize()
        self.sessions[name] = session
        self.session = self.session or session

    async def process_query(self, query: str) -> str:
        messages = [{"role": "user", "content": query}]
        response = await self.session.list_tools()
        available_tools = [
            {"name": tool.name, "description": tool.description, "input_schema": tool.inputSchema}
            for tool in response.tools  # one server lists its tools in its own fixed order: no CL201
        ]
        final_text = []
        while True:
            reply = await self.anthropic.messages.create(model=MODEL, max_tokens=1000, messages=messages, tools=available_tools)  # expect: CL501
            messages.append({"role": "assistant", "content": reply.content})
            calls = [c for c in reply.content if c.type == "tool_use"]
            final_text += [c.text for c in reply.content if c.type == "text"]
            if not calls:
                return "\n".join(final_text)
            results = []
            for call in calls:
                result = await self.session.call_tool(call.name, call.input)
                results.append({"type": "tool_result", "tool_use_id": call.id, "content": result.content})
            messages.append({"role": "user", "content": results})

    async def all_tools(self) -> list[dict]:
        """Tools of every connected server, prefixed with the server name, in a stable order."""
        tools = []
        for name in sorted(self.sessions):
            listed = await self.sessions[name].list_tools()
            tools.extend({"name": f"{name}__{t.name}", "description": t.description or "", "input_schema": t.inputSchema}
                         for t in listed.tools)
        return sorted(tools, key=lambda t: t["name"])

    async def ask_all(self, messages: list[dict]):
        return await self.anthropic.messages.create(model=MODEL, max_tokens=1000, messages=messages, tools=await self.all_tools())

    async def cleanup(self) -> None:
        await self.exit_stack.aclose()


async def main() -> None:
    client = MCPClient()
    try:
        await client.connect_to_server("local", sys.argv[1])
        while (query := input("\nQuery: ").strip()) != "quit":
            print(await client.process_query(query))
    finally:
        await client.cleanup()


if __name__ == "__main__":
    asyncio.run(main())
