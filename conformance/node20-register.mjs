// Node 20 lacks fs.globSync, which @modelcontextprotocol/conformance 0.2.0-alpha.12 imports at link time.
// Load with `node --import ./conformance/node20-register.mjs …`: it serves `fs`/`node:fs` from a module that
// re-exports the real one and adds a small globSync. On Node >= 22 it does nothing.
import { register } from 'node:module';
import fs from 'node:fs';

if (typeof fs.globSync !== 'function') {
  register('./node20-hooks.mjs', import.meta.url);
}
