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
    // init({ wasm }) with bytes: refused up front with a message that says what workerd takes
    try {
      await pkg.init({ wasm: new Uint8Array([0, 97, 115, 109, 1, 0, 0, 0]) });
      report.failed++;
      report.failures.push('init({ wasm: bytes }) in workerd: accepted');
    } catch (e) {
      if (e instanceof pkg.KernelError && e.code === 'INVALID_ARGUMENT' && /compiles no wasm at run time.*WebAssembly\.Module only/.test(e.message)) {
        report.passed++;
        report.checks.push('init({ wasm: bytes }) names what workerd takes');
      } else {
        report.failed++;
        report.failures.push(`init({ wasm: bytes }) in workerd: ${e && e.message}`);
      }
    }
    return Response.json(report);
  },
};
