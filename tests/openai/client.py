"""Drives zhiku's OpenAI-compatible endpoint with the official Python SDK (PyPI `openai`).

    python client.py BASE_URL TOKEN QUESTION FOLLOW_UP

Lists the models, asks QUESTION (plain and streamed), then FOLLOW_UP as the next turn of the
conversation, reading the citations back from the message's structured fields, and prints one
JSON object. A refused model name is reported as the SDK raises it.
"""

import json
import sys

import openai


def citations_of(message):
    extra = message.model_extra or {}
    return extra.get("citations"), [a.model_dump() for a in (message.annotations or [])]


def main():
    base, token, question, follow_up = sys.argv[1:5]
    client = openai.OpenAI(base_url=base, api_key=token, max_retries=0, timeout=60)
    models = [m.id for m in client.models.list()]
    plain = client.chat.completions.create(
        model="zhiku", messages=[{"role": "system", "content": "Answer briefly."},
                                 {"role": "user", "content": question}],
        temperature=0.2, max_tokens=256)
    message = plain.choices[0].message
    citations, annotations = citations_of(message)
    streamed_text, streamed_citations, streamed_annotations, finish = "", None, [], None
    streamed_usage = None
    for chunk in client.chat.completions.create(
            model="zhiku", messages=[{"role": "user", "content": question}], stream=True,
            stream_options={"include_usage": True}):
        if not chunk.choices:
            streamed_usage = chunk.usage.model_dump() if chunk.usage else None
            continue
        choice = chunk.choices[0]
        if choice.delta.content:
            streamed_text += choice.delta.content
        extra = chunk.model_extra or {}
        if extra.get("citations") is not None:
            streamed_citations = extra["citations"]
        delta_extra = choice.delta.model_extra or {}
        if delta_extra.get("annotations"):
            streamed_annotations = delta_extra["annotations"]
        if choice.finish_reason:
            finish = choice.finish_reason
    second = client.chat.completions.create(
        model="zhiku", messages=[{"role": "user", "content": question},
                                 {"role": "assistant", "content": message.content},
                                 {"role": "user", "content": follow_up}])
    second_citations, _ = citations_of(second.choices[0].message)
    try:
        client.chat.completions.create(model="gpt-4o", messages=[{"role": "user", "content": question}])
        unknown_model = None
    except openai.NotFoundError as e:
        unknown_model = {"status": e.status_code, "message": str(e)}
    try:
        openai.OpenAI(base_url=base, api_key="wrong-key", max_retries=0).models.list()
        bad_key = None
    except openai.AuthenticationError as e:
        bad_key = {"status": e.status_code}
    print(json.dumps({
        "models": models,
        "answer": message.content,
        "finish_reason": plain.choices[0].finish_reason,
        "citations": citations,
        "annotations": annotations,
        "zhiku": (plain.model_extra or {}).get("zhiku"),
        "usage": plain.usage.model_dump() if plain.usage else None,
        "streamed_usage": streamed_usage,
        "streamed": streamed_text,
        "streamed_citations": streamed_citations,
        "streamed_annotations": streamed_annotations,
        "streamed_finish": finish,
        "follow_up": second.choices[0].message.content,
        "follow_up_citations": second_citations,
        "follow_up_zhiku": (second.model_extra or {}).get("zhiku"),
        "unknown_model": unknown_model,
        "bad_key": bad_key,
    }, ensure_ascii=False))


if __name__ == "__main__":
    main()
