// A/B of two builds' kernels over the SAME memory: node bench/ab.mjs a.wasm b.wasm [case] [rounds]
//
//   case: decode-f32 | decode-f16 | decode-bf16   TRT_Attention decode, 32q/8kv D=128 L=4096
//         qattention-fp8 | qattention-int8         TRT_QuantizedAttention, same shape
//         prefill-f32 | prefill-f16 | prefill-bf16 ONNX Attention, causal (1,8,512,64)
//         kvcache-<dtype>                          KVCache append + attend, one layer, same shape
//         kvbuiltin-<dtype>                        the same with attend's builtin kernel (impl: 'builtin')
//         mha-<dtype>                              a stories15M-shaped step's attention (builtin kernel), cache evicted
//         mha32-<dtype>                            multi-head decode, 32 heads × 128, L = 2048 (builtin kernel)
//         quant-e4m3 | cast-e4m3                   QuantizeLinear (scale 1) / Cast float32 → e4m3fn, 16M values
//         <case>-cold                              any case, with 128 MiB read before each call (untimed),
//                                                  so K and V come from memory, not from a last-level
//                                                  cache that holds much of the 32 MiB (Zen 5's does)
//
// Why: two builds instantiated side by side in one process (each with its own memory) differ
// by ±5–8% on this shared machine even when they are the same file — where the pages of each
// instance's K and V land matters to a memory-bound step. Here build b is instantiated into
// build a's memory and only the kernel entries are swapped, so both read the same tensors at
// the same addresses; calls alternate a, b / b, a. Two copies of one build give 0.998–1.005.
// Both builds must have the same static data (the same source apart from kernel code: b's
// data segments are written over a's at instantiation, checked by heapBase and the outputs).
import { readFileSync } from 'node:fs';
import { init } from '../dist/index.js';
import { stats } from './harness.mjs';

const [fa, fb, whichArg = 'decode-f32', roundsArg = '150'] = process.argv.slice(2);
const cold = whichArg.endsWith('-cold'), which = cold ? whichArg.slice(0, -'-cold'.length) : whichArg;
if (!fa || !fb) {
  console.error('usage: node bench/ab.mjs a.wasm b.wasm [decode-f32|decode-f16|decode-bf16|qattention-fp8|qattention-int8|prefill-f32|prefill-f16|prefill-bf16|kvcache-<dtype>|kvbuiltin-<dtype>|mha-<dtype>|mha32-<dtype>|quant-e4m3|cast-e4m3] [rounds]');
  process.exit(2);
}
const rounds = Number(roundsArg);
const ek = await init({ wasm: readFileSync(fa), initialMemory: 256 << 20 });
const b = await WebAssembly.instantiate(await WebAssembly.compile(readFileSync(fb)), { env: { memory: ek.memory } });
if ((b.exports.heapBase() >>> 0) !== (ek.exports.heapBase() >>> 0)) throw new Error('the builds differ in static data (heapBase): not comparable this way');
const expA = { ...ek.exports };
const expB = { ...ek.exports };
for (const [name, f] of Object.entries(b.exports)) if (typeof f === 'function' && !/^(heapBase|memory)$/.test(name)) expB[name] = f;

let seed = 7;
const rnd = () => { seed = (seed * 1103515245 + 12345) >>> 0; return seed / 2 ** 32 * 2 - 1; };
const fill = (t) => { t.data.forEach((_, i, x) => { x[i] = rnd(); }); return t; };
// a float32 tensor's values in dtype dt (16-bit data arrays hold bit patterns: Cast rounds)
const as = (dt, t) => (dt === 'float32' ? t : ek.run('Cast', [t], { to: dt === 'float16' ? 10 : 16 })[0]);
const Hq = 32, Hkv = 8, D = 128, L = 4096;
const q = fill(ek.tensor('float32', [1, Hq, 1, D])), out = ek.tensor('float32', [1, Hq, 1, D]);
let step, before = () => {}, outT = out;
if (which.startsWith('decode-') || which.startsWith('qattention-')) {
  const dt = { 'decode-f16': 'float16', 'decode-bf16': 'bfloat16' }[which] ?? 'float32';
  const K = as(dt, fill(ek.tensor('float32', [1, Hkv, L, D])));
  const V = as(dt, fill(ek.tensor('float32', [1, Hkv, L, D])));
  const op = which.startsWith('qattention-') ? 'TRT_QuantizedAttention' : 'TRT_Attention';
  const attrs = which === 'qattention-fp8' ? { normalization_quantize_to_type: 'float8e4m3fn' } : which === 'qattention-int8' ? { normalization_quantize_to_type: 'int8' } : {};
  step = () => ek.run(op, [q, K, V], attrs, { outputs: [out] });
} else if (which.startsWith('prefill-')) {
  const dt = { 'prefill-f16': 'float16', 'prefill-bf16': 'bfloat16' }[which] ?? 'float32';
  const shape = [1, 8, 512, 64];
  const [Q, K, V] = [0, 1, 2].map(() => as(dt, fill(ek.tensor('float32', shape))));
  const Y = ek.tensor(dt, shape);
  step = () => ek.run('Attention', [Q, K, V], { is_causal: 1 }, { outputs: [Y] });
  outT = Y;
} else if (which.startsWith('kvcache-') || which.startsWith('kvbuiltin-')) {
  const dtype = which.slice(which.indexOf('-') + 1), impl = which.startsWith('kvbuiltin-') ? 'builtin' : undefined;
  const cache = ek.kvCache({ layers: 1, batch: 1, kvHeads: Hkv, headDim: D, capacity: L, dtype, queryHeads: Hq });
  const kb = ek.tensor('float32', [1, Hkv, 64, D]), vb = ek.tensor('float32', [1, Hkv, 64, D]);
  for (let p = 0; p < L - 64; p += 64) { cache.append(0, fill(kb), fill(vb)); cache.advance(); }
  const k = fill(ek.tensor('float32', [1, Hkv, 1, D])), v = fill(ek.tensor('float32', [1, Hkv, 1, D]));
  const n = cache.lengths[0];
  const mask = { dtype: 'int32', shape: [1, L], data: Int32Array.from({ length: L }, (_, i) => (i < n ? 1 : 0)) };
  step = () => { cache.append(0, k, v); cache.attend(0, q, { out, impl }); cache.reset(); cache.setLengthsFromMask(mask); };
} else if (which.startsWith('mha-')) {
  // a stories15M-shaped step's attention: 6 layers × 6 heads, D = 48, 255 cached keys + 1,
  // one query row per head (the builtin kernel), with 64 MiB copied between calls (untimed)
  // as the step's weights would evict the cache
  const dtype = which.slice('mha-'.length), H = 6, Dh = 48, N = 256, layers = 6;
  const cache = ek.kvCache({ layers, batch: 1, kvHeads: H, headDim: Dh, capacity: N, dtype, queryHeads: H });
  const kb = ek.tensor('float32', [1, H, N - 1, Dh]), vb = ek.tensor('float32', [1, H, N - 1, Dh]);
  for (let l = 0; l < layers; l++) cache.append(l, fill(kb), fill(vb));
  cache.advance();
  const k = fill(ek.tensor('float32', [1, H, 1, Dh])), v = fill(ek.tensor('float32', [1, H, 1, Dh]));
  const qh = fill(ek.tensor('float32', [1, H, 1, Dh])), oh = ek.tensor('float32', [1, H, 1, Dh]);
  const mask = { dtype: 'int32', shape: [1, N], data: Int32Array.from({ length: N }, (_, i) => (i < N - 1 ? 1 : 0)) };
  const big = new Float64Array(8 << 20), big2 = new Float64Array(8 << 20);
  before = () => big2.set(big);
  step = () => {
    for (let l = 0; l < layers; l++) { cache.append(l, k, v); cache.attend(l, qh, { out: oh }); }
    cache.reset(); cache.setLengthsFromMask(mask);
  };
  outT = oh;
} else if (which.startsWith('mha32-')) {
  // multi-head decode at Llama-2-7B's heads: 32 × 128, 2047 cached keys + 1, the builtin kernel
  const dtype = which.slice('mha32-'.length), H = 32, Dh = 128, N = 2048;
  const cache = ek.kvCache({ layers: 1, batch: 1, kvHeads: H, headDim: Dh, capacity: N, dtype, queryHeads: H });
  const kb = ek.tensor('float32', [1, H, N - 1, Dh]), vb = ek.tensor('float32', [1, H, N - 1, Dh]);
  cache.append(0, fill(kb), fill(vb));
  cache.advance();
  const k = fill(ek.tensor('float32', [1, H, 1, Dh])), v = fill(ek.tensor('float32', [1, H, 1, Dh]));
  const qh = fill(ek.tensor('float32', [1, H, 1, Dh])), oh = ek.tensor('float32', [1, H, 1, Dh]);
  const mask = { dtype: 'int32', shape: [1, N], data: Int32Array.from({ length: N }, (_, i) => (i < N - 1 ? 1 : 0)) };
  step = () => { cache.append(0, k, v); cache.attend(0, qh, { out: oh }); cache.reset(); cache.setLengthsFromMask(mask); };
  outT = oh;
} else if (which === 'quant-e4m3' || which === 'cast-e4m3') {
  // QuantizeLinear float32 → float8e4m3fn (scale 1: the quant bench's case) or Cast, 16M values
  const x = fill(ek.tensor('float32', [16 << 20])), one = ek.tensor('float32', [], [1]);
  const y8 = ek.tensor('float8e4m3fn', [16 << 20]);
  step = which === 'cast-e4m3'
    ? () => ek.run('Cast', [x], { to: 'float8e4m3fn' }, { outputs: [y8] })
    : () => ek.run('QuantizeLinear', [x, one], { output_dtype: 'float8e4m3fn' }, { outputs: [y8] });
  outT = y8;
} else throw new Error(`unknown case ${which}`);
if (cold) {
  // a read of one double per 64-byte line over 128 MiB: colder than a 64 MiB copy, after
  // which this machine's last-level cache still held part of K and V (its replacement
  // keeps lines that are reused over a stream that is not; the step took 2.4–2.5 ms after
  // a copy, 3.0 after a run of onnxruntime-node's, 3.1–4.0 after this read)
  const big = new Float64Array(16 << 20).fill(1), inner = before;
  let sink = 0;
  before = () => { for (let i = 0; i < big.length; i += 8) sink += big[i]; inner(); };
  process.on('exit', () => { if (sink === -1) console.log(sink); });
}

const call = (e) => { ek.exports = e; before(); const t = performance.now(); step(); return performance.now() - t; };
call(expA); const ya = Float32Array.from(outT.data);
call(expB); const yb = Float32Array.from(outT.data);
let maxdiff = 0;
for (let i = 0; i < ya.length; i++) maxdiff = Math.max(maxdiff, Math.abs(ya[i] - yb[i]));
const warm = performance.now();
while (performance.now() - warm < 500) { call(expA); call(expB); }
const ta = [], tb = [], ratio = [];
for (let i = 0; i < rounds; i++) {
  const [x, y] = i & 1 ? [call(expB), call(expA)] : [call(expA), call(expB)];
  const [a, bb] = i & 1 ? [y, x] : [x, y];
  ta.push(a); tb.push(bb); ratio.push(bb / a);
}
ek.exports = expA;
const median = (x) => stats(x).median;
console.log(JSON.stringify({ case: whichArg, a: fa, b: fb, a_ms: +median(ta).toFixed(3), b_ms: +median(tb).toFixed(3), b_over_a: +median(ratio).toFixed(3), rounds, maxdiff }));
