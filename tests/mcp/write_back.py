"""Drives zhiku's MCP `add_knowledge` tool with the official Python client (PyPI `mcp`).

    python write_back.py URL TOKEN

Over streamable HTTP with a bearer token: writes a finding, writes it again, writes a light
edit of it, a refusal, a too-short text and an echo of the question, then searches for the
finding; prints one JSON object with every outcome.
"""

import asyncio
import json
import sys

from mcp import ClientSession
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client

FINDING = "alpha 仓库的夜间发货截止时间是晚上九点，九点以后的订单次日上午发出。"
EDITED = "alpha 仓库的夜间发货截止时间是晚上九点，九点以后的订单次日中午发出。"
QUESTION = "alpha 仓库的夜间发货截止时间是几点？"


def structured(result):
    if result.structured_content is not None:
        return result.structured_content
    return json.loads(result.content[0].text)


async def exercise(session):
    await session.initialize()
    tools = await session.list_tools()
    calls = {
        "first": {"text": FINDING, "question": QUESTION, "ttl": "7d"},
        "again": {"text": FINDING},
        "edited": {"text": EDITED},
        "refusal": {"text": "抱歉，我无法根据现有资料回答这个问题。", "question": QUESTION},
        "short": {"text": "九点。"},
        "echo": {"text": "请问 " + QUESTION, "question": QUESTION},
    }
    out = {"tools": sorted(t.name for t in tools.tools)}
    for name, args in calls.items():
        out[name] = structured(await session.call_tool("add_knowledge", args))
    search = await session.call_tool("search_knowledge", {"query": "夜间发货截止时间", "k": 3})
    out["search"] = structured(search)
    return out


async def main():
    url, token = sys.argv[1:3]
    client = create_mcp_http_client(headers={"Authorization": f"Bearer {token}"})
    async with client:
        async with streamable_http_client(url, http_client=client) as (read, write):
            async with ClientSession(read, write) as session:
                out = await exercise(session)
    print(json.dumps(out, ensure_ascii=False))


if __name__ == "__main__":
    asyncio.run(main())
