/**
 * llama2.c checkpoints (the `.bin` format of karpathy/llama2.c, "version 0"):
 *   7 int32 (little endian): dim, hidden_dim, n_layers, n_heads, n_kv_heads, vocab_size,
 *   seq_len — a negative vocab_size means the classifier is stored separately (unshared);
 *   then float32 weights in this order (head_size = dim / n_heads, kv_dim = n_kv_heads·head_size):
 *     token_embedding_table [vocab, dim]
 *     rms_att_weight [layers, dim]
 *     wq [layers, dim, dim]   wk [layers, kv_dim, dim]   wv [layers, kv_dim, dim]
 *     wo [layers, dim, dim]
 *     rms_ffn_weight [layers, dim]
 *     w1 [layers, hidden, dim]   w2 [layers, dim, hidden]   w3 [layers, hidden, dim]
 *     rms_final_weight [dim]
 *     (seq_len · head_size / 2) · 2 floats of the old RoPE tables, skipped
 *     wcls [vocab, dim] (only when unshared)
 * Matrices are row-major [out, in], so layer l's wq is W[dim, dim] at wq + l·dim·dim.
 */
import { KernelError, knownOptions, show } from '../errors.js';

export interface LlamaConfig {
  dim: number;
  hiddenDim: number;
  nLayers: number;
  nHeads: number;
  nKvHeads: number;
  vocabSize: number;
  seqLen: number;
  /** Classifier shares the token embedding (vocab_size > 0 in the header). */
  sharedClassifier: boolean;
}

/** Float offsets (in floats from the start of the weights) of every weight array. */
export interface WeightLayout {
  tokenEmbedding: number;
  rmsAtt: number;
  wq: number;
  wk: number;
  wv: number;
  wo: number;
  rmsFfn: number;
  w1: number;
  w2: number;
  w3: number;
  rmsFinal: number;
  wcls: number;
  /** Floats the file holds after the header. */
  total: number;
}

export const HEADER_BYTES = 28;

/** A checkpoint argument must be the file's bytes (an ArrayBuffer gave a DataView TypeError). */
function fileBytes(bytes: unknown, what: string): void {
  if (!(bytes instanceof Uint8Array)) throw new KernelError('INVALID_ARGUMENT', `${what}: expected the checkpoint file's bytes as a Uint8Array, got ${show(bytes)}`);
}

function fail(msg: string): never {
  throw new KernelError('INVALID_VALUE', `llama2.c checkpoint: ${msg}`);
}

export function readConfig(bytes: Uint8Array): LlamaConfig {
  fileBytes(bytes, 'readConfig');
  if (bytes.byteLength < HEADER_BYTES) fail(`expected at least ${HEADER_BYTES} header bytes, got ${bytes.byteLength}`);
  const dv = new DataView(bytes.buffer, bytes.byteOffset, HEADER_BYTES);
  const h = Array.from({ length: 7 }, (_, i) => dv.getInt32(i * 4, true));
  const [dim, hiddenDim, nLayers, nHeads, nKvHeads, vocab, seqLen] = h;
  const names = ['dim', 'hidden_dim', 'n_layers', 'n_heads', 'n_kv_heads', 'vocab_size', 'seq_len'];
  h.forEach((v, i) => {
    if (i !== 5 && v <= 0) fail(`header ${names[i]}: expected a positive integer, got ${v}`);
  });
  if (vocab === 0) fail('header vocab_size: expected a non-zero integer, got 0');
  if (dim % nHeads !== 0) fail(`header: dim ${dim} is not a multiple of n_heads ${nHeads}`);
  if (nHeads % nKvHeads !== 0) fail(`header: n_heads ${nHeads} is not a multiple of n_kv_heads ${nKvHeads}`);
  if ((dim / nHeads) % 2 !== 0) fail(`header: head size ${dim / nHeads} must be even (RoPE rotates pairs)`);
  return { dim, hiddenDim, nLayers, nHeads, nKvHeads, vocabSize: Math.abs(vocab), seqLen, sharedClassifier: vocab > 0 };
}

export function weightLayout(c: LlamaConfig): WeightLayout {
  const hs = c.dim / c.nHeads, kvDim = c.nKvHeads * hs, L = c.nLayers;
  let p = 0;
  const take = (n: number): number => { const at = p; p += n; return at; };
  const tokenEmbedding = take(c.vocabSize * c.dim);
  const rmsAtt = take(L * c.dim);
  const wq = take(L * c.dim * c.dim);
  const wk = take(L * c.dim * kvDim);
  const wv = take(L * c.dim * kvDim);
  const wo = take(L * c.dim * c.dim);
  const rmsFfn = take(L * c.dim);
  const w1 = take(L * c.dim * c.hiddenDim);
  const w2 = take(L * c.hiddenDim * c.dim);
  const w3 = take(L * c.dim * c.hiddenDim);
  const rmsFinal = take(c.dim);
  take(c.seqLen * hs); // freq_cis_real and freq_cis_imag (seq_len · head_size / 2 each)
  const wcls = c.sharedClassifier ? tokenEmbedding : take(c.vocabSize * c.dim);
  return { tokenEmbedding, rmsAtt, wq, wk, wv, wo, rmsFfn, w1, w2, w3, rmsFinal, wcls, total: p };
}

/** Header + layout, checking that the file holds every weight. */
export function parseCheckpoint(bytes: Uint8Array): { config: LlamaConfig; layout: WeightLayout } {
  fileBytes(bytes, 'parseCheckpoint');
  const config = readConfig(bytes);
  const layout = weightLayout(config);
  const need = HEADER_BYTES + layout.total * 4;
  if (bytes.byteLength < need) fail(`expected at least ${need} bytes for ${JSON.stringify(config)}, got ${bytes.byteLength}`);
  return { config, layout };
}

/** Writes a checkpoint: header, then `weights` (layout.total floats, in the order above). */
export function writeCheckpoint(c: LlamaConfig, weights: Float32Array): Uint8Array {
  if (c === null || typeof c !== 'object') throw new KernelError('INVALID_ARGUMENT', `writeCheckpoint config: expected a LlamaConfig object, got ${String(c)}`);
  if (!(weights instanceof Float32Array)) throw new KernelError('INVALID_ARGUMENT', 'writeCheckpoint weights: expected a Float32Array');
  // the header's int32 fields (a larger value would wrap), then readConfig's rules on them
  for (const k of ['dim', 'hiddenDim', 'nLayers', 'nHeads', 'nKvHeads', 'vocabSize', 'seqLen'] as const) {
    const v = c[k];
    if (!Number.isInteger(v) || v < 1 || v > 0x7fffffff) throw new KernelError('INVALID_ARGUMENT', `writeCheckpoint config.${k}: expected an integer in [1, 2^31 - 1], got ${String(v)}`);
  }
  const head = new DataView(new ArrayBuffer(HEADER_BYTES));
  [c.dim, c.hiddenDim, c.nLayers, c.nHeads, c.nKvHeads, c.vocabSize, c.seqLen].forEach((v, i) => head.setInt32(i * 4, v, true));
  readConfig(new Uint8Array(head.buffer));
  const layout = weightLayout(c);
  if (weights.length !== layout.total) throw new KernelError('INVALID_SHAPE', `writeCheckpoint weights: expected ${layout.total} floats, got ${weights.length}`);
  const out = new Uint8Array(HEADER_BYTES + weights.length * 4);
  const dv = new DataView(out.buffer);
  [c.dim, c.hiddenDim, c.nLayers, c.nHeads, c.nKvHeads, c.sharedClassifier ? c.vocabSize : -c.vocabSize, c.seqLen]
    .forEach((v, i) => dv.setInt32(i * 4, v, true));
  for (let i = 0; i < weights.length; i++) dv.setFloat32(HEADER_BYTES + i * 4, weights[i], true);
  return out;
}

// ---- version 2: Q8_0 (llama2.c's export.py --version 2, read by its runq.c) -------------
//
//   header, 256 bytes: uint32 magic 0x616b3432 ("ak42"), int32 version 2, the 7 int32 of the
//     config (vocab_size positive), uint8 shared_classifier, int32 group_size, zero padding;
//   float32: rms_att_weight [layers, dim], rms_ffn_weight [layers, dim], rms_final_weight [dim];
//   then each quantized matrix as its int8 codes followed by its float32 group scales
//   (numel / group_size of them), in this order: token_embedding [vocab, dim]; wq, wk, wv, wo
//   (each per layer); w1, w2, w3 (each per layer); wcls [vocab, dim] only when unshared.
//   Group g of a matrix covers its elements g·GS … g·GS + GS − 1 in row-major order.

export const Q8_MAGIC = 0x616b3432;
export const Q8_HEADER_BYTES = 256;

/** One quantized matrix W[rows, cols] of a version-2 checkpoint: byte offsets into the file. */
export interface Q8Matrix {
  rows: number;
  cols: number;
  /** rows·cols int8 codes. */
  q: number;
  /** rows·cols / groupSize float32 scales. */
  s: number;
}

export interface Q8Layout {
  groupSize: number;
  /** Byte offsets of the float32 norm weights. */
  rmsAtt: number;
  rmsFfn: number;
  rmsFinal: number;
  tokenEmbedding: Q8Matrix;
  wq: Q8Matrix[]; wk: Q8Matrix[]; wv: Q8Matrix[]; wo: Q8Matrix[];
  w1: Q8Matrix[]; w2: Q8Matrix[]; w3: Q8Matrix[];
  wcls: Q8Matrix;
  /** Bytes the file needs. */
  total: number;
}

/** Whether the bytes start like a version-2 (Q8_0) checkpoint. */
export function isQ8Checkpoint(bytes: Uint8Array): boolean {
  fileBytes(bytes, 'isQ8Checkpoint');
  return bytes.byteLength >= 8 && new DataView(bytes.buffer, bytes.byteOffset, 8).getUint32(0, true) === Q8_MAGIC;
}

export function q8Layout(c: LlamaConfig, groupSize: number): Q8Layout {
  const hs = c.dim / c.nHeads, kvDim = c.nKvHeads * hs, L = c.nLayers;
  let p = Q8_HEADER_BYTES;
  const f32 = (n: number) => { const at = p; p += n * 4; return at; };
  const mat = (rows: number, cols: number): Q8Matrix => {
    const q = p; p += rows * cols;
    const s = p; p += (rows * cols / groupSize) * 4;
    return { rows, cols, q, s };
  };
  const mats = (rows: number, cols: number) => Array.from({ length: L }, () => mat(rows, cols));
  const rmsAtt = f32(L * c.dim), rmsFfn = f32(L * c.dim), rmsFinal = f32(c.dim);
  const tokenEmbedding = mat(c.vocabSize, c.dim);
  const wq = mats(c.dim, c.dim), wk = mats(kvDim, c.dim), wv = mats(kvDim, c.dim), wo = mats(c.dim, c.dim);
  const w1 = mats(c.hiddenDim, c.dim), w2 = mats(c.dim, c.hiddenDim), w3 = mats(c.hiddenDim, c.dim);
  const wcls = c.sharedClassifier ? tokenEmbedding : mat(c.vocabSize, c.dim);
  return { groupSize, rmsAtt, rmsFfn, rmsFinal, tokenEmbedding, wq, wk, wv, wo, w1, w2, w3, wcls, total: p };
}

/** Header + layout of a version-2 checkpoint, checking the header and that the file holds every weight. */
export function parseQ8Checkpoint(bytes: Uint8Array): { config: LlamaConfig; layout: Q8Layout } {
  fileBytes(bytes, 'parseQ8Checkpoint');
  if (bytes.byteLength < Q8_HEADER_BYTES) fail(`version 2: expected at least ${Q8_HEADER_BYTES} header bytes, got ${bytes.byteLength}`);
  const dv = new DataView(bytes.buffer, bytes.byteOffset, Q8_HEADER_BYTES);
  if (dv.getUint32(0, true) !== Q8_MAGIC) fail(`version 2: bad magic 0x${dv.getUint32(0, true).toString(16)} (expected 0x616b3432, "ak42")`);
  const version = dv.getInt32(4, true);
  if (version !== 2) fail(`unsupported version ${version} (this loader reads version 0 and version 2 files)`);
  const base = readConfig(bytes.subarray(8, 8 + HEADER_BYTES));
  if (!base.sharedClassifier) fail('version 2 header: vocab_size must be positive');
  const shared = dv.getUint8(8 + HEADER_BYTES);
  if (shared > 1) fail(`version 2 header: shared_classifier byte ${shared} (expected 0 or 1)`);
  const config: LlamaConfig = { ...base, sharedClassifier: shared === 1 };
  const gs = dv.getInt32(8 + HEADER_BYTES + 1, true);
  if (!(gs >= 1 && gs <= 1024)) fail(`version 2 header: group_size ${gs} (expected 1 … 1024)`);
  // runq.c's quantize() and matmul() drop a partial last group without a word; refuse instead
  if (config.dim % gs !== 0 || config.hiddenDim % gs !== 0) fail(`version 2 header: group_size ${gs} does not divide dim ${config.dim} and hidden_dim ${config.hiddenDim}`);
  const layout = q8Layout(config, gs);
  if (bytes.byteLength < layout.total) fail(`version 2: expected at least ${layout.total} bytes for ${JSON.stringify(config)} with group_size ${gs}, got ${bytes.byteLength}`);
  return { config, layout };
}

/**
 * export.py's quantize_q80 in float32: per group wmax = max |w|, scale = wmax / 127,
 * q = round(w / scale) with torch.round's ties to even (a group of zeros gives scale 0, codes 0).
 */
export function quantizeQ80(w: Float32Array, groupSize: number, q: Int8Array, s: Float32Array): void {
  const f = Math.fround;
  for (let g = 0; g * groupSize < w.length; g++) {
    let wmax = 0;
    for (let i = g * groupSize; i < (g + 1) * groupSize; i++) wmax = Math.max(wmax, Math.abs(w[i]));
    const scale = f(wmax / 127);
    s[g] = scale;
    for (let i = g * groupSize; i < (g + 1) * groupSize; i++) {
      const v = f(w[i] / scale);
      let r = Math.round(v); // ties toward +∞; make them even
      if (r - v === 0.5 && r % 2 !== 0) r -= 1;
      q[i] = Number.isNaN(v) ? 0 : r;
    }
  }
}

/**
 * A version-0 checkpoint (float32) as a version-2 one, as llama2.c's export.py --version 2
 * writes it: group size `groupSize` (default 64) halved until it divides dim and hidden_dim
 * (export.py checks dim only; see below), every matrix
 * quantized by quantizeQ80, the norms kept in float32.
 */
export function quantizeCheckpoint(checkpoint: Uint8Array, opts: { groupSize?: number } = {}): Uint8Array {
  fileBytes(checkpoint, 'quantizeCheckpoint');
  if (opts === null || typeof opts !== 'object') throw new KernelError('INVALID_ARGUMENT', `quantizeCheckpoint options: expected an object, got ${show(opts)}`);
  knownOptions(opts, ['groupSize'], 'quantizeCheckpoint options');
  const { config: c, layout: L } = parseCheckpoint(checkpoint);
  let gs = opts.groupSize ?? 64;
  if (!Number.isInteger(gs) || gs < 1 || gs > 1024) throw new KernelError('INVALID_ARGUMENT', `quantizeCheckpoint groupSize: expected an integer in [1, 1024], got ${gs}`);
  // export.py halves the group size until it divides dim only; a hidden_dim it does not divide
  // (stories260K: dim 64, hidden_dim 172) gives a file whose w2 groups straddle rows and whose
  // last partial group runq.c silently drops. Halve until it divides both.
  while (c.dim % gs !== 0 || c.hiddenDim % gs !== 0) gs >>= 1;
  const Q = q8Layout(c, gs);
  const out = new Uint8Array(Q.total);
  const dv = new DataView(out.buffer);
  dv.setUint32(0, Q8_MAGIC, true);
  dv.setInt32(4, 2, true);
  [c.dim, c.hiddenDim, c.nLayers, c.nHeads, c.nKvHeads, c.vocabSize, c.seqLen].forEach((v, i) => dv.setInt32(8 + i * 4, v, true));
  out[36] = c.sharedClassifier ? 1 : 0;
  dv.setInt32(37, gs, true);
  const src = new Float32Array(checkpoint.slice(HEADER_BYTES, HEADER_BYTES + L.total * 4).buffer);
  const copy = (at: number, from: number, n: number) => new Float32Array(out.buffer, at, n).set(src.subarray(from, from + n));
  copy(Q.rmsAtt, L.rmsAtt, c.nLayers * c.dim);
  copy(Q.rmsFfn, L.rmsFfn, c.nLayers * c.dim);
  copy(Q.rmsFinal, L.rmsFinal, c.dim);
  const put = (m: Q8Matrix, from: number) => {
    const n = m.rows * m.cols;
    const s = new Float32Array(n / gs);
    quantizeQ80(src.subarray(from, from + n), gs, new Int8Array(out.buffer, m.q, n), s);
    out.set(new Uint8Array(s.buffer), m.s); // m.s is 4-byte aligned only when groupSize is
  };
  put(Q.tokenEmbedding, L.tokenEmbedding);
  const per = (ms: Q8Matrix[], from: number) => ms.forEach((m, l) => put(m, from + l * m.rows * m.cols));
  per(Q.wq, L.wq); per(Q.wk, L.wk); per(Q.wv, L.wv); per(Q.wo, L.wo);
  per(Q.w1, L.w1); per(Q.w2, L.w2); per(Q.w3, L.w3);
  if (!c.sharedClassifier) put(Q.wcls, L.wcls);
  return out;
}
