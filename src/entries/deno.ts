/** Deno entry (`exports` condition `deno`): the wasm is read from the file next to this bundle (needs --allow-read). */
import { BUILD_FILES, makeInit } from '../load.js';

export * from '../index.js';
export { BUILD_NAMES, engineSupports, defaultBuild, moduleBuild, RELAXED_PREFERRED } from '../load.js';

declare const Deno: { readFile(url: URL): Promise<Uint8Array<ArrayBuffer>> };

const read = (url: URL) => Deno.readFile(url);
export const init = makeInit(async (build) => WebAssembly.compile(await read(new URL(`./${BUILD_FILES[build]}`, import.meta.url))), read);
