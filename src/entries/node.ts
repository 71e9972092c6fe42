/** Node entry (`exports` condition `node`): the wasm is read from the file next to this bundle. */
import { readFile } from 'node:fs/promises';
import { BUILD_FILES, makeInit } from '../load.js';

export * from '../index.js';
export { BUILD_NAMES, engineSupports, defaultBuild, moduleBuild, RELAXED_PREFERRED } from '../load.js';

const read = (url: URL) => readFile(url);
export const init = makeInit(async (build) => WebAssembly.compile(await read(new URL(`./${BUILD_FILES[build]}`, import.meta.url))), read);
