// Drives POST /v1/responses with the Node `openai` SDK as users run it; run by
// TestResponses_NodeSDK. Env: AGATE_URL (the gateway's /v1 base), OPENAI_MODULE (the
// directory of the installed openai package). Prints one JSON object of what it saw.
import { pathToFileURL } from 'node:url';
import path from 'node:path';

const { default: OpenAI } = await import(pathToFileURL(path.join(process.env.OPENAI_MODULE, 'index.mjs')).href);
const client = new OpenAI({ baseURL: process.env.AGATE_URL, apiKey: 'alice-key', maxRetries: 0 });
const out = {};

const created = await client.responses.create({ model: 'm', input: 'hello from node' });
out.create = { status: created.status, text: created.output_text, model: created.model };

const stream = client.responses.stream({ model: 'm', input: 'stream from node' });
const types = [];
stream.on('event', (ev) => types.push(ev.type));
const final = await stream.finalResponse();
out.stream = { text: final.output_text, first: types[0], last: types[types.length - 1], deltas: types.filter((t) => t === 'response.output_text.delta').length };

const tools = [{ type: 'function', name: 'get_weather', parameters: { type: 'object', properties: {} }, strict: false }];
const turn1 = await client.responses.create({ model: 'm', input: 'call get_weather', tools });
const call = turn1.output.find((item) => item.type === 'function_call');
const turn2 = await client.responses.create({
  model: 'm', tools, previous_response_id: turn1.id,
  input: [{ type: 'function_call_output', call_id: call.call_id, output: 'sunny' }],
});
out.tools = { call: call.name, text: turn2.output_text };

const got = await client.responses.retrieve(turn2.id);
await client.responses.delete(turn2.id);
let after = 'found';
try { await client.responses.retrieve(turn2.id); } catch (e) { after = String(e.status); }
out.stored = { same: got.output_text === turn2.output_text, afterDelete: after };

console.log(JSON.stringify(out));
