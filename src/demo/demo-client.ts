/**
 * The demo's modern client: plain fetch, so that what a 2026-07-28 client sends and gets is visible on the
 * console. It talks to the gateway, which talks 2025-11-25 to the demo upstream.
 */

const VERSION = '2026-07-28';
// biome-ignore lint/suspicious/noExplicitAny: the demo reads whatever JSON the gateway answers, field by field
type Json = Record<string, any>;

let nextId = 1;

async function call(url: string, method: string, params: Json, caps: Json = {}, onEvent?: (m: Json) => void): Promise<Json> {
  const body = {
    jsonrpc: '2.0',
    id: nextId++,
    method,
    params: {
      ...params,
      _meta: {
        ...(params._meta ?? {}),
        'io.modelcontextprotocol/protocolVersion': VERSION,
        'io.modelcontextprotocol/clientCapabilities': caps,
        'io.modelcontextprotocol/clientInfo': { name: 'gateway-demo-client', version: '1.0.0' },
      },
    },
  };
  const headers: Record<string, string> = {
    'content-type': 'application/json',
    accept: 'application/json, text/event-stream',
    'mcp-protocol-version': VERSION,
    'mcp-method': method,
  };
  const name = params.name ?? params.uri ?? params.taskId; // what Mcp-Name mirrors for this method
  if (typeof name === 'string') headers['mcp-name'] = name;
  const res = await fetch(url, { method: 'POST', headers, body: JSON.stringify(body) });
  if ((res.headers.get('content-type') ?? '').includes('text/event-stream')) {
    let last: Json = {};
    for (const line of (await res.text()).split('\n')) {
      if (!line.startsWith('data:')) continue;
      const m = JSON.parse(line.slice(5)) as Json;
      if ('method' in m) onEvent?.(m);
      else last = m;
    }
    return last;
  }
  return (await res.json()) as Json;
}

const text = (r: Json) => (r.result?.content ?? []).map((c: Json) => c.text).join(' ');

/** Runs the walkthrough against `url`, printing each step with `print`. */
export async function runDemoClient(url: string, print: (line: string) => void): Promise<void> {
  print(`modern client → ${url}`);
  const d = await call(url, 'server/discover', {});
  const info = d.result?._meta?.['io.modelcontextprotocol/serverInfo'];
  print(
    `1. server/discover: ${info?.name} ${info?.version}, versions ${JSON.stringify(d.result?.supportedVersions)}, capabilities ` +
      `${Object.keys(d.result?.capabilities ?? {}).join(', ')}`,
  );
  const tools = await call(url, 'tools/list', {});
  print(`2. tools/list: ${(tools.result?.tools ?? []).map((t: Json) => t.name).join(', ')}`);
  print(`3. tools/call greet → ${text(await call(url, 'tools/call', { name: 'greet', arguments: { name: 'World' } }))}`);
  const progress: string[] = [];
  const c = await call(url, 'tools/call', { name: 'countdown', arguments: { n: 3 }, _meta: { progressToken: 'demo' } }, {}, (m) => {
    if (m.method === 'notifications/progress') progress.push(`${m.params.progress}/${m.params.total}`);
  });
  print(`4. tools/call countdown → progress ${progress.join(' ')} → ${text(c)}`);
  const caps = { elicitation: { form: {} } };
  const first = await call(url, 'tools/call', { name: 'book_table', arguments: { guests: 2 } }, caps);
  const [key, request] = Object.entries(first.result?.inputRequests ?? {})[0] ?? [];
  print(`5. tools/call book_table → resultType ${first.result?.resultType}, asks ${key}: ${(request as Json | undefined)?.params?.message}`);
  const done = await call(
    url,
    'tools/call',
    {
      name: 'book_table',
      arguments: { guests: 2 },
      inputResponses: { [key as string]: { action: 'accept', content: { confirm: true } } },
      requestState: first.result?.requestState,
    },
    caps,
  );
  print(`   retry with inputResponses + requestState → ${text(done)}`);

  const tasksCaps = { extensions: { 'io.modelcontextprotocol/tasks': {} } };
  const created = await call(url, 'tools/call', { name: 'slow_report', arguments: { seconds: 2 } }, tasksCaps);
  const taskId = created.result?.taskId as string | undefined;
  print(`6. tools/call slow_report (declaring the tasks extension) → resultType ${created.result?.resultType}, status ${created.result?.status}`);
  if (!taskId) return;
  for (let i = 0; i < 60; i++) {
    await new Promise((r) => setTimeout(r, created.result?.pollIntervalMs ?? 1000));
    const got = await call(url, 'tasks/get', { taskId }, tasksCaps);
    print(`   tasks/get → ${got.result?.status}${got.result?.result ? `: ${text({ result: got.result.result })}` : ''}`);
    if (got.result?.status !== 'working' && got.result?.status !== 'input_required') break;
  }
}
