// Drives the gateway's MCP endpoint with the official Node MCP client
// (@modelcontextprotocol/sdk: Client over StreamableHTTPClientTransport), as MCP hosts built
// on it connect; run by TestMCPEndpoint_NodeSDK. Env: AGATE_MCP_URL (the endpoint),
// AGATE_KEY (the API key, sent as a Bearer token), MCP_SDK_MODULE (the directory of the
// installed @modelcontextprotocol/sdk package). Prints one JSON object of what it saw.
import { pathToFileURL } from 'node:url';
import path from 'node:path';

const mod = (p) => import(pathToFileURL(path.join(process.env.MCP_SDK_MODULE, 'dist', 'esm', p)).href);
const { Client } = await mod('client/index.js');
const { StreamableHTTPClientTransport } = await mod('client/streamableHttp.js');

const transport = new StreamableHTTPClientTransport(new URL(process.env.AGATE_MCP_URL), {
  requestInit: { headers: { Authorization: `Bearer ${process.env.AGATE_KEY}` } },
});
const client = new Client({ name: 'agate-node-test', version: '1.0.0' });
await client.connect(transport);

const text = (r) => r.content.filter((c) => c.type === 'text').map((c) => c.text).join('');
const out = { server: client.getServerVersion().name, session: Boolean(transport.sessionId) };
const tools = await client.listTools();
out.tools = tools.tools.map((t) => t.name);
out.readOnly = tools.tools.filter((t) => t.annotations?.readOnlyHint).map((t) => t.name);
out.lookup = text(await client.callTool({ name: 'team__lookup', arguments: { key: 'node' } }));
const progress = [];
const seen = new Promise((resolve) => {
  out.progressed = client.callTool({ name: 'team__progress', arguments: {} }, undefined, {
    onprogress: (p) => {
      progress.push(`${p.progress}/${p.total} ${p.message}`);
      // The tool answers once told its reports were seen (team__ack): a report sent right
      // before a result may otherwise trail it through the gateway's own client.
      if (progress.length === 3) client.callTool({ name: 'team__ack', arguments: {} }).then(resolve);
    },
  });
});
await seen;
out.progressed = text(await out.progressed);
out.progress = progress;
const invalid = await client.callTool({ name: 'team__delete', arguments: {} });
out.invalid = { isError: invalid.isError, text: text(invalid) };
try {
  await client.callTool({ name: 'team__nope', arguments: {} });
  out.unknown = 'called';
} catch (e) {
  out.unknown = String(e.message);
}
out.resources = (await client.listResources()).resources.map((r) => `${r.name} ${r.uri}`);
out.readme = (await client.readResource({ uri: 'file:///team/readme.md' })).contents[0].text;
out.prompts = (await client.listPrompts()).prompts.map((p) => p.name);
out.prompt = (await client.getPrompt({ name: 'team__greet', arguments: { name: 'Node' } })).messages[0].content.text;
await transport.terminateSession();
await client.close();
console.log(JSON.stringify(out));
