// Resources and prompts read with the official TypeScript MCP SDK client over stdio: from the
// resources fixture server (served by `tool_runtime::mcp_server`, its lists paged one item at a
// time, so the client follows our cursors) and from `tools serve` mounting it (served again).
//
// Usage: node mcp_ts_sdk.mjs TOOLS_BINARY FIXTURE_BINARY WORKSPACE MOUNTS_JSON
// Prints one line per check and `passed: typescript sdk`; exits 1 on the first failure.
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";

const [tools, fixture, workspace, mounts] = process.argv.slice(2);

function check(ok, what) {
  if (!ok) {
    console.log(`FAILED: ${what}`);
    process.exit(1);
  }
  console.log(`ok: ${what}`);
}

async function every(list, key) {
  const items = [];
  let cursor;
  let pages = 0;
  do {
    const page = await list(cursor === undefined ? {} : { cursor });
    items.push(...page[key]);
    cursor = page.nextCursor;
    pages += 1;
  } while (cursor !== undefined && pages < 100);
  return { items, pages };
}

async function exercise(label, transport, prefix, paged) {
  const client = new Client({ name: "ts-sdk-check", version: "1.0.0" });
  await client.connect(transport);
  const caps = client.getServerCapabilities();
  check(caps.resources && caps.prompts && caps.completions, `${label}: resources, prompts and completions declared`);

  const resources = await every((p) => client.listResources(p), "resources");
  const uris = resources.items.map((r) => r.uri);
  check(uris.includes("test://static-text") && uris.includes("test://static-binary"), `${label}: resources/list ${uris}`);
  if (paged) {
    check(resources.pages === uris.length, `${label}: one resource a page, ${resources.pages} pages followed`);
    let refused = "";
    try {
      await client.listResources({ cursor: "not-a-cursor" });
    } catch (error) {
      refused = `${error.code} ${error.message}`;
    }
    check(refused.startsWith("-32602") && refused.includes("Invalid cursor"), `${label}: a made-up cursor is -32602: ${refused}`);
  }
  const templates = await every((p) => client.listResourceTemplates(p), "resourceTemplates");
  check(templates.items[0]?.uriTemplate === "test://template/{id}/data", `${label}: resources/templates/list`);

  const text = await client.readResource({ uri: "test://static-text" });
  check(text.contents[0].text.startsWith("This is the content"), `${label}: a text resource is read`);
  const binary = await client.readResource({ uri: "test://static-binary" });
  check(Buffer.from(binary.contents[0].blob, "base64").subarray(1, 4).toString() === "PNG", `${label}: a blob is read`);
  const templated = await client.readResource({ uri: "test://template/42/data" });
  check(JSON.parse(templated.contents[0].text).id === "42", `${label}: a templated resource is read`);

  const prompts = await every((p) => client.listPrompts(p), "prompts");
  const names = prompts.items.map((p) => p.name);
  check(names.includes(`${prefix}test_prompt_with_arguments`), `${label}: prompts/list ${names}`);
  const rendered = await client.getPrompt({
    name: `${prefix}test_prompt_with_arguments`,
    arguments: { arg1: "one", arg2: "two" },
  });
  const said = rendered.messages[0].content.text;
  check(said.includes("arg1='one'") && said.includes("arg2='two'"), `${label}: a prompt is rendered`);
  const completed = await client.complete({
    ref: { type: "ref/prompt", name: `${prefix}test_prompt_with_arguments` },
    argument: { name: "arg1", value: "pa" },
  });
  check(JSON.stringify(completed.completion.values) === '["paris","park"]', `${label}: an argument is completed`);
  await client.close();
}

await exercise(
  "served",
  new StdioClientTransport({ command: fixture, args: [], env: { ...process.env, FIXTURE_PAGE_SIZE: "1" } }),
  "",
  true,
);
await exercise(
  "mounted by tools serve",
  new StdioClientTransport({ command: tools, args: ["serve", "--root", workspace, "--mcp-config", mounts], cwd: workspace }),
  "fx__",
  false,
);
console.log("passed: typescript sdk");
