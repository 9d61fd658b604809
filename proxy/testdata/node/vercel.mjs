// Drives POST /v1/responses with the Vercel AI SDK's default OpenAI provider
// (openai('m') is its Responses model); run by TestResponses_NodeSDK. Env: AGATE_URL,
// AGATE_NODE_MODULES (a node_modules directory holding ai and @ai-sdk/openai). Prints one
// JSON object of what it saw.
import { createRequire } from 'node:module';
import path from 'node:path';

const require = createRequire(path.join(process.env.AGATE_NODE_MODULES, 'resolve.js'));
const { generateText, streamText, tool, stepCountIs, jsonSchema } = require('ai');
const { createOpenAI } = require('@ai-sdk/openai');

const openai = createOpenAI({ baseURL: process.env.AGATE_URL, apiKey: 'alice-key' });
const model = openai('m');
const out = {};

const generated = await generateText({ model, prompt: 'hello from vercel', maxRetries: 0 });
out.generate = { text: generated.text, finish: generated.finishReason, usage: generated.usage.totalTokens > 0 };

const streamed = streamText({ model, prompt: 'stream from vercel', maxRetries: 0, onError: ({ error }) => { out.streamError = String(error); } });
let text = '';
for await (const part of streamed.textStream) text += part;
out.stream = { text, finish: await streamed.finishReason };

const withTools = await generateText({
  model, prompt: 'call get_weather', maxRetries: 0, stopWhen: stepCountIs(3),
  tools: { get_weather: tool({ description: 'Weather.', inputSchema: jsonSchema({ type: 'object', properties: {} }), execute: async () => 'sunny' }) },
});
out.tools = { text: withTools.text, steps: withTools.steps.length, finish: withTools.finishReason };

console.log(JSON.stringify(out));
