"""Drives zhiku's OpenAI-compatible endpoint through two application frameworks: LangChain's
ChatOpenAI (PyPI `langchain-openai`) and LlamaIndex's OpenAILike (PyPI
`llama-index-llms-openai-like`).

    python frameworks.py BASE_URL TOKEN QUESTION FOLLOW_UP

For each: the answer (plain and streamed), a follow-up in its conversation, and whatever of the
citations each framework hands its application. Prints one JSON object.
"""

import json
import sys


def langchain(base, token, question, follow_up):
    from langchain_openai import ChatOpenAI

    llm = ChatOpenAI(base_url=base, api_key=token, model="zhiku", max_retries=0, timeout=60)
    first = llm.invoke([("system", "Answer briefly."), ("human", question)])
    streamed = "".join(chunk.content for chunk in llm.stream([("human", question)]))
    second = llm.invoke([("human", question), ("ai", first.content), ("human", follow_up)])
    return {
        "answer": first.content,
        "streamed": streamed,
        "follow_up": second.content,
        "response_metadata": first.response_metadata,
        "additional_kwargs": first.additional_kwargs,
    }


def llama_index(base, token, question, follow_up):
    from llama_index.core.llms import ChatMessage
    from llama_index.llms.openai_like import OpenAILike

    llm = OpenAILike(api_base=base, api_key=token, model="zhiku", is_chat_model=True,
                     max_retries=0, timeout=60, context_window=8192)
    first = llm.chat([ChatMessage(role="user", content=question)])
    streamed = ""
    for chunk in llm.stream_chat([ChatMessage(role="user", content=question)]):
        streamed = chunk.message.content or streamed
    second = llm.chat([ChatMessage(role="user", content=question),
                       ChatMessage(role="assistant", content=first.message.content),
                       ChatMessage(role="user", content=follow_up)])
    raw = first.raw
    message = raw.choices[0].message if hasattr(raw, "choices") else None
    citations = (message.model_extra or {}).get("citations") if message is not None else None
    return {
        "answer": first.message.content,
        "streamed": streamed,
        "follow_up": second.message.content,
        "raw_citations": citations,
    }


def main():
    base, token, question, follow_up = sys.argv[1:5]
    print(json.dumps({
        "langchain": langchain(base, token, question, follow_up),
        "llama_index": llama_index(base, token, question, follow_up),
    }, ensure_ascii=False, default=str))


if __name__ == "__main__":
    main()
