// The decode loop: tokens/s of the demo's forward pass (embedded tiny model and a
// stories15M-shaped model with random weights), one decode step of the KV cache
// (append + attend, one layer, 32 q heads / 8 kv heads, D = 128, L = 4096, and multi-head
// 32 / 32 heads, D = 128, L = 2048) per cache dtype and attend kernel (TRT_Attention's flash
// kernel, or the builtin attendF32/F16/BF16), a 64-token chunk into a wrapped sliding window
// per dtype and kernel, and the
// classifier matrix-vector product — each model and the classifier also with Q8_0 weights
// (llama2.c's int8 format, runq.c's arithmetic). Peers in the same run: onnxruntime (web:
// wasm, 1 thread; node: 1 intra-op thread) running the whole per-step graph of the
// stories15M-shaped model (llamaStepGraph, built with OnnxGraph, checked against our logits
// before timing; for Q8_0 with com.microsoft MatMulNBits over the same codes), MatMul with W
// as an initializer (MatMulNBits for Q8_0) for the classifier, and Attention-23 with
// past_key/past_value for the cache decode step.
import { Llama, Sampler, packQ8Tiles, packRows16, parseQ8Checkpoint, quantizeCheckpoint, randomWeights, ropeTable, tinyModel, weightLayout, writeCheckpoint } from '../dist/index.js';
import { OnnxGraph } from './onnx.mjs';

const per = (s, k) => ({ median: s.median / k, p10: s.p10 / k, p90: s.p90 / k, runs: s.runs });

export default async function (h) {
  const { ek } = h;

  // ---- forward pass tokens/s ------------------------------------------------------
  const storiesConfig = { dim: 288, hiddenDim: 768, nLayers: 6, nHeads: 6, nKvHeads: 6, vocabSize: 32000, seqLen: 256, sharedClassifier: true };
  const storiesWeights = randomWeights(storiesConfig, 3);
  const storiesBytes = writeCheckpoint(storiesConfig, storiesWeights);
  const models = [
    ['embedded tiny model (dim 64, 2 layers, vocab 259)', tinyModel(1).model],
    ['stories15M-shaped, random weights (dim 288, 6 layers, 6 heads, vocab 32000, seq 256)', storiesBytes],
    ['stories15M-shaped, random weights as Q8_0 (quantizeCheckpoint: export.py --version 2)', quantizeCheckpoint(storiesBytes)],
  ];
  for (const [name, bytes] of models) {
    const m = new Llama(ek, bytes);
    const c = m.config;
    const sampler = new Sampler(c.vocabSize, { temperature: 0 });
    const steps = Math.min(128, c.seqLen);
    // One "run" = a whole `steps`-token greedy generation from an empty cache (positions 0…steps−1).
    const gen = () => {
      m.reset();
      let tok = 1;
      for (let i = 0; i < steps; i++) { m.forward(tok); tok = sampler.sample(m.kernels, m.memory, m.logitsPtr); }
    };
    const hs = c.dim / c.nHeads, kv = c.nKvHeads * hs;
    const params = c.nLayers * (2 * c.dim * c.dim + 2 * c.dim * kv + 3 * c.dim * c.hiddenDim) + c.vocabSize * c.dim;
    const stats = per(await h.time(gen, { minMs: 1500, maxRuns: 20, minRuns: 3 }), steps);
    const weightBytes = m.groupSize ? params * (1 + 4 / m.groupSize) : params * 4;
    h.emit({ suite: 'llm decode', case: `forward + greedy sample per token, ${name}, positions 0..${steps - 1}`, impl: 'edgekernels', stats, bytes: weightBytes, flops: 2 * params, note: `${(1000 / stats.median).toFixed(1)} tokens/s` });
    m.dispose();
  }

  await decodeStepVsOrt(h, storiesConfig, storiesWeights, storiesBytes);

  // ---- classifier: W[32000, 288] · x ------------------------------------------------
  {
    const d = 32000, n = 288;
    const W = ek.tensor('float32', [d, n]), x = ek.tensor('float32', [n]), y = ek.tensor('float32', [d]);
    packRows16(Float32Array.from({ length: d * n }, (_, i) => Math.sin(i)), d, n, W.data); // the model's rows16 layout
    x.data.fill(0.5);
    const name = 'matvec W[32000,288]·x f32 (stories15M classifier)';
    const K = 10;
    h.emit({ suite: 'llm kernels', case: name, impl: 'edgekernels', stats: per(await h.time(() => { for (let k = 0; k < K; k++) ek.exports.matvecRows16F32(y.byteOffset, W.byteOffset, x.byteOffset, d, n); }, { minMs: 400 }), K), bytes: d * n * 4, flops: 2 * d * n });
    // W is a graph initializer, as in a model: onnxruntime may prepack it once. (Fed as a graph
    // input instead, it is copied into the session on every run and the peer looks ~3x slower.)
    const wt = new Float32Array(n * d).map((_, i) => Math.sin(i));
    const g = new OnnxGraph();
    g.input('x', 'float32', [1, n]);
    g.output('y', 'float32', [1, d]);
    g.node('MatMul', ['x', g.weight('w', 'float32', [n, d], wt)], {}, { outputs: ['y'] });
    const model = g.model({ opset: 13 });
    for (const impl of ['web', 'node']) {
      const peer = h.ort[impl];
      if (!peer) continue;
      try {
        const run = (await peer.session(model)).prepare({ x: { dtype: 'float32', shape: [1, n], data: new Float32Array(n).fill(0.5) } });
        h.emit({ suite: 'llm kernels', case: name, impl: `ort-${impl}`, stats: await h.time(run, { minMs: 400, maxRuns: 100 }), bytes: d * n * 4, flops: 2 * d * n, note: 'MatMul, W [288, 32000] as a graph initializer' });
      } catch (e) {
        console.error(`# ort-${impl} MatMul: ${e.message.split('\n')[0]}`);
      }
    }
    W.dispose(); x.dispose(); y.dispose();
  }

  // ---- the same classifier as Q8_0: quantizeQ8 + matvecQ8Tiled (Llama's layout) ---------
  {
    const d = 32000, n = 288, gs = 32, groups = n / gs;
    const codes = new Int8Array(d * n).map((_, i) => Math.round(127 * Math.sin(i)));
    const scales = new Float32Array(d * groups).map((_, i) => 0.01 + 0.001 * Math.cos(i));
    const sT = new Float32Array(d * groups);
    for (let i = 0; i < d; i++) for (let g = 0; g < groups; g++) sT[g * d + i] = scales[i * groups + g]; // [groups, d]
    const tiles = new Int8Array(d * n);
    packQ8Tiles(codes, d, n, tiles);
    const W = ek.tensor('int8', [d * n], tiles), S = ek.tensor('float32', [sT.length], sT);
    const x = ek.tensor('float32', [n], new Float32Array(n).map((_, i) => Math.cos(i)));
    const xq = ek.tensor('int16', [n]), xs = ek.tensor('float32', [groups]), y = ek.tensor('float32', [d]);
    const name = 'matvec W[32000,288]·x Q8_0, group 32 (stories15M classifier as runq.c: quantize x, int8 products)';
    const bytes = d * n + d * groups * 4, K = 10;
    const ours = () => {
      for (let k = 0; k < K; k++) {
        ek.exports.quantizeQ8(xq.byteOffset, xs.byteOffset, x.byteOffset, n, gs);
        ek.exports.matvecQ8Tiled(y.byteOffset, W.byteOffset, S.byteOffset, xq.byteOffset, xs.byteOffset, d, n, gs);
      }
    };
    h.emit({ suite: 'llm kernels', case: name, impl: 'edgekernels', stats: per(await h.time(ours, { minMs: 400 }), K), bytes, flops: 2 * d * n });
    const g = new OnnxGraph();
    g.input('x', 'float32', [1, n]);
    g.output('y', 'float32', [1, d]);
    g.node('MatMulNBits', ['x', g.weight('b', 'uint8', [d, groups, gs], codes.map((c) => c + 128)), g.weight('s', 'float32', [scales.length], scales)],
      { K: n, N: d, bits: 8, block_size: gs, accuracy_level: 4 }, { outputs: ['y'], domain: 'com.microsoft' });
    const model = g.model({ opset: 21, opsets: { 'com.microsoft': 1 } });
    for (const impl of ['web', 'node']) {
      const peer = h.ort[impl];
      if (!peer) continue;
      try {
        const run = (await peer.session(model)).prepare({ x: { dtype: 'float32', shape: [1, n], data: x.data.slice() } });
        h.emit({ suite: 'llm kernels', case: name, impl: `ort-${impl}`, stats: await h.time(run, { minMs: 400, maxRuns: 100 }), bytes, flops: 2 * d * n, note: 'com.microsoft MatMulNBits, bits 8, block 32, accuracy_level 4, same codes (+128, default zero point) and scales' });
      } catch (e) {
        console.error(`# ort-${impl} MatMulNBits: ${e.message.split('\n')[0]}`);
      }
    }
    for (const t of [W, S, x, xq, xs, y]) t.dispose();
  }

  // ---- decode step of the cache: append 1 token + attend, one layer -----------------
  // Every cache dtype and attend kernel, our ONNX Attention-23 with past/present and the
  // peers' are timed in the same interleaved rounds (h.interleave), one case: the ratio
  // column is each runner's paired ratio to the float32 cache with TRT_Attention (the
  // `edgekernels` row), so "fp8 / int8 at least 1.8× faster than float32" reads directly.
  await cacheDecodeCase(h, { Hq: 32, Hkv: 8, D: 128, L: 4096, windowDtypes: ['float32', 'float16'] });
  // multi-head attention (no grouped heads: Llama-2-7B's 32 × 128), where each cache row
  // serves one query head and the step is a pure stream over the cache
  await cacheDecodeCase(h, { Hq: 32, Hkv: 32, D: 128, L: 2048, windowDtypes: [] });
  await windowChunkCase(h, { Hq: 32, Hkv: 8, D: 128, W: 4096, S: 64 });
}

/**
 * Chunked prefill over a wrapped sliding window: one S-token chunk (append + causal attend,
 * one layer) into a window-W ring of W + S − 1 rows holding positions up to W + 1000, each
 * token seeing its own last W positions. 'auto' runs the flash kernel over the ring in
 * position order; 'builtin' the kernel that walks the ring row by row. The ratio column is
 * each row's paired ratio to the float32 'auto' row.
 */
export async function windowChunkCase(h, { Hq, Hkv, D, W, S }) {
  const ek = h.ek;
  const fast = process.env.BENCH_FAST === '1';
  const k = ek.tensor('float32', [1, Hkv, S, D]), v = ek.tensor('float32', [1, Hkv, S, D]);
  const q = ek.tensor('float32', [1, Hq, S, D]), out = ek.tensor('float32', [1, Hq, S, D]);
  k.data.forEach((_, i, a) => { a[i] = Math.cos(i) * 0.1; });
  v.data.forEach((_, i, a) => { a[i] = Math.sin(3 * i) * 0.5; });
  q.data.forEach((_, i, a) => { a[i] = Math.sin(i) * 0.1; });
  const n0 = W + 1000;
  const mask = { dtype: 'int32', shape: [1, 2 * W], data: new Int32Array(2 * W) };
  mask.data.fill(1, 0, n0);
  const runners = [], owned = [];
  for (const dtype of ['float32', 'float16', 'bfloat16']) {
    const cache = ek.kvCache({ layers: 1, batch: 1, kvHeads: Hkv, headDim: D, window: W, maxAppend: S, capacity: 2 * W, dtype, queryHeads: Hq });
    owned.push(cache);
    cache.setLengthsFromMask(mask);
    for (const impl of ['auto', 'builtin']) {
      const step = () => {
        cache.append(0, k, v);
        cache.attend(0, q, { out, impl });
        cache.reset(); cache.setLengthsFromMask(mask);
      };
      runners.push({ impl: `edgekernels ${dtype} cache${impl === 'builtin' ? ', builtin attend' : ''}`, fn: step, dtype });
    }
  }
  await h.interleave(runners, { warmMs: fast ? 200 : 400, rounds: fast ? 5 : 12 });
  const es = { float32: 4, float16: 2, bfloat16: 2 };
  for (const m of runners) {
    h.emit({
      suite: 'kvcache window chunk', case: `append ${S} tokens + causal attend, 1 layer, ${Hq}q/${Hkv}kv heads, D=${D}, window ${W} (wrapped, ring ${W + S - 1} rows)`,
      impl: m.impl, stats: h.stats(m.samples), bytes: 2 * Hkv * (W + S - 1) * D * es[m.dtype], flops: 4 * Hq * S * W * D,
      note: `${m.dtype} cache at position ${n0}, attend impl ${m.impl.includes('builtin') ? 'builtin' : 'auto (the flash kernel over the ring)'}`, paired: h.pairedRatio(m, runners[0]),
    });
  }
  for (const x of owned) x.dispose();
  k.dispose(); v.dispose(); q.dispose(); out.dispose();
}

/** One `kvcache decode` case: every cache dtype and attend kernel, our Attention-23 and the peers', interleaved. */
async function cacheDecodeCase(h, { Hq, Hkv, D, L, windowDtypes }) {
  const ek = h.ek;
  const fast = process.env.BENCH_FAST === '1';
  const k = ek.tensor('float32', [1, Hkv, 1, D]), v = ek.tensor('float32', [1, Hkv, 1, D]);
  const q = ek.tensor('float32', [1, Hq, 1, D]), out = ek.tensor('float32', [1, Hq, 1, D]);
  k.data.forEach((_, i, a) => { a[i] = Math.cos(i) * 0.1; });
  v.data.fill(0.25);
  q.data.forEach((_, i, a) => { a[i] = Math.sin(i) * 0.1; });
  const mask = { dtype: 'int32', shape: [1, L], data: new Int32Array(L).fill(1) };
  mask.data[L - 1] = 0;
  const name = `append + attend, 1 layer, ${Hq}q/${Hkv}kv heads, D=${D}, L=${L}, per cache dtype`;
  const flops = 4 * Hq * L * D;
  const runners = [], owned = [];
  // the cache's L − 1 rows hold data, appended once (a never-written cache reads the kernel's
  // zero page: every row the same physical memory, 5% faster for the float32 cache)
  const kAll = ek.tensor('float32', [1, Hkv, L - 1, D]), vAll = ek.tensor('float32', [1, Hkv, L - 1, D]);
  kAll.data.forEach((_, i, a) => { a[i] = Math.cos(i * 0.37) * 0.5; });
  vAll.data.forEach((_, i, a) => { a[i] = Math.sin(i * 0.61) * 0.5; });
  for (const dtype of ['float32', 'float16', 'bfloat16', 'int8', 'float8e4m3fn']) {
    const cache = ek.kvCache({ layers: 1, batch: 1, kvHeads: Hkv, headDim: D, capacity: L, dtype, queryHeads: Hq });
    owned.push(cache);
    cache.append(0, kAll, vAll);
    cache.advance(); // L − 1 tokens in: each step appends position L − 1 and attends over L keys
    const bytes = 2 * Hkv * L * D * (dtype === 'float32' ? 4 : dtype === 'int8' || dtype === 'float8e4m3fn' ? 1 : 2);
    // int8 / fp8 caches have no TRT_Attention path (it reads float32/float16/bfloat16 K/V): builtin only.
    for (const impl of dtype === 'int8' || dtype === 'float8e4m3fn' ? ['auto'] : ['TRT_Attention', 'builtin']) {
      const step = () => {
        cache.append(0, k, v);
        cache.attend(0, q, { out, impl });
        cache.reset(); cache.setLengthsFromMask(mask);
      };
      const label = dtype === 'float32' && impl === 'TRT_Attention' ? 'edgekernels' : `edgekernels ${dtype} cache${impl === 'builtin' ? ', builtin attend' : ''}`;
      runners.push({ impl: label, fn: step, bytes, note: `${dtype} cache, attend impl ${impl === 'auto' ? 'builtin (only kernel for int8 / fp8)' : impl}` });
    }
  }
  // A sliding-window cache of L rows that has wrapped (positions 0..L+62 appended, each
  // step's one query sees all L ring rows): 'auto' runs the flash kernel over the ring in
  // position order (two runs of rows); the builtin kernel, for comparison.
  const wmask = { dtype: 'int32', shape: [1, 2 * L], data: new Int32Array(2 * L) };
  wmask.data.fill(1, 0, L + 63);
  for (const dtype of windowDtypes) {
    const cache = ek.kvCache({ layers: 1, batch: 1, kvHeads: Hkv, headDim: D, window: L, capacity: 2 * L, dtype, queryHeads: Hq });
    owned.push(cache);
    cache.setLengthsFromMask(wmask);
    // the ring's rows hold data (written through the views: a wrapped ring cannot be filled
    // by one append), as the plain caches above
    for (const t of [cache.keys(0), cache.values(0)]) {
      const d = t.data;
      for (let i = 0; i < d.length; i++) d[i] = dtype === 'float32' ? Math.cos(i * 0.37) * 0.5 : dtype === 'float16' ? 0x3400 | (i * 37 & 1023) : 0x3e80 | (i * 37 & 127);
    }
    const bytes = 2 * Hkv * L * D * (dtype === 'float32' ? 4 : 2);
    for (const impl of ['auto', 'builtin']) {
      const step = () => {
        cache.append(0, k, v);
        cache.attend(0, q, { out, impl });
        cache.reset(); cache.setLengthsFromMask(wmask);
      };
      runners.push({ impl: `edgekernels ${dtype} cache, window ${L} wrapped${impl === 'builtin' ? ', builtin attend' : ''}`, fn: step, bytes, note: `${dtype} sliding-window cache (window ${L}, position ${L + 63}), attend impl ${impl === 'auto' ? 'auto (the flash kernel over the ring)' : impl}` });
    }
  }
  const bytes = 2 * Hkv * L * D * 4;
  // The peers' operator on our side: ONNX Attention with past_key/past_value through ek.run,
  // same shapes, mask and values as the peers' feeds, present_key/present_value preallocated.
  const pk = ek.tensor('float32', [1, Hkv, L - 1, D]), pv = ek.tensor('float32', [1, Hkv, L - 1, D]);
  pk.data.fill(0.1); pv.data.fill(0.25);
  const am = ek.tensor('float32', [1, L]);
  const outs = [out, ek.tensor('float32', [1, Hkv, L, D]), ek.tensor('float32', [1, Hkv, L, D])];
  owned.push(pk, pv, am, outs[1], outs[2], kAll, vAll);
  runners.push({ impl: 'edgekernels Attention-23 past/present', fn: () => ek.run('Attention', [q, k, v, am, pk, pv], {}, { outputs: outs }), bytes, note: 'float32, ek.run Attention with past_key/past_value (copies the past into present), as the peers' });
  // Peer: ONNX Attention-23 with past_key/past_value (it concatenates past + new into present).
  const model = h.onnxModel({
    op: 'Attention', opset: 23,
    inputs: [
      { name: 'Q', dtype: 'float32', shape: [1, Hq, 1, D] }, { name: 'K', dtype: 'float32', shape: [1, Hkv, 1, D] }, { name: 'V', dtype: 'float32', shape: [1, Hkv, 1, D] },
      { name: 'attn_mask', dtype: 'float32', shape: [1, L] }, { name: 'past_key', dtype: 'float32', shape: [1, Hkv, L - 1, D] }, { name: 'past_value', dtype: 'float32', shape: [1, Hkv, L - 1, D] },
    ],
    outputs: [{ name: 'Y', dtype: 'float32', shape: [1, Hq, 1, D] }, { name: 'present_key', dtype: 'float32', shape: [1, Hkv, L, D] }, { name: 'present_value', dtype: 'float32', shape: [1, Hkv, L, D] }],
  });
  for (const impl of ['web', 'node']) {
    const peer = h.ort[impl];
    if (!peer) continue;
    try {
      const run = (await peer.session(model)).prepare({
        Q: { dtype: 'float32', shape: [1, Hq, 1, D], data: q.data.slice() },
        K: { dtype: 'float32', shape: [1, Hkv, 1, D], data: k.data.slice() },
        V: { dtype: 'float32', shape: [1, Hkv, 1, D], data: v.data.slice() },
        attn_mask: { dtype: 'float32', shape: [1, L], data: new Float32Array(L) },
        past_key: { dtype: 'float32', shape: [1, Hkv, L - 1, D], data: new Float32Array(Hkv * (L - 1) * D).fill(0.1) },
        past_value: { dtype: 'float32', shape: [1, Hkv, L - 1, D], data: new Float32Array(Hkv * (L - 1) * D).fill(0.25) },
      });
      runners.push({ impl: `ort-${impl}`, fn: run, bytes, note: 'float32, ONNX Attention-23 with past_key/past_value (copies the past into present)' });
    } catch (e) {
      console.error(`# ort-${impl} Attention-23: ${e.message.split('\n')[0]}`);
    }
  }
  await h.interleave(runners, { warmMs: fast ? 200 : 400, rounds: fast ? 8 : 20 });
  for (const m of runners) h.emit({ suite: 'kvcache decode', case: name, impl: m.impl, stats: h.stats(m.samples), bytes: m.bytes, flops, note: m.note, paired: h.pairedRatio(m, runners[0]) });
  for (const x of owned) x.dispose();
  k.dispose(); v.dispose(); q.dispose(); out.dispose();
}

/**
 * llama2.c's forward() for one token at position `pos` as ONE ONNX graph, the per-step graph an
 * ONNX export of the decode step runs (opset 24, weights as graph initializers, matrices
 * transposed to [in, out] for MatMul as exporters write them):
 *   x = Gather(token_embedding, token)
 *   per layer: RMSNormalization-23 → q/k/v MatMul → Reshape [1,H,1,hs] → RotaryEmbedding-23
 *   (interleaved=1: llama2.c's pair rotation; cos/sin [1,1,hs/2] are inputs computed on the host
 *   as ours are) → TensorScatter-24 (axis −2, write_indices = [pos]) of k and v into the layer's
 *   fixed-capacity cache past_key_l / past_value_l [1,H,cap,hs] (graph inputs) giving
 *   present_key_l / present_value_l (graph outputs) → Attention-24 over the valid prefix
 *   (nonpad_kv_seqlen = [pos + 1], scale 1/√hs) → Reshape → wo MatMul → Add (residual) →
 *   RMSNormalization → w1, w3 MatMul → h1·Sigmoid(h1)·h3 → w2 MatMul → Add;
 *   final RMSNormalization → classifier MatMul → logits [1, vocab].
 * This is the form that matches our step (a cache allocated once at capacity, the new row
 * written at pos, attention over pos + 1 keys), not Attention's past/present concatenation.
 */
export function llamaStepGraph(c, w, { weightsAs = 'initializers', q8 } = {}) {
  const L = weightLayout(c), hs = c.dim / c.nHeads, kvDim = c.nKvHeads * hs, cap = c.seqLen;
  const g = new OnnxGraph({ weightsAs });
  const slice = (at, n) => w.subarray(at, at + n);
  /** W [out, in] row-major → [in, out]. */
  const transposed = (at, out, inp) => {
    const t = new Float32Array(out * inp);
    for (let o = 0; o < out; o++) for (let i = 0; i < inp; i++) t[i * out + o] = w[at + o * inp + i];
    return t;
  };
  // q8 = { bytes, layout } of a version-2 checkpoint: every matrix becomes com.microsoft
  // MatMulNBits (bits 8, block_size = the group size, accuracy_level 4: int8 activations per
  // block, as runq.c) over the same codes (as uint8 with the default zero point 128) and scales.
  const q8Index = {};
  if (q8) {
    const Q = q8.layout;
    q8Index[L.tokenEmbedding] = Q.tokenEmbedding;
    q8Index[L.wcls] = Q.wcls;
    for (const k of ['wq', 'wk', 'wv', 'wo', 'w1', 'w2', 'w3']) Q[k].forEach((m, l) => { q8Index[L[k] + l * m.rows * m.cols] = m; });
  }
  const matmul = (x, name, at, out, inp) => {
    const m = q8 && q8Index[at];
    if (!m) return g.node('MatMul', [x, g.weight(name, 'float32', [inp, out], transposed(at, out, inp))]);
    const gs = q8.layout.groupSize, n = m.rows * m.cols, dv = new DataView(q8.bytes.buffer, q8.bytes.byteOffset);
    const B = new Uint8Array(n), S = new Float32Array(n / gs);
    for (let i = 0; i < n; i++) B[i] = (dv.getInt8(m.q + i) + 128) & 255;
    for (let i = 0; i < S.length; i++) S[i] = dv.getFloat32(m.s + i * 4, true);
    return g.node('MatMulNBits', [x, g.weight(`${name}_q`, 'uint8', [out, inp / gs, gs], B), g.weight(`${name}_s`, 'float32', [S.length], S)],
      { K: inp, N: out, bits: 8, block_size: gs, accuracy_level: 4 }, { domain: 'com.microsoft' });
  };
  if (q8) {
    // the embedding rows runq.c uses: code · scale in float32
    const e = q8.layout.tokenEmbedding, gs = q8.layout.groupSize, dv = new DataView(q8.bytes.buffer, q8.bytes.byteOffset);
    const t = new Float32Array(e.rows * e.cols);
    for (let i = 0; i < t.length; i++) t[i] = dv.getInt8(e.q + i) * dv.getFloat32(e.s + Math.floor(i / gs) * 4, true);
    w = Float32Array.from(w);
    w.set(t, L.tokenEmbedding);
  }
  const rmsnorm = (x, name, at) => g.node('RMSNormalization', [x, g.weight(name, 'float32', [c.dim], slice(at, c.dim))], { axis: -1, epsilon: 1e-5 });
  const shape = (name, dims) => g.weight(name, 'int64', [dims.length], BigInt64Array.from(dims.map(BigInt)));
  const heads4 = shape('shape_q', [1, c.nHeads, 1, hs]), kv4 = shape('shape_kv', [1, c.nKvHeads, 1, hs]), flat = shape('shape_flat', [1, c.dim]);

  const token = g.input('token', 'int64', [1]);
  const cos = g.input('cos', 'float32', [1, 1, hs / 2]), sin = g.input('sin', 'float32', [1, 1, hs / 2]);
  const writeIndex = g.input('write_indices', 'int64', [1]), validKeys = g.input('nonpad_kv_seqlen', 'int64', [1]);
  let x = g.node('Gather', [g.weight('token_embedding', 'float32', [c.vocabSize, c.dim], slice(L.tokenEmbedding, c.vocabSize * c.dim)), token], { axis: 0 });
  for (let l = 0; l < c.nLayers; l++) {
    const xb = rmsnorm(x, `rms_att_${l}`, L.rmsAtt + l * c.dim);
    const q = g.node('Reshape', [matmul(xb, `wq_${l}`, L.wq + l * c.dim * c.dim, c.dim, c.dim), heads4]);
    const k = g.node('Reshape', [matmul(xb, `wk_${l}`, L.wk + l * kvDim * c.dim, kvDim, c.dim), kv4]);
    const v = g.node('Reshape', [matmul(xb, `wv_${l}`, L.wv + l * kvDim * c.dim, kvDim, c.dim), kv4]);
    const qr = g.node('RotaryEmbedding', [q, cos, sin], { interleaved: 1 });
    const kr = g.node('RotaryEmbedding', [k, cos, sin], { interleaved: 1 });
    for (const kind of ['key', 'value']) {
      g.input(`past_${kind}_${l}`, 'float32', [1, c.nKvHeads, cap, hs]);
      g.output(`present_${kind}_${l}`, 'float32', [1, c.nKvHeads, cap, hs]);
    }
    g.node('TensorScatter', [`past_key_${l}`, kr, writeIndex], { axis: -2 }, { outputs: [`present_key_${l}`] });
    g.node('TensorScatter', [`past_value_${l}`, v, writeIndex], { axis: -2 }, { outputs: [`present_value_${l}`] });
    const att = g.node('Attention', [qr, `present_key_${l}`, `present_value_${l}`, '', '', '', validKeys], { scale: Math.fround(1 / Math.sqrt(hs)) });
    x = g.node('Add', [x, matmul(g.node('Reshape', [att, flat]), `wo_${l}`, L.wo + l * c.dim * c.dim, c.dim, c.dim)]);
    const xf = rmsnorm(x, `rms_ffn_${l}`, L.rmsFfn + l * c.dim);
    const h1 = matmul(xf, `w1_${l}`, L.w1 + l * c.hiddenDim * c.dim, c.hiddenDim, c.dim);
    const h3 = matmul(xf, `w3_${l}`, L.w3 + l * c.hiddenDim * c.dim, c.hiddenDim, c.dim);
    const act = g.node('Mul', [g.node('Mul', [h1, g.node('Sigmoid', [h1])]), h3]);
    x = g.node('Add', [x, matmul(act, `w2_${l}`, L.w2 + l * c.dim * c.hiddenDim, c.dim, c.hiddenDim)]);
  }
  g.output('logits', 'float32', [1, c.vocabSize]);
  g.node('MatMul', [rmsnorm(x, 'rms_final', L.rmsFinal), g.weight('wcls', 'float32', [c.dim, c.vocabSize], transposed(L.wcls, c.vocabSize, c.dim))], {}, { outputs: ['logits'] });
  return g;
}

/**
 * One decode step of the stories15M-shaped model (random weights) at a fixed position, ours
 * (Llama.forward: the logits, no sampling) against onnxruntime-web and -node running the
 * per-step graph above (logits and the updated caches, no sampling), interleaved in one run.
 * Twice over: with the float32 weights (run.c's arithmetic), and with the same weights as Q8_0
 * (quantizeCheckpoint, i.e. llama2.c's export.py --version 2; runq.c's arithmetic), where the
 * peers run the graph with MatMulNBits over the same int8 codes and scales. All six runners
 * are timed in the same interleaved rounds; the Q8_0 case lists the float32 runners too, so
 * its ratios compare the int8 step with every float32 one measured alongside.
 * The graphs' logits and cache rows are checked against ours first; a peer whose output does
 * not match is not timed.
 */
export async function decodeStepVsOrt(h, c, weights, checkpoint) {
  const fast = process.env.BENCH_FAST === '1';
  const hs = c.dim / c.nHeads, cap = c.seqLen, token = 1000;
  const q8bytes = quantizeCheckpoint(checkpoint);
  const q8 = { bytes: q8bytes, layout: parseQ8Checkpoint(q8bytes).layout };
  const variants = [
    { key: 'f32', label: 'float32 weights', m: new Llama(h.ek, checkpoint), g: llamaStepGraph(c, weights), tol: 1e-4, rowTol: 1e-4 },
    // Q8_0: a peer that quantizes the activations differently (or not at all) moves the logits
    // by up to the activations' rounding error (~1/254 of each group's largest entry per
    // matrix): the check only guards against a wrong graph
    { key: 'q8', label: `Q8_0 weights (group ${q8.layout.groupSize})`, m: new Llama(h.ek, q8bytes), g: llamaStepGraph(c, weights, { q8 }), tol: 2e-2, rowTol: 0.1 },
  ];
  const params = c.nLayers * (2 * c.dim * c.dim + 2 * c.dim * c.nKvHeads * hs + 3 * c.dim * c.hiddenDim) + c.vocabSize * c.dim;
  const groups = params / q8.layout.groupSize;
  for (const v of variants) {
    // Fill the cache with real keys and values: positions 0…cap−2 decoded from a token sequence.
    v.m.reset();
    for (let i = 0; i < cap - 1; i++) v.m.forward((i * 7919 + 1) % c.vocabSize);
    v.past = {};
    for (let l = 0; l < c.nLayers; l++) {
      v.past[`past_key_${l}`] = { dtype: 'float32', shape: [1, c.nKvHeads, cap, hs], data: v.m.cache.keys(l).data.slice() };
      v.past[`past_value_${l}`] = { dtype: 'float32', shape: [1, c.nKvHeads, cap, hs], data: v.m.cache.values(l).data.slice() };
    }
    v.sessions = [];
    const model = v.g.model({ opset: 24, opsets: v.key === 'q8' ? { 'com.microsoft': 1 } : {} });
    for (const impl of ['web', 'node']) {
      const peer = h.ort[impl];
      if (!peer) continue;
      try {
        v.sessions.push({ impl: `ort-${impl}`, s: await peer.session(model), ort: peer.ort });
      } catch (e) {
        console.error(`# ort-${impl} per-step graph (${v.label}): ${e.message.split('\n')[0]}`);
      }
    }
  }
  const opts = { warmMs: fast ? 300 : 800, rounds: fast ? 8 : 24 };
  // The read limit for the float32 step: a bare SIMD loop over as many bytes as its weights
  // (timed interleaved with the steps below, so under the same load). 3× onnxruntime-web's
  // step must come in under it to be possible with float32 weights.
  const readWeights = await h.reader(params * 4);
  for (const pos of [cap - 1, 0]) {
    const mask = { dtype: 'int32', shape: [1, pos], data: new Int32Array(pos).fill(1) };
    const rope = new Float32Array(2 * hs);
    ropeTable(pos, hs, rope);
    const runners = [];
    for (const v of variants) {
      const m = v.m;
      const ours = () => { m.cache.reset(); m.cache.setLengthsFromMask(mask); return m.forward(token); };
      const feeds = {
        token: { dtype: 'int64', shape: [1], data: BigInt64Array.of(BigInt(token)) },
        cos: { dtype: 'float32', shape: [1, 1, hs / 2], data: Float32Array.from({ length: hs / 2 }, (_, i) => rope[2 * i]) },
        sin: { dtype: 'float32', shape: [1, 1, hs / 2], data: Float32Array.from({ length: hs / 2 }, (_, i) => rope[hs + 2 * i + 1]) },
        write_indices: { dtype: 'int64', shape: [1], data: BigInt64Array.of(BigInt(pos)) },
        nonpad_kv_seqlen: { dtype: 'int64', shape: [1], data: BigInt64Array.of(BigInt(pos + 1)) },
        ...v.past,
      };
      // Reference: our logits and the cache rows our step writes at pos.
      const want = ours().slice();
      const rows = [];
      for (let l = 0; l < c.nLayers; l++) {
        for (const t of [m.cache.keys(l), m.cache.values(l)]) {
          const d = t.data;
          for (let hh = 0; hh < c.nKvHeads; hh++) rows.push(d.slice((hh * cap + pos) * hs, (hh * cap + pos + 1) * hs));
        }
      }
      runners.push({ variant: v.key, impl: 'edgekernels', fn: ours, note: `Llama.forward(token): the step on the in-place KVCache, ${v.label}${v.key === 'q8' ? ' (runq.c arithmetic: quantizeQ8 + matvecQ8Tiled)' : ''}` });
      for (const { impl, s, ort } of v.sessions) {
        // onnxruntime-node: the caches are fed and fetched as the same ORT tensors (preallocated
        // outputs), so it binds the caller's buffers; its TensorScatter still copies the past
        // cache into the present one (it logs "in-place optimization not activated": 1.30 does
        // not alias a fed input with a fetched output), then writes the new row. onnxruntime-web copies inputs into its
        // wasm heap and outputs out of it; given aliased preallocated outputs it returns caches
        // without the new row (the check below caught it), so it returns fresh present caches.
        const inPlace = impl === 'ort-node';
        const feedT = {};
        for (const [k, x] of Object.entries(feeds)) feedT[k] = new ort.Tensor(x.dtype, k.startsWith('past_') ? x.data.slice() : x.data, x.shape);
        const fetches = { logits: null };
        for (let l = 0; l < c.nLayers; l++) for (const kind of ['key', 'value']) fetches[`present_${kind}_${l}`] = inPlace ? feedT[`past_${kind}_${l}`] : null;
        const fn = () => s.raw.run(feedT, fetches);
        const out = await fn();
        const got = out.logits.data;
        let maxDiff = 0, maxAbs = 0, argGot = 0, argWant = 0;
        for (let i = 0; i < want.length; i++) {
          maxDiff = Math.max(maxDiff, Math.abs(got[i] - want[i]));
          maxAbs = Math.max(maxAbs, Math.abs(want[i]));
          if (got[i] > got[argGot]) argGot = i;
          if (want[i] > want[argWant]) argWant = i;
        }
        let rowDiff = 0, r = 0;
        for (let l = 0; l < c.nLayers; l++) {
          for (const kind of ['key', 'value']) {
            const d = (inPlace ? fetches : out)[`present_${kind}_${l}`].data;
            for (let hh = 0; hh < c.nKvHeads; hh++, r++) {
              for (let i = 0; i < hs; i++) rowDiff = Math.max(rowDiff, Math.abs(d[(hh * cap + pos) * hs + i] - rows[r][i]));
            }
          }
        }
        const ok = maxDiff <= v.tol * Math.max(1, maxAbs) && rowDiff <= v.rowTol && (v.key === 'q8' || argGot === argWant);
        const check = `check vs ours at pos ${pos}: max |Δlogit| ${maxDiff.toExponential(2)} (max |logit| ${maxAbs.toFixed(3)}), argmax ${argGot}/${argWant}, max |Δ cache row| ${rowDiff.toExponential(2)}`;
        console.error(`# ${impl} ${v.label} ${check} ${ok ? 'OK' : 'MISMATCH: not timed'}`);
        const what = v.key === 'q8' ? `MatMulNBits (bits 8, block ${q8.layout.groupSize}, accuracy_level 4) for every matrix` : 'weights as initializers';
        if (ok) runners.push({ variant: v.key, impl, fn, note: `onnxruntime ${impl.slice(4)} (1 thread), whole per-step graph, ${v.g.nodes.length} nodes, ${what}, logits + ${inPlace ? `the ${2 * c.nLayers} caches fed and fetched as the same tensors (TensorScatter copies past into present)` : `${2 * c.nLayers} present caches (copies)`}; ${check}` });
      }
    }
    runners.push({ variant: 'floor', impl: 'read floor', fn: readWeights, note: `a WebAssembly SIMD loop that only reads ${params * 4} bytes (the float32 weights' size; bench/harness.mjs reader), interleaved with the steps` });
    await h.interleave(runners, opts);
    const where = `decode step at pos ${pos} (${pos + 1} keys of ${cap}), stories15M-shaped per-step graph (dim 288, 6 layers, 6 heads, vocab 32000, random weights), logits, no sampling`;
    for (const v of variants) {
      const name = v.key === 'f32' ? where : `${where}, ${v.label}`;
      const bytes = v.key === 'f32' ? params * 4 : params + groups * 4;
      const ours = runners.find((im) => im.variant === v.key && im.impl === 'edgekernels');
      for (const im of runners) {
        if (im.variant === 'floor' ? v.key !== 'f32' : v.key === 'f32' && im.variant !== 'f32') continue;
        const impl = im.variant === v.key || im.variant === 'floor' ? im.impl : `${im.impl} (float32 weights)`;
        h.emit({ suite: 'llm decode', case: name, impl, stats: h.stats(im.samples), bytes: im.variant === 'f32' || im.variant === 'floor' ? params * 4 : bytes, flops: 2 * params, note: im.note, paired: h.pairedRatio(im, ours) });
      }
    }
  }
  for (const v of variants) v.m.dispose();
}
