"""Drives zhiku's MCP server with the official Python client (PyPI `mcp`).

    python client.py stdio ZHIKU_BIN KB_DIR QUESTION QUERY [FOREIGN_DOC]
    python client.py http URL TOKEN QUESTION QUERY [FOREIGN_DOC]

Lists the tools and resources, calls search_knowledge and ask_knowledge, follows the first hit
to its section with read_document, reads one document resource, checks that a bad argument is
refused and that FOREIGN_DOC (a document of another scope) reads as missing, and prints one
JSON object.
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


async def refusal(call):
    try:
        await call
        return None
    except MCPError as e:
        return str(e)


async def exercise(session, question, query, foreign):
    init = await session.initialize()
    tools = await session.list_tools()
    search = await session.call_tool("search_knowledge", {"query": query, "k": 5})
    ask = await session.call_tool("ask_knowledge", {"question": question})
    # The next turn of the conversation: the earlier question and answer go back as history.
    follow_up = await session.call_tool(
        "ask_knowledge",
        {
            "question": "那 beta 客户呢？",
            "history": [{"question": question, "answer": structured(ask)["answer"]}],
        },
    )
    hit = structured(search)["hits"][0]
    section = await session.call_tool(
        "read_document", {"id": hit["doc_id"], "section": hit["section"]}
    )
    whole = await session.call_tool("read_document", {"id": hit["doc_id"]})
    missing_read = await refusal(session.call_tool("read_document", {"id": "no-such-document"}))
    foreign_read = await refusal(session.call_tool("read_document", {"id": foreign}))
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
        "follow_up": structured(follow_up),
        "resources": [{"uri": str(r.uri), "name": r.name, "title": r.title} for r in resources.resources],
        "read_uri": str(first.uri),
        "read_text": read.contents[0].text,
        "refused_empty_query": refused,
        "missing_resource": missing,
        "hit": hit,
        "read_section": structured(section),
        "read_whole": structured(whole),
        "missing_read": missing_read,
        "foreign_read": foreign_read,
    }


async def main():
    mode = sys.argv[1]
    foreign = sys.argv[6] if len(sys.argv) > 6 else "no-such-document-either"
    if mode == "stdio":
        binary, kb, question, query = sys.argv[2:6]
        params = StdioServerParameters(command=binary, args=["--kb", kb, "mcp"])
        async with stdio_client(params) as (read, write):
            async with ClientSession(read, write) as session:
                out = await exercise(session, question, query, foreign)
    elif mode == "http":
        url, token, question, query = sys.argv[2:6]
        client = create_mcp_http_client(headers={"Authorization": f"Bearer {token}"})
        async with client:
            async with streamable_http_client(url, http_client=client) as (read, write):
                async with ClientSession(read, write) as session:
                    out = await exercise(session, question, query, foreign)
    else:
        raise SystemExit(f"unknown mode {mode}")
    print(json.dumps(out, ensure_ascii=False))


if __name__ == "__main__":
    asyncio.run(main())
