// The runtime matrix (part of `npm test`, after `npm run build`): the same test module,
// test/runtimes/suite.mjs, runs in Node (every build, plus an engine without SIMD), Deno,
// Bun, workerd and headless Chromium; each reports back here. Then every example runs in
// its runtime, and the size budget written in the README is checked.
//
// Every child process and server is bounded in time and ends before this script does.
// Chromium: /usr/bin/chromium (Debian's package; CHROMIUM_PATH overrides). Without it the
// browser checks are skipped with a loud message, unless CI is set: then they fail.
//
// Closing line: `runtimes: N passed, N failed`; exit code 1 on any failure.
import { spawn } from 'node:child_process';
import { existsSync, readFileSync, readdirSync, rmSync, statSync } from 'node:fs';
import { createServer } from 'node:http';
import { createServer as createNetServer } from 'node:net';
import { dirname, extname, join, normalize, sep } from 'node:path';
import { fileURLToPath } from 'node:url';
import { tmpdir } from 'node:os';
import { gzipSync } from 'node:zlib';
import { EXACT_OPS, FLOAT_TOLERANCE } from './suite.mjs';
import { checkBrowserDemo } from './browser-demo.mjs';

const here = dirname(fileURLToPath(import.meta.url));
const root = join(here, '..', '..');
const dist = join(root, 'dist');
const bin = (name) => join(root, 'node_modules', '.bin', name);
const CASES_DIR = process.env.EK_CONFORMANCE_DIR ?? join(root, '..', 'shared', 'conformance', 'onnx');
// plus the whole upstream suite kept in the repository (test/conformance/upstream), so every
// runtime runs all of it; a file of the same name in CASES_DIR comes first
const UPSTREAM_DIR = join(root, 'test', 'conformance', 'upstream');
// and the onnx.reference cases of spec corners the upstream suite lacks (scripts/reference-cases)
const REFERENCE_DIR = join(root, 'test', 'conformance', 'reference');
const CHROMIUM = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';
const CHROMIUM_ARGS = ['--headless', '--no-sandbox', '--disable-gpu', '--disable-background-networking', '--disable-component-update', '--disable-sync', '--no-first-run'];

let passed = 0, failed = 0, skipped = 0;
const notes = [];

// Every child is tracked; a watchdog ends the whole run (children included) if anything hangs.
const children = new Set();
const track = (child) => {
  children.add(child);
  child.on('close', () => children.delete(child));
  return child;
};
setTimeout(() => {
  console.log('\nruntimes: watchdog — the run took over 8 minutes; stopping');
  for (const c of children) c.kill('SIGKILL');
  console.log(`runtimes: ${passed} passed, ${failed + 1} failed`);
  process.exit(1);
}, 8 * 60_000).unref();
const failures = [];
function record(name, ok, detail = '') {
  if (ok) passed++;
  else {
    failed++;
    failures.push(`${name}: ${detail}`);
  }
  console.log(`${ok ? '  ok  ' : '  FAIL'} ${name}${detail && !ok ? `\n         ${String(detail).split('\n').join('\n         ')}` : detail ? ` (${detail})` : ''}`);
}

/** The cases as JSON for workerd and Chromium, −0 kept (JSON.stringify writes it as 0; the package reads the string "-0"). */
function casesJson(cases) {
  return JSON.stringify(cases, (_, v) => (Object.is(v, -0) ? '-0' : v));
}

function loadCases() {
  const seen = new Set(), out = [];
  for (const dir of [CASES_DIR, UPSTREAM_DIR, REFERENCE_DIR]) {
    if (!existsSync(dir)) continue;
    for (const f of readdirSync(dir).filter((f) => f.endsWith('.json')).sort()) {
      if (seen.has(f)) continue;
      seen.add(f);
      out.push({ file: f, ...JSON.parse(readFileSync(join(dir, f), 'utf8')) });
    }
  }
  return out;
}

/** Runs a command with a time limit; resolves { code, stdout, stderr, timedOut }. */
function runProcess(cmd, args, { timeoutMs = 60_000, env = {} } = {}) {
  return new Promise((resolve) => {
    const child = track(spawn(cmd, args, { cwd: root, env: { ...process.env, HOME: process.env.HOME || tmpdir(), NO_COLOR: '1', ...env }, stdio: ['ignore', 'pipe', 'pipe'] }));
    let stdout = '', stderr = '', timedOut = false;
    child.stdout.on('data', (d) => (stdout += d));
    child.stderr.on('data', (d) => (stderr += d));
    const timer = setTimeout(() => {
      timedOut = true;
      child.kill('SIGKILL');
    }, timeoutMs);
    child.on('error', (e) => {
      clearTimeout(timer);
      resolve({ code: -1, stdout, stderr: stderr + String(e), timedOut });
    });
    child.on('close', (code) => {
      clearTimeout(timer);
      resolve({ code, stdout, stderr, timedOut });
    });
  });
}

function parseReport(name, r) {
  const line = r.stdout.split('\n').find((l) => l.startsWith('REPORT '));
  if (!line) {
    record(name, false, `no report (exit ${r.code}${r.timedOut ? ', timed out' : ''}): ${(r.stderr || r.stdout).slice(-1500)}`);
    return null;
  }
  return JSON.parse(line.slice(7));
}

/** Records a suite report: one result per check. */
function recordReport(name, report) {
  if (!report) return;
  record(`${name}: suite (${report.passed} checks, build ${report.build}${report.entry ? `, entry dist/${report.entry}` : ''}, ops ${report.ops?.join(' ')})`, report.failed === 0 && report.passed > 0, report.failures?.join('\n'));
}

/** Decodes an output's hex bytes into numbers (float dtypes only; null for the others). */
function floats(dtype, hex) {
  const u = new Uint8Array(hex.length / 2);
  for (let i = 0; i < u.length; i++) u[i] = parseInt(hex.slice(2 * i, 2 * i + 2), 16);
  if (dtype === 'float32') return new Float32Array(u.buffer, 0, u.length >> 2);
  if (dtype === 'float64') return new Float64Array(u.buffer, 0, u.length >> 3);
  if (dtype === 'float16' || dtype === 'bfloat16') {
    const h = new Uint16Array(u.buffer, 0, u.length >> 1);
    const f = new Float32Array(1), w = new Uint32Array(f.buffer);
    return Array.from(h, (x) => {
      if (dtype === 'bfloat16') {
        w[0] = x << 16;
        return f[0];
      }
      const sg = x & 0x8000 ? -1 : 1, e = (x >> 10) & 0x1f, m = x & 0x3ff;
      return e === 0 ? sg * m * 2 ** -24 : e === 31 ? (m ? NaN : sg * Infinity) : sg * (1 + m / 1024) * 2 ** (e - 15);
    });
  }
  return null;
}

/** Compares the outputs of two reports: bit-exact for copies/conversions, tolerance for float reductions. */
function compareOutputs(label, a, b) {
  if (!a || !b) return;
  const bMap = new Map(b.outputs.map((o) => [`${o.op}|${o.name}`, o]));
  const problems = [], inexact = [], signedZero = [];
  let compared = 0;
  for (const o of a.outputs) {
    const p = bMap.get(`${o.op}|${o.name}`);
    if (!p) {
      problems.push(`${o.name}: missing in ${b.runtime}/${b.build}`);
      continue;
    }
    compared++;
    if (o.hex === p.hex) continue;
    const x = o.hex.startsWith('[') ? null : floats(o.dtype, o.hex), y = x && floats(p.dtype, p.hex);
    if (EXACT_OPS.includes(o.op) || !x || !y) {
      problems.push(`${o.op} ${o.name}: bytes differ (must be bit-exact)`);
      continue;
    }
    // float reductions: within FLOAT_TOLERANCE (half types: the conformance rule, 1e-3 + 1e-2·|x|)
    const half = o.dtype === 'float16' || o.dtype === 'bfloat16';
    const abs = half ? 1e-3 : FLOAT_TOLERANCE.abs, rel = half ? 1e-2 : FLOAT_TOLERANCE.rel;
    let within = true;
    for (let i = 0; i < x.length; i++) {
      if ((Number.isNaN(x[i]) && Number.isNaN(y[i])) || x[i] === y[i]) continue; // (±Infinity: their difference is NaN)
      if (!(Math.abs(x[i] - y[i]) <= abs + rel * Math.abs(x[i]))) {
        problems.push(`${o.op} ${o.name}[${i}]: ${x[i]} vs ${y[i]}`);
        within = false;
        break;
      }
    }
    if (within) {
      const i = Array.from(x).findIndex((v, j) => !Object.is(v, y[j]));
      const zeroSign = i >= 0 && x[i] === 0 && y[i] === 0;
      const show = (v) => (Object.is(v, -0) ? '-0' : String(v));
      (zeroSign ? signedZero : inexact).push(`${o.op} ${o.name}${i >= 0 ? ` [${i}]: ${show(x[i])} vs ${show(y[i])}` : ''}`);
    }
  }
  if (inexact.length) notes.push(`${label}: ${inexact.length} float outputs within tolerance but not bit-identical (e.g. ${inexact[0]})`);
  if (signedZero.length) notes.push(`${label}: differ only in the sign of a zero: ${signedZero.join('; ')}`);
  record(`${label}: ${compared} outputs agree`, problems.length === 0 && compared > 0 && a.outputs.length === b.outputs.length, problems.slice(0, 10).join('\n') || `${a.outputs.length} vs ${b.outputs.length} outputs`);
}

function freePort() {
  return new Promise((resolve, reject) => {
    const s = createNetServer();
    s.on('error', reject);
    s.listen(0, '127.0.0.1', () => {
      const { port } = s.address();
      s.close(() => resolve(port));
    });
  });
}

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

/** Starts workerd on a config, waits until it answers, runs fn(baseUrl), stops it. */
async function withWorkerd(config, fn) {
  const port = await freePort();
  const child = track(spawn(bin('workerd'), ['serve', config, '--socket-addr', `http=127.0.0.1:${port}`], { cwd: root, stdio: ['ignore', 'pipe', 'pipe'] }));
  let log = '';
  child.stdout.on('data', (d) => (log += d));
  child.stderr.on('data', (d) => (log += d));
  const exited = new Promise((r) => child.on('close', r));
  const killer = setTimeout(() => child.kill('SIGKILL'), 90_000);
  const base = `http://127.0.0.1:${port}`;
  try {
    for (let i = 0; ; i++) {
      if (child.exitCode !== null) throw new Error(`workerd exited: ${log.slice(-2000)}`);
      try {
        await fetch(base + '/__ready', { signal: AbortSignal.timeout(2000) });
        break;
      } catch {
        if (i > 100) throw new Error(`workerd did not answer on ${base}: ${log.slice(-2000)}`);
        await sleep(100);
      }
    }
    return await fn(base, () => log);
  } finally {
    child.kill('SIGTERM');
    const t = setTimeout(() => child.kill('SIGKILL'), 5000);
    await exited;
    clearTimeout(t);
    clearTimeout(killer);
  }
}

const TYPES = { '.html': 'text/html; charset=utf-8', '.js': 'text/javascript', '.mjs': 'text/javascript', '.wasm': 'application/wasm', '.json': 'application/json' };

/** A static server on 127.0.0.1 for dist/, examples/ and test/runtimes/, plus /cases.json and POST /report. */
async function startServer(cases) {
  const reports = [];
  const waiters = [];
  const server = createServer((req, res) => {
    const url = new URL(req.url, 'http://127.0.0.1');
    if (req.method === 'POST' && url.pathname === '/report') {
      let body = '';
      req.on('data', (d) => (body += d));
      req.on('end', () => {
        res.end('ok');
        const r = JSON.parse(body);
        reports.push(r);
        waiters.splice(0).forEach((w) => w());
      });
      return;
    }
    if (url.pathname === '/favicon.ico') {
      res.writeHead(204);
      res.end();
      return;
    }
    if (url.pathname === '/cases.json') {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(casesJson(cases));
      return;
    }
    const rel = normalize(decodeURIComponent(url.pathname)).replace(/^[/\\]+/, '');
    const allowed = ['dist', 'examples', join('test', 'runtimes')].some((d) => rel === d || rel.startsWith(d + sep));
    let file = join(root, rel);
    if (allowed && existsSync(file) && statSync(file).isDirectory()) file = join(file, 'index.html');
    if (!allowed || rel.includes('..') || !existsSync(file)) {
      res.writeHead(404);
      res.end('not found');
      return;
    }
    res.writeHead(200, { 'content-type': TYPES[extname(file)] ?? 'application/octet-stream', 'cache-control': 'no-store' });
    res.end(readFileSync(file));
  });
  server.keepAliveTimeout = 1000;
  await new Promise((r) => server.listen(0, '127.0.0.1', r));
  const base = `http://127.0.0.1:${server.address().port}`;
  const nextReport = (timeoutMs) =>
    new Promise((resolve, reject) => {
      const t = setTimeout(() => reject(new Error('no report from the page in time')), timeoutMs);
      const check = () => {
        if (reports.length) {
          clearTimeout(t);
          resolve(reports.shift());
        } else waiters.push(check);
      };
      check();
    });
  const close = () => new Promise((r) => {
    server.closeAllConnections?.();
    server.close(r);
  });
  return { base, nextReport, close };
}

// ---- size budget ------------------------------------------------------------------

async function checkBudget() {
  const readme = readFileSync(join(root, 'README.md'), 'utf8');
  const block = readme.match(/<!-- budget -->([\s\S]*?)<!-- \/budget -->/);
  if (!block) {
    record('size budget: README has a <!-- budget --> table', false, 'README.md lacks the budget table');
    return;
  }
  // rows: | `dist/<file or glob>` | ≤ N KB | ≤ M KB |
  const rows = [...block[1].matchAll(/^\|\s*`?dist\/([^`|]+?)`?\s*\|\s*≤\s*([\d.]+)\s*KB\s*\|\s*≤\s*([\d.]+)\s*KB\s*\|/gm)];
  // rows: | bundle: `<app entry>` | ≤ N KB | ≤ M KB | — an app bundled by esbuild for the browser
  // (minified, code splitting): the chunks a SIMD-capable browser loads, i.e. everything but
  // the scalar and relaxed embeds.
  const bundles = [...block[1].matchAll(/^\|\s*bundle:\s*`?([^`|]+?)`?\s*\|\s*≤\s*([\d.]+)\s*KB\s*\|\s*≤\s*([\d.]+)\s*KB\s*\|/gm)];
  record('size budget: README table parsed', rows.length >= 2 && bundles.length >= 1, `${rows.length} file rows, ${bundles.length} bundle rows`);
  for (const [, app, raw, gz] of bundles) {
    const out = join(tmpdir(), `edgekernels-bundle-${process.pid}`);
    try {
      const esbuild = await import('esbuild');
      const r = await esbuild.build({ entryPoints: [join(root, app.trim())], bundle: true, splitting: true, format: 'esm', minify: true, platform: 'browser', outdir: out, metafile: true, write: true, logLevel: 'silent' });
      let size = 0, gzip = 0;
      const loaded = [];
      for (const [file, o] of Object.entries(r.metafile.outputs)) {
        const inputs = Object.keys(o.inputs);
        if (inputs.some((i) => /embed\.(scalar|relaxed)\.js$/.test(i))) continue;
        const bytes = readFileSync(join(root, file));
        size += bytes.length;
        gzip += gzipSync(bytes, { level: 9 }).length;
        loaded.push(...inputs);
      }
      const resolvedBrowser = loaded.some((i) => i.endsWith('dist/browser.js')) && loaded.some((i) => i.endsWith('dist/embed.simd.js'));
      const ok = resolvedBrowser && size <= Number(raw) * 1024 && gzip <= Number(gz) * 1024;
      record(`size budget: app bundle of ${app.trim()} (esbuild, browser condition, minified; entry + simd chunk) ${(size / 1024).toFixed(1)} KB (≤ ${raw}), gzip ${(gzip / 1024).toFixed(1)} KB (≤ ${gz})`, ok, ok ? '' : resolvedBrowser ? 'over budget' : `the bundle did not use dist/browser.js + dist/embed.simd.js: ${loaded.join(' ')}`);
    } catch (e) {
      record(`size budget: app bundle of ${app}`, false, e.stack);
    } finally {
      rmSync(out, { recursive: true, force: true });
    }
  }
  for (const [, pattern, raw, gz] of rows) {
    const re = new RegExp('^' + pattern.trim().replace(/\./g, '\\.').replace(/\*/g, '[^/]*') + '$');
    const files = readdirSync(dist).filter((f) => re.test(f));
    if (files.length === 0) record(`size budget: dist/${pattern}`, false, 'no such file');
    for (const f of files) {
      const bytes = readFileSync(join(dist, f));
      const size = bytes.length, gzip = gzipSync(bytes, { level: 9 }).length;
      const ok = size <= Number(raw) * 1024 && gzip <= Number(gz) * 1024;
      if (f.endsWith('.wasm') && size > 150 * 1024) notes.push(`size: dist/${f} is ${(size / 1024).toFixed(1)} KB, over issue 6's target of 150 KB per .wasm (see the README's size budget)`);
      record(`size budget: dist/${f} ${(size / 1024).toFixed(1)} KB (≤ ${raw}), gzip ${(gzip / 1024).toFixed(1)} KB (≤ ${gz})`, ok, ok ? '' : 'over budget');
    }
  }
}

// ---- the matrix -----------------------------------------------------------------------

const cases = loadCases();
record(`conformance cases found in ${CASES_DIR}, test/conformance/upstream and test/conformance/reference`, cases.length > 0, `${cases.length} files`);
const casesArg = `cases=${[CASES_DIR, UPSTREAM_DIR, REFERENCE_DIR].filter((d) => existsSync(d)).join(',')}`;
const child = join('test', 'runtimes', 'cli-child.mjs');

console.log('size budget');
await checkBudget();

console.log('node');
// the engine's own answers about features must match what load.ts decides
let relaxedNative = false;
{
  const pkg = await import(join(dist, 'index.js'));
  relaxedNative = pkg.engineSupports('relaxed');
  const validate = (b) => WebAssembly.validate(new Uint8Array(b));
  const relaxedAccepted = validate([0, 97, 115, 109, 1, 0, 0, 0, 1, 5, 1, 96, 0, 1, 123, 3, 2, 1, 0, 10, 61, 1, 59, 0, ...[0, 0, 0].flatMap(() => [253, 12, ...new Array(16).fill(0)]), 253, 133, 2, 11]);
  record(`node: engineSupports(relaxed) = ${pkg.engineSupports('relaxed')} matches WebAssembly.validate (${relaxedAccepted})`, pkg.engineSupports('relaxed') === relaxedAccepted && pkg.engineSupports('simd') === true);
  record('node: default build is simd', pkg.defaultBuild() === 'simd' || (pkg.RELAXED_PREFERRED && pkg.defaultBuild() === 'relaxed'), pkg.defaultBuild());
}
const [nodeSimd, nodeScalar, nodeRelaxed, nodeNoSimd, nodeRelaxedRejected, nodeDefault] = await Promise.all([
  runProcess('node', [child, 'node', casesArg]),
  runProcess('node', [child, 'node', 'build=scalar', casesArg]),
  // Node 20 runs relaxed SIMD only behind a flag; newer engines accept it as they are
  runProcess('node', [...(relaxedNative ? [] : ['--experimental-wasm-relaxed-simd']), child, 'node', 'build=relaxed', casesArg]),
  runProcess('node', [child, 'node-nosimd', 'nosimd', 'expect=scalar', casesArg]),
  runProcess('node', ['--input-type=module', '-e', "import { init } from 'edgekernels'; try { await init({ build: 'relaxed' }); console.log('accepted'); } catch (e) { console.log(e.code); }"]),
  runProcess('node', [child, 'node-default-entry', 'entry=browser.js', casesArg]),
]);
const reports = {
  simd: parseReport('node simd', nodeSimd),
  scalar: parseReport('node scalar', nodeScalar),
  relaxed: parseReport('node relaxed', nodeRelaxed),
  nosimd: parseReport('node without SIMD', nodeNoSimd),
};
recordReport('node simd (default)', reports.simd);
recordReport('node scalar (forced)', reports.scalar);
recordReport(`node relaxed${relaxedNative ? '' : ' (--experimental-wasm-relaxed-simd)'}`, reports.relaxed);
recordReport('node engine without SIMD (scalar chosen automatically)', reports.nosimd);
const defaultEntry = parseReport('node, default entry', nodeDefault);
recordReport('node running the browser/default entry (embedded bytes)', defaultEntry);
compareOutputs('default entry agrees with the node entry', reports.simd, defaultEntry);
record(`node without the relaxed flag: init({ build: "relaxed" }) is ${relaxedNative ? 'accepted (engine supports it)' : 'refused (INVALID_ARGUMENT)'}`, nodeRelaxedRejected.stdout.trim() === (relaxedNative ? 'accepted' : 'INVALID_ARGUMENT'), nodeRelaxedRejected.stdout + nodeRelaxedRejected.stderr);
compareOutputs('builds agree: simd vs scalar', reports.simd, reports.scalar);
compareOutputs('builds agree: simd vs relaxed', reports.simd, reports.relaxed);
compareOutputs('builds agree: simd vs auto-scalar', reports.simd, reports.nosimd);

console.log('deno, bun');
const [deno, bun] = await Promise.all([
  runProcess(bin('deno'), ['run', '--allow-read', '--no-prompt', child, 'deno', casesArg], { env: { DENO_NO_UPDATE_CHECK: '1' } }),
  runProcess(bin('bun'), [child, 'bun', casesArg]),
]);
const denoReport = parseReport('deno', deno), bunReport = parseReport('bun', bun);
recordReport('deno', denoReport);
record('deno: resolves the deno entry', denoReport?.entry === 'deno.js', denoReport?.entry);
recordReport('bun', bunReport);
record('bun: resolves the bun entry', bunReport?.entry === 'bun.js', bunReport?.entry);
compareOutputs('deno agrees with node', reports.simd, denoReport);
const denoNoRead = await runProcess(bin('deno'), ['run', '--no-prompt', join('test', 'runtimes', 'deno-noread.mjs')], { env: { DENO_NO_UPDATE_CHECK: '1' } });
record('deno without --allow-read: init() is a KernelError UNAVAILABLE', denoNoRead.stdout.trim() === 'KernelError UNAVAILABLE', denoNoRead.stdout + denoNoRead.stderr);
compareOutputs('bun agrees with node', reports.simd, bunReport);

console.log('workerd');
try {
  await withWorkerd(join('test', 'runtimes', 'workerd.capnp'), async (base, log) => {
    for (const build of [undefined, 'scalar']) {
      const res = await fetch(base + '/', { method: 'POST', body: `{"cases":${casesJson(cases)},"build":${JSON.stringify(build ?? null)},"expectBuild":${JSON.stringify(build ?? 'simd')}}`, signal: AbortSignal.timeout(60_000) });
      const text = await res.text();
      let report = null;
      try {
        report = JSON.parse(text);
      } catch {
        record(`workerd ${build ?? 'default'}`, false, `${res.status}: ${text.slice(0, 500)} ${log().slice(-1000)}`);
        continue;
      }
      recordReport(`workerd ${build ?? 'default'} (wasm imported as modules)`, report);
      if (!build) {
        record('workerd refuses to compile wasm from bytes (the entry never needs to)', report.bytesCompile === 'refused', report.bytesCompile);
        compareOutputs('workerd agrees with node', reports.simd, report);
      }
    }
  });
} catch (e) {
  record('workerd', false, e.stack);
}

console.log('examples: node, deno, bun, worker');
const exampleResults = {};
function exampleOutput(name, r) {
  const line = r.stdout.split('\n').find((l) => l.startsWith('decode '));
  const ok = r.code === 0 && !!line;
  record(`example ${name}`, ok, ok ? line.slice(7) : `exit ${r.code}${r.timedOut ? ' (timed out)' : ''}: ${(r.stderr || r.stdout).slice(-1500)}`);
  if (ok) exampleResults[name] = JSON.parse(line.slice(7));
}
const [exNode, exDeno, exBun] = await Promise.all([
  runProcess('node', ['examples/node/index.mjs']),
  runProcess(bin('deno'), ['run', '--allow-read', '--no-prompt', 'examples/deno/main.ts'], { env: { DENO_NO_UPDATE_CHECK: '1' } }),
  runProcess(bin('bun'), ['examples/bun/index.ts']),
]);
exampleOutput('node', exNode);
exampleOutput('deno', exDeno);
exampleOutput('bun', exBun);
try {
  await withWorkerd(join('examples', 'worker', 'config.capnp'), async (base) => {
    const steps = [];
    for (let i = 0; i < 4; i++) {
      const res = await fetch(base + '/', { signal: AbortSignal.timeout(30_000) });
      steps.push(res.ok ? await res.json() : { error: `${res.status} ${await res.text()}` });
    }
    const last = steps[3];
    const ok = steps.every((s, i) => s.step === i + 1) && Array.isArray(last.y);
    record('example worker: one decode step per request, cache kept between requests', ok, ok ? JSON.stringify(last) : JSON.stringify(steps).slice(0, 1000));
    if (ok) exampleResults.worker = { steps: last.step, build: last.build, y: last.y };
  });
} catch (e) {
  record('example worker', false, e.stack);
}

console.log('chromium');
const haveChromium = existsSync(CHROMIUM);
if (!haveChromium && !process.env.CI) {
  const bar = '!'.repeat(78);
  skipped++;
  console.log(`${bar}\n!! SKIPPED: the browser tests. No Chromium at ${CHROMIUM}.\n!! Install it with: apt-get install -y chromium   (CI does; there this is a failure)\n${bar}`);
} else if (!haveChromium) {
  record('chromium installed (CI is set, so the browser tests must run)', false, `no ${CHROMIUM}`);
} else {
  const server = await startServer(cases);
  let browser = null;
  try {
    const { chromium } = await import('playwright-core');
    browser = await chromium.launch({ executablePath: CHROMIUM, args: CHROMIUM_ARGS, timeout: 60_000 });
    const page = await browser.newPage();
    const consoleLines = [];
    page.on('console', (m) => consoleLines.push(m.text()));
    page.on('pageerror', (e) => consoleLines.push(String(e)));
    for (const build of [undefined, 'scalar', 'relaxed', 'nosimd']) {
      const pending = server.nextReport(60_000);
      const query = build === 'nosimd' ? '?nosimd=1&expect=scalar' : build ? `?build=${build}` : '';
      await page.goto(`${server.base}/test/runtimes/browser.html${query}`, { timeout: 30_000 });
      let report = null;
      try {
        report = await pending;
      } catch (e) {
        record(`chromium ${build ?? 'default'}`, false, `${e.message}; console: ${consoleLines.join(' | ').slice(-1500)}`);
        continue;
      }
      recordReport(`chromium ${build === 'nosimd' ? 'engine without SIMD (scalar chosen automatically)' : build ?? 'default'} (embedded builds)`, report);
      compareOutputs(`chromium ${build ?? 'simd'} agrees with node`, build === 'relaxed' ? reports.relaxed : build ? reports.scalar : reports.simd, report);
    }
    await page.goto(`${server.base}/examples/browser/decode.html`, { timeout: 30_000 });
    await page.waitForSelector('#result[data-status]', { timeout: 30_000 });
    const status = await page.getAttribute('#result', 'data-status');
    const text = await page.textContent('#result');
    const ok = status === 'done' && text.startsWith('decode ');
    record('example browser: the page runs a decode step and shows it', ok, ok ? text.slice(7) : `${text}; console: ${consoleLines.join(' | ').slice(-1000)}`);
    if (ok) exampleResults.browser = JSON.parse(text.slice(7));
    // the text-generation demo page (examples/browser/index.html), on its own server
    await checkBrowserDemo({ browser, record, dist });
  } catch (e) {
    record('chromium', false, e.stack);
  } finally {
    if (browser) await browser.close().catch(() => {});
    await server.close();
  }
}

// every example computes the same decode step: the results must agree across runtimes
{
  const names = Object.keys(exampleResults);
  const ref = exampleResults.node;
  const bad = names.filter((n) => {
    const r = exampleResults[n];
    return !ref || r.y.length !== ref.y.length || r.y.some((x, i) => !(Math.abs(x - ref.y[i]) <= 2e-6));
  });
  record(`examples agree across runtimes (${names.join(', ')})`, !!ref && names.length >= 2 && bad.length === 0, bad.map((n) => `${n}: ${JSON.stringify(exampleResults[n].y)} vs node ${JSON.stringify(ref?.y)}`).join('\n'));
}

if (notes.length) console.log(`\nnotes (not failures):\n- ${notes.join('\n- ')}`);
if (failures.length) console.log(`\nfailures:\n- ${failures.join('\n- ')}`);
console.log(`\nruntimes: ${passed} passed, ${failed} failed${skipped ? `, ${skipped} skipped` : ''}`);
process.exitCode = failed ? 1 : 0;
