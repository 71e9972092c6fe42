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
import { KernelError } from '../errors.js';

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

function fail(msg: string): never {
  throw new KernelError('INVALID_VALUE', `llama2.c checkpoint: ${msg}`);
}

export function readConfig(bytes: Uint8Array): LlamaConfig {
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
  const config = readConfig(bytes);
  const layout = weightLayout(config);
  const need = HEADER_BYTES + layout.total * 4;
  if (bytes.byteLength < need) fail(`expected at least ${need} bytes for ${JSON.stringify(config)}, got ${bytes.byteLength}`);
  return { config, layout };
}

/** Writes a checkpoint: header, then `weights` (layout.total floats, in the order above). */
export function writeCheckpoint(c: LlamaConfig, weights: Float32Array): Uint8Array {
  const layout = weightLayout(c);
  if (weights.length !== layout.total) throw new KernelError('INVALID_SHAPE', `writeCheckpoint weights: expected ${layout.total} floats, got ${weights.length}`);
  const out = new Uint8Array(HEADER_BYTES + weights.length * 4);
  const dv = new DataView(out.buffer);
  [c.dim, c.hiddenDim, c.nLayers, c.nHeads, c.nKvHeads, c.sharedClassifier ? c.vocabSize : -c.vocabSize, c.seqLen]
    .forEach((v, i) => dv.setInt32(i * 4, v, true));
  for (let i = 0; i < weights.length; i++) dv.setFloat32(HEADER_BYTES + i * 4, weights[i], true);
  return out;
}
