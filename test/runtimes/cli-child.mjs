// Runs test/runtimes/suite.mjs in a command-line runtime (Node, Deno, Bun) against the
// package as that runtime resolves `edgekernels` (exports conditions node / deno / bun),
// then prints one line `REPORT {json}` for test/runtimes/run.mjs.
//   args: <runtime> [build=<simd|scalar|relaxed>] [expect=<build>] [nosimd] [entry=<dist file>] [cases=<dir>[,<dir>…]]
import { readFile, readdir } from 'node:fs/promises';
import { runSuite } from './suite.mjs';

const argv = (globalThis.Deno ? globalThis.Deno.args : process.argv.slice(2));
const runtime = argv[0];
const opt = Object.fromEntries(argv.slice(1).map((a) => (a.includes('=') ? a.split(/=(.*)/s).slice(0, 2) : [a, true])));

if (opt.nosimd) {
  // Pretend to be an engine without SIMD: WebAssembly.validate rejects any module whose
  // type section mentions v128 (0x7b), as such an engine would.
  const validate = WebAssembly.validate.bind(WebAssembly);
  WebAssembly.validate = (bytes) => {
    const u = ArrayBuffer.isView(bytes) ? new Uint8Array(bytes.buffer, bytes.byteOffset, bytes.byteLength) : new Uint8Array(bytes);
    if (u[8] === 1) {
      const size = u[9];
      for (let i = 10; i < 10 + size; i++) if (u[i] === 0x7b) return false;
    }
    return validate(bytes);
  };
}

// entry=<file in dist/>: load that entry directly instead of the one the exports conditions pick
const entry = opt.entry ? new URL(`../../dist/${opt.entry}`, import.meta.url) : new URL(import.meta.resolve('edgekernels'));
const pkg = await import(entry.href);
// cases=<dir>[,<dir>…]: a file name met again in a later directory is skipped
const caseDirs = opt.cases ? opt.cases.split(',') : [];
const cases = [];
const seenCases = new Set();
for (const casesDir of caseDirs) {
  for (const f of (await readdir(casesDir)).filter((f) => f.endsWith('.json')).sort()) {
    if (seenCases.has(f)) continue;
    seenCases.add(f);
    cases.push({ file: f, ...JSON.parse(await readFile(`${casesDir}/${f}`, 'utf8')) });
  }
}
const build = opt.build || undefined;
const expectBuild = opt.expect || build;
const file = { simd: 'edgekernels.wasm', scalar: 'edgekernels.scalar.wasm', relaxed: 'edgekernels.relaxed.wasm' }[expectBuild || 'simd'];
const wasmUrl = new URL(`./${file}`, entry);
const sources = {
  bytes: () => readFile(wasmUrl),
  module: async () => WebAssembly.compile(await readFile(wasmUrl)),
  // the browser/default entry reads no files: a file: URL is for the file-system entries only
  url: opt.entry === 'browser.js' ? null : () => wasmUrl,
};
const report = await runSuite({ pkg, cases, build, expectBuild, runtime, sources });
report.entry = entry.pathname.split('/').pop();

if (opt.nosimd) {
  // The engine "without SIMD": forcing simd must fail loudly, not crash later.
  try {
    await pkg.init({ build: 'simd' });
    report.failed++;
    report.failures.push('nosimd: init({ build: "simd" }) succeeded on an engine that rejects SIMD');
  } catch (e) {
    if (e instanceof pkg.KernelError && e.code === 'INVALID_ARGUMENT') report.passed++;
    else {
      report.failed++;
      report.failures.push(`nosimd: init({ build: "simd" }) threw ${e}`);
    }
  }
}
console.log('REPORT ' + JSON.stringify(report));
