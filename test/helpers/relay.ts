/**
 * A recording HTTP relay for integration tests (not a test file): sits between the gateway and the fixture,
 * forwards every request and response unchanged (SSE streams included), and lets a test await a request it
 * expects the gateway to make upstream. An observer, not a fake.
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';

interface Teardown {
  teardown(fn: () => unknown): void;
}

/** One request the relay saw. */
export interface Seen {
  method: string;
  sessionId: string | undefined;
  rpcMethod: string | undefined;
  /** The parsed JSON body, if any. */
  body: any;
  /** The request's headers as the upstream got them. */
  headers: http.IncomingHttpHeaders;
}

/** Starts a relay; point the gateway at `url`, then `setTarget` to the real upstream before the first request. */
export async function startRelay(
  t: Teardown,
): Promise<{ url: string; setTarget(url: string): void; waitFor(p: (s: Seen) => boolean): Promise<Seen>; seen: Seen[] }> {
  let target: URL | undefined;
  const seen: Seen[] = [];
  const waiters: Array<{ p: (s: Seen) => boolean; resolve: (s: Seen) => void }> = [];
  const record = (s: Seen) => {
    seen.push(s);
    for (const w of [...waiters]) {
      if (w.p(s)) {
        waiters.splice(waiters.indexOf(w), 1);
        w.resolve(s);
      }
    }
  };
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const body = Buffer.concat(chunks);
      let parsed: any;
      try {
        parsed = JSON.parse(body.toString('utf8'));
      } catch {
        parsed = undefined;
      }
      const rpcMethod = typeof parsed?.method === 'string' ? parsed.method : undefined;
      const sid = req.headers['mcp-session-id'];
      record({ method: req.method ?? '', sessionId: typeof sid === 'string' ? sid : undefined, rpcMethod, body: parsed, headers: req.headers });
      if (!target) {
        res.writeHead(503).end();
        return;
      }
      const up = http.request(
        { host: target.hostname, port: target.port, path: req.url, method: req.method, headers: { ...req.headers, host: target.host } },
        (upRes) => {
          res.writeHead(upRes.statusCode ?? 502, upRes.headers);
          res.flushHeaders();
          upRes.pipe(res);
          res.on('close', () => upRes.destroy());
        },
      );
      up.on('error', () => res.destroy());
      res.on('close', () => up.destroy());
      up.end(body);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  t.teardown(async () => {
    server.closeAllConnections();
    await new Promise<void>((resolve) => server.close(() => resolve()));
  });
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}/mcp`,
    setTarget(url: string) {
      target = new URL(url);
    },
    waitFor(p) {
      const hit = seen.find(p);
      if (hit) return Promise.resolve(hit);
      return new Promise((resolve) => waiters.push({ p, resolve }));
    },
    seen,
  };
}

/** Resolves with `p`, or with `undefined` after `ms` (a guard so a missing event fails fast, not a wait). */
export function within<T>(p: Promise<T>, ms: number): Promise<T | undefined> {
  return Promise.race([p, new Promise<undefined>((resolve) => setTimeout(() => resolve(undefined), ms).unref())]);
}
