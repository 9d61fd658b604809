// Drives the response cache with the Node `openai` SDK as an eval harness does; run by
// TestResponseCache_NodeSDK. Env: AGATE_URL (the gateway's /v1 base), OPENAI_MODULE (the
// directory of the installed openai package). Sends the same temperature-0 request four
// times (streamed, streamed, whole, streamed with x-agate-cache: skip) and prints one JSON
// array: per request its text, x-agate-cache header and id.
import { pathToFileURL } from 'node:url';
import path from 'node:path';

const { default: OpenAI } = await import(pathToFileURL(path.join(process.env.OPENAI_MODULE, 'index.mjs')).href);
const client = new OpenAI({ baseURL: process.env.AGATE_URL, apiKey: 'alice-key', maxRetries: 0 });
const params = { model: 'm', temperature: 0, max_tokens: 100, messages: [{ role: 'user', content: 'hello node' }] };
const out = [];
const streamed = async (headers) => {
  const { data: stream, response } = await client.chat.completions.create({ ...params, stream: true }, { headers }).withResponse();
  let text = '', id = '';
  for await (const chunk of stream) {
    id = chunk.id;
    text += chunk.choices[0]?.delta?.content ?? '';
  }
  out.push({ text, cache: response.headers.get('x-agate-cache') ?? '', id });
};
await streamed({});
await streamed({});
{
  const { data, response } = await client.chat.completions.create(params).withResponse();
  out.push({ text: data.choices[0].message.content, cache: response.headers.get('x-agate-cache') ?? '', id: data.id });
}
await streamed({ 'x-agate-cache': 'skip' });
console.log(JSON.stringify(out));
