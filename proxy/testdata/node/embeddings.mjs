// Drives POST /v1/embeddings with the Node `openai` SDK as users run it; run by
// TestEmbeddings_NodeSDK. The SDK asks for base64 unless told otherwise and decodes it
// (little-endian float32) into arrays of numbers. Env: AGATE_URL (the gateway's /v1 base),
// OPENAI_MODULE (the directory of the installed openai package). Argv: the models. Prints
// one JSON object: per model, the default (base64) and the float answers' vector count,
// length, first three numbers and prompt tokens.
import { pathToFileURL } from 'node:url';
import path from 'node:path';

const { default: OpenAI } = await import(pathToFileURL(path.join(process.env.OPENAI_MODULE, 'index.mjs')).href);
const client = new OpenAI({ baseURL: process.env.AGATE_URL, apiKey: 'alice-key', maxRetries: 0 });
const out = {};
const input = ['The food was delicious and the waiter...', 'text-7'];
for (const model of process.argv.slice(2)) {
  const seen = (r) => ({ n: r.data.length, len: r.data[0].embedding.length, head: Array.from(r.data[0].embedding.slice(0, 3)),
    second: r.data[1].embedding[0], tokens: r.usage.prompt_tokens, model: r.model });
  out[model] = {
    base64: seen(await client.embeddings.create({ model, input })),
    float: seen(await client.embeddings.create({ model, input, encoding_format: 'float' })),
  };
}
console.log(JSON.stringify(out));
