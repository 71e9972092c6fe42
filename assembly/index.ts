// The export list of the module: every function the host may call, nothing else.
// Each kernel file documents its own buffer contract; the host (src/) guarantees
// the preconditions written there.

export { heapBase } from './memory';
export * from './scatter';
export * from './attention';
export * from './quant';
export * from './scan';
export * from './llm';
export { attendQ8ScratchBytes } from './kvattend';
export * from './q8';
