/** Pure protocol knowledge: era detection, validation and mapping functions. No I/O, clock or randomness. */
export * from './constants.js';
export * from './jsonrpc.js';
export * from './methods.js';
export * from './headers.js';
export * from './era.js';
export * from './modern-request.js';
export * from './results.js';
export * from './input.js';
export * from './request-state.js';
export * from './listen.js';
export * from './glob.js';
export * from './tasks.js';
export * from './forwarding.js';
