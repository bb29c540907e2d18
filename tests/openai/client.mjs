// Drives zhiku's OpenAI-compatible endpoint with the official openai npm library.
//   node client.mjs BASE_URL TOKEN QUESTION FOLLOW_UP
// Lists the models, asks QUESTION (plain and streamed) and FOLLOW_UP as the next turn, reading
// the citations from the message's structured fields; prints one JSON object.
import OpenAI from "openai";

const [base, token, question, followUp] = process.argv.slice(2);
const client = new OpenAI({ baseURL: base, apiKey: token, maxRetries: 0, timeout: 60000 });
const models = [];
for await (const m of client.models.list()) models.push(m.id);
const plain = await client.chat.completions.create({
  model: "zhiku", messages: [{ role: "user", content: question }], temperature: 0, max_tokens: 200,
});
const message = plain.choices[0].message;
let streamed = "", streamedCitations = null, finish = null, streamedUsage = null;
const stream = await client.chat.completions.create({
  model: "zhiku", messages: [{ role: "user", content: question }], stream: true,
  stream_options: { include_usage: true },
});
for await (const chunk of stream) {
  if (!chunk.choices.length) { streamedUsage = chunk.usage ?? null; continue; }
  const choice = chunk.choices[0];
  if (choice.delta.content) streamed += choice.delta.content;
  if (chunk.citations) streamedCitations = chunk.citations;
  if (choice.finish_reason) finish = choice.finish_reason;
}
const second = await client.chat.completions.create({
  model: "zhiku",
  messages: [{ role: "user", content: question }, { role: "assistant", content: message.content },
    { role: "user", content: followUp }],
});
let unknownModel = null;
try {
  await client.chat.completions.create({ model: "zhiku:no-such-scope", messages: [{ role: "user", content: question }] });
} catch (e) { unknownModel = { status: e.status }; }
process.stdout.write(JSON.stringify({
  models, answer: message.content, citations: message.citations, annotations: message.annotations,
  zhiku: plain.zhiku, usage: plain.usage ?? null, streamed_usage: streamedUsage, streamed, streamed_citations: streamedCitations, streamed_finish: finish,
  follow_up: second.choices[0].message.content, follow_up_citations: second.choices[0].message.citations,
  unknown_model: unknownModel,
}) + "\n");
