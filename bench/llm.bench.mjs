// The decode loop: tokens/s of the demo's forward pass (embedded tiny model and a
// stories15M-shaped model with random weights), one decode step of the KV cache
// (append + attend, one layer, 32 q heads / 8 kv heads, D = 128, L = 4096) per cache dtype
// and attend kernel (TRT_Attention through ek.run, or the builtin attendF32/F16/BF16), and the
// classifier matrix-vector product. Peers in the same run: onnxruntime (web: wasm, 1
// thread; node: 1 intra-op thread) on the single operators it can run from h.onnxModel
// (MatMul for the classifier; Attention-23 with past_key/past_value for the decode step).
import { Llama, Sampler, randomWeights, tinyModel, writeCheckpoint } from '../dist/index.js';

const per = (s, k) => ({ median: s.median / k, p10: s.p10 / k, p90: s.p90 / k, runs: s.runs });

export default async function (h) {
  const { ek } = h;

  // ---- forward pass tokens/s ------------------------------------------------------
  const models = [
    ['embedded tiny model (dim 64, 2 layers, vocab 259)', tinyModel(1).model],
    ['stories15M-shaped, random weights (dim 288, 6 layers, 6 heads, vocab 32000, seq 256)', writeCheckpoint(
      { dim: 288, hiddenDim: 768, nLayers: 6, nHeads: 6, nKvHeads: 6, vocabSize: 32000, seqLen: 256, sharedClassifier: true },
      randomWeights({ dim: 288, hiddenDim: 768, nLayers: 6, nHeads: 6, nKvHeads: 6, vocabSize: 32000, seqLen: 256, sharedClassifier: true }, 3),
    )],
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
    h.emit({ suite: 'llm decode', case: `forward + greedy sample per token, ${name}, positions 0..${steps - 1}`, impl: 'edgekernels', stats, bytes: params * 4, flops: 2 * params, note: `${(1000 / stats.median).toFixed(1)} tokens/s` });
    m.dispose();
  }

  // ---- classifier: W[32000, 288] · x ------------------------------------------------
  {
    const d = 32000, n = 288;
    const W = ek.tensor('float32', [d, n]), x = ek.tensor('float32', [n]), y = ek.tensor('float32', [d]);
    W.data.forEach((_, i, a) => { a[i] = Math.sin(i); });
    x.data.fill(0.5);
    const name = 'matvec W[32000,288]·x f32 (stories15M classifier)';
    const K = 10;
    h.emit({ suite: 'llm kernels', case: name, impl: 'edgekernels', stats: per(await h.time(() => { for (let k = 0; k < K; k++) ek.exports.matvecF32(y.byteOffset, W.byteOffset, x.byteOffset, d, n); }, { minMs: 400 }), K), bytes: d * n * 4, flops: 2 * d * n });
    const model = h.onnxModel({
      op: 'MatMul', opset: 13,
      inputs: [{ name: 'x', dtype: 'float32', shape: [1, n] }, { name: 'w', dtype: 'float32', shape: [n, d] }],
      outputs: [{ name: 'y', dtype: 'float32', shape: [1, d] }],
    });
    const wt = new Float32Array(n * d).map((_, i) => Math.sin(i));
    for (const impl of ['web', 'node']) {
      const peer = h.ort[impl];
      if (!peer) continue;
      try {
        const run = (await peer.session(model)).prepare({ x: { dtype: 'float32', shape: [1, n], data: new Float32Array(n).fill(0.5) }, w: { dtype: 'float32', shape: [n, d], data: wt } });
        h.emit({ suite: 'llm kernels', case: name, impl: `ort-${impl}`, stats: await h.time(run, { minMs: 400, maxRuns: 100 }), bytes: d * n * 4, flops: 2 * d * n });
      } catch (e) {
        console.error(`# ort-${impl} MatMul: ${e.message.split('\n')[0]}`);
      }
    }
    W.dispose(); x.dispose(); y.dispose();
  }

  // ---- decode step of the cache: append 1 token + attend, one layer -----------------
  {
    const Hq = 32, Hkv = 8, D = 128, L = 4096;
    const k = ek.tensor('float32', [1, Hkv, 1, D]), v = ek.tensor('float32', [1, Hkv, 1, D]);
    const q = ek.tensor('float32', [1, Hq, 1, D]), out = ek.tensor('float32', [1, Hq, 1, D]);
    k.data.forEach((_, i, a) => { a[i] = Math.cos(i) * 0.1; });
    v.data.fill(0.25);
    q.data.forEach((_, i, a) => { a[i] = Math.sin(i) * 0.1; });
    const mask = { dtype: 'int32', shape: [1, L], data: new Int32Array(L).fill(1) };
    mask.data[L - 1] = 0;
    const name = `append + attend, 1 layer, ${Hq}q/${Hkv}kv heads, D=${D}, L=${L}, float32 cache`;
    for (const dtype of ['float32', 'float16', 'bfloat16', 'int8', 'float8e4m3fn']) {
      const cache = ek.kvCache({ layers: 1, batch: 1, kvHeads: Hkv, headDim: D, capacity: L, dtype, queryHeads: Hq });
      cache.setLengthsFromMask(mask); // L − 1 tokens in: each step appends position L − 1 and attends over L keys
      const bytes = 2 * Hkv * L * D * (dtype === 'float32' ? 4 : dtype === 'int8' || dtype === 'float8e4m3fn' ? 1 : 2);
      // int8 caches have no TRT_Attention path (it reads float32/float16/bfloat16 K/V): builtin only.
      for (const impl of dtype === 'int8' || dtype === 'float8e4m3fn' ? ['auto'] : ['TRT_Attention', 'builtin']) {
        const step = () => {
          cache.append(0, k, v);
          cache.attend(0, q, { out, impl });
          cache.reset(); cache.setLengthsFromMask(mask);
        };
        const label = `append + attend, 1 layer, ${Hq}q/${Hkv}kv heads, D=${D}, L=${L}, ${dtype} cache`;
        h.emit({ suite: 'kvcache decode', case: label, impl: impl === 'builtin' ? 'edgekernels-builtin' : 'edgekernels', stats: await h.time(step, { minMs: 600, maxRuns: 100 }), bytes, flops: 4 * Hq * L * D, note: `attend impl ${impl === 'auto' ? 'builtin (only kernel for int8 / fp8)' : impl}` });
      }
      cache.dispose();
    }
    const bytes = 2 * Hkv * L * D * 4;
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
        h.emit({ suite: 'kvcache decode', case: name, impl: `ort-${impl}`, stats: await h.time(run, { minMs: 600, maxRuns: 60 }), bytes, flops: 4 * Hq * L * D, note: 'ONNX Attention-23 with past_key/past_value (copies the past into present)' });
      } catch (e) {
        console.error(`# ort-${impl} Attention-23: ${e.message.split('\n')[0]}`);
      }
    }
    k.dispose(); v.dispose(); q.dispose(); out.dispose();
  }
}
