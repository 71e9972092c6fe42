// Start-up and builds. `node bench/run.mjs runtime`.
//
// suite 'init' — the cost of init() in Node once the .wasm file is read (target ≤ 10 ms):
//   from bytes (compile + instantiate + arena), from a compiled Module (instantiate only),
//   and a warm init() (the entry's cached module).
// suite 'builds' — the same decode step (KV-cache update of K and V, plus TRT_Attention when
//   the registry has it) on each build: impl 'edgekernels' is the default simd build,
//   'scalar' and 'relaxed' the others. src/load.ts RELAXED_PREFERRED follows this result:
//   relaxed is chosen automatically only where it is measurably faster. Node 20 runs
//   relaxed SIMD only behind --experimental-wasm-relaxed-simd, so that comparison runs in a
//   child process with the flag (its simd baseline measured in the same child).
import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const here = dirname(fileURLToPath(import.meta.url));
const dist = join(here, '..', 'dist');
const FILES = { simd: 'edgekernels.wasm', scalar: 'edgekernels.scalar.wasm', relaxed: 'edgekernels.relaxed.wasm' };

/** A decode step at a realistic size: 8 KV heads × 128, a 1024-token cache half full. */
function decodeStep(ek, OPS) {
  const H = 8, D = 128, N = 1024, filled = 512;
  const kCache = ek.tensor('float32', [1, H, N, D]), vCache = ek.tensor('float32', [1, H, N, D]);
  const k = ek.tensor('float32', [1, H, 1, D]), v = ek.tensor('float32', [1, H, 1, D]), q = ek.tensor('float32', [1, H, 1, D]);
  const y = ek.tensor('float32', [1, H, 1, D]);
  const pos = ek.tensor('int32', [1], [filled]), len = ek.tensor('int32', [1], [filled + 1]);
  for (const t of [kCache, vCache, k, v, q]) {
    const d = t.data;
    for (let i = 0; i < d.length; i++) d[i] = Math.sin(i * 0.001);
  }
  const attention = OPS.has('TRT_Attention');
  const run = () => {
    ek.run('TRT_KVCacheUpdate', [kCache, k, pos]);
    ek.run('TRT_KVCacheUpdate', [vCache, v, pos]);
    if (attention) ek.run('TRT_Attention', [q, kCache, vCache, null, null, len], {}, { outputs: [y] });
  };
  // bytes: new rows written + (with attention) the cache rows read
  const bytes = 2 * 2 * H * D * 4 + (attention ? 2 * (filled + 1) * H * D * 4 : 0);
  const flops = attention ? 4 * (filled + 1) * H * D : 0;
  // the step's result: the attention output, or the cache row the update wrote
  const output = () => (attention ? new Float32Array(y.data) : new Float32Array(kCache.data).subarray(filled * D, (filled + 1) * D));
  return { run, bytes, flops, attention, output };
}

export default async function (h) {
  const pkg = await import(join(dist, 'index.js'));
  const { init, OPS } = pkg;

  // ---- init ----
  const bytes = readFileSync(join(dist, FILES.simd));
  const module = await WebAssembly.compile(bytes);
  const initCase = async (name, opts) => {
    const stats = await h.time(async () => (await init(opts)).dispose(), { minMs: 400, maxRuns: 200 });
    h.emit({ suite: 'init', case: name, impl: 'edgekernels', stats, bytes: bytes.length });
  };
  await initCase(`from bytes: compile + instantiate (${bytes.length} B)`, { wasm: bytes });
  await initCase('from a compiled Module: instantiate only', { wasm: module });
  await initCase('init() warm (module cached by the entry)', {});

  // ---- the first init() of a fresh process (no code cache of this module yet) ----
  // Each child measures one thing first thing, so nothing earlier in it competes: a second
  // compile started after a decode step waits behind that step's background tier-up jobs
  // (V8 recompiles the hot kernels with TurboFan on the other threads), which had put 14–24 ms
  // on this row when it followed a step in the same child, against ~5 ms on its own.
  const fresh = { init: [], firstStep: [], initDefault: [] };
  for (let i = 0; i < 30; i++) {
    const mode = i % 2 === 0 ? '--fresh-child' : '--fresh-child-default';
    const r = spawnSync(process.execPath, [fileURLToPath(import.meta.url), mode], { encoding: 'utf8', timeout: 30_000 });
    const line = (r.stdout ?? '').split('\n').find((l) => l.startsWith('{'));
    if (!line) {
      console.error(`fresh child failed: ${r.stderr}`);
      break;
    }
    const x = JSON.parse(line);
    for (const k of Object.keys(fresh)) if (x[k] !== undefined) fresh[k].push(x[k]);
  }
  const summary = (xs) => {
    const s = [...xs].sort((a, b) => a - b);
    const q = (p) => s[Math.min(s.length - 1, Math.floor(p * s.length))];
    return { median: q(0.5), p10: q(0.1), p90: q(0.9), runs: s.length };
  };
  if (fresh.init.length && fresh.initDefault.length) {
    h.emit({ suite: 'init', case: 'fresh process: init({ wasm: bytes }) once the file is read (target ≤ 10 ms)', impl: 'edgekernels', stats: summary(fresh.init), bytes: bytes.length });
    h.emit({ suite: 'init', case: 'fresh process: init() including the file read', impl: 'edgekernels', stats: summary(fresh.initDefault), bytes: bytes.length });
    h.emit({ suite: 'init', case: 'fresh process: first decode step after init (lazy kernel compilation)', impl: 'edgekernels', stats: summary(fresh.firstStep) });
  }

  // ---- builds, in this process: one instance each, interleaved (h.compare: paired ratios to
  // the simd build); each step's output checked against the simd build's first ----
  const label = (step) => `decode step (${step.attention ? 'KV update + TRT_Attention' : 'KV update'}, 8×128, cache 512/1024)`;
  const builds = ['simd', 'scalar', 'relaxed'].filter((b) => pkg.engineSupports(b));
  const eks = await Promise.all(builds.map((build) => init({ build })));
  const steps = eks.map((ek) => decodeStep(ek, OPS));
  const outs = steps.map((st) => { st.run(); return st.output(); });
  for (let i = 1; i < outs.length; i++) {
    if (!h.agrees(`builds: ${builds[i]} decode step against simd`, outs[i], outs[0], 1e-5)) throw new Error(`runtime bench: the ${builds[i]} build's decode step differs`);
  }
  // a run of 20 steps per call: one step (~40 µs) is near the timer's resolution
  const K = 20;
  await h.compare('builds', label(steps[0]), builds.map((build, i) => ({
    impl: build === 'simd' ? 'edgekernels' : `edgekernels-${build}`, fn: () => { for (let k = 0; k < K; k++) steps[i].run(); }, per: K,
    bytes: steps[i].bytes, flops: steps[i].flops || undefined,
  })), { rounds: 30 });
  eks.forEach((ek) => ek.dispose());

  // ---- simd vs relaxed where Node needs a flag for it ----
  if (!pkg.engineSupports('relaxed')) {
    const r = spawnSync(process.execPath, ['--experimental-wasm-relaxed-simd', fileURLToPath(import.meta.url), '--relaxed-child'], { encoding: 'utf8', timeout: 60_000 });
    for (const line of (r.stdout ?? '').split('\n')) {
      if (!line.startsWith('{')) continue;
      const x = JSON.parse(line);
      h.emit({ suite: 'builds (node --experimental-wasm-relaxed-simd)', case: x.case, impl: x.build === 'simd' ? 'edgekernels' : `edgekernels-${x.build}`, stats: x.stats, bytes: x.bytes, flops: x.flops || undefined, paired: x.paired });
    }
    if (r.status !== 0) console.error(`relaxed child failed: ${r.stderr}`);
  }
}

if (process.argv.includes('--relaxed-child')) {
  const { init, OPS } = await import(join(dist, 'index.js'));
  const { interleave, pairedRatio, stats } = await import('./harness.mjs');
  // simd and relaxed instances side by side, interleaved as h.compare does (paired ratios)
  const builds = ['simd', 'relaxed'];
  const eks = await Promise.all(builds.map((build) => init({ build })));
  const steps = eks.map((ek) => decodeStep(ek, OPS));
  const K = 20;
  const impls = await interleave(steps.map((st) => ({ fn: () => { for (let k = 0; k < K; k++) st.run(); } })), { warmMs: 500, rounds: 30 });
  impls.forEach((m, i) => {
    const per = (xs) => xs.map((t) => t / K);
    m.samples = per(m.samples); m.roundMs = per(m.roundMs);
    const st = steps[i];
    console.log(JSON.stringify({ build: builds[i], case: `decode step (${st.attention ? 'KV update + TRT_Attention' : 'KV update'}, 8×128, cache 512/1024)`, stats: stats(m.samples), bytes: st.bytes, flops: st.flops, paired: pairedRatio(m, impls[0]) }));
  });
  eks.forEach((ek) => ek.dispose());
}

if (process.argv.includes('--fresh-child')) {
  const { init, OPS } = await import(join(dist, 'index.js'));
  const bytes = readFileSync(join(dist, FILES.simd));
  const t0 = performance.now();
  const ek = await init({ wasm: bytes });
  const t1 = performance.now();
  const step = decodeStep(ek, OPS);
  const t2 = performance.now();
  step.run();
  const t3 = performance.now();
  ek.dispose();
  console.log(JSON.stringify({ init: t1 - t0, firstStep: t3 - t2 }));
}

if (process.argv.includes('--fresh-child-default')) {
  const { init } = await import(join(dist, 'index.js'));
  const t0 = performance.now();
  (await init()).dispose(); // the entry reads the file and compiles it itself
  console.log(JSON.stringify({ initDefault: performance.now() - t0 }));
}
