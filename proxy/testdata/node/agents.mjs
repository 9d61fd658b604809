// Drives POST /v1/responses with the OpenAI Agents SDK (JS) and its default model, an
// agent with a function tool, run plain and streamed; run by TestResponses_NodeSDK. Env:
// AGATE_URL, AGATE_NODE_MODULES (holding @openai/agents and openai). Prints one JSON
// object of what it saw.
import { createRequire } from 'node:module';
import path from 'node:path';

const require = createRequire(path.join(process.env.AGATE_NODE_MODULES, 'resolve.js'));
const { Agent, run, tool, setDefaultOpenAIClient, setTracingDisabled } = require('@openai/agents');
const openaiModule = require('openai');
const OpenAI = openaiModule.OpenAI ?? openaiModule.default ?? openaiModule;

setTracingDisabled(true);
setDefaultOpenAIClient(new OpenAI({ baseURL: process.env.AGATE_URL, apiKey: 'alice-key', maxRetries: 0 }));

const getWeather = tool({
  name: 'get_weather', description: 'Weather.', strict: true,
  parameters: { type: 'object', properties: {}, required: [], additionalProperties: false },
  execute: async () => 'sunny',
});
const agent = new Agent({ name: 'helper', instructions: 'Help.', tools: [getWeather] });
const out = {};

const plain = await run(agent, 'call get_weather');
out.run = { output: plain.finalOutput, items: plain.newItems.map((i) => i.type).join(',') };

const streamed = await run(agent, 'hello agents', { stream: true });
let text = '';
for await (const chunk of streamed.toTextStream()) text += chunk;
await streamed.completed;
out.stream = { output: streamed.finalOutput, text };

console.log(JSON.stringify(out));
