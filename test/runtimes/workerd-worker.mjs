// workerd side of the runtime tests: POST { cases, build, expectBuild } → the suite's report.
// The package is the module named "edgekernels" in the generated config (dist/workerd.js),
// which imports its .wasm builds as modules (workerd compiles no wasm from bytes).
import * as pkg from 'edgekernels';
import simdModule from 'edgekernels.wasm';
import { runSuite } from './suite.mjs';

export default {
  async fetch(request) {
    if (request.method !== 'POST') return new Response('POST a test request', { status: 405 });
    const { cases, build, expectBuild } = await request.json();
    const sources = (expectBuild ?? 'simd') === 'simd' ? { module: () => simdModule } : {};
    const report = await runSuite({ pkg, cases, build, expectBuild, runtime: 'workerd', sources });
    // Compiling from bytes is what workerd forbids: the entry must never need it.
    try {
      await WebAssembly.compile(new Uint8Array([0, 97, 115, 109, 1, 0, 0, 0]));
      report.bytesCompile = 'allowed';
    } catch (e) {
      report.bytesCompile = 'refused';
    }
    return Response.json(report);
  },
};
