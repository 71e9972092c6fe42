/** Node entry: the wasm is read from the file next to this bundle. */
import { readFile } from 'node:fs/promises';
import { makeInit } from '../load.js';

export * from '../index.js';
export const init = makeInit(async () => WebAssembly.compile(await readFile(new URL('./edgekernels.wasm', import.meta.url))));
