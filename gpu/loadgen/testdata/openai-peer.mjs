// The peer side of BenchmarkPeerShare: the npm `openai` client measuring
// the same streams the load generator measures, so the two clients' own
// shares of TTFT can be compared side by side against one engine.
//
// Usage: node openai-peer.mjs BASE_URL STREAMS MAX_TOKENS PROMPT_FILE
// Each line "round" on stdin runs one round (STREAMS streams started 3 ms
// apart); its answer is one JSON line: [{ttftMs, serverMs}, ...], where
// ttftMs is request start to the first chunk with text (performance.now)
// and serverMs the engine's own received-to-first-token span (its
// server_timing stamps). "exit" ends it. The first round opens the
// connections; the caller does not count it.
import OpenAI from 'openai';
import { readFileSync } from 'node:fs';
import { createInterface } from 'node:readline';

const [baseURL, streamsArg, maxTokensArg, promptFile] = process.argv.slice(2);
const streams = Number(streamsArg);
const maxTokens = Number(maxTokensArg);
const prompt = readFileSync(promptFile, 'utf8');
const client = new OpenAI({ baseURL, apiKey: 'none', maxRetries: 0, timeout: 60_000 });

async function one() {
  const start = performance.now();
  const stream = await client.completions.create({
    model: 'reference-sim', prompt, max_tokens: maxTokens, stream: true,
    stream_options: { include_usage: true },
  });
  let ttftMs = null;
  let timing = null;
  for await (const chunk of stream) {
    if (ttftMs === null && chunk.choices?.length && chunk.choices[0].text) {
      ttftMs = performance.now() - start;
    }
    if (chunk.server_timing) timing = chunk.server_timing;
  }
  if (ttftMs === null || timing === null) throw new Error('no text or no server_timing in the stream');
  // Nanoseconds since 1970 lose their last bits as doubles (about 256 ns):
  // far below the milliseconds compared here.
  const serverMs = (timing.first_token_unix_ns - timing.received_unix_ns) / 1e6;
  return { ttftMs, serverMs };
}

async function round() {
  const runs = [];
  for (let i = 0; i < streams; i++) {
    runs.push(one());
    await new Promise((r) => setTimeout(r, 3));
  }
  return Promise.all(runs);
}

const lines = createInterface({ input: process.stdin });
for await (const line of lines) {
  if (line.trim() === 'exit') break;
  try {
    process.stdout.write(JSON.stringify(await round()) + '\n');
  } catch (err) {
    process.stdout.write(JSON.stringify({ error: String(err) }) + '\n');
  }
}
process.exit(0);
