// Attention: decode over a GQA KV cache, causal prefill, a ragged packed batch against the
// same sequences one by one, and TRT_QuantizedAttention decode against TRT_Attention.
// Peers: onnxruntime-web (wasm, 1 thread) and onnxruntime-node (CPU, 1 intra-op thread)
// running ONNX Attention (opset 23) on the same shapes, plus memcpy of the same traffic.
// `bytes` for decode = the K and V bytes the step must read; `flops` = 2 flops per
// multiply-add of QK^T and PV over the visible keys.
// The relaxed-SIMD build (fused multiply-adds in the hot loops) is compared with the default
// simd build on the decode and prefill cases, interleaved in one process: in this one when
// the engine accepts relaxed SIMD, else in a child `node --experimental-wasm-relaxed-simd`
// (Node 20); its rows carry suite 'Attention (relaxed build)', impl 'edgekernels' = simd.
import { OnnxGraph } from './onnx.mjs';
import { spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';

function rng(seed) {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

function randomF32(n, seed) {
  const r = rng(seed);
  const a = new Float32Array(n);
  for (let i = 0; i < n; i++) a[i] = r() * 2 - 1;
  return a;
}

/** Decode (GQA 32q/8kv D=128 L=4096) and causal prefill (1,8,512,64) on an instance: [{ name, fn, bytes?, flops }]. */
function relaxedCases(ek) {
  const Hq = 32, Hkv = 8, D = 128, L = 4096;
  const T = [];
  const t = (dtype, shape, data) => { const x = ek.tensor(dtype, shape, data); T.push(x); return x; };
  const Q = t('float32', [1, Hq, 1, D], randomF32(Hq * D, 1)), K = t('float32', [1, Hkv, L, D], randomF32(Hkv * L * D, 2));
  const V = t('float32', [1, Hkv, L, D], randomF32(Hkv * L * D, 3)), Y = t('float32', [1, Hq, 1, D]);
  const H = 8, S = 512, Dp = 64, n = H * S * Dp;
  const Qp = t('float32', [1, H, S, Dp], randomF32(n, 11)), Kp = t('float32', [1, H, S, Dp], randomF32(n, 12));
  const Vp = t('float32', [1, H, S, Dp], randomF32(n, 13)), Yp = t('float32', [1, H, S, Dp]);
  return {
    cases: [
      { name: `decode GQA ${Hq}q/${Hkv}kv D=${D} L=${L} f32`, fn: () => ek.run('Attention', [Q, K, V], {}, { outputs: [Y] }), bytes: 2 * Hkv * L * D * 4, flops: 2 * 2 * Hq * L * D },
      { name: `causal prefill (1,${H},${S},${Dp}) f32`, fn: () => ek.run('Attention', [Qp, Kp, Vp], { is_causal: 1 }, { outputs: [Yp] }), flops: 2 * 2 * H * ((S * (S + 1)) / 2) * Dp },
    ],
    dispose: () => T.forEach((x) => x.dispose()),
  };
}

/** simd vs relaxed build, interleaved rounds in this process: one { case, impl, stats, bytes, flops, paired } per build and case. */
async function relaxedRows(init, fast) {
  const { interleave, pairedRatio, stats } = await import('./harness.mjs');
  const builds = [['edgekernels', await init({ build: 'simd' })], ['edgekernels relaxed', await init({ build: 'relaxed' })]];
  const sets = builds.map(([, ek]) => relaxedCases(ek));
  const rows = [];
  for (let c = 0; c < sets[0].cases.length; c++) {
    const ms = await interleave(sets.map((set, i) => ({ impl: builds[i][0], ...set.cases[c] })), { warmMs: fast ? 200 : 500, rounds: fast ? 8 : 24 });
    for (const m of ms) rows.push({ case: m.name, impl: m.impl, stats: stats(m.samples), bytes: m.bytes, flops: m.flops, paired: pairedRatio(m, ms[0]) });
  }
  sets.forEach((s) => s.dispose());
  builds.forEach(([, ek]) => ek.dispose());
  return rows;
}

if (process.argv.includes('--relaxed-child')) {
  const { init } = await import('../dist/index.js');
  for (const row of await relaxedRows(init, process.env.BENCH_FAST === '1')) console.log(JSON.stringify(row));
}

export default async function (h) {
  const { ek } = h;
  const fast = process.env.BENCH_FAST === '1';
  // Every implementation (ours and the wasm / native peers) first runs for `warmMs`, so
  // the engines' optimizing tiers (V8's TurboFan for wasm) are measured, not the baseline.
  // The implementations of one case are then timed in interleaved rounds (one run of each,
  // in turn), and each row carries its paired ratio to ours (the median over rounds of the
  // two round times' ratio): a change of machine load hits both sides of a round alike.
  const opts = { warmMs: fast ? 200 : 500, rounds: fast ? 8 : 24 };
  /** impls: [{ impl, fn, bytes?, flops? }], ours first → emits one row per impl. */
  const measure = async (suite, name, impls) => {
    await h.interleave(impls, opts);
    for (const m of impls) h.emit({ suite, case: name, impl: m.impl, stats: h.stats(m.samples), bytes: m.bytes, flops: m.flops, paired: h.pairedRatio(m, impls[0]) });
  };

  /**
   * ORT peers running ONNX Attention with the given feeds: [{ impl, fn }] (missing peers left
   * out). `want`: our output, which each peer's first output must match (within 1e-4) before
   * it is timed, so a peer computing something else is never compared. Then, for
   * onnxruntime-web, the same feeds into a graph that only copies Q (Identity): what its run()
   * costs before any attention, as it copies every input into its wasm heap on each call
   * (ours read K and V where they live).
   */
  const ortPeers = async (name, inputs, outputs, attributes, feeds, extra, want) => {
    const model = h.onnxModel({ op: 'Attention', opset: 23, inputs, outputs, attributes });
    const out = [];
    for (const impl of ['web', 'node']) {
      const peer = h.ort[impl];
      if (!peer) continue;
      try {
        const fn = (await peer.session(model)).prepare(feeds);
        const got = (await fn())[outputs[0].name].data;
        let diff = 0;
        for (let i = 0; i < want.length; i++) diff = Math.max(diff, Math.abs(got[i] - want[i]));
        if (got.length !== want.length || !(diff <= 1e-4)) throw new Error(`output differs from ours (max |Δ| ${diff}, ${got.length} vs ${want.length} values): not timed`);
        out.push({ impl: `ort-${impl}`, fn, ...extra });
      } catch (e) {
        console.error(`# ort-${impl} ${name}: ${e.message.split('\n')[0]}`);
      }
    }
    if (h.ort.web) {
      const g = new OnnxGraph();
      for (const x of inputs) g.input(x.name, x.dtype, x.shape);
      g.output('Yc', inputs[0].dtype, inputs[0].shape);
      g.node('Identity', [inputs[0].name], {}, { outputs: ['Yc'] });
      const copy = g.model({ opset: 21 });
      try {
        // Identity reads only Q; K and V stay graph inputs (fed, so copied), unused
        const fn = (await h.ort.web.session(copy)).prepare(feeds);
        await fn();
        out.push({ impl: 'ort-web feeds only (Identity of Q: the per-call input copy)', fn });
      } catch (e) {
        console.error(`# ort-web feeds only ${name}: ${e.message.split('\n')[0]}`);
      }
    }
    return out;
  };

  // ---- decode: GQA 32 q heads over 8 kv heads, D = 128, 4096 cached tokens ----
  {
    const Hq = 32, Hkv = 8, D = 128, L = 4096;
    const name = `decode GQA ${Hq}q/${Hkv}kv D=${D} L=${L} f32`;
    const q = randomF32(Hq * D, 1), k = randomF32(Hkv * L * D, 2), v = randomF32(Hkv * L * D, 3);
    const Q = ek.tensor('float32', [1, Hq, 1, D], q);
    const K = ek.tensor('float32', [1, Hkv, L, D], k);
    const V = ek.tensor('float32', [1, Hkv, L, D], v);
    const Y = ek.tensor('float32', [1, Hq, 1, D]);
    const bytes = 2 * Hkv * L * D * 4;
    const flops = 2 * 2 * Hq * L * D;
    // memcpy of 64 MiB: its GB/s column is the traffic rate (bytes read + written per
    // second), the figure our K+V bytes-read rate is held against
    const { src, dst } = h.copyBuffers(64 << 20);
    const shapes = [
      { name: 'Q', dtype: 'float32', shape: [1, Hq, 1, D] },
      { name: 'K', dtype: 'float32', shape: [1, Hkv, L, D] },
      { name: 'V', dtype: 'float32', shape: [1, Hkv, L, D] },
    ];
    ek.run('Attention', [Q, K, V], {}, { outputs: [Y] });
    const peers = await ortPeers(name, shapes, [{ name: 'Y', dtype: 'float32', shape: [1, Hq, 1, D] }], {},
      { Q: { dtype: 'float32', shape: [1, Hq, 1, D], data: q }, K: { dtype: 'float32', shape: [1, Hkv, L, D], data: k }, V: { dtype: 'float32', shape: [1, Hkv, L, D], data: v } }, { bytes, flops }, Y.data.slice());
    await measure('Attention', name, [
      { impl: 'edgekernels', fn: () => ek.run('Attention', [Q, K, V], {}, { outputs: [Y] }), bytes, flops },
      { impl: 'memcpy 64 MiB (GB/s = read+write traffic)', fn: () => dst.set(src), bytes: 2 * (64 << 20) },
      ...peers,
    ]);

    // the same step over float16 and bfloat16 caches (converted in registers)
    for (const dt of ['float16', 'bfloat16']) {
      const K16 = ek.tensor(dt, [1, Hkv, L, D]), V16 = ek.tensor(dt, [1, Hkv, L, D]);
      const kd = K16.data, vd = V16.data;
      const r = rng(7);
      for (let i = 0; i < kd.length; i++) { kd[i] = dt === 'float16' ? 0x3800 | Math.floor(r() * 1024) : 0x3f00 | Math.floor(r() * 128); vd[i] = kd[(i * 7) % kd.length]; }
      await measure('Attention', `${name} (K/V ${dt})`, [
        { impl: 'edgekernels', fn: () => ek.run('TRT_Attention', [Q, K16, V16], {}, { outputs: [Y] }), bytes: bytes / 2, flops },
        { impl: 'edgekernels K/V float32', fn: () => ek.run('TRT_Attention', [Q, K, V], {}, { outputs: [Y] }), bytes, flops },
      ]);
      K16.dispose(); V16.dispose();
    }

    // TRT_QuantizedAttention (fp8 and int8 probabilities) against TRT_Attention, same shape
    const qname = `QAttention decode ${Hq}q/${Hkv}kv D=${D} L=${L}`;
    for (const type of ['fp8', 'int8']) {
      await measure('TRT_QuantizedAttention', `${qname} ${type}`, [
        { impl: 'edgekernels', fn: () => ek.run('TRT_QuantizedAttention', [Q, K, V], { normalization_quantize_to_type: type }, { outputs: [Y] }), bytes, flops },
        { impl: 'TRT_Attention same shape', fn: () => ek.run('TRT_Attention', [Q, K, V], {}, { outputs: [Y] }), bytes, flops },
      ]);
    }
    for (const t of [Q, K, V, Y]) t.dispose();
  }

  // ---- causal prefill (1, 8, 512, 64) ----
  {
    const H = 8, S = 512, D = 64;
    const name = `causal prefill (1,${H},${S},${D}) f32`;
    const n = H * S * D;
    const q = randomF32(n, 11), k = randomF32(n, 12), v = randomF32(n, 13);
    const Q = ek.tensor('float32', [1, H, S, D], q), K = ek.tensor('float32', [1, H, S, D], k), V = ek.tensor('float32', [1, H, S, D], v);
    const Y = ek.tensor('float32', [1, H, S, D]);
    const flops = 2 * 2 * H * ((S * (S + 1)) / 2) * D;
    const shapes = ['Q', 'K', 'V'].map((nm) => ({ name: nm, dtype: 'float32', shape: [1, H, S, D] }));
    ek.run('Attention', [Q, K, V], { is_causal: 1 }, { outputs: [Y] });
    const peers = await ortPeers(name, shapes, [{ name: 'Y', dtype: 'float32', shape: [1, H, S, D] }], { is_causal: 1 },
      { Q: { dtype: 'float32', shape: [1, H, S, D], data: q }, K: { dtype: 'float32', shape: [1, H, S, D], data: k }, V: { dtype: 'float32', shape: [1, H, S, D], data: v } }, { flops }, Y.data.slice());
    await measure('Attention', name, [
      { impl: 'edgekernels', fn: () => ek.run('Attention', [Q, K, V], { is_causal: 1 }, { outputs: [Y] }), flops },
      ...peers,
    ]);
    // the same prefill with float16 / bfloat16 Q, K, V and Y (K and V widened to float32 once
    // per sequence and head), against float32
    for (const dt of ['float16', 'bfloat16']) {
      const to = dt === 'float16' ? 10 : 16; // ONNX TensorProto codes
      const [Q16, K16, V16] = [Q, K, V].map((t) => ek.run('Cast', [t], { to })[0]);
      const Y16 = ek.tensor(dt, [1, H, S, D]);
      await measure('Attention', `causal prefill (1,${H},${S},${D}) ${dt}`, [
        { impl: 'edgekernels', fn: () => ek.run('Attention', [Q16, K16, V16], { is_causal: 1 }, { outputs: [Y16] }), flops },
        { impl: 'edgekernels float32', fn: () => ek.run('Attention', [Q, K, V], { is_causal: 1 }, { outputs: [Y] }), flops },
      ]);
      for (const t of [Q16, K16, V16, Y16]) t.dispose();
    }
    for (const t of [Q, K, V, Y]) t.dispose();
  }

  // ---- ragged: 8 packed sequences of lengths 1..512, causal self-attention ----
  {
    const H = 8, D = 64;
    const lens = [1, 74, 147, 220, 293, 366, 439, 512];
    const T = lens.reduce((a, x) => a + x, 0);
    const cum = lens.reduce((acc, x) => [...acc, acc[acc.length - 1] + x], [0]);
    const name = `ragged 8 packed seqs, lengths 1..512, (T=${T},${H},${D}) causal`;
    const q = randomF32(T * H * D, 21), k = randomF32(T * H * D, 22), v = randomF32(T * H * D, 23);
    const Q = ek.tensor('float32', [T, H, D], q), K = ek.tensor('float32', [T, H, D], k), V = ek.tensor('float32', [T, H, D], v);
    const Y = ek.tensor('float32', [T, H, D]);
    const QL = ek.tensor('int32', [9], cum), KL = ek.tensor('int32', [9], cum);
    const flops = lens.reduce((a, L) => a + 2 * 2 * H * ((L * (L + 1)) / 2) * D, 0);
    const attrs = { query_form: 'packed_nhd', kv_form: 'packed_nhd', causal_kind: 'lower_right' };
    // the same sequences one by one, each padded [1, H, L, D]
    const singles = lens.map((L, i) => {
      const sl = (a) => {
        const out = new Float32Array(H * L * D);
        for (let t = 0; t < L; t++) for (let hh = 0; hh < H; hh++) out.set(a.subarray(((cum[i] + t) * H + hh) * D, ((cum[i] + t) * H + hh + 1) * D), (hh * L + t) * D);
        return out;
      };
      return [sl(q), sl(k), sl(v)].map((d) => ek.tensor('float32', [1, H, L, D], d)).concat([ek.tensor('float32', [1, H, L, D])]);
    });
    const oneByOne = () => {
      for (const [a, b, c, y] of singles) ek.run('TRT_Attention', [a, b, c], { causal_kind: 'lower_right' }, { outputs: [y] });
    };
    await measure('TRT_Attention', name, [
      { impl: 'edgekernels', fn: () => ek.run('TRT_Attention', [Q, K, V, null, QL, KL], attrs, { outputs: [Y] }), flops },
      { impl: 'edgekernels one by one (sum)', fn: oneByOne, flops },
    ]);
    for (const t of [Q, K, V, Y, QL, KL, ...singles.flat()]) t.dispose();
  }

  // ---- relaxed-SIMD build against the default simd build ----
  {
    const pkg = await import('../dist/index.js');
    let rows = [];
    if (pkg.engineSupports('relaxed')) {
      rows = await relaxedRows(pkg.init, fast);
    } else {
      const r = spawnSync(process.execPath, ['--experimental-wasm-relaxed-simd', fileURLToPath(import.meta.url), '--relaxed-child'], { encoding: 'utf8', timeout: 180_000, env: process.env });
      if (r.status !== 0) console.error(`# relaxed child failed: ${(r.stderr || r.error?.message || '').split('\n')[0]}`);
      rows = (r.stdout ?? '').split('\n').filter((l) => l.startsWith('{')).map((l) => JSON.parse(l));
    }
    for (const x of rows) h.emit({ suite: 'Attention (relaxed build)', case: x.case, impl: x.impl, stats: x.stats, bytes: x.bytes, flops: x.flops, paired: x.paired });
  }
}
