// The runtime test module: the SAME checks run in Node, Deno, Bun, workerd and Chromium
// (test/runtimes/run.mjs drives them). Plain ES2022, no imports: each runtime hands in the
// package it resolved (`pkg`), the conformance cases (data, since workerd and browsers
// read no files) and, where the runtime may compile wasm from bytes, extra wasm sources.
//
// It returns a report { runtime, build, passed, failed, failures, outputs }: `outputs`
// holds every computed tensor (hex bytes) so that the runner can compare builds
// (bit-exact for copies and conversions, within FLOAT_TOLERANCE for float reductions).

/** Ops whose results are copies or conversions: every build must agree bit for bit. */
export const EXACT_OPS = ['TensorScatter', 'TRT_KVCacheUpdate', 'Cast', 'QuantizeLinear', 'DequantizeLinear', 'decode:cache'];
/** Float reductions (attention, scans) may differ between builds by summation order, at most by this. */
export const FLOAT_TOLERANCE = { abs: 1e-5, rel: 1e-4 };

class Failure extends Error {}
const fail = (msg) => {
  throw new Failure(msg);
};
const ok = (cond, msg) => {
  if (!cond) fail(msg);
};

function hex(view) {
  if (!ArrayBuffer.isView(view)) return JSON.stringify(Array.from(view, String)); // a plain input updated in place
  const u = new Uint8Array(view.buffer, view.byteOffset, view.byteLength);
  let s = '';
  for (let i = 0; i < u.length; i++) s += (u[i] < 16 ? '0' : '') + u[i].toString(16);
  return s;
}

function f16ToF32(h) {
  const s = h & 0x8000 ? -1 : 1, e = (h >> 10) & 0x1f, m = h & 0x3ff;
  if (e === 0) return s * m * 2 ** -24;
  if (e === 31) return m ? NaN : s * Infinity;
  return s * (1 + m / 1024) * 2 ** (e - 15);
}
function bf16ToF32(h) {
  const b = new DataView(new ArrayBuffer(4));
  b.setUint32(0, h << 16);
  return b.getFloat32(0);
}
function decode(dtype, data) {
  return Array.from(data, (v) => {
    const n = Number(v);
    return dtype === 'float16' ? f16ToF32(n) : dtype === 'bfloat16' ? bf16ToF32(n) : n;
  });
}

/** Same rule as test/helpers.ts expectConformant (shared/conformance/README.md). */
function checkConformant(got, want, label) {
  ok(got.dtype === want.dtype, `${label}: dtype ${got.dtype}, want ${want.dtype}`);
  ok(JSON.stringify([...got.shape]) === JSON.stringify(want.shape), `${label}: shape ${JSON.stringify([...got.shape])}, want ${JSON.stringify(want.shape)}`);
  const exact = !['float32', 'float64', 'float16', 'bfloat16'].includes(want.dtype);
  if (exact) {
    const g = Array.from(got.data, String), w = Array.from(want.data, String);
    ok(g.length === w.length, `${label}: ${g.length} values, want ${w.length}`);
    for (let i = 0; i < w.length; i++) ok(g[i] === w[i], `${label}[${i}]: got ${g[i]}, want ${w[i]}`);
    return;
  }
  const g = decode(want.dtype, got.data), w = decode(want.dtype, want.data);
  ok(g.length === w.length, `${label}: ${g.length} values, want ${w.length}`);
  const half = want.dtype === 'float16' || want.dtype === 'bfloat16';
  for (let i = 0; i < w.length; i++) {
    if (Number.isNaN(w[i])) ok(Number.isNaN(g[i]), `${label}[${i}]: got ${g[i]}, want NaN`);
    else if (!Number.isFinite(w[i])) ok(g[i] === w[i], `${label}[${i}]: got ${g[i]}, want ${w[i]}`);
    else {
      const tol = half ? 1e-2 * Math.abs(w[i]) + 1e-3 : 1e-4 + 1e-3 * Math.abs(w[i]);
      ok(Math.abs(g[i] - w[i]) <= tol, `${label}[${i}]: got ${g[i]}, want ${w[i]} (tolerance ${tol})`);
    }
  }
}

function expectError(pkg, fn, code, label) {
  try {
    fn();
  } catch (e) {
    ok(e instanceof pkg.KernelError, `${label}: threw ${e && e.name}: ${e && e.message}, want KernelError ${code}`);
    ok(e.code === code, `${label}: code ${e.code}, want ${code} (${e.message})`);
    return e;
  }
  fail(`${label}: did not throw, want KernelError ${code}`);
}

async function expectErrorAsync(pkg, fn, code, label) {
  try {
    await fn();
  } catch (e) {
    ok(e instanceof pkg.KernelError, `${label}: threw ${e && e.name}: ${e && e.message}, want KernelError ${code}`);
    ok(e.code === code, `${label}: code ${e.code}, want ${code} (${e.message})`);
    return;
  }
  fail(`${label}: did not throw, want KernelError ${code}`);
}

/** A small deterministic generator (xorshift32), values in [-1, 1). */
function rng(seed) {
  let x = seed >>> 0 || 1;
  return () => {
    x ^= x << 13;
    x >>>= 0;
    x ^= x >>> 17;
    x ^= x << 5;
    x >>>= 0;
    return x / 2 ** 31 - 1;
  };
}

/**
 * One decode step of a single-layer toy model: write the new K and V rows into caches
 * that live in wasm memory (TRT_KVCacheUpdate), then attend the new query over the
 * cache so far (TRT_Attention, when the registry has it; scores = q·k·scale with the
 * scale folded into q, since TRT_Attention has no implicit scale). Returns the outputs.
 */
export function decodeLoop(ek, pkg, { steps = 6, B = 1, H = 2, N = 16, D = 8, seed = 7 } = {}) {
  const attention = pkg.OPS.has('TRT_Attention');
  const r = rng(seed);
  const kCache = ek.tensor('float32', [B, H, N, D]);
  const vCache = ek.tensor('float32', [B, H, N, D]);
  const k = ek.tensor('float32', [B, H, 1, D]);
  const v = ek.tensor('float32', [B, H, 1, D]);
  const q = ek.tensor('float32', [B, H, 1, D]);
  const pos = ek.tensor('int32', [B]);
  const lens = ek.tensor('int32', [B]);
  const y = attention ? ek.tensor('float32', [B, H, 1, D]) : null;
  const refK = [], refV = [];
  const outputs = [];
  let before = null;
  for (let t = 0; t < steps; t++) {
    const kd = Array.from({ length: B * H * D }, r), vd = Array.from({ length: B * H * D }, r), qd = Array.from({ length: B * H * D }, r);
    k.data.set(kd);
    v.data.set(vd);
    q.data.set(qd.map((x) => x / Math.sqrt(D)));
    pos.data.fill(t);
    lens.data.fill(t + 1);
    refK.push(Float32Array.from(kd));
    refV.push(Float32Array.from(vd));
    const [kc] = ek.run('TRT_KVCacheUpdate', [kCache, k, pos], {}, { outputs: [kCache] });
    const [vc] = ek.run('TRT_KVCacheUpdate', [vCache, v, pos], {});
    ok(kc === kCache && vc === vCache, 'decode: TRT_KVCacheUpdate returns the cache tensor itself');
    if (attention) {
      const out = ek.run('TRT_Attention', [q, kCache, vCache, null, null, lens], {}, { outputs: [y] });
      ok(out[0] === y, 'decode: TRT_Attention fills the given output tensor');
      // reference: float64 softmax attention over positions 0..t
      const yd = y.data;
      const qs = q.data;
      for (let b = 0; b < B; b++) {
        for (let h = 0; h < H; h++) {
          const row = b * H + h;
          const scores = [];
          for (let j = 0; j <= t; j++) {
            let s = 0;
            for (let d = 0; d < D; d++) s += qs[row * D + d] * refK[j][row * D + d];
            scores.push(s);
          }
          const m = Math.max(...scores);
          const e = scores.map((s) => Math.exp(s - m));
          const z = e.reduce((a, c) => a + c, 0);
          for (let d = 0; d < D; d++) {
            let want = 0;
            for (let j = 0; j <= t; j++) want += (e[j] / z) * refV[j][row * D + d];
            const got = yd[row * D + d];
            ok(Math.abs(got - want) <= 1e-5 + 1e-4 * Math.abs(want), `decode step ${t}: y[${b},${h},0,${d}] = ${got}, want ${want}`);
          }
        }
      }
      outputs.push({ op: 'decode:attention', name: `step ${t}`, dtype: 'float32', hex: hex(y.data) });
    }
    // the caches hold exactly the rows written so far, zeros after
    const kd2 = kCache.data;
    for (let row = 0; row < B * H; row++) {
      for (let j = 0; j < N; j++) {
        for (let d = 0; d < D; d++) {
          const want = j <= t ? refK[j][row * D + d] : 0;
          const got = kd2[(row * N + j) * D + d];
          if (!Object.is(got, want)) fail(`decode step ${t}: kCache[${row},${j},${d}] = ${got}, want ${want}`);
        }
      }
    }
    const s = ek.stats();
    if (before === null) before = s;
    else ok(s.tensorsLive === before.tensorsLive && s.bytesInUse === before.bytesInUse && s.memoryBytes === before.memoryBytes, `decode step ${t}: allocated (stats ${JSON.stringify(s)} vs ${JSON.stringify(before)})`);
  }
  outputs.push({ op: 'decode:cache', name: 'k', dtype: 'float32', hex: hex(kCache.data) }, { op: 'decode:cache', name: 'v', dtype: 'float32', hex: hex(vCache.data) });
  for (const x of [kCache, vCache, k, v, q, pos, lens, y]) if (x) x.dispose();
  return { attention, outputs };
}

/**
 * Runs every check; never throws. `options`:
 *   pkg        the package module (init, KernelError, OPS, …) as the runtime resolved it
 *   cases      conformance cases [{ file, op, attributes, inputs, outputs }]
 *   build      the build to force (undefined: the package chooses)
 *   expectBuild the build stats().build must report
 *   sources    optional { bytes, module, response: () => Response, url } for init({ wasm })
 *   runtime    a label for the report
 */
export async function runSuite(options) {
  const { pkg, cases = [], build, runtime = 'unknown', sources = {} } = options;
  const report = { runtime, build: null, ops: [...pkg.OPS.keys()], passed: 0, failed: 0, failures: [], checks: [], outputs: [], attention: false };
  const check = async (name, fn) => {
    try {
      await fn();
      report.passed++;
      report.checks.push(name);
    } catch (e) {
      report.failed++;
      const detail = e instanceof Failure || (e && e.name === 'KernelError') ? e.message : String((e && e.stack) || e).split('\n').slice(0, 4).join('\n');
      report.failures.push(`${name}: ${detail}`);
    }
  };
  const initOpts = build ? { build } : {};
  let ek = null;

  await check('init', async () => {
    ek = await pkg.init(initOpts);
    const s = ek.stats();
    report.build = s.build;
    if (options.expectBuild) ok(s.build === options.expectBuild, `stats().build = ${s.build}, want ${options.expectBuild}`);
    ok(s.memoryBytes > 0 && s.tensorsLive === 0 && s.bytesInUse === 0, `fresh stats ${JSON.stringify(s)}`);
  });
  if (!ek) return report;

  // Conformance: every case whose operator the registry has.
  for (const c of cases) {
    if (!pkg.OPS.has(c.op)) continue;
    await check(`conformance ${c.file}`, () => {
      const requests = c.outputs.map((o) => (o ? true : null));
      const before = ek.stats().tensorsLive;
      const got = ek.run(c.op, c.inputs, c.attributes ?? {}, { outputs: requests });
      c.outputs.forEach((want, i) => {
        if (!want) return;
        ok(got[i], `${c.file}: output ${i} (${want.name}) missing`);
        checkConformant(got[i], want, `${c.file} output ${i}`);
        if (got[i].dtype !== 'string') report.outputs.push({ op: c.op, name: `${c.file}#${i}`, dtype: got[i].dtype, hex: hex(got[i].data) });
      });
      for (const t of got) if (t && typeof t.dispose === 'function') t.dispose();
      ok(ek.stats().tensorsLive === before, `${c.file}: leaked tensors`);
    });
  }

  await check('decode loop (cache update' + (pkg.OPS.has('TRT_Attention') ? ' + attention)' : ')'), () => {
    const r = decodeLoop(ek, pkg);
    report.attention = r.attention;
    report.outputs.push(...r.outputs);
  });

  await check('memory growth keeps data and views', async () => {
    const small = await pkg.init({ ...initOpts, initialMemory: 65536, maximumMemory: 8 << 20 });
    const a = small.tensor('float32', [4, 4], Array.from({ length: 16 }, (_, i) => i * 0.5));
    const m0 = small.stats().memoryBytes;
    const big = small.tensor('uint8', [3 << 20]);
    ok(small.stats().memoryBytes > m0, `memory did not grow: ${m0} -> ${small.stats().memoryBytes}`);
    ok(a.data.length === 16 && a.data[15] === 7.5 && a.data[3] === 1.5, `tensor data after growth: ${Array.from(a.data)}`);
    // an op after growth reads and writes through fresh views
    const upd = small.tensor('float32', [4, 1], [9, 9, 9, 9]);
    small.run('TensorScatter', [a, upd, null], { axis: 1 });
    ok(a.data[0] === 9 && a.data[1] === 0.5 && a.data[4] === 9, `scatter after growth: ${Array.from(a.data)}`);
    const snap = new Uint8Array(small.memory.buffer).slice();
    expectError(pkg, () => small.tensor('uint8', [6 << 20]), 'OUT_OF_MEMORY', 'allocation past maximumMemory');
    const after = new Uint8Array(small.memory.buffer);
    ok(after.length === snap.length && after.every((x, i) => x === snap[i]), 'a failed allocation changed memory');
    big.dispose();
    small.dispose();
    expectError(pkg, () => small.stats(), 'DISPOSED', 'stats after dispose');
  });

  await check('errors leave tensors bit-identical', async () => {
    expectError(pkg, () => ek.run('NoSuchOp', []), 'UNKNOWN_OP', 'unknown op');
    const cache = ek.tensor('float32', [1, 2, 4, 3], Array.from({ length: 24 }, (_, i) => i));
    const before = hex(cache.data);
    const e1 = expectError(pkg, () => ek.run('TensorScatter', [cache, { dtype: 'float32', shape: [1, 2, 2, 4], data: new Float32Array(16) }]), 'INVALID_SHAPE', 'scatter shape mismatch');
    ok(/update/.test(e1.message), `error message names the input: ${e1.message}`);
    expectError(pkg, () => ek.run('TensorScatter', [cache, { dtype: 'float32', shape: [1, 2, 2, 3], data: new Float32Array(12).fill(1) }, { dtype: 'int64', shape: [1], data: [3n] }]), 'INVALID_VALUE', 'linear overflow');
    expectError(pkg, () => ek.run('TensorScatter', [cache, { dtype: 'int32', shape: [1, 2, 1, 3], data: new Int32Array(6) }]), 'INVALID_DTYPE', 'dtype mismatch');
    expectError(pkg, () => ek.run('TensorScatter', [cache, null]), 'MISSING_INPUT', 'missing input');
    expectError(pkg, () => ek.run('TensorScatter', [cache, cache], { mode: 'sideways' }), 'INVALID_ATTRIBUTE', 'bad attribute');
    ok(hex(cache.data) === before, 'a throwing call changed the cache');
    cache.dispose();
    expectError(pkg, () => cache.data, 'DISPOSED', 'data of a disposed tensor');
    await expectErrorAsync(pkg, () => pkg.init({ build: 'fastest' }), 'INVALID_ARGUMENT', 'unknown build');
    await expectErrorAsync(pkg, () => pkg.init({ wasm: 42 }), 'INVALID_ARGUMENT', 'bad wasm source');
    // not wasm at all / a valid module that is not ours (workerd refuses both at compile: same code)
    await expectErrorAsync(pkg, () => pkg.init({ wasm: new Uint8Array([1, 2, 3, 4]) }), 'INVALID_ARGUMENT', 'garbage wasm bytes');
    await expectErrorAsync(pkg, () => pkg.init({ wasm: new Uint8Array([0, 97, 115, 109, 1, 0, 0, 0]) }), 'INVALID_ARGUMENT', 'a module without the kernels');
    ok(ek.stats().tensorsLive === 0, `tensors left: ${ek.stats().tensorsLive}`);
  });

  for (const [kind, get] of Object.entries(sources)) {
    if (!get) continue;
    await check(`init({ wasm: ${kind} })`, async () => {
      const k2 = await pkg.init({ wasm: await get() });
      if (options.expectBuild && kind !== 'other') ok(k2.stats().build === options.expectBuild, `stats().build = ${k2.stats().build}, want ${options.expectBuild}`);
      const c = k2.tensor('uint8', [1, 1, 4, 2]);
      k2.run('TensorScatter', [c, { dtype: 'uint8', shape: [1, 1, 1, 2], data: [5, 6] }, { dtype: 'int32', shape: [1], data: [2] }]);
      ok(hex(c.data) === '0000000005060000', `scatter through a ${kind}-compiled instance: ${hex(c.data)}`);
      k2.dispose();
    });
  }

  ek.dispose();
  return report;
}
