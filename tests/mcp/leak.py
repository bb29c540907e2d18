"""The MCP routes of the access leak test (crates/app/tests/access_leaks.rs), through the
official Python client (PyPI `mcp`) over zhiku serve's /mcp with a person's token.

    python leak.py URL TOKEN < items.jsonl

Each stdin line is {"question": …, "doc_id": …}. For each, calls search_knowledge and
ask_knowledge with the question, read_document and the zhiku://documents/ resource of doc_id,
and prints one JSON line {"item": n, "route": …, "raw": …} per call, raw being everything the
server sent back (the result, or the error it refused with). First, one line for the resource
list ({"route": "resources", "uris": […]}).
"""

import asyncio
import json
import sys
from urllib.parse import quote

from mcp import ClientSession
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client
from mcp.shared.exceptions import MCPError


def emit(**line):
    print(json.dumps(line, ensure_ascii=False), flush=True)


async def raw(call):
    try:
        result = await call
        return json.dumps(result.model_dump(mode="json"), ensure_ascii=False)
    except MCPError as e:
        return f"error: {e}"


async def main():
    url, token = sys.argv[1:3]
    items = [json.loads(line) for line in sys.stdin if line.strip()]
    client = create_mcp_http_client(headers={"Authorization": f"Bearer {token}"})
    async with client:
        async with streamable_http_client(url, http_client=client) as (read, write):
            async with ClientSession(read, write) as session:
                await session.initialize()
                listed = await session.list_resources()
                emit(route="resources", uris=[str(r.uri) for r in listed.resources],
                     raw=json.dumps(listed.model_dump(mode="json"), ensure_ascii=False))
                for n, item in enumerate(items):
                    q, doc = item["question"], item["doc_id"]
                    emit(item=n, route="mcp search_knowledge",
                         raw=await raw(session.call_tool("search_knowledge", {"query": q, "k": 20})))
                    emit(item=n, route="mcp ask_knowledge",
                         raw=await raw(session.call_tool("ask_knowledge", {"question": q})))
                    emit(item=n, route="mcp read_document",
                         raw=await raw(session.call_tool("read_document", {"id": doc})))
                    emit(item=n, route="mcp resource",
                         raw=await raw(session.read_resource(f"zhiku://documents/{quote(doc, safe='')}")))


if __name__ == "__main__":
    asyncio.run(main())
