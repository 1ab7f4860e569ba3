// Module-resolve hook for node20-register.mjs: redirect `fs` imports to node20-fs.mjs, except from that file.
const shim = new URL('./node20-fs.mjs', import.meta.url).href;

export async function resolve(specifier, context, next) {
  if ((specifier === 'fs' || specifier === 'node:fs') && context.parentURL !== shim) {
    return { url: shim, shortCircuit: true };
  }
  return next(specifier, context);
}
