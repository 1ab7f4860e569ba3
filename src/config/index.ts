/** Configuration: schema, defaults and loader. Read at runtime only by cli.ts and app.ts. */
export * from './schema.js';
export * from './load.js';
