/**
 * llama2.c's sampler: greedy argmax at temperature 0; otherwise logits / temperature,
 * softmax, then top-p (nucleus) sampling with a coin from llama2.c's xorshift* RNG, so a
 * seed reproduces run.c's choices. Float arithmetic is float32 like run.c's (Math.fround).
 * The argmax and the softmax run as wasm kernels over the logits where they live.
 */
import { KernelError, knownOptions, show } from '../errors.js';
import type { LlmKernels } from './kernels.js';

const MASK64 = (1n << 64n) - 1n;
const f = Math.fround;

/** run.c's random_u32 / random_f32 over a 64-bit state (xorshift, then * 0x2545F4914F6CDD1D >> 32). */
export class XorShiftRng {
  state: bigint;
  constructor(seed: bigint | number) {
    this.state = BigInt.asUintN(64, BigInt(seed));
  }
  u32(): number {
    let s = this.state;
    s ^= s >> 12n;
    s ^= (s << 25n) & MASK64;
    s ^= s >> 27n;
    this.state = s;
    return Number(((s * 0x2545f4914f6cdd1dn) & MASK64) >> 32n);
  }
  f32(): number {
    return f((this.u32() >>> 8) / 16777216);
  }
}

export interface SamplerOptions {
  temperature?: number;
  topp?: number;
  seed?: bigint | number;
}

export class Sampler {
  readonly vocabSize: number;
  readonly temperature: number;
  readonly topp: number;
  readonly rng: XorShiftRng;

  constructor(vocabSize: number, opts: SamplerOptions = {}) {
    if (!Number.isSafeInteger(vocabSize) || vocabSize < 1) throw new KernelError('INVALID_ARGUMENT', `sampler vocabSize: expected an integer >= 1, got ${show(vocabSize)}`);
    if (opts === null || typeof opts !== 'object') throw new KernelError('INVALID_ARGUMENT', `sampler options: expected an object, got ${show(opts)}`);
    knownOptions(opts, ['temperature', 'topp', 'seed'], 'sampler options');
    const seed = opts.seed;
    // run.c's seed is an unsigned long long: any integer, taken modulo 2^64
    if (seed !== undefined && typeof seed !== 'bigint' && !Number.isInteger(seed)) throw new KernelError('INVALID_ARGUMENT', `sampler seed: expected a bigint or an integer, got ${show(seed)}`);
    const t = opts.temperature ?? 1.0, p = opts.topp ?? 0.9;
    // (+Infinity is run.c's float temperature of 1e39: logits / ∞ = 0, every token equally likely)
    if (typeof t !== 'number' || !(t >= 0)) throw new KernelError('INVALID_ARGUMENT', `sampler temperature: expected a number >= 0, got ${show(t)}`);
    if (typeof p !== 'number' || !Number.isFinite(p)) throw new KernelError('INVALID_ARGUMENT', `sampler topp: expected a number, got ${show(p)}`);
    this.vocabSize = vocabSize;
    this.temperature = f(t);
    this.topp = f(p);
    this.rng = new XorShiftRng(opts.seed ?? Math.floor(Date.now() / 1000));
  }

  /**
   * Samples the next token from `logits` (a live float32 view at `ptr` in the instance's
   * memory; the logits are overwritten with probabilities when temperature > 0).
   */
  sample(k: LlmKernels, memory: WebAssembly.Memory, ptr: number): number {
    const n = this.vocabSize;
    if (this.temperature === 0) return k.argmaxF32(ptr, n);
    let logits = new Float32Array(memory.buffer, ptr, n);
    const t = this.temperature;
    for (let i = 0; i < n; i++) logits[i] = logits[i] / t;
    k.softmaxF32(ptr, n);
    logits = new Float32Array(memory.buffer, ptr, n);
    const coin = this.rng.f32();
    if (this.topp <= 0 || this.topp >= 1) return sampleMult(logits, coin);
    return sampleTopp(logits, this.topp, coin);
  }
}

/** run.c's sample_mult: first i with coin < cdf(i). */
export function sampleMult(probs: ArrayLike<number>, coin: number): number {
  let cdf = 0;
  for (let i = 0; i < probs.length; i++) {
    cdf = f(cdf + probs[i]);
    if (coin < cdf) return i;
  }
  return probs.length - 1;
}

/** run.c's sample_topp: the smallest set of most likely tokens whose mass exceeds topp. */
export function sampleTopp(probs: ArrayLike<number>, topp: number, coin: number): number {
  const n = probs.length;
  const cutoff = f(f(1 - topp) / (n - 1));
  const idx: number[] = [];
  for (let i = 0; i < n; i++) if (probs[i] >= cutoff) idx.push(i);
  idx.sort((a, b) => probs[b] - probs[a]);
  // No probability reaches the cutoff when they are not numbers (NaN / Inf logits, or a
  // temperature so small that logits / temperature overflow), or when they are all below it: a
  // near-uniform distribution (a high temperature) with a small topp, where every p ≈ 1/n <
  // (1 − topp)/(n − 1). run.c then indexes before its array (undefined behaviour); the cutoff
  // only prunes tokens that cannot be in the nucleus, so the nucleus is taken from all of them.
  if (idx.length === 0) {
    for (let i = 0; i < n; i++) {
      if (!Number.isFinite(probs[i])) {
        throw new KernelError('INVALID_VALUE', 'sampler: the probabilities are not finite (NaN or infinite logits, or a temperature so small that logits / temperature overflow float32)');
      }
      idx.push(i);
    }
    idx.sort((a, b) => probs[b] - probs[a]);
  }
  let cum = 0;
  let last = idx.length - 1;
  for (let i = 0; i < idx.length; i++) {
    cum = f(cum + probs[idx[i]]);
    if (cum > topp) { last = i; break; }
  }
  const r = f(coin * cum);
  let cdf = 0;
  for (let i = 0; i <= last; i++) {
    cdf = f(cdf + probs[idx[i]]);
    if (r < cdf) return idx[i];
  }
  return idx[last];
}
