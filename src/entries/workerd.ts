/**
 * workerd / Cloudflare Workers entry (`exports` condition `workerd`). workerd refuses to
 * compile wasm from bytes at run time, so each build is imported as a module: the
 * bundler (wrangler) or the workerd config turns `import m from './x.wasm'` into a
 * WebAssembly.Module. A config lists dist/workerd.js and the three .wasm files beside it
 * (see examples/worker/config.capnp).
 */
// @ts-ignore -- a .wasm import is a WebAssembly.Module in workerd
import simd from './edgekernels.wasm';
// @ts-ignore
import scalar from './edgekernels.scalar.wasm';
// @ts-ignore
import relaxed from './edgekernels.relaxed.wasm';
import type { BuildName } from '../kernels.js';
import { makeInit } from '../load.js';

export * from '../index.js';
export { BUILD_NAMES, engineSupports, defaultBuild, moduleBuild, RELAXED_PREFERRED } from '../load.js';

const MODULES: Record<BuildName, WebAssembly.Module> = { simd, scalar, relaxed };
export const init = makeInit(async (build) => MODULES[build], undefined, { compiles: false });
