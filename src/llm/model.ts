/**
 * A Llama-style decoder (llama2.c's forward()) driven by the package's kernels: weights in
 * one tensor, activations in another, the keys and values in a KVCache. One call to
 * `forward(token)` runs a decode step for the next position and returns the logits.
 * Nothing is allocated per step.
 *
 * At load every weight matrix (wq, wk, wv, wo, w1, w2, w3, the classifier) is repacked in
 * place into the rows16 layout of matvecRows16F32 (src/llm/pack.ts): same offsets, same
 * size, each matrix read as one sequential stream per 16 output rows. With a shared
 * classifier that matrix is the token-embedding table, so a token's embedding row is
 * gathered from the packed table (unpackRow16); an unshared embedding table stays row-major.
 */
import { dtypeInfo } from '../dtypes.js';
import { KernelError, show } from '../errors.js';
import type { Kernels } from '../kernels.js';
import type { KVCache } from '../kvcache.js';
import { Tensor } from '../tensor.js';
import { HEADER_BYTES, type LlamaConfig, type WeightLayout, parseCheckpoint } from './checkpoint.js';
import { type LlmKernels, llmKernels } from './kernels.js';
import { packRows16, unpackRow16 } from './pack.js';

const F32 = dtypeInfo('float32');
const f = Math.fround;

/** RoPE table for one position, exactly llama2.c's float arithmetic: [c0,c0,c1,c1,…, −s0,s0,−s1,s1,…]. */
export function ropeTable(pos: number, headSize: number, out: Float32Array): void {
  for (let i = 0; i < headSize; i += 2) {
    const freq = f(1 / f(Math.pow(10000, f(i / headSize))));
    const val = f(pos * freq);
    const c = f(Math.cos(val)), s = f(Math.sin(val));
    out[i] = c; out[i + 1] = c;
    out[headSize + i] = -s; out[headSize + i + 1] = s;
  }
}

export interface LlamaOptions {
  /** Longest sequence (cache capacity); default and maximum: the checkpoint's seq_len. */
  seqLen?: number;
  /** KV-cache storage dtype: 'float32' (default, llama2.c's arithmetic), 'float16' or 'bfloat16'. */
  cacheDtype?: string;
}

export class Llama {
  readonly config: LlamaConfig;
  readonly layout: WeightLayout;
  readonly cache: KVCache;
  readonly headSize: number;
  readonly kvDim: number;
  private readonly ek: Kernels;
  private readonly k: LlmKernels;
  private weights: Tensor;
  private act: Tensor;
  private ptr: Record<'x' | 'xb' | 'xb2' | 'hb' | 'hb2' | 'q' | 'kk' | 'vv' | 'att' | 'logits' | 'rope', number>;
  private qT: Tensor; private kT: Tensor; private vT: Tensor; private attT: Tensor;
  private rope: Float32Array;
  private scale: number;

  /** Loads a llama2.c checkpoint (its bytes) into the instance. */
  constructor(ek: Kernels, checkpoint: Uint8Array, opts: LlamaOptions = {}) {
    const { config, layout } = parseCheckpoint(checkpoint);
    this.ek = ek;
    this.k = llmKernels(ek);
    this.config = config;
    this.layout = layout;
    const c = config;
    const hs = (this.headSize = c.dim / c.nHeads);
    this.kvDim = c.nKvHeads * hs;
    const seqLen = opts.seqLen ?? c.seqLen;
    if (!Number.isInteger(seqLen) || seqLen < 1 || seqLen > c.seqLen) throw new KernelError('INVALID_ARGUMENT', `Llama seqLen: expected an integer in [1, ${c.seqLen}], got ${show(opts.seqLen)}`);
    this.weights = ek.tensor('float32', [layout.total]);
    new Uint8Array(ek.memory.buffer, this.weights.byteOffset, layout.total * 4).set(checkpoint.subarray(HEADER_BYTES, HEADER_BYTES + layout.total * 4));
    {
      // Repack every matrix in place (through a copy of it): rows16 layout, same offsets.
      const wf = new Float32Array(ek.memory.buffer, this.weights.byteOffset, layout.total);
      const pack = (at: number, count: number, d: number, n: number) => {
        for (let i = 0; i < count; i++) {
          const o = at + i * d * n;
          packRows16(wf.slice(o, o + d * n), d, n, wf, 0, o);
        }
      };
      const hid = c.hiddenDim, kv = this.kvDim, L = c.nLayers;
      pack(layout.wq, L, c.dim, c.dim); pack(layout.wk, L, kv, c.dim); pack(layout.wv, L, kv, c.dim); pack(layout.wo, L, c.dim, c.dim);
      pack(layout.w1, L, hid, c.dim); pack(layout.w2, L, c.dim, hid); pack(layout.w3, L, hid, c.dim);
      pack(layout.wcls, 1, c.vocabSize, c.dim);
    }
    // Activations: 16-byte aligned sub-buffers of one tensor.
    const sizes = { x: c.dim, xb: c.dim, xb2: c.dim, hb: c.hiddenDim, hb2: c.hiddenDim, q: c.dim, kk: this.kvDim, vv: this.kvDim, att: c.dim, logits: c.vocabSize, rope: 2 * hs };
    let total = 0;
    const off: Record<string, number> = {};
    for (const [name, n] of Object.entries(sizes)) { off[name] = total; total += Math.ceil(n / 4) * 4 + 4; }
    this.act = ek.tensor('float32', [total]);
    const base = this.act.byteOffset;
    this.ptr = Object.fromEntries(Object.entries(off).map(([n, o]) => [n, base + o * 4])) as Llama['ptr'];
    const view = (p: number, shape: number[]) => new Tensor(ek, F32, shape, p);
    this.qT = view(this.ptr.q, [1, c.nHeads, 1, hs]);
    this.attT = view(this.ptr.att, [1, c.nHeads, 1, hs]);
    this.kT = view(this.ptr.kk, [1, c.nKvHeads, 1, hs]);
    this.vT = view(this.ptr.vv, [1, c.nKvHeads, 1, hs]);
    this.cache = ek.kvCache({ layers: c.nLayers, batch: 1, kvHeads: c.nKvHeads, headDim: hs, capacity: seqLen, dtype: opts.cacheDtype ?? 'float32', queryHeads: c.nHeads });
    this.rope = new Float32Array(2 * hs);
    this.scale = f(1 / Math.sqrt(hs));
  }

  /** @internal the instance's kernels. */
  get kernels(): LlmKernels {
    return this.k;
  }

  get memory(): WebAssembly.Memory {
    return this.ek.memory;
  }

  /** Position of the next token (tokens already in the cache). */
  get pos(): number {
    return this.cache.lengths[0];
  }

  /** Byte offset of the logits (vocab floats), valid for the model's lifetime. */
  get logitsPtr(): number {
    return this.ptr.logits;
  }

  /** The logits of the last step (a live view: read before the next call that may allocate). */
  get logits(): Float32Array {
    return new Float32Array(this.ek.memory.buffer, this.ptr.logits, this.config.vocabSize);
  }

  /** Empties the cache (a new sequence). */
  reset(): void {
    this.cache.reset();
  }

  /** Runs token `token` at the next position; returns the logits view. */
  forward(token: number): Float32Array {
    const c = this.config, k = this.k, p = this.ptr, w = this.weights.byteOffset * 1, L = this.layout;
    if (!Number.isInteger(token) || token < 0 || token >= c.vocabSize) throw new KernelError('INVALID_ARGUMENT', `Llama.forward token: expected an integer in [0, ${c.vocabSize - 1}], got ${show(token)}`);
    const pos = this.cache.lengths[0];
    if (pos >= this.cache.capacity) throw new KernelError('INVALID_VALUE', `Llama.forward: the sequence holds ${pos} tokens, the cache's capacity`);
    const dim = c.dim, hid = c.hiddenDim, kvDim = this.kvDim, hs = this.headSize;
    if (c.sharedClassifier) {
      const mf = new Float32Array(this.ek.memory.buffer);
      unpackRow16(mf, w / 4 + L.tokenEmbedding, c.vocabSize, dim, token, mf, p.x / 4);
    } else {
      new Uint8Array(this.ek.memory.buffer).copyWithin(p.x, w + (L.tokenEmbedding + token * dim) * 4, w + (L.tokenEmbedding + (token + 1) * dim) * 4);
    }
    ropeTable(pos, hs, this.rope);
    new Float32Array(this.ek.memory.buffer, p.rope, 2 * hs).set(this.rope);
    const at = (base: number, layer: number, per: number) => w + (base + layer * per) * 4;
    for (let l = 0; l < c.nLayers; l++) {
      k.rmsnormF32(p.xb, p.x, at(L.rmsAtt, l, dim), dim, 1e-5);
      k.matvecRows16F32(p.q, at(L.wq, l, dim * dim), p.xb, dim, dim);
      k.matvecRows16F32(p.kk, at(L.wk, l, dim * kvDim), p.xb, kvDim, dim);
      k.matvecRows16F32(p.vv, at(L.wv, l, dim * kvDim), p.xb, kvDim, dim);
      k.ropeF32(p.q, p.rope, c.nHeads, hs);
      k.ropeF32(p.kk, p.rope, c.nKvHeads, hs);
      this.cache.append(l, this.kT, this.vT);
      this.cache.attend(l, this.qT, { out: this.attT, scale: this.scale });
      k.matvecRows16F32(p.xb2, at(L.wo, l, dim * dim), p.att, dim, dim);
      k.addF32(p.x, p.x, p.xb2, dim);
      k.rmsnormF32(p.xb, p.x, at(L.rmsFfn, l, dim), dim, 1e-5);
      k.matvecRows16F32(p.hb, at(L.w1, l, dim * hid), p.xb, hid, dim);
      k.matvecRows16F32(p.hb2, at(L.w3, l, dim * hid), p.xb, hid, dim);
      k.swigluF32(p.hb, p.hb2, hid);
      k.matvecRows16F32(p.xb, at(L.w2, l, dim * hid), p.hb, dim, hid);
      k.addF32(p.x, p.x, p.xb, dim);
    }
    this.cache.advance();
    k.rmsnormF32(p.x, p.x, w + L.rmsFinal * 4, dim, 1e-5);
    k.matvecRows16F32(p.logits, w + L.wcls * 4, p.x, c.vocabSize, dim);
    return this.logits;
  }

  dispose(): void {
    this.cache.dispose();
    this.weights.dispose();
    this.act.dispose();
  }
}
