/**
 * The demo's embedded model: a tiny Llama-style checkpoint with RANDOM weights, generated
 * deterministically from a seed, in llama2.c's formats (so the demo exercises the same
 * loader as a real checkpoint). Its tokenizer is byte-level: <unk>, BOS, EOS, then the
 * 256 byte tokens "<0x00>"…"<0xFF>" (ids 3…258, llama2.c's byte-fallback offset).
 * Its text is noise. Two deliberate tweaks keep the noise readable: residual dimension 0
 * is a constant +1 (embeddings set it, no layer writes it), and the classifier (unshared)
 * reads it to push BOS/EOS/<unk> far down and printable ASCII up.
 */
import { type LlamaConfig, weightLayout, writeCheckpoint } from './checkpoint.js';
import { Tokenizer } from './tokenizer.js';

export const TINY_CONFIG: LlamaConfig = {
  dim: 64, hiddenDim: 176, nLayers: 2, nHeads: 4, nKvHeads: 2, vocabSize: 259, seqLen: 512, sharedClassifier: false,
};

/** mulberry32: a small deterministic PRNG, uniform in [0, 1). */
export function mulberry32(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** Random weights for `config` in llama2.c's order (uniform, scaled by 1/sqrt(fan-in)). */
export function randomWeights(config: LlamaConfig, seed: number): Float32Array {
  const c = config, L = weightLayout(c), rnd = mulberry32(seed);
  const w = new Float32Array(L.total);
  const fill = (at: number, rows: number, cols: number, amp: number) => {
    for (let i = 0; i < rows * cols; i++) w[at + i] = (rnd() * 2 - 1) * amp;
  };
  const hs = c.dim / c.nHeads, kvDim = c.nKvHeads * hs;
  const a = (fanIn: number) => Math.sqrt(3 / fanIn);
  fill(L.tokenEmbedding, c.vocabSize, c.dim, 1);
  w.fill(1, L.rmsAtt, L.rmsAtt + c.nLayers * c.dim);
  fill(L.wq, c.nLayers * c.dim, c.dim, a(c.dim));
  fill(L.wk, c.nLayers * kvDim, c.dim, a(c.dim));
  fill(L.wv, c.nLayers * kvDim, c.dim, a(c.dim));
  fill(L.wo, c.nLayers * c.dim, c.dim, a(c.dim));
  w.fill(1, L.rmsFfn, L.rmsFfn + c.nLayers * c.dim);
  fill(L.w1, c.nLayers * c.hiddenDim, c.dim, a(c.dim));
  fill(L.w2, c.nLayers * c.dim, c.hiddenDim, a(c.hiddenDim));
  fill(L.w3, c.nLayers * c.hiddenDim, c.dim, a(c.dim));
  w.fill(1, L.rmsFinal, L.rmsFinal + c.dim);
  if (!c.sharedClassifier) fill(L.wcls, c.vocabSize, c.dim, a(c.dim) * 2);
  return w;
}

/** The embedded demo model: checkpoint and tokenizer bytes (llama2.c formats). */
export function tinyModel(seed = 1): { model: Uint8Array; tokenizer: Uint8Array; config: LlamaConfig } {
  const c = TINY_CONFIG, L = weightLayout(c);
  const w = randomWeights(c, seed);
  // Residual dim 0 = +1 everywhere: embeddings set it, wo and w2 never write it.
  for (let t = 0; t < c.vocabSize; t++) w[L.tokenEmbedding + t * c.dim] = 1;
  for (let l = 0; l < c.nLayers; l++) {
    w.fill(0, L.wo + l * c.dim * c.dim, L.wo + l * c.dim * c.dim + c.dim);
    w.fill(0, L.w2 + l * c.dim * c.hiddenDim, L.w2 + l * c.dim * c.hiddenDim + c.hiddenDim);
  }
  // Classifier bias through dim 0: specials very unlikely, printable ASCII likely.
  for (let t = 0; t < c.vocabSize; t++) {
    const byte = t - 3;
    const bias = t < 3 ? -40 : (byte >= 0x61 && byte <= 0x7a) || byte === 0x20 ? 3 : byte >= 0x20 && byte < 0x7f ? 1 : -40;
    w[L.wcls + t * c.dim] = bias;
  }
  const vocab: Uint8Array[] = [new TextEncoder().encode('<unk>'), new TextEncoder().encode('\n<s>\n'), new TextEncoder().encode('\n</s>\n')];
  for (let b = 0; b < 256; b++) vocab.push(new TextEncoder().encode(`<0x${b.toString(16).toUpperCase().padStart(2, '0')}>`));
  const scores = vocab.map(() => 0);
  return { model: writeCheckpoint(c, w), tokenizer: Tokenizer.write(vocab, scores), config: c };
}
