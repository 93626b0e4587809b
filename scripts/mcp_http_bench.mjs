// Calls per second of the official TypeScript MCP SDK client against a Streamable HTTP server:
// C clients at once (each its own session), each calling one tool in a loop for SECS seconds.
//
// Usage: node mcp_http_bench.mjs URL TOOL ARGS_JSON SECS C [C ...]
// Prints one line per C: `clients=C calls=N seconds=S calls_per_s=R`.
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";

const [url, tool, argsJson, secsText, ...counts] = process.argv.slice(2);
const args = JSON.parse(argsJson);
const secs = Number(secsText);

async function connect() {
  const client = new Client({ name: "mcp-http-bench", version: "1.0.0" });
  await client.connect(new StreamableHTTPClientTransport(new URL(url)));
  return client;
}

for (const count of counts.map(Number)) {
  const clients = await Promise.all(Array.from({ length: count }, connect));
  // One call each first, so that connections and sessions are warm.
  await Promise.all(clients.map((client) => client.callTool({ name: tool, arguments: args })));
  let calls = 0;
  let failures = 0;
  const start = performance.now();
  const end = start + secs * 1000;
  await Promise.all(
    clients.map(async (client) => {
      while (performance.now() < end) {
        const result = await client.callTool({ name: tool, arguments: args });
        if (result.isError) failures++;
        calls++;
      }
    }),
  );
  const seconds = (performance.now() - start) / 1000;
  console.log(
    `clients=${count} calls=${calls} failures=${failures} seconds=${seconds.toFixed(2)} calls_per_s=${(calls / seconds).toFixed(0)}`,
  );
  await Promise.all(clients.map((client) => client.close()));
}
