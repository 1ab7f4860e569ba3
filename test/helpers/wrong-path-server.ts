/** A real web server that serves no MCP (not a test file): as at a wrong path, every request gets 404 and an HTML page. */
import http from 'node:http';
import type { AddressInfo } from 'node:net';

/** The page it answers with. */
export const NOT_FOUND_PAGE = '<!doctype html><html><head><title>404 Not Found</title></head><body><h1>Not Found</h1></body></html>';

/** Starts it on loopback; its URL (path `/wrong`); closed at teardown. */
export async function startWrongPathServer(t: { teardown(fn: () => unknown): void }): Promise<string> {
  const server = http.createServer((req, res) => {
    req.resume();
    req.on('end', () => res.writeHead(404, { 'content-type': 'text/html; charset=utf-8' }).end(NOT_FOUND_PAGE));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  t.teardown(() => {
    server.closeAllConnections();
    return new Promise<void>((resolve) => server.close(() => resolve()));
  });
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}/wrong`;
}
