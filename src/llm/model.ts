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
 *
 * A version-2 checkpoint (Q8_0, llama2.c's export.py --version 2) — or any checkpoint with
 * `quantize: 'q8'` — runs runq.c's forward pass instead (forwardQ8): the int8 codes are
 * repacked into 4-row tiles for matvecQ8Tiled when the group size is a multiple of 8
 * (packQ8Tiles; a shared table's embedding rows are then read through q8TileOffset), else
 * kept row-major as in the file for matvecQ8; each matrix's group scales are transposed to
 * [cols / GS, rows] (assembly/q8.ts), and every matrix-vector input is quantized by
 * quantizeQ8 first.
 */
import { dtypeInfo } from '../dtypes.js';
import { KernelError, knownOptions, show } from '../errors.js';
import { Kernels } from '../kernels.js';
import { type KVCache, storageDtype } from '../kvcache.js';
import { Tensor } from '../tensor.js';
import {
  HEADER_BYTES, type LlamaConfig, type Q8Layout, type Q8Matrix, type WeightLayout, isQ8Checkpoint, parseCheckpoint, parseQ8Checkpoint,
  quantizeCheckpoint,
} from './checkpoint.js';
import { type LlmKernels, llmKernels } from './kernels.js';
import { packQ8Tiles, packRows16, q8TileOffset, unpackRow16 } from './pack.js';

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
  /**
   * KV-cache storage dtype, as kvCache's `dtype`: 'float32' (default, llama2.c's arithmetic),
   * 'float16', 'bfloat16', 'int8' or 'float8e4m3fn', or its ONNX TensorProto code.
   */
  cacheDtype?: string | number;
  /**
   * 'q8': quantize a float32 (version 0) checkpoint at load as llama2.c's export.py --version 2
   * does (Q8_0, groups of `groupSize`, default 64, halved until it divides dim) and run
   * runq.c's int8 forward pass. A version-2 checkpoint always runs that way.
   */
  quantize?: 'q8';
  groupSize?: number;
}

/** A Q8_0 matrix in instance memory: int8 codes in 4-row tiles (tiled) or row-major, scales transposed [cols / GS, rows]. */
interface Q8Weights { q: number; sT: number; rows: number; cols: number; tiled: boolean }

/**
 * The decode step's attend options: the cache's builtin kernel (assembly/llm.ts attend*),
 * always — the kernel whose logits were compared token for token with llama2.c's
 * run.c (README, "Decode-step kernels and llama2.c models"). 'auto' would move grouped-head
 * models (stories260K's 8 / 4 heads) to the flash kernel at long positions: also within
 * rounding of run.c, but summed in another order, and never compared with it.
 */
const ATTEND = (out: Tensor, scale: number) => ({ out, scale, impl: 'builtin' as const });

export class Llama {
  readonly config: LlamaConfig;
  /** Where each float32 weight array sits (version-0 checkpoints); undefined for Q8_0 weights (see `q8Layout`). */
  readonly layout: WeightLayout | undefined;
  /** The version-2 file's layout for Q8_0 weights; undefined for float32 ones. */
  readonly q8Layout: Q8Layout | undefined;
  readonly cache: KVCache;
  readonly headSize: number;
  readonly kvDim: number;
  private readonly ek: Kernels;
  private readonly k: LlmKernels;
  /** Q8_0 weights (runq.c's forward pass), or undefined for float32 (run.c's). */
  readonly groupSize: number | undefined;
  private weights: Tensor;
  private q8?: { codes: Tensor; mats: Record<'wq' | 'wk' | 'wv' | 'wo' | 'w1' | 'w2' | 'w3', Q8Weights[]> & { wcls: Q8Weights; emb: Q8Weights }; rmsAtt: number; rmsFfn: number; rmsFinal: number };
  private act: Tensor;
  private ptr: Record<'x' | 'xb' | 'xb2' | 'hb' | 'hb2' | 'q' | 'kk' | 'vv' | 'att' | 'logits' | 'rope' | 'xq' | 'xs', number>;
  private qT: Tensor; private kT: Tensor; private vT: Tensor; private attT: Tensor;
  private rope: Float32Array;
  private scale: number;

  /** Loads a llama2.c checkpoint (its bytes) into the instance. */
  constructor(ek: Kernels, checkpoint: Uint8Array, opts: LlamaOptions = {}) {
    // every argument checked before the weights are loaded (memory that grew for them stays)
    if (!(ek instanceof Kernels)) throw new KernelError('INVALID_ARGUMENT', `Llama ek: expected the instance init() returns, got ${show(ek)}`);
    if (!(checkpoint instanceof Uint8Array)) throw new KernelError('INVALID_ARGUMENT', `Llama checkpoint: expected the file's bytes as a Uint8Array, got ${show(checkpoint)}`);
    if (opts === null || typeof opts !== 'object') throw new KernelError('INVALID_ARGUMENT', `Llama options: expected an object, got ${show(opts)}`);
    knownOptions(opts, ['seqLen', 'cacheDtype', 'quantize', 'groupSize'], 'Llama options');
    const cacheDtype = storageDtype(opts.cacheDtype);
    if (opts.quantize !== undefined && opts.quantize !== 'q8') throw new KernelError('INVALID_ARGUMENT', `Llama quantize: expected 'q8' or undefined, got ${show(opts.quantize)}`);
    if (opts.quantize === 'q8' && !isQ8Checkpoint(checkpoint)) checkpoint = quantizeCheckpoint(checkpoint, { groupSize: opts.groupSize });
    const q8 = isQ8Checkpoint(checkpoint);
    const parsed = q8 ? parseQ8Checkpoint(checkpoint) : parseCheckpoint(checkpoint);
    const config = parsed.config;
    this.ek = ek;
    this.k = llmKernels(ek);
    this.config = config;
    const c = config;
    const hs = (this.headSize = c.dim / c.nHeads);
    this.kvDim = c.nKvHeads * hs;
    const seqLen = opts.seqLen ?? c.seqLen;
    if (!Number.isInteger(seqLen) || seqLen < 1 || seqLen > c.seqLen) throw new KernelError('INVALID_ARGUMENT', `Llama seqLen: expected an integer in [1, ${c.seqLen}], got ${show(opts.seqLen)}`);
    if (q8) {
      const Q = parsed.layout as Q8Layout;
      this.groupSize = Q.groupSize;
      this.layout = undefined;
      this.q8Layout = Q;
      const { weights, q8: w8 } = this.loadQ8(checkpoint, Q);
      this.weights = weights;
      this.q8 = w8;
    } else {
      this.groupSize = undefined;
      const layout = parsed.layout as WeightLayout;
      this.layout = layout;
      this.q8Layout = undefined;
      this.weights = this.loadF32(checkpoint, layout);
    }
    // The weights are in: a failure from here on (a bad cacheDtype, a KV cache that does not
    // fit the memory) gives them and the activations back before it propagates.
    let act: Tensor | undefined;
    try {
      // Activations: 16-byte aligned sub-buffers of one tensor (xq: int16 codes, in floats' room).
      const maxN = Math.max(c.dim, c.hiddenDim);
      const sizes = { x: c.dim, xb: c.dim, xb2: c.dim, hb: c.hiddenDim, hb2: c.hiddenDim, q: c.dim, kk: this.kvDim, vv: this.kvDim, att: c.dim, logits: c.vocabSize, rope: 2 * hs, xq: q8 ? maxN / 2 + 1 : 0, xs: q8 ? maxN : 0 };
      let total = 0;
      const off: Record<string, number> = {};
      for (const [name, n] of Object.entries(sizes)) { off[name] = total; total += Math.ceil(n / 4) * 4 + 4; }
      this.act = act = ek.hold(ek.tensor('float32', [total]));
      const base = this.act.byteOffset;
      this.ptr = Object.fromEntries(Object.entries(off).map(([n, o]) => [n, base + o * 4])) as Llama['ptr'];
      const view = (p: number, shape: number[]) => new Tensor(ek, F32, shape, p);
      this.qT = view(this.ptr.q, [1, c.nHeads, 1, hs]);
      this.attT = view(this.ptr.att, [1, c.nHeads, 1, hs]);
      this.kT = view(this.ptr.kk, [1, c.nKvHeads, 1, hs]);
      this.vT = view(this.ptr.vv, [1, c.nKvHeads, 1, hs]);
      this.cache = ek.kvCache({ layers: c.nLayers, batch: 1, kvHeads: c.nKvHeads, headDim: hs, capacity: seqLen, dtype: cacheDtype, queryHeads: c.nHeads });
      this.rope = new Float32Array(2 * hs);
      this.scale = f(1 / Math.sqrt(hs));
    } catch (e) {
      act?.dispose();
      this.q8?.codes.dispose();
      this.weights.dispose();
      throw e;
    }
  }

  /** Version 2: int8 codes in 4-row tiles (group size a multiple of 8) or as they are, scales transposed per matrix, norms as float32. */
  private loadQ8(checkpoint: Uint8Array, Q: Q8Layout): { weights: Tensor; q8: NonNullable<Llama['q8']> } {
    const ek = this.ek, c = this.config, gs = Q.groupSize;
    const all: [string, Q8Matrix][] = [['emb', Q.tokenEmbedding]];
    for (const name of ['wq', 'wk', 'wv', 'wo', 'w1', 'w2', 'w3'] as const) Q[name].forEach((m) => all.push([name, m]));
    if (!c.sharedClassifier) all.push(['wcls', Q.wcls]);
    let codeBytes = 0, floats = (2 * c.nLayers + 1) * c.dim;
    for (const [, m] of all) { codeBytes += m.rows * m.cols; floats += (m.rows * m.cols) / gs; }
    const codes = ek.hold(ek.tensor('int8', [codeBytes]));
    let weights: Tensor;
    try {
      weights = ek.hold(ek.tensor('float32', [floats]));
    } catch (e) {
      codes.dispose();
      throw e;
    }
    const mem = ek.memory.buffer, dv = new DataView(checkpoint.buffer, checkpoint.byteOffset, checkpoint.byteLength);
    const wf = new Float32Array(mem, weights.byteOffset, floats);
    const u8 = new Uint8Array(mem);
    let qAt = codes.byteOffset, fAt = 0;
    const floatsAt = (from: number, n: number) => {
      const at = weights.byteOffset + fAt * 4;
      for (let i = 0; i < n; i++) wf[fAt + i] = dv.getFloat32(from + i * 4, true);
      fAt += n;
      return at;
    };
    const rmsAtt = floatsAt(Q.rmsAtt, c.nLayers * c.dim), rmsFfn = floatsAt(Q.rmsFfn, c.nLayers * c.dim), rmsFinal = floatsAt(Q.rmsFinal, c.dim);
    const mats = { wq: [], wk: [], wv: [], wo: [], w1: [], w2: [], w3: [] } as unknown as NonNullable<Llama['q8']>['mats'];
    for (const [name, m] of all) {
      const n = m.rows * m.cols, groups = m.cols / gs;
      const tiled = gs % 8 === 0;
      if (tiled) packQ8Tiles(checkpoint, m.rows, m.cols, u8, m.q, qAt);
      else u8.set(checkpoint.subarray(m.q, m.q + n), qAt);
      const w: Q8Weights = { q: qAt, sT: weights.byteOffset + fAt * 4, rows: m.rows, cols: m.cols, tiled };
      // file: scale of (row i, group g) at i·groups + g; here at g·rows + i
      for (let i = 0; i < m.rows; i++) for (let g = 0; g < groups; g++) wf[fAt + g * m.rows + i] = dv.getFloat32(m.s + (i * groups + g) * 4, true);
      fAt += n / gs;
      qAt += n;
      if (name === 'emb') mats.emb = w;
      else if (name === 'wcls') mats.wcls = w;
      else (mats[name as 'wq'] as Q8Weights[]).push(w);
    }
    if (c.sharedClassifier) mats.wcls = mats.emb;
    return { weights, q8: { codes, mats, rmsAtt, rmsFfn, rmsFinal } };
  }

  private loadF32(checkpoint: Uint8Array, layout: WeightLayout): Tensor {
    const ek = this.ek, c = this.config;
    const weights = ek.hold(ek.tensor('float32', [layout.total]));
    new Uint8Array(ek.memory.buffer, weights.byteOffset, layout.total * 4).set(checkpoint.subarray(HEADER_BYTES, HEADER_BYTES + layout.total * 4));
    {
      // Repack every matrix in place (through a copy of it): rows16 layout, same offsets.
      const wf = new Float32Array(ek.memory.buffer, weights.byteOffset, layout.total);
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
    return weights;
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
    this.alive();
    return this.ptr.logits;
  }

  /** The logits of the last step (a live view: read before the next call that may allocate). */
  get logits(): Float32Array {
    this.alive();
    return new Float32Array(this.ek.memory.buffer, this.ptr.logits, this.config.vocabSize);
  }

  /** Empties the cache (a new sequence). */
  reset(): void {
    this.alive();
    this.cache.reset();
  }

  /** Runs token `token` at the next position; returns the logits view. */
  forward(token: number): Float32Array {
    this.alive();
    const c = this.config, k = this.k, p = this.ptr, w = this.weights.byteOffset * 1, L = this.layout!;
    if (!Number.isInteger(token) || token < 0 || token >= c.vocabSize) throw new KernelError('INVALID_ARGUMENT', `Llama.forward token: expected an integer in [0, ${c.vocabSize - 1}], got ${show(token)}`);
    const pos = this.cache.lengths[0];
    if (pos >= this.cache.capacity) throw new KernelError('INVALID_VALUE', `Llama.forward: the sequence holds ${pos} tokens, the cache's capacity`);
    if (this.q8) return this.forwardQ8(token, pos);
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
      this.cache.attend(l, this.qT, ATTEND(this.attT, this.scale));
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

  /**
   * runq.c's forward(): every matrix-vector product quantizes its input vector to Q8_0
   * (quantizeQ8) and runs matvecQ8; the token's embedding row is dequantized (code · scale,
   * one float32 product each); norms, RoPE, attention, SwiGLU and residuals as run.c.
   */
  private forwardQ8(token: number, pos: number): Float32Array {
    const c = this.config, k = this.k, p = this.ptr, W = this.q8!, M = W.mats, gs = this.groupSize!;
    const dim = c.dim, hid = c.hiddenDim, hs = this.headSize;
    {
      const mem = this.ek.memory.buffer, e = M.emb, codes = new Int8Array(mem, e.q, e.rows * e.cols);
      const sT = new Float32Array(mem, e.sT, (e.rows * e.cols) / gs), x = new Float32Array(mem, p.x, dim);
      const at = (i: number) => (e.tiled ? q8TileOffset(e.rows, e.cols, token, i) : token * dim + i);
      for (let g = 0; g < dim / gs; g++) {
        const s = sT[g * e.rows + token];
        for (let i = g * gs; i < (g + 1) * gs; i++) x[i] = f(codes[at(i)] * s);
      }
    }
    ropeTable(pos, hs, this.rope);
    new Float32Array(this.ek.memory.buffer, p.rope, 2 * hs).set(this.rope);
    for (let l = 0; l < c.nLayers; l++) {
      k.rmsnormF32(p.xb, p.x, W.rmsAtt + l * dim * 4, dim, 1e-5);
      k.quantizeQ8(p.xq, p.xs, p.xb, dim, gs);
      this.matvecQ8(p.q, M.wq[l]); this.matvecQ8(p.kk, M.wk[l]); this.matvecQ8(p.vv, M.wv[l]);
      k.ropeF32(p.q, p.rope, c.nHeads, hs);
      k.ropeF32(p.kk, p.rope, c.nKvHeads, hs);
      this.cache.append(l, this.kT, this.vT);
      this.cache.attend(l, this.qT, ATTEND(this.attT, this.scale));
      k.quantizeQ8(p.xq, p.xs, p.att, dim, gs);
      this.matvecQ8(p.xb2, M.wo[l]);
      k.addF32(p.x, p.x, p.xb2, dim);
      k.rmsnormF32(p.xb, p.x, W.rmsFfn + l * dim * 4, dim, 1e-5);
      k.quantizeQ8(p.xq, p.xs, p.xb, dim, gs);
      this.matvecQ8(p.hb, M.w1[l]); this.matvecQ8(p.hb2, M.w3[l]);
      k.swigluF32(p.hb, p.hb2, hid);
      k.quantizeQ8(p.xq, p.xs, p.hb, hid, gs);
      this.matvecQ8(p.xb, M.w2[l]);
      k.addF32(p.x, p.x, p.xb, dim);
    }
    this.cache.advance();
    k.rmsnormF32(p.x, p.x, W.rmsFinal, dim, 1e-5);
    k.quantizeQ8(p.xq, p.xs, p.x, dim, gs);
    this.matvecQ8(p.logits, M.wcls);
    return this.logits;
  }

  /** out = W·x for the quantized input in p.xq / p.xs (matvecQ8Tiled, or matvecQ8 for row-major codes). */
  private matvecQ8(out: number, m: Q8Weights): void {
    const p = this.ptr;
    (m.tiled ? this.k.matvecQ8Tiled : this.k.matvecQ8)(out, m.q, m.sT, p.xq, p.xs, m.rows, m.cols, this.groupSize!);
  }

  private disposed = false;
  /** After dispose() the logits' memory may hold another tensor: reading them is an error. */
  private alive(): void {
    if (this.disposed) throw new KernelError('DISPOSED', 'Llama: the model was disposed');
  }

  dispose(): void {
    if (this.disposed) return;
    this.disposed = true;
    this.cache.dispose();
    this.q8?.codes.dispose();
    this.weights.dispose();
    this.act.dispose();
  }
}
