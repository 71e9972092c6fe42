/**
 * Bun entry (`exports` condition `bun`): the wasm is read from the file next to this bundle.
 * (Bun's `import x from './k.wasm'` yields a path, not a module, so a file read it is.)
 */
import { BUILD_FILES, makeInit } from '../load.js';

export * from '../index.js';
export { BUILD_NAMES, engineSupports, defaultBuild, moduleBuild, RELAXED_PREFERRED } from '../load.js';

declare const Bun: { file(path: URL | string): { arrayBuffer(): Promise<ArrayBuffer> } };

const read = (url: URL) => Bun.file(url).arrayBuffer();
export const init = makeInit(async (build) => WebAssembly.compile(await read(new URL(`./${BUILD_FILES[build]}`, import.meta.url))), read);
