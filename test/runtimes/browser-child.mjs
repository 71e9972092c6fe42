// Chromium side of the runtime tests: runs the suite against dist/browser.js (embedded
// builds) and POSTs the report to the runner's server (/report).
import * as pkg from 'edgekernels';
import { runSuite } from './suite.mjs';

const params = new URLSearchParams(location.search);
if (params.has('nosimd')) {
  // Pretend to be an engine without SIMD (as in cli-child.mjs): WebAssembly.validate rejects
  // modules whose type section mentions v128. init() must then pick the scalar build.
  const validate = WebAssembly.validate.bind(WebAssembly);
  WebAssembly.validate = (bytes) => {
    const u = ArrayBuffer.isView(bytes) ? new Uint8Array(bytes.buffer, bytes.byteOffset, bytes.byteLength) : new Uint8Array(bytes);
    if (u[8] === 1) for (let i = 10; i < 10 + u[9]; i++) if (u[i] === 0x7b) return false;
    return validate(bytes);
  };
}
const build = params.get('build') || undefined;
const expectBuild = params.get('expect') || build;
let report;
try {
  const cases = await (await fetch('/cases.json')).json();
  const file = { simd: 'edgekernels.wasm', scalar: 'edgekernels.scalar.wasm', relaxed: 'edgekernels.relaxed.wasm' }[expectBuild || 'simd'];
  const url = new URL(`/dist/${file}`, location.href);
  const sources = {
    bytes: async () => new Uint8Array(await (await fetch(url)).arrayBuffer()),
    module: async () => WebAssembly.compileStreaming(fetch(url)),
    response: () => fetch(url), // application/wasm: the streaming compile path
    url: () => url,
    urlString: () => `/dist/${file}`, // relative to the page
  };
  report = await runSuite({ pkg, cases, build, expectBuild, runtime: 'chromium', sources });
} catch (e) {
  report = { runtime: 'chromium', passed: 0, failed: 1, failures: [`page: ${e && e.stack || e}`] };
}
document.getElementById('out').textContent = JSON.stringify({ passed: report.passed, failed: report.failed, failures: report.failures }, null, 1);
await fetch('/report', { method: 'POST', body: JSON.stringify(report) });
