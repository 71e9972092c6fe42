/**
 * KVCache: a fixed-capacity key/value cache for decode loops, allocated once.
 *
 * Storage is ONE tensor for every layer: for layer l, keys [B, Hkv, N, D] then values
 * [B, Hkv, N, D], N = `window + maxAppend − 1` (sliding window) or `capacity`. A decode step appends the
 * new rows of each layer in place (the scatter kernels, no intermediate copies), attends
 * over each sequence's valid prefix, then `advance()` moves every sequence's length.
 *
 * Bookkeeping rules:
 *  - `lengths[b]` is the number of tokens of sequence b in the cache (its next position).
 *  - A step: `append(l, k, v)` for every layer (each with the same per-sequence counts),
 *    `attend(l, q)` after layer l's append, then `advance()`. Layers' new rows are written
 *    at position lengths[b] (mod N); attention for layer l sees them at once.
 *  - Every check happens before the first byte is written: a throwing call changes
 *    nothing (no row written, no length moved).
 *  - Without a window, lengths[b] + new tokens <= capacity. With a window W, the last N
 *    positions are kept (row p mod N), at most N tokens per append, the query at position p
 *    sees p − W + 1 … p of them (the kernels' per-row lower bound), and lengths may grow up
 *    to `capacity` (default: unbounded, 2^31 − 1). N = W + maxAppend − 1 keeps every token
 *    of an append of up to maxAppend tokens an exact sliding window.
 */
import { type DTypeInfo, type TypedData, dtypeInfo, findDType } from './dtypes.js';
import { KernelError, knownOptions, show } from './errors.js';
import type { Kernels } from './kernels.js';
import { llmKernels } from './llm/kernels.js';
import { type AttentionPlan, type AttentionSeq, attentionPlanScratch, runAttentionPlan } from './ops/attention.js';
import { OPS } from './ops/index.js';
import { type PlainTensor, Tensor, checkShape, plainMeta, shapeSize, toDataArray } from './tensor.js';

/** ek.kvCache's options: `capacity` is required unless the cache has a `window`. */
export type KVCacheOptions = KVCacheBaseOptions & (
  | {
    /** Cache rows per sequence. */
    capacity: number;
    window?: undefined;
  }
  | {
    /** Sliding window: the query at position p sees p − window + 1 … p (a circular buffer of window + maxAppend − 1 rows). */
    window: number;
    /** The longest allowed sequence (default unbounded). */
    capacity?: number;
  }
);

/** The options every cache takes (see KVCacheOptions). */
export interface KVCacheBaseOptions {
  layers: number;
  batch: number;
  kvHeads: number;
  headDim: number;
  /** Storage dtype: 'float32' (default), 'float16', 'bfloat16', or 'int8' / 'float8e4m3fn' with one float32 scale per (token, head) row; or its ONNX TensorProto code. */
  dtype?: string | number;
  /** Query heads of a decode step (default kvHeads): sizes the scratch reserved up front, so decode steps allocate nothing. */
  queryHeads?: number;
  /**
   * With a window: the most tokens one append adds per sequence that still attend as a strict
   * sliding window (default 1). The ring keeps window + maxAppend − 1 rows, so each token of
   * such a chunk still finds the `window` positions up to its own.
   */
  maxAppend?: number;
}

export interface AppendOptions {
  /** New tokens per sequence ([B] counts). Padded input: default S for every sequence; packed input: required, summing to T. */
  lengths?: ArrayLike<number>;
}

/** An attention mask: a package tensor, `{ dtype, shape, data }` / ONNX Runtime's `{ type, dims, data }`, or `{ shape, data }` of 0 / 1 / booleans / 0n / 1n. */
export type MaskInput = Tensor | PlainTensor;

export interface AttendOptions {
  /** Score scale; default 1/sqrt(headDim). */
  scale?: number;
  /** Bottom-right causal alignment (default true): new token s of sequence b sees positions <= its own. */
  causal?: boolean;
  /** Output tensor, q's shape and dtype; allocated when omitted. */
  out?: Tensor;
  /**
   * Which kernel: 'TRT_Attention' (the operator's flash kernel, run straight over the cache
   * through runAttentionPlan: no operator call, no copy of q), 'builtin' (attendF32/F16/BF16
   * of assembly/llm.ts, called directly) or 'auto' (default): TRT_Attention when the step reads
   * at least 2^14 query·key products (TRT_ATTENTION_MIN_WORK: its flash kernel is faster
   * there), builtin below and for a one-token step without grouped heads (Hq = Hkv),
   * which TRT_Attention would hand to this same decode kernel anyway (its flash kernel works
   * on four query rows per KV head). A window cache runs the same flash kernel over its
   * rings, walking each sequence's rows in position order with every query's window
   * (TRT_Attention itself has no ring or window); only a step that is not causal
   * and has several queries per sequence (they all see the same last `window` positions,
   * which the kernel's per-row window cannot say) uses builtin. int8 / float8e4m3fn caches
   * always use builtin (it reads their codes and scales).
   */
  impl?: 'auto' | 'TRT_Attention' | 'builtin';
}

/**
 * Query·key products per attend call from which 'auto' picks TRT_Attention's flash kernel.
 * Same process, decode steps, flash / builtin time: 0.94–1.1 at 2^11–2^12 products, 0.57–1.09
 * at 2^13 (two query heads per KV head is the builtin kernel's best case: the flash tile
 * pads to four), 0.64–0.80 at 2^14–2^15, 0.53–0.68 from 2^17 to 2^22 (G = 4, D 64–128);
 * multi-token steps 0.39–0.48 from 2^14. (1 << 20 until the flash path lost its operator
 * call: ek.run's checks and a scaled copy of q cost more than the kernel at small sizes.)
 */
export const TRT_ATTENTION_MIN_WORK = 1 << 14;

const MAX_LEN = 0x7fffffff;
const STORAGE = ['float32', 'float16', 'bfloat16', 'int8', 'float8e4m3fn'] as const;
/** A KV cache's storage dtype. */
export type StorageDtype = (typeof STORAGE)[number];
/** Kernel `kind` of each storage dtype (assembly/llm.ts). */
const KIND: Record<StorageDtype, number> = { float32: 0, float16: 1, bfloat16: 2, int8: 3, float8e4m3fn: 4 };
/** Storage dtypes quantized per (token, head) row with a float32 scale. */
const SCALED = (d: StorageDtype) => d === 'int8' || d === 'float8e4m3fn';

function bad(code: ConstructorParameters<typeof KernelError>[0], msg: string): never {
  throw new KernelError(code, msg);
}

/** A cache storage dtype from its name or ONNX TensorProto code (undefined: float32). */
export function storageDtype(d: unknown): StorageDtype {
  const dtype = d === undefined ? 'float32' : (findDType(d)?.name ?? d);
  if (!(STORAGE as readonly unknown[]).includes(dtype)) bad('INVALID_DTYPE', `kvCache dtype: expected 'float32', 'float16', 'bfloat16', 'int8' or 'float8e4m3fn', got ${show(dtype)}`);
  return dtype as StorageDtype;
}
const CACHE_OPTIONS = ['layers', 'batch', 'kvHeads', 'headDim', 'capacity', 'dtype', 'queryHeads', 'window', 'maxAppend'] as const;
const APPEND_OPTIONS = ['lengths'] as const;
const ATTEND_OPTIONS = ['scale', 'causal', 'out', 'impl'] as const;

function posInt(v: unknown, what: string, min = 1): number {
  if (typeof v !== 'number' || !Number.isSafeInteger(v) || v < min) bad('INVALID_ARGUMENT', `kvCache ${what}: expected an integer >= ${min}, got ${show(v)}`);
  return v as number;
}

export class KVCache {
  readonly layers: number;
  readonly batch: number;
  readonly kvHeads: number;
  readonly headDim: number;
  /** Longest sequence the cache accepts. */
  readonly capacity: number;
  /** Sliding window size, 0 for none. */
  readonly window: number;
  /** Rows per (sequence, head) in storage: window or capacity. */
  readonly rows: number;
  readonly dtype: StorageDtype;
  private readonly elemBytes: number;
  private readonly ek: Kernels;
  private storage: Tensor;
  /** int32 scratch owned by the cache: starts [B], cumulative counts [B+1]. */
  private meta: Tensor;
  private len: Int32Array;
  private pending: Int32Array | null = null;
  private written: Uint8Array;
  private views: (Tensor | null)[];
  /** keyScales / valueScales views (layer·2 + kv), disposed with the cache like `views`. */
  private scaleViews: (Tensor | null)[];
  /** int8 storage: float32 scales [layers, 2, B, Hkv, rows], one per (token, head) row. */
  private scales: Tensor | null = null;
  private alive = true;
  private busy = 0; // > 0 while a call reads its arguments (see reading())

  /** @internal — use ek.kvCache(). */
  constructor(ek: Kernels, opts: KVCacheOptions) {
    if (opts === null || typeof opts !== 'object') bad('INVALID_ARGUMENT', `kvCache options: expected an object, got ${show(opts)}`);
    knownOptions(opts, CACHE_OPTIONS, 'kvCache options');
    this.ek = ek;
    this.layers = posInt(opts.layers, 'layers');
    this.batch = posInt(opts.batch, 'batch');
    this.kvHeads = posInt(opts.kvHeads, 'kvHeads');
    this.headDim = posInt(opts.headDim, 'headDim');
    // a dtype name or its ONNX TensorProto code, as everywhere else
    this.dtype = storageDtype(opts.dtype);
    this.elemBytes = this.dtype === 'float32' ? 4 : SCALED(this.dtype) ? 1 : 2;
    if (opts.window !== undefined) {
      this.window = posInt(opts.window, 'window');
      this.capacity = opts.capacity === undefined ? MAX_LEN : posInt(opts.capacity, 'capacity');
      if (this.capacity > MAX_LEN) bad('INVALID_ARGUMENT', `kvCache capacity: expected at most ${MAX_LEN}, got ${this.capacity}`);
      if (this.capacity < this.window) bad('INVALID_ARGUMENT', `kvCache capacity: expected >= window (${this.window}), got ${this.capacity}`);
      const extra = opts.maxAppend === undefined ? 1 : posInt(opts.maxAppend, 'maxAppend');
      // the ring: window + maxAppend − 1 rows (never more than the capacity needs)
      this.rows = Math.min(this.window + extra - 1, this.capacity);
    } else {
      if (opts.maxAppend !== undefined) bad('INVALID_ARGUMENT', `kvCache maxAppend: only with a window (without one every append attends exactly), got ${show(opts.maxAppend)}`);
      this.window = 0;
      this.capacity = posInt(opts.capacity, 'capacity');
      this.rows = this.capacity;
    }
    // every option is checked before the first allocation, so a bad one leaks nothing
    const qh = opts.queryHeads === undefined ? this.kvHeads : posInt(opts.queryHeads, 'queryHeads');
    if (qh % this.kvHeads !== 0) bad('INVALID_ARGUMENT', `kvCache queryHeads: expected a multiple of kvHeads (${this.kvHeads}), got ${qh}`);
    const total = this.layers * 2 * this.batch * this.kvHeads * this.rows * this.headDim;
    if (total * this.elemBytes > 2 ** 32) bad('OUT_OF_MEMORY', `kvCache: ${total * this.elemBytes} bytes do not fit a 32-bit memory`);
    this.storage = ek.hold(ek.tensor(this.dtype, [this.layers, 2, this.batch, this.kvHeads, this.rows, this.headDim]));
    let meta: Tensor | null = null;
    try {
      if (SCALED(this.dtype)) this.scales = ek.hold(ek.tensor('float32', [this.layers, 2, this.batch, this.kvHeads, this.rows]));
      meta = ek.hold(ek.tensor('int32', [2 * this.batch + 1]));
      // a one-token step's scratch for either kernel (queryHeads query heads), reserved now:
      // a decode loop then allocates nothing, not even on its first step
      const one = new Int32Array(this.batch).fill(1), full = new Int32Array(this.batch).fill(this.rows);
      const flash = SCALED(this.dtype) ? 0 : attentionPlanScratch(ek, this.flashPlan(0, 0, 0, qh, 1, false, true, 1, one, full).plan);
      ek.scratch(Math.max(this.builtinScratchBytes(qh / this.kvHeads), flash));
    } catch (e) {
      this.storage.dispose();
      this.scales?.dispose();
      meta?.dispose();
      throw e;
    }
    this.meta = meta;
    this.len = new Int32Array(this.batch);
    this.written = new Uint8Array(this.layers);
    this.views = new Array<Tensor | null>(2 * this.layers).fill(null);
    this.scaleViews = new Array<Tensor | null>(this.scales ? 2 * this.layers : 0).fill(null);
  }

  /** Bytes of the cache storage (all layers, keys and values, and the scales of int8 / fp8 caches). */
  get bytes(): number {
    return this.storage.byteLength + (this.scales ? this.scales.byteLength : 0);
  }

  /** Where the storage lives in the linear memory (it never moves). DISPOSED after dispose(): the block may be reused. */
  get byteOffset(): number {
    this.assertAlive();
    return this.storage.byteOffset;
  }

  /** Committed length of each sequence (a copy). */
  get lengths(): Int32Array {
    this.assertAlive();
    return this.len.slice();
  }

  /** True between the first append of a step and advance(). */
  get stepInProgress(): boolean {
    this.assertAlive();
    return this.pending !== null;
  }

  /** Keys of `layer` as a tensor view [B, Hkv, rows, D] (valid until dispose; disposing the view does nothing to the cache). */
  keys(layer: number): Tensor {
    return this.view(layer, 0);
  }

  /** Values of `layer` as a tensor view [B, Hkv, rows, D]. */
  values(layer: number): Tensor {
    return this.view(layer, 1);
  }

  /**
   * Writes new keys and values of `layer` in place: padded [B, Hkv, S, D] (sequence b
   * takes its first lengths[b] rows, default S) or packed [T, Hkv, D] (lengths required).
   */
  append(layer: number, k: Tensor, v: Tensor, opts: AppendOptions = {}): void {
    this.assertIdle('append');
    const L = this.checkLayer(layer, 'append');
    const B = this.batch, H = this.kvHeads, D = this.headDim;
    this.checkInput(k, 'k', true);
    this.checkInput(v, 'v', true);
    if (k.dtype !== v.dtype) bad('INVALID_DTYPE', `kvCache.append v: expected the dtype of k (${k.dtype}), got ${v.dtype}`);
    if (k.rank !== v.rank || k.shape.some((d, i) => d !== v.shape[i])) {
      bad('INVALID_SHAPE', `kvCache.append v: expected the shape of k ${show([...k.shape])}, got ${show([...v.shape])}`);
    }
    let packed: boolean, S: number;
    if (k.rank === 4) {
      packed = false;
      const [kb, kh, s, kd] = k.shape;
      if (kb !== B || kh !== H || kd !== D) bad('INVALID_SHAPE', `kvCache.append k: expected padded [${B},${H},S,${D}] or packed [T,${H},${D}], got ${show([...k.shape])}`);
      S = s;
    } else if (k.rank === 3) {
      packed = true;
      const [t, kh, kd] = k.shape;
      if (kh !== H || kd !== D) bad('INVALID_SHAPE', `kvCache.append k: expected packed [T,${H},${D}] or padded [${B},${H},S,${D}], got ${show([...k.shape])}`);
      S = t;
    } else {
      bad('INVALID_SHAPE', `kvCache.append k: expected padded [${B},${H},S,${D}] or packed [T,${H},${D}], got ${show([...k.shape])}`);
    }
    const counts = this.reading(() => this.readCounts(opts, packed, S));
    // reading opts.lengths ran the caller's code (getters, a Proxy), which may have disposed
    // the cache, k or v (any other call of this cache's from there throws: see reading())
    this.assertAlive();
    k.assertAlive('kvCache k');
    v.assertAlive('kvCache v');
    if (this.pending !== null) {
      if (this.written[L]) bad('INVALID_ARGUMENT', `kvCache.append layer ${L}: already appended in this step; call advance() first`);
      for (let b = 0; b < B; b++) {
        if (counts[b] !== this.pending[b]) {
          bad('INVALID_VALUE', `kvCache.append lengths: every layer of a step appends the same counts; sequence ${b} had ${this.pending[b]}, got ${counts[b]}`);
        }
      }
    }
    for (let b = 0; b < B; b++) {
      const end = this.len[b] + counts[b];
      if (this.window === 0) {
        if (end > this.capacity) bad('INVALID_VALUE', `kvCache.append: sequence ${b} holds ${this.len[b]} tokens, appending ${counts[b]} exceeds the capacity ${this.capacity}`);
      } else {
        if (counts[b] > this.rows) bad('INVALID_VALUE', `kvCache.append: sequence ${b} appends ${counts[b]} tokens, more than the ring's ${this.rows} rows (window ${this.window} + maxAppend − 1)`);
        if (end > this.capacity) bad('INVALID_VALUE', `kvCache.append: sequence ${b} holds ${this.len[b]} tokens, appending ${counts[b]} exceeds the capacity ${this.capacity}`);
      }
    }
    // ---- all checks passed: write ----
    const kern = llmKernels(this.ek);
    const N = this.rows, rowBytes = D * this.elemBytes;
    const starts = this.meta.byteOffset, cum = starts + 4 * B;
    const st = new Int32Array(B), cu = new Int32Array(B + 1);
    for (let b = 0; b < B; b++) {
      st[b] = this.window ? this.len[b] % this.rows : this.len[b];
      cu[b + 1] = cu[b] + counts[b];
    }
    const m = new Int32Array(this.ek.memory.buffer, starts, 2 * B + 1);
    m.set(st);
    m.set(cu, B);
    const kDst = this.layerPtr(L, 0), vDst = this.layerPtr(L, 1);
    if (SCALED(this.dtype)) {
      // float32 rows quantized per (token, head) row as they are written, scales beside the cache.
      const circ = this.window ? 1 : 0;
      const fn = this.dtype === 'int8' ? kern.appendInt8Rows : kern.appendE4m3Rows;
      if (S > 0) {
        fn(kDst, this.scalePtr(L, 0), k.byteOffset, B, H, N, packed ? 0 : S, D, starts, cum, circ, packed ? 1 : 0);
        fn(vDst, this.scalePtr(L, 1), v.byteOffset, B, H, N, packed ? 0 : S, D, starts, cum, circ, packed ? 1 : 0);
      }
    } else if (k.dtype !== this.dtype) {
      // float32 rows into a half-precision cache: converted (round to nearest even) as they are written.
      const circ = this.window ? 1 : 0, kind = KIND[this.dtype];
      if (S > 0) {
        kern.appendHalfRows(kDst, k.byteOffset, B, H, N, packed ? 0 : S, D, starts, cum, circ, packed ? 1 : 0, kind);
        kern.appendHalfRows(vDst, v.byteOffset, B, H, N, packed ? 0 : S, D, starts, cum, circ, packed ? 1 : 0, kind);
      }
    } else if (!packed) {
      if (S > 0) {
        const circ = this.window ? 1 : 0;
        kern.scatterRows(kDst, k.byteOffset, B, H, N, S, rowBytes, starts, cum, circ);
        kern.scatterRows(vDst, v.byteOffset, B, H, N, S, rowBytes, starts, cum, circ);
      }
    } else if (this.window === 0) {
      if (S > 0) {
        kern.scatterPackedRows(kDst, k.byteOffset, B, H, N, rowBytes, starts, cum);
        kern.scatterPackedRows(vDst, v.byteOffset, B, H, N, rowBytes, starts, cum);
      }
    } else {
      // Packed into a window: per sequence, at most two runs (before and after the wrap),
      // each one scatterPackedRows call with B = 1 on that sequence's slice.
      const seqBytes = H * N * rowBytes, tokBytes = H * rowBytes;
      for (let b = 0; b < B; b++) {
        const start = st[b], t0 = cu[b], c = counts[b];
        const first = Math.min(c, N - start);
        const runs: [number, number, number][] = [[start, t0, first]];
        if (c > first) runs.push([0, t0 + first, c - first]);
        for (const [pos, t, n] of runs) {
          if (n === 0) continue;
          // meta reused as [start, 0, n] for a one-sequence call (read back by the kernel at once).
          const mm = new Int32Array(this.ek.memory.buffer, starts, 3);
          mm[0] = pos; mm[1] = 0; mm[2] = n;
          kern.scatterPackedRows(kDst + b * seqBytes, k.byteOffset + t * tokBytes, 1, H, N, rowBytes, starts, starts + 4);
          kern.scatterPackedRows(vDst + b * seqBytes, v.byteOffset + t * tokBytes, 1, H, N, rowBytes, starts, starts + 4);
        }
      }
    }
    if (this.pending === null) this.pending = Int32Array.from(counts);
    this.written[L] = 1;
    // the kernels ran outside ek.run: debug mode's canaries are checked here as run() does
    if (this.ek.debug) this.ek.checkGuards('kvCache.append');
  }

  /**
   * Attention of the step's new queries over layer `layer`: q padded [B, Hq, S, D] or
   * packed [T, Hq, D] (T = the step's total new tokens), Hq a multiple of Hkv. Query s of
   * sequence b is at position lengths[b] + s; with `causal` it sees positions <= its own.
   * Rows past a sequence's new-token count (padded form) are zeros. Without an append in
   * this step, the S queries are the sequence's last S positions.
   */
  attend(layer: number, q: Tensor, opts: AttendOptions = {}): Tensor {
    this.assertIdle('attend');
    const L = this.checkLayer(layer, 'attend');
    const B = this.batch, Hkv = this.kvHeads, D = this.headDim;
    this.checkInput(q, 'q', false);
    if (opts === null || typeof opts !== 'object') bad('INVALID_ARGUMENT', `kvCache.attend options: expected an object, got ${show(opts)}`);
    // every option read once, up front (a getter may answer differently, or run code)
    const o = this.reading(() => {
      knownOptions(opts, ATTEND_OPTIONS, 'kvCache.attend options');
      return { scale: opts.scale, impl: opts.impl, causal: opts.causal, out: opts.out };
    });
    this.assertAlive();
    const scale = o.scale ?? 1 / Math.sqrt(D);
    // the kernel computes in float32: 1e39 is Infinity there (NaN outputs)
    if (typeof scale !== 'number' || !Number.isFinite(Math.fround(scale))) bad('INVALID_ARGUMENT', `kvCache.attend scale: expected a number finite in float32 (magnitude at most 3.4028235e38), got ${show(o.scale)}`);
    const impl = o.impl;
    if (impl !== undefined && !['auto', 'TRT_Attention', 'builtin'].includes(impl)) bad('INVALID_ARGUMENT', `kvCache.attend impl: expected 'auto', 'TRT_Attention' or 'builtin', got ${show(impl)}`);
    const causal = o.causal ?? true;
    if (typeof causal !== 'boolean') bad('INVALID_ARGUMENT', `kvCache.attend causal: expected a boolean, got ${show(o.causal)}`);
    let packed: boolean, Hq: number, S: number;
    if (q.rank === 4 && q.shape[0] === B && q.shape[3] === D) {
      packed = false; Hq = q.shape[1]; S = q.shape[2];
    } else if (q.rank === 3 && q.shape[2] === D) {
      packed = true; Hq = q.shape[1]; S = q.shape[0];
    } else {
      bad('INVALID_SHAPE', `kvCache.attend q: expected padded [${B},Hq,S,${D}] or packed [T,Hq,${D}], got ${show([...q.shape])}`);
    }
    if (Hq === 0 || Hq % Hkv !== 0) bad('INVALID_SHAPE', `kvCache.attend q: expected a head count that is a multiple of kvHeads ${Hkv}, got ${Hq}`);
    const qLen = new Int32Array(B);
    if (this.pending !== null) {
      if (!this.written[L]) bad('INVALID_ARGUMENT', `kvCache.attend layer ${L}: this step appended other layers but not this one; append(${L}, …) first`);
      qLen.set(this.pending);
      if (packed) {
        const T = qLen.reduce((a, c) => a + c, 0);
        if (S !== T) bad('INVALID_SHAPE', `kvCache.attend q: packed queries must hold the step's ${T} new tokens, got ${S}`);
      } else {
        for (let b = 0; b < B; b++) if (qLen[b] > S) bad('INVALID_SHAPE', `kvCache.attend q: sequence ${b} appended ${qLen[b]} tokens, more than q's ${S} rows`);
      }
    } else {
      if (packed) bad('INVALID_ARGUMENT', `kvCache.attend q: packed queries need this step's append (the counts come from it)`);
      for (let b = 0; b < B; b++) {
        qLen[b] = Math.min(S, this.len[b]);
        // a causal window's first query row must still find its whole window in the ring
        // (window + maxAppend − 1 rows): with no step in progress, at most maxAppend rows do
        if (this.window > 0 && causal) {
          const need = Math.max(0, this.len[b] - qLen[b] - this.window + 1), held = this.len[b] - this.rows;
          if (need < held) bad('INVALID_SHAPE', `kvCache.attend q: with no step in progress, sequence ${b}'s ${qLen[b]} causal query rows reach back to position ${need}, but the window's ring (window ${this.window} + maxAppend ${this.rows - this.window + 1} − 1 rows) holds positions from ${held} on: at most ${this.rows - this.window + 1} rows here`);
        }
      }
    }
    const given = o.out;
    if (given !== undefined) {
      this.checkInput(given, 'out', false);
      if (given.rank !== q.rank || given.shape.some((d, i) => d !== q.shape[i])) bad('INVALID_SHAPE', `kvCache.attend out: expected q's shape ${show([...q.shape])}, got ${show([...given.shape])}`);
      if (overlaps(given, q) || this.overlapsCache(given)) bad('ALIASING', 'kvCache.attend out: overlaps q or the cache');
    }
    q.assertAlive('kvCache q'); // (reading the options ran the caller's getters, which may dispose q)
    // ---- checks passed ----
    const kern = llmKernels(this.ek);
    const kvLens = new Int32Array(B);
    for (let b = 0; b < B; b++) kvLens[b] = this.len[b] + (this.pending ? this.pending[b] : 0);
    // TRT_Attention's flash kernel (attendFlash) over the rows, or a window's rings;
    // attendF32/F16/BF16/I8/E4m3 below for the rest (see AttendOptions.impl). A query sees at
    // most `window` keys.
    let work = 0;
    for (let b = 0; b < B; b++) work += qLen[b] * (this.window ? Math.min(kvLens[b], this.window) : kvLens[b]) * Hq * D;
    const oneRowPerHead = Hq === Hkv && qLen.every((n) => n <= 1);
    const trt = impl === 'TRT_Attention' || ((impl ?? 'auto') === 'auto' && work >= TRT_ATTENTION_MIN_WORK && !oneRowPerHead);
    // A window: the same flash kernel walks each sequence's ring rows in position order
    // (attendFlash), each query from its window's first position, when the queries' lower
    // bounds follow their positions (causal, or one query per sequence). Not causal with
    // several queries, every query sees the same last `window` positions: builtin.
    const flash = trt && !SCALED(this.dtype) && OPS.has('TRT_Attention');
    if (flash && (this.window === 0 || causal || qLen.every((n) => n <= 1))) {
      const out = given ?? this.ek.tensor('float32', q.shape);
      try {
        this.attendFlash(L, q, out, scale, causal, packed, S, qLen, kvLens);
      } catch (e) {
        if (given === undefined) out.dispose(); // an output allocated here never leaks (OUT_OF_MEMORY in the operator)
        throw e;
      }
      return out;
    }
    const scratchBytes = this.builtinScratchBytes(Hq / Hkv);
    // Sized for the ring's N rows, not this call's lengths: the kernels place their row buffer
    // after G·N scores, and a decode loop then allocates nothing after its first step.
    // Taken before the output is allocated, so an OUT_OF_MEMORY here leaks nothing.
    const scores = this.ek.scratch(scratchBytes);
    const out = given ?? this.ek.tensor('float32', q.shape);
    const N = this.rows, seqBytes = Hkv * N * D * this.elemBytes;
    const attendKernel = this.dtype === 'float32' ? kern.attendF32 : this.dtype === 'float16' ? kern.attendF16 : this.dtype === 'bfloat16' ? kern.attendBF16 : this.dtype === 'int8' ? kern.attendI8 : kern.attendE4m3;
    const scaleSeq = Hkv * N * 4;
    const kL = this.layerPtr(L, 0), vL = this.layerPtr(L, 1);
    let t0 = 0;
    for (let b = 0; b < B; b++) {
      const kvLen = this.len[b] + (this.pending ? this.pending[b] : 0);
      let qOff: number, hStride: number, rStride: number, rows: number;
      if (packed) { qOff = t0 * Hq * D * 4; hStride = D; rStride = Hq * D; rows = qLen[b]; t0 += qLen[b]; }
      else { qOff = b * Hq * S * D * 4; hStride = S * D; rStride = D; rows = S; }
      attendKernel(out.byteOffset + qOff, q.byteOffset + qOff, kL + b * seqBytes, vL + b * seqBytes, Hq, Hkv, rows, qLen[b], D, N,
        hStride, rStride, kvLen, this.window, causal ? 1 : 0, scale, scores,
        this.scales ? this.scalePtr(L, 0) + b * scaleSeq : 0, this.scales ? this.scalePtr(L, 1) + b * scaleSeq : 0);
    }
    if (this.ek.debug) this.ek.checkGuards('kvCache.attend');
    return out;
  }

  /**
   * TRT_Attention's flash kernel straight over the cache (runAttentionPlan, the attention
   * operators' own entry, on the layer's rows; all checks done, the scale applied by the
   * kernel: no operator call, no copy of q). Without a window, key t is row t and query i
   * (position kvLen − qLen + i) sees keys up to its own with `causal`, all of them without.
   * With a window, sequence b's key t is position kvLen − R + t (R = its rows in use,
   * min(kvLen, rows)), found in ring row (kvLen − R + t) mod rows: a ring that wrapped is
   * rotated (AttentionSeq.rot). Query i is at t = R − qLen + i and sees t − window + 1 … t
   * (the plan's left window and a lower-right causal frontier; the caller takes this path
   * only when causal or with at most one query per sequence), as the builtin kernel's walk
   * does; positions the ring no longer holds (t < 0) are never keys.
   */
  private attendFlash(L: number, q: Tensor, out: Tensor, scale: number, causal: boolean, packed: boolean, S: number, qLen: Int32Array, kvLens: Int32Array): void {
    const { plan, short } = this.flashPlan(L, q.byteOffset, out.byteOffset, q.shape[1], S, packed, causal, scale, qLen, kvLens);
    const scratch = this.ek.scratch(attentionPlanScratch(this.ek, plan));
    // rows past a sequence's new tokens (padded q) are zeros; the kernel writes the others
    if (short) out.bytes().fill(0);
    runAttentionPlan(this.ek, plan, scratch);
    if (this.ek.debug) this.ek.checkGuards('kvCache.attend');
  }

  /** attendFlash's plan; `short`: some padded query rows are past their sequence's count. */
  private flashPlan(L: number, qPtr: number, outPtr: number, Hq: number, S: number, packed: boolean, causal: boolean, scale: number, qLen: Int32Array, kvLens: Int32Array): { plan: AttentionPlan; short: boolean } {
    const B = this.batch, Hkv = this.kvHeads, D = this.headDim, N = this.rows;
    const seqs: AttentionSeq[] = [];
    let t0 = 0, short = false;
    for (let b = 0; b < B; b++) {
      const n = kvLens[b], R = Math.min(n, N);
      const qOff = packed ? t0 * Hq * D : b * Hq * S * D;
      if (packed) t0 += qLen[b];
      else if (qLen[b] < S) short = true;
      seqs.push({
        qOff, qLen: qLen[b], kOff: b * Hkv * N * D, vOff: b * Hkv * N * D, kvLen: R, oOff: qOff,
        diag: causal || this.window ? R - qLen[b] : null, woff: R - qLen[b], rot: n > N ? (n - N) % N : 0,
      });
    }
    const qHS = packed ? D : S * D, qTS = packed ? Hq * D : D;
    const plan: AttentionPlan = {
      q: qPtr, k: this.layerPtr(L, 0), v: this.layerPtr(L, 1), out: outPtr,
      Hq, Hkv, D, Dv: D, seqs,
      qHS, qTS, kHS: N * D, kTS: D, vHS: N * D, vTS: D, oHS: qHS, oTS: qTS,
      qDtype: 'float32', kDtype: this.dtype, vDtype: this.dtype, outDtype: 'float32',
      scale, winLeft: this.window ? this.window - 1 : -1,
    };
    return { plan, short };
  }

  /** Scratch bytes of the builtin kernels for G query heads per KV head (sized for all N rows). */
  private builtinScratchBytes(G: number): number {
    const kern = llmKernels(this.ek);
    let bytes = 4 * (this.rows * G + 4 * this.headDim); // attendF32/F16/BF16: G·N + 4·D floats
    if (SCALED(this.dtype) && kern.attendQ8ScratchBytes) bytes = Math.max(bytes, kern.attendQ8ScratchBytes(G, this.headDim) >>> 0);
    return bytes;
  }

  /**
   * Ends a step: every sequence's length grows by its appended count. Requires every layer
   * appended. Returns the new lengths. With no step in progress (nothing appended since the
   * last advance / reset) it is a no-op that returns the lengths.
   */
  advance(): Int32Array {
    this.assertIdle('advance');
    if (this.pending === null) return this.len.slice(); // no step: nothing to commit
    const missing: number[] = [];
    for (let l = 0; l < this.layers; l++) if (!this.written[l]) missing.push(l);
    if (missing.length > 0) bad('INVALID_ARGUMENT', `kvCache.advance: layers ${missing.join(', ')} were not appended in this step`);
    for (let b = 0; b < this.batch; b++) this.len[b] += this.pending[b];
    this.pending = null;
    this.written.fill(0);
    return this.len.slice();
  }

  /** Empties one sequence slot (continuous batching) or, without argument, every slot and any step in progress. */
  reset(seq?: number): void {
    this.assertIdle('reset');
    if (seq === undefined) {
      this.len.fill(0);
      this.pending = null;
      this.written.fill(0);
      return;
    }
    if (typeof seq !== 'number' || !Number.isInteger(seq) || seq < 0 || seq >= this.batch) bad('INVALID_ARGUMENT', `kvCache.reset seq: expected an integer in [0, ${this.batch - 1}], got ${show(seq)}`);
    if (this.pending !== null) bad('INVALID_ARGUMENT', `kvCache.reset(${seq}): a step is in progress; advance() first, or reset() everything`);
    this.len[seq] = 0;
  }

  /**
   * Sets every sequence's length from an attention mask [B, M] (M <= capacity): row b must
   * be a prefix of ones followed by zeros (length = number of ones). Any other row (left
   * padding, holes) is rejected and nothing changes. The mask is a package tensor, a plain
   * `{ dtype, shape, data }` / ONNX Runtime `{ type, dims, data }` (read as ek.run reads
   * plain inputs), or `{ shape, data }` of 0 / 1, booleans, 0n / 1n. Values are compared by
   * value: 1.0 in a float16 / bfloat16 / float8 mask is a one.
   */
  setLengthsFromMask(mask: MaskInput): Int32Array {
    this.assertIdle('setLengthsFromMask');
    if (this.pending !== null) bad('INVALID_ARGUMENT', 'kvCache.setLengthsFromMask: a step is in progress; advance() or reset() first');
    const out = this.reading(() => this.lengthsFromMask(mask));
    this.assertAlive(); // (no other call ran meanwhile: see reading(); a dispose may have)
    this.len.set(out);
    return out.slice();
  }

  /** The lengths a mask gives (setLengthsFromMask), nothing changed. */
  private lengthsFromMask(mask: MaskInput): Int32Array {
    const { info, shape, data } = this.readMask(mask);
    const limit = this.window ? this.capacity : this.rows;
    if (shape.length !== 2 || shape[0] !== this.batch || shape[1] > limit) {
      bad('INVALID_SHAPE', `kvCache.setLengthsFromMask mask: expected [${this.batch}, M] with M <= ${limit}, got ${show([...shape])}`);
    }
    const M = shape[1];
    if (data.length !== this.batch * M) bad('INVALID_SHAPE', `kvCache.setLengthsFromMask mask: expected ${this.batch * M} values, got ${data.length}`);
    const isOne = (b: number, j: number) => maskValue(data[b * M + j], info, b, j);
    const out = new Int32Array(this.batch);
    for (let b = 0; b < this.batch; b++) {
      let n = 0;
      while (n < M && isOne(b, n)) n++;
      for (let j = n; j < M; j++) {
        if (isOne(b, j)) {
          bad('INVALID_VALUE', `kvCache.setLengthsFromMask mask: row ${b} is not a prefix of ones (zero at ${n}, one at ${j}); left padding or holes cannot give a write position`);
        }
      }
      out[b] = n;
    }
    return out;
  }

  dispose(): void {
    if (!this.alive) return;
    this.alive = false;
    for (const v of this.views) v?.dispose();
    for (const v of this.scaleViews) v?.dispose();
    this.storage.dispose();
    this.meta.dispose();
    this.scales?.dispose();
  }

  get disposed(): boolean {
    return !this.alive;
  }

  // ---- internals ---------------------------------------------------------------------

  /**
   * A mask's dtype (null for `{ shape, data }` without one), shape and values: a package
   * tensor's own data; a plain tensor with a dtype through the package's plain-input helpers
   * (plainMeta, toDataArray: what ek.run accepts); without a dtype, the values as given.
   */
  private readMask(mask: MaskInput): { info: DTypeInfo | null; shape: readonly number[]; data: ArrayLike<unknown> } {
    const what = 'kvCache.setLengthsFromMask mask';
    let info: DTypeInfo | null, shape: readonly number[], data: ArrayLike<unknown>;
    if (mask instanceof Tensor) {
      mask.assertAlive(what);
      if (mask.owner !== this.ek) bad('INVALID_ARGUMENT', `${what}: the tensor belongs to another instance`);
      ({ info, shape } = mask);
      checkMaskDtype(info, what);
      data = mask.data;
    } else if (mask !== null && typeof mask === 'object' && 'data' in mask && mask.dtype === undefined && mask.type === undefined) {
      info = null;
      shape = checkShape(mask.shape ?? mask.dims, `${what}.shape`);
      const d = mask.data;
      data = ArrayBuffer.isView(d) && !(d instanceof DataView) ? d as unknown as ArrayLike<unknown> : Array.isArray(d) ? d : bad('INVALID_ARGUMENT', `${what}.data: expected an array or typed array, got ${show(d)}`);
    } else {
      ({ info, shape } = plainMeta(mask, what));
      checkMaskDtype(info, what);
      data = toDataArray(info, shapeSize(shape), mask.data, what) as TypedData;
    }
    return { info, shape, data };
  }

  private layerPtr(layer: number, kv: 0 | 1): number {
    const block = this.batch * this.kvHeads * this.rows * this.headDim * this.elemBytes;
    return this.storage.byteOffset + (layer * 2 + kv) * block;
  }

  private scalePtr(layer: number, kv: 0 | 1): number {
    return this.scales!.byteOffset + (layer * 2 + kv) * this.batch * this.kvHeads * this.rows * 4;
  }

  /** int8 / float8e4m3fn caches: the per-(token, head) scales of layer's keys, a float32 view [B, Hkv, rows] (k ≈ keys · scale). */
  keyScales(layer: number): Tensor {
    return this.scaleView(layer, 0);
  }

  /** int8 / float8e4m3fn caches: the per-(token, head) scales of layer's values. */
  valueScales(layer: number): Tensor {
    return this.scaleView(layer, 1);
  }

  private scaleView(layer: number, kv: 0 | 1): Tensor {
    this.assertAlive();
    const L = this.checkLayer(layer, kv ? 'valueScales' : 'keyScales');
    if (!this.scales) bad('INVALID_ARGUMENT', `kvCache.${kv ? 'valueScales' : 'keyScales'}: only int8 and float8e4m3fn caches have scales (this one is ${this.dtype})`);
    const i = 2 * L + kv;
    let t = this.scaleViews[i];
    if (t === null || t.disposed) {
      // a view like keys() / values(): frees nothing when disposed, disposed with the cache
      t = new Tensor(this.ek, dtypeInfo('float32'), [this.batch, this.kvHeads, this.rows], this.scalePtr(L, kv));
      this.scaleViews[i] = t;
    }
    return t;
  }

  private view(layer: number, kv: 0 | 1): Tensor {
    this.assertAlive();
    const L = this.checkLayer(layer, kv ? 'values' : 'keys');
    const i = 2 * L + kv;
    let t = this.views[i];
    if (t === null || t.disposed) {
      // A view: owned by the instance (so ek.run accepts it) but not one of its live
      // allocations, so disposing it frees nothing.
      t = new Tensor(this.ek, dtypeInfo(this.dtype), [this.batch, this.kvHeads, this.rows, this.headDim], this.layerPtr(L, kv));
      this.views[i] = t;
    }
    return t;
  }

  private checkLayer(layer: number, what: string): number {
    if (typeof layer !== 'number' || !Number.isInteger(layer) || layer < 0 || layer >= this.layers) {
      bad('INVALID_ARGUMENT', `kvCache.${what} layer: expected an integer in [0, ${this.layers - 1}], got ${show(layer)}`);
    }
    return layer;
  }

  /** A package tensor of this instance: float32, or (kv rows only) the cache's own dtype. */
  private checkInput(t: Tensor, what: string, kvRows: boolean): void {
    if (!(t instanceof Tensor)) bad('INVALID_ARGUMENT', `kvCache ${what}: expected a package Tensor (float32), got ${show(t)}`);
    t.assertAlive(`kvCache ${what}`);
    if (t.owner !== this.ek) bad('INVALID_ARGUMENT', `kvCache ${what}: the tensor belongs to another instance`);
    if (t.dtype !== 'float32' && !(kvRows && t.dtype === this.dtype && !SCALED(this.dtype))) {
      bad('INVALID_DTYPE', `kvCache ${what}: expected dtype float32${kvRows && this.dtype !== 'float32' && !SCALED(this.dtype) ? ` or ${this.dtype} (the cache's)` : ''}, got ${t.dtype}`);
    }
    if (what !== 'q' && this.overlapsCache(t)) bad('ALIASING', `kvCache ${what}: overlaps the cache storage${this.scales ? ' or its scales' : ''}`);
  }

  /** Whether t overlaps what append / attend write: the storage and, for int8 / fp8 caches, the scales. */
  private overlapsCache(t: Tensor): boolean {
    return overlaps(t, this.storage) || (this.scales !== null && overlaps(t, this.scales));
  }

  private readCounts(opts: AppendOptions, packed: boolean, S: number): Int32Array {
    const B = this.batch;
    if (opts === null || typeof opts !== 'object') bad('INVALID_ARGUMENT', `kvCache.append options: expected an object, got ${show(opts)}`);
    knownOptions(opts, APPEND_OPTIONS, 'kvCache.append options');
    const l = opts.lengths;
    const out = new Int32Array(B);
    if (l === undefined) {
      if (packed) bad('MISSING_INPUT', `kvCache.append lengths: required for packed [T,H,D] input (new tokens per sequence, [${B}])`);
      out.fill(S);
      return out;
    }
    if (l === null || typeof l !== 'object' || typeof (l as ArrayLike<number>).length !== 'number' || l.length !== B) {
      bad('INVALID_ARGUMENT', `kvCache.append lengths: expected ${B} per-sequence counts, got ${show(l)}`);
    }
    let sum = 0;
    for (let b = 0; b < B; b++) {
      // numbers only, as reset(seq): null, booleans, strings or [1] are not counts
      const c = l[b];
      if (typeof c !== 'number' || !Number.isSafeInteger(c) || c < 0 || (!packed && c > S)) bad('INVALID_VALUE', `kvCache.append lengths[${b}]: expected an integer in [0, ${packed ? 'T' : S}], got ${show(c)}`);
      out[b] = c;
      sum += c;
    }
    if (packed && sum !== S) bad('INVALID_VALUE', `kvCache.append lengths: packed input holds ${S} tokens, the counts sum to ${sum}`);
    return out;
  }

  private assertAlive(): void {
    if (!this.alive) bad('DISPOSED', 'this KVCache was disposed');
    if (this.ek.disposed) bad('DISPOSED', 'the Kernels instance of this KVCache was disposed');
  }

  /**
   * Runs f, which reads the caller's arguments (getters, a Proxy, array elements: the
   * caller's code), with the cache marked busy: append, attend, advance, reset and
   * setLengthsFromMask called from there throw, so no call sees the state change halfway.
   * (dispose() is allowed; the caller re-checks assertAlive() after.)
   */
  private reading<T>(f: () => T): T {
    this.busy++;
    try {
      return f();
    } finally {
      this.busy--;
    }
  }

  /** assertAlive, and not from inside the argument reading of another call of this cache. */
  private assertIdle(what: string): void {
    this.assertAlive();
    if (this.busy > 0) bad('INVALID_ARGUMENT', `kvCache.${what}: called while another call of this cache reads its arguments (from a getter or Proxy); the cache is not re-entrant`);
  }
}

/** Bit patterns of 1.0 and of the zeros of the float dtypes whose data holds bit patterns (a mask compares values). */
const ONE_AND_ZEROS: Record<string, readonly number[]> = {
  float16: [0x3c00, 0, 0x8000], bfloat16: [0x3f80, 0, 0x8000],
  float8e4m3fn: [0x38, 0, 0x80], float8e4m3fnuz: [0x40, 0], float8e5m2: [0x3c, 0, 0x80], float8e5m2fnuz: [0x40, 0],
};

/** Mask dtypes: one value per data element (no strings, complex or packed sub-byte types), and a zero to express. */
function checkMaskDtype(info: DTypeInfo, what: string): void {
  if (info.kind === 'string' || info.kind === 'complex' || info.bits < 8 || (info.bitPattern && !ONE_AND_ZEROS[info.name])) {
    bad('INVALID_DTYPE', `${what}: expected bool, an integer or a float dtype of 8 bits or more with a zero, got ${info.name}`);
  }
}

/** Whether mask element [b][j] is a one (false for a zero); anything else is INVALID_VALUE. */
function maskValue(v: unknown, info: DTypeInfo | null, b: number, j: number): boolean {
  if (info?.bitPattern) {
    const p = ONE_AND_ZEROS[info.name]; // [1.0, ...zeros]
    if (v === p[0]) return true;
    if (p.indexOf(v as number, 1) > 0) return false;
    return bad('INVALID_VALUE', `kvCache.setLengthsFromMask mask[${b}][${j}]: expected 0 or 1, got the ${info.name} bit pattern 0x${(v as number).toString(16)}`);
  }
  if (v === 1 || v === true || v === 1n) return true;
  if (v === 0 || v === false || v === 0n) return false;
  return bad('INVALID_VALUE', `kvCache.setLengthsFromMask mask[${b}][${j}]: expected 0 or 1, got ${show(v)}`);
}

function overlaps(a: Tensor, b: Tensor): boolean {
  if (a === b) return true;
  const aEnd = a.byteOffset + Math.max(a.byteLength, 1), bEnd = b.byteOffset + Math.max(b.byteLength, 1);
  return a.byteOffset < bEnd && b.byteOffset < aEnd;
}
