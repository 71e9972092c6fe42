// Chromium side of the runtime tests: runs the suite against dist/browser.js (embedded
// builds) and POSTs the report to the runner's server (/report).
import * as pkg from 'edgekernels';
import { runSuite } from './suite.mjs';

const params = new URLSearchParams(location.search);
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
