"""Drives zhiku's MCP server with the official Python client (PyPI `mcp`).

    python client.py stdio ZHIKU_BIN KB_DIR QUESTION QUERY
    python client.py http URL TOKEN QUESTION QUERY

Lists the tools and resources, calls search_knowledge and ask_knowledge, reads one document
resource, checks that a bad argument is refused, and prints one JSON object.
"""

import asyncio
import json
import sys

from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client
from mcp.shared.exceptions import MCPError


def structured(result):
    if result.structured_content is not None:
        return result.structured_content
    return json.loads(result.content[0].text)


async def exercise(session, question, query):
    init = await session.initialize()
    tools = await session.list_tools()
    search = await session.call_tool("search_knowledge", {"query": query, "k": 5})
    ask = await session.call_tool("ask_knowledge", {"question": question})
    resources = await session.list_resources()
    first = resources.resources[0]
    read = await session.read_resource(str(first.uri))
    try:
        await session.call_tool("search_knowledge", {"query": "", "k": 5})
        refused = None
    except MCPError as e:
        refused = str(e)
    try:
        await session.read_resource("zhiku://documents/no-such-document")
        missing = None
    except MCPError as e:
        missing = str(e)
    return {
        "server": init.server_info.name,
        "protocol": str(init.protocol_version),
        "tools": sorted(t.name for t in tools.tools),
        "tool_schemas": {t.name: t.input_schema for t in tools.tools},
        "search": structured(search),
        "search_is_error": bool(search.is_error),
        "ask": structured(ask),
        "resources": [{"uri": str(r.uri), "name": r.name, "title": r.title} for r in resources.resources],
        "read_uri": str(first.uri),
        "read_text": read.contents[0].text,
        "refused_empty_query": refused,
        "missing_resource": missing,
    }


async def main():
    mode = sys.argv[1]
    if mode == "stdio":
        _, _, binary, kb, question, query = sys.argv
        params = StdioServerParameters(command=binary, args=["--kb", kb, "mcp"])
        async with stdio_client(params) as (read, write):
            async with ClientSession(read, write) as session:
                out = await exercise(session, question, query)
    elif mode == "http":
        _, _, url, token, question, query = sys.argv
        client = create_mcp_http_client(headers={"Authorization": f"Bearer {token}"})
        async with client:
            async with streamable_http_client(url, http_client=client) as (read, write):
                async with ClientSession(read, write) as session:
                    out = await exercise(session, question, query)
    else:
        raise SystemExit(f"unknown mode {mode}")
    print(json.dumps(out, ensure_ascii=False))


if __name__ == "__main__":
    asyncio.run(main())
