// Sends streamed chat and text completions through serve's measuring proxy
// with the npm openai client, as a user's application would, and prints
// what the client itself counted (requests, and the tokens of each
// response's usage) as one JSON line, for scripts/ollamacheck's proxy
// check to set beside the snapshot serve measured.
//
//   node main.mjs BASE_URL TOKEN MODEL N
import OpenAI from "openai";

const [baseURL, apiKey, model, n] = process.argv.slice(2);
if (!baseURL || !apiKey || !model || !n) {
  console.error("usage: node main.mjs BASE_URL TOKEN MODEL N");
  process.exit(2);
}
const client = new OpenAI({ baseURL, apiKey, maxRetries: 0, timeout: 120_000 });
const counted = { requests: 0, promptTokens: 0, completionTokens: 0, chunks: 0 };

function add(usage) {
  if (!usage) throw new Error("a stream ended without usage");
  counted.promptTokens += usage.prompt_tokens;
  counted.completionTokens += usage.completion_tokens;
}

for (let i = 0; i < Number(n); i++) {
  const chat = await client.chat.completions.create({
    model, stream: true, stream_options: { include_usage: true }, max_tokens: 16, temperature: 0,
    messages: [{ role: "user", content: `request ${i}: count the words of this sentence` }],
  });
  let usage;
  for await (const chunk of chat) {
    counted.chunks++;
    if (chunk.usage) usage = chunk.usage;
  }
  add(usage);
  counted.requests++;

  const text = await client.completions.create({
    model, stream: true, stream_options: { include_usage: true }, max_tokens: 16, temperature: 0,
    prompt: `completion ${i}: the quick brown fox`,
  });
  usage = undefined;
  for await (const chunk of text) {
    counted.chunks++;
    if (chunk.usage) usage = chunk.usage;
  }
  add(usage);
  counted.requests++;
}
console.log(JSON.stringify(counted));
