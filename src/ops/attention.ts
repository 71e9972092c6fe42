/**
 * TRT_Attention, TRT_QuantizedAttention and ONNX Attention (opsets 23 and 24).
 *
 * Each operator validates everything, reduces its inputs to one AttentionPlan (flat
 * pointers, strides, per-sequence offsets and lengths — see assembly/attention.ts), then
 * prepares its outputs and makes one kernel call. `runAttentionPlan` is the documented
 * entry for other host code (a KV cache) that wants the same kernel over its own storage.
 */
import { findDType } from '../dtypes.js';
import { show } from '../errors.js';
import type { Tensor } from '../tensor.js';
import type { LlmKernels } from '../llm/kernels.js';
import { fail, finiteF32, readCumulative, readInts } from './checks.js';
import type { Attrs, OpContext, OpDef, OutputRequest, OutputSpec } from './registry.js';

const FLOATS = ['float32', 'float16', 'bfloat16'] as const;
// additive masks of the other numeric types of ONNX Attention's U (and TRT's "other types
// are added"): converted to float32 like float16 / bfloat16 masks
const ADDITIVE_MASKS = ['float64', 'int8', 'int16', 'int32', 'int64', 'uint8', 'uint16', 'uint32', 'uint64'];
const DT_CODE: Record<string, number> = { float32: 0, float16: 1, bfloat16: 2 };
const NO_DIAG = 0x3fffffff;
const PARAM_SLOTS = 39;
const SEQ_SLOTS = 9;

/** One sequence of a batch: element offsets of its first row (token 0, head 0) and its lengths. */
export interface AttentionSeq {
  qOff: number; qLen: number;
  kOff: number; vOff: number; kvLen: number;
  oOff: number;
  /** Key j is visible to query i iff j <= i + diag; NO_DIAG (or null) = not causal. */
  diag: number | null;
  /** Position of query row 0 for a sliding window (plan.winLeft / winRight); default 0. */
  woff?: number;
  /**
   * A ring of kvLen rows rotated by rot (0 < rot < kvLen; default 0, no ring): key t is row
   * (rot + t) mod kvLen from kOff / vOff. A wrapped sliding-window KV cache walks its rows in
   * position order this way. Only in plans without quantization or a qk output.
   */
  rot?: number;
}

/**
 * Everything the attention kernel needs. Pointers are byte offsets in linear memory,
 * strides are in elements. Row (b, h, i) of Q is at q + (seqs[b].qOff + h·qHS + i·qTS)·size.
 */
export interface AttentionPlan {
  q: number; k: number; v: number; out: number;
  Hq: number; Hkv: number; D: number; Dv: number;
  seqs: AttentionSeq[];
  qHS: number; qTS: number; kHS: number; kTS: number; vHS: number; vTS: number; oHS: number; oTS: number;
  qDtype: string; kDtype: string; vDtype: string; outDtype: string;
  scale: number;
  softcap?: number;
  /** Float32 additive mask rows: (b, h, i) at ptr + (b·mB + h·mH + i·mI)·4; keys >= len hidden. */
  mask?: { ptr: number; mB: number; mH: number; mI: number; len: number } | null;
  /** 0 softmax, 1 none. */
  norm?: number;
  /** 0 none, 1 float8e4m3fn, 2 int8; qScale the quantization scale. */
  quant?: number;
  qScale?: number;
  /** qk_matmul_output [B,Hq,Nq,cols] in outDtype. */
  qk?: { ptr: number; mode: number; cols: number; bs: number; hs: number } | null;
  /** Sliding window (Attention-25): query i at position p = i + seq.woff sees p − winLeft … p + winRight; −1 (default) unbounded. */
  winLeft?: number;
  winRight?: number;
}

/** Scratch bytes runAttentionPlan needs for this plan (request it with the rest of yours). */
export function attentionPlanScratch(ctx: OpContext, p: AttentionPlan): number {
  return planScratchBytes(ctx, p.D, p.Dv, p.seqs, p.qk ? p.qk.cols : 0, (p.quant ?? 0) !== 0 || !!p.qk, seqGather(p), rowDecodeCapacity(p));
}

/** attentionPlanScratch from the fields it depends on (no plan object needed). */
function planScratchBytes(ctx: OpContext, D: number, Dv: number, seqs: readonly AttentionSeq[], qkCols: number, twoPhase: boolean, gather: boolean, rowDecodeN: number): number {
  const maxCols = seqsMaxCols(seqs, qkCols);
  const kernel = ctx.exports.attentionScratchBytes(D, Dv, maxCols, twoPhase ? 1 : 0, gather ? 1 : 0) >>> 0;
  // the row-decode kernel's scores and one widened row (see rowDecodeCapacity)
  const rowDecode = rowDecodeN > 0 ? (rowDecodeN + D) * 4 + 16 : 0;
  return 16 * 2 + PARAM_SLOTS * 4 + seqs.length * SEQ_SLOTS * 4 + Math.max(kernel, rowDecode);
}

/**
 * One query row per KV head (no grouped heads, one token per sequence) over contiguous
 * padded K/V rows of one head size, float32 Q and output with the same strides: the flash
 * kernel would pad each row to a four-row tile and compute three rows of nothing, while the
 * decode kernel of assembly/llm.ts (attendF32/F16/BF16, the KV cache's builtin) streams each
 * head's K rows, then its V rows: 1.35× faster (32 heads, D = 128, 1024 keys: 2.5 vs 3.4 ms).
 * Returns the K/V capacity N (rows per head)
 * when the plan has this shape, else 0. Sizes the scratch; runAttentionPlan takes that kernel
 * when the plan also has no mask, softcap, quantization, qk output or causal frontier before
 * the last key.
 */
function rowDecodeCapacity(p: {
  Hq: number; Hkv: number; D: number; Dv: number; seqs: readonly AttentionSeq[];
  qHS: number; qTS: number; kHS: number; kTS: number; vHS: number; vTS: number; oHS: number; oTS: number;
  qDtype: string; kDtype: string; vDtype: string; outDtype: string;
}): number {
  if (p.Hq !== p.Hkv || p.D !== p.Dv || p.D === 0 || p.qDtype !== 'float32' || p.outDtype !== 'float32' || p.kDtype !== p.vDtype) return 0;
  if (p.kTS !== p.D || p.vTS !== p.D || p.kHS !== p.vHS || p.kHS % p.D !== 0 || p.qHS !== p.oHS || p.qTS !== p.oTS) return 0;
  let maxKv = 1;
  for (let b = 0; b < p.seqs.length; b++) {
    if (p.seqs[b].qLen > 1) return 0;
    maxKv = Math.max(maxKv, p.seqs[b].kvLen);
  }
  // the kernel reads a sequence's keys as rows 0..kvLen−1 of a ring of N rows (it wraps at
  // N), so N must cover every sequence. A single KV head has no head stride to take N from:
  // packed [T,1,D] K/V has a head stride of D, which would make N = 1 and wrap every key
  // onto the first.
  const N = p.Hkv === 1 ? maxKv : p.kHS / p.D;
  return N >= maxKv ? N : 0;
}

/** runAttentionPlan through attendF32/F16/BF16 when rowDecodeCapacity allows it; false if not taken. */
function runRowDecode(ctx: OpContext, p: AttentionPlan, scratch: number): boolean {
  const N = rowDecodeCapacity(p);
  if (N === 0 || p.mask || p.softcap || (p.norm ?? 0) !== 0 || (p.quant ?? 0) !== 0 || p.qk || (p.winLeft ?? -1) >= 0 || (p.winRight ?? -1) >= 0) return false;
  const seqs = p.seqs;
  for (let b = 0; b < seqs.length; b++) {
    const s = seqs[b];
    if (s.qLen > 0 && s.diag != null && s.diag !== NO_DIAG && s.diag < s.kvLen - 1) return false;
    if (s.rot) return false;
  }
  const kern = ctx.exports as unknown as LlmKernels;
  const attend = p.kDtype === 'float32' ? kern.attendF32 : p.kDtype === 'float16' ? kern.attendF16 : kern.attendBF16;
  const es = p.kDtype === 'float32' ? 4 : 2;
  for (let b = 0; b < seqs.length; b++) {
    const s = seqs[b];
    if (s.qLen <= 0) continue;
    attend(p.out + s.oOff * 4, p.q + s.qOff * 4, p.k + s.kOff * es, p.v + s.vOff * es, p.Hq, p.Hkv, 1, 1, p.D, N, p.qHS, p.qTS, s.kvLen, 0, 0, p.scale, scratch);
  }
  return true;
}

/** Rows of one kernel tile (R_MAX in assembly/attention.ts): (query row, head) pairs of a KV head. */
const TILE_ROWS = 32;

/**
 * K or V rows far apart (packed [T,H,D] with H > 1), or 16-bit K / V read by more than one
 * tile of a sequence and KV head (prefill): the kernel then gets scratch to copy one
 * sequence's rows of a head next to each other, widened to float32 when 16-bit (parameter
 * slot 36; the scratch size and the slot come from this one test, so they always agree).
 */
function seqGather(p: { D: number; Dv: number; kTS: number; vTS: number; kDtype: string; vDtype: string; Hq: number; Hkv: number; seqs: readonly AttentionSeq[] }): boolean {
  if (p.kTS >= 2 * p.D || p.vTS >= 2 * p.Dv) return true;
  const half = (d: string) => d === 'float16' || d === 'bfloat16';
  if (!half(p.kDtype) && !half(p.vDtype)) return false;
  const G = p.Hkv > 0 ? p.Hq / p.Hkv : 1;
  return p.seqs.some((s) => s.qLen * G > TILE_ROWS);
}

function seqsMaxCols(seqs: readonly AttentionSeq[], qkCols: number): number {
  let m = qkCols;
  for (let i = 0; i < seqs.length; i++) if (seqs[i].kvLen > m) m = seqs[i].kvLen;
  return m;
}

function planMaxCols(p: AttentionPlan): number {
  return seqsMaxCols(p.seqs, p.qk ? p.qk.cols : 0);
}

/**
 * Int32 / Float32 views over the whole memory, rebuilt only when the buffer changed
 * (memory.grow detaches it): writing the kernel's parameter block then costs no view
 * construction per call. Keyed weakly by the memory, so a dropped instance is not kept alive.
 */
interface MemoryViews { buf: ArrayBuffer; i32: Int32Array; f32: Float32Array }
const VIEWS = new WeakMap<WebAssembly.Memory, MemoryViews>();
function memoryViews(memory: WebAssembly.Memory): MemoryViews {
  const buf = memory.buffer;
  let v = VIEWS.get(memory);
  if (v === undefined || v.buf !== buf) VIEWS.set(memory, (v = { buf, i32: new Int32Array(buf), f32: new Float32Array(buf) }));
  return v;
}

function dtCode(dtype: string): number {
  return dtype === 'float32' ? 0 : dtype === 'float16' ? 1 : dtype === 'bfloat16' ? 2 : DT_CODE[dtype];
}

/**
 * Runs the attention kernel for a plan, with scratch at `scratch` (at least
 * attentionPlanScratch bytes, 16-aligned). All checks are the caller's.
 */
export function runAttentionPlan(ctx: OpContext, p: AttentionPlan, scratch: number): void {
  const base = ((scratch + 15) & ~15) >>> 0;
  const seqPtr = base + PARAM_SLOTS * 4;
  const kscratch = ((seqPtr + p.seqs.length * SEQ_SLOTS * 4 + 15) & ~15) >>> 0;
  if (runRowDecode(ctx, p, kscratch)) return;
  const { i32: pi, f32: pf } = memoryViews(ctx.memory);
  const o = base >>> 2; // base is 16-aligned
  pi.fill(0, o, o + PARAM_SLOTS);
  pi[o] = p.q; pi[o + 1] = p.k; pi[o + 2] = p.v; pi[o + 3] = p.out; pi[o + 4] = seqPtr;
  pi[o + 5] = p.seqs.length; pi[o + 6] = p.Hq; pi[o + 7] = p.Hkv; pi[o + 8] = p.D; pi[o + 9] = p.Dv;
  pi[o + 10] = p.qHS; pi[o + 11] = p.qTS; pi[o + 12] = p.kHS; pi[o + 13] = p.kTS; pi[o + 14] = p.vHS; pi[o + 15] = p.vTS; pi[o + 16] = p.oHS; pi[o + 17] = p.oTS;
  pi[o + 18] = dtCode(p.qDtype) | (dtCode(p.kDtype) << 4) | (dtCode(p.vDtype) << 8) | (dtCode(p.outDtype) << 12);
  pf[o + 19] = p.scale; pf[o + 20] = p.softcap ?? 0;
  const m = p.mask;
  if (m) { pi[o + 21] = m.ptr; pi[o + 22] = m.mB; pi[o + 23] = m.mH; pi[o + 24] = m.mI; pi[o + 25] = m.len; }
  pi[o + 26] = p.norm ?? 0; pi[o + 27] = p.quant ?? 0; pf[o + 28] = p.qScale ?? 1;
  const qk = p.qk;
  if (qk) { pi[o + 29] = qk.ptr; pi[o + 30] = qk.mode; pi[o + 31] = qk.cols; pi[o + 32] = qk.bs; pi[o + 33] = qk.hs; }
  pi[o + 34] = kscratch; pi[o + 35] = planMaxCols(p); pi[o + 36] = seqGather(p) ? 1 : 0;
  pi[o + 37] = p.winLeft ?? -1; pi[o + 38] = p.winRight ?? -1;
  const seqs = p.seqs;
  for (let b = 0, j = seqPtr >>> 2; b < seqs.length; b++, j += SEQ_SLOTS) {
    const s = seqs[b];
    pi[j] = s.qOff; pi[j + 1] = s.qLen; pi[j + 2] = s.kOff; pi[j + 3] = s.vOff; pi[j + 4] = s.kvLen; pi[j + 5] = s.oOff; pi[j + 6] = s.diag ?? NO_DIAG; pi[j + 7] = s.woff ?? 0; pi[j + 8] = s.rot ?? 0;
  }
  ctx.exports.attention(base);
}

// ---- shared validation --------------------------------------------------------------------

function floatDtype(t: Tensor, what: string): void {
  if (!(FLOATS as readonly string[]).includes(t.dtype)) fail('INVALID_DTYPE', `${what}: expected float32, float16 or bfloat16, got ${t.dtype}`);
}

/** ONNX Attention's T1 / T2 add float64 (computed in float32, see execute). */
function onnxFloatDtype(t: Tensor, what: string): void {
  if (t.dtype !== 'float64' && !(FLOATS as readonly string[]).includes(t.dtype)) fail('INVALID_DTYPE', `${what}: expected float32, float16, bfloat16 or float64, got ${t.dtype}`);
}

function shapeOf(t: Tensor): string {
  return show([...t.shape]);
}

/** Lengths per batch entry [B] (not cumulative), each in [0, max]. */
function readPerBatch(t: Tensor, B: number, max: number, what: string): number[] {
  if (t.rank !== 1 || t.shape[0] !== B) fail('INVALID_SHAPE', `${what}: expected shape [${B}] (one length per batch entry), got ${shapeOf(t)}`);
  const v = readInts(t, what);
  v.forEach((x, b) => {
    if (x < 0 || x > max) fail('INVALID_VALUE', `${what}[${b}]: expected a length in [0, ${max}], got ${x}`);
  });
  return v;
}

interface MaskInfo {
  t: Tensor;
  dims: number[]; // right-aligned to 4
  strides: number[]; // element strides of the (possibly converted) f32 buffer, 0 where broadcast
  len: number; // key columns available
  convert: boolean; // needs a float32 copy in scratch
  expandLast: number; // > 0: a last dim of 1 expanded to this many columns
  padLast: number; // > 0: a shorter last dim (ONNX) padded with −∞ to this many columns
  bytes: number; // scratch bytes for the copy
}

/**
 * Checks a mask against the target [B, H, Nq, Nkv]. ONNX rules: the last dim may be shorter
 * than Nkv, "padded to total_sequence_length with negative infinity": the copy is padded, so
 * the missing keys are mask-hidden keys like any other −∞ (an Inf or NaN in their V rows
 * propagates as the same mask written out gives). TRT rules: every dim equals the target or 1.
 */
function checkMask(t: Tensor, target: number[], onnx: boolean, what: string): MaskInfo {
  if (t.dtype !== 'bool' && !(FLOATS as readonly string[]).includes(t.dtype) && !ADDITIVE_MASKS.includes(t.dtype)) {
    fail('INVALID_DTYPE', `${what}: expected bool (true = attend) or a numeric dtype added to the scores (${[...FLOATS, ...ADDITIVE_MASKS].join(', ')}), got ${t.dtype}`);
  }
  if (t.rank > 4 || (onnx && t.rank < 1)) fail('INVALID_SHAPE', `${what}: expected rank ${onnx ? '1 to 4' : '<= 4'}, got rank ${t.rank} (shape ${shapeOf(t)})`);
  const dims = [...Array(4 - t.rank).fill(1), ...t.shape];
  const names = ['batch', 'heads', 'query length', 'key length'];
  for (let k = 0; k < 3; k++) {
    if (dims[k] !== 1 && dims[k] !== target[k]) {
      fail('INVALID_SHAPE', `${what}: shape ${shapeOf(t)} does not broadcast to [${target.join(',')}]: dim for ${names[k]} must be 1 or ${target[k]}, got ${dims[k]}`);
    }
  }
  let len = dims[3];
  let expandLast = 0, padLast = 0;
  if (onnx) {
    // (a last dim of 1 over zero keys broadcasts, as NumPy's rules allow: it hides nothing)
    if (dims[3] > target[3] && !(dims[3] === 1 && target[3] === 0)) fail('INVALID_SHAPE', `${what}: last dim ${dims[3]} exceeds the total key length ${target[3]}`);
    if (dims[3] < target[3]) padLast = target[3];
    len = target[3];
  } else if (dims[3] !== target[3]) {
    if (dims[3] !== 1) fail('INVALID_SHAPE', `${what}: shape ${shapeOf(t)} does not broadcast to [${target.join(',')}]: key dim must be 1 or ${target[3]}, got ${dims[3]}`);
    expandLast = target[3];
    len = target[3];
  }
  const rowLen = expandLast || padLast || dims[3];
  const strides = [dims[1] * dims[2] * rowLen, dims[2] * rowLen, rowLen, 1].map((s, k) => (k < 3 && dims[k] === 1 ? 0 : s));
  const convert = t.dtype !== 'float32' || expandLast > 0 || padLast > 0;
  const bytes = convert ? Math.ceil((dims[0] * dims[1] * dims[2] * rowLen * 4) / 16) * 16 + 16 : 0;
  return { t, dims, strides, len, convert, expandLast, padLast, bytes };
}

/** Writes the float32 copy of a mask at ptr (bool: 0 / −∞). */
function convertMask(ctx: OpContext, m: MaskInfo, ptr: number): void {
  const n = m.dims[0] * m.dims[1] * m.dims[2];
  const cols = m.dims[3];
  const rowLen = m.expandLast || m.padLast || cols;
  const dst = new Float32Array(ctx.memory.buffer, ptr, n * rowLen);
  const src = m.t.data as Float32Array | Uint16Array | Uint8Array;
  const dec = decoder(m.t.dtype);
  for (let r = 0; r < n; r++) {
    for (let c = 0; c < rowLen; c++) dst[r * rowLen + c] = c >= cols && m.padLast > 0 ? -Infinity : dec(src[r * cols + (m.expandLast > 0 ? 0 : c)]);
  }
}

function decoder(dtype: string): (x: number) => number {
  if (dtype === 'bool') return (x) => (x ? 0 : -Infinity);
  if (dtype === 'int64' || dtype === 'uint64') return (x) => Number(x as unknown as bigint);
  if (dtype === 'float16') return f16ToF32;
  if (dtype === 'bfloat16') {
    const f = new Float32Array(1), u = new Uint32Array(f.buffer);
    return (x) => { u[0] = x << 16; return f[0]; };
  }
  // a finite float64 beyond float32's range (torch.finfo(float64).min, the usual "masked"
  // value of float64 models) stays finite: rounded to −∞ it would hide the key, and a row of
  // such values would give zeros instead of the softmax of equal scores onnx.reference gives
  if (dtype === 'float64') return (x) => (x > F32_MAX && x !== Infinity ? F32_MAX : x < -F32_MAX && x !== -Infinity ? -F32_MAX : x);
  return (x) => x;
}

const F32_MAX = 3.4028234663852886e38;

function f16ToF32(h: number): number {
  const s = h & 0x8000 ? -1 : 1, e = (h >> 10) & 0x1f, m = h & 0x3ff;
  if (e === 0) return s * m * 2 ** -24;
  if (e === 31) return m ? NaN : s * Infinity;
  return s * (1 + m / 1024) * 2 ** (e - 15);
}

function scalarValue(t: Tensor, what: string): number {
  if (t.size !== 1 || t.rank > 1) fail('INVALID_SHAPE', `${what}: expected a scalar (shape [] or [1]), got ${shapeOf(t)}`);
  floatDtype(t, what);
  return decoder(t.dtype)((t.data as Float32Array | Uint16Array)[0]);
}

interface Layout { past: [Tensor | null, Tensor | null]; B: number; H: number; P: number; S: number; D: number; Dv: number; k3d: boolean }

/** Everything an op hands to `execute` once validated. */
interface Job {
  plan: Omit<AttentionPlan, 'q' | 'k' | 'v' | 'out' | 'mask' | 'qk'>;
  Q: Tensor; K: Tensor; V: Tensor;
  mask: MaskInfo | null;
  outSpecs: (OutputSpec | null)[];
  defaults: boolean[];
  /** Bytes of the K / V concatenation buffers when past is given and present not requested. */
  concat?: Layout | null;
  /** Layout of present_key / present_value when they are requested without past inputs. */
  present?: Layout | null;
  qkMode?: number | null;
  qkCols?: number;
  /** Zero the output first (padded Q rows beyond query lengths). */
  zeroOut?: boolean;
}

/** Prepares outputs and scratch, writes, runs. Nothing is written before this point. */
function execute(ctx: OpContext, op: string, job: Job, inputs: (Tensor | null)[], requests: readonly OutputRequest[]): (Tensor | null)[] {
  const { plan, Q, K, V, mask } = job;
  // scratch: concat buffers, mask copy, kernel
  const kBytes = job.concat ? pad16(job.concat.B * job.concat.H * (job.concat.P + job.concat.S) * job.concat.D * bytesOf(K.dtype)) : 0;
  const vBytes = job.concat ? pad16(job.concat.B * job.concat.H * (job.concat.P + job.concat.S) * job.concat.Dv * bytesOf(V.dtype)) : 0;
  // (no `{ ...plan }` copies here: spreading a 25-field object made a slow dictionary-mode
  // object, which alone cost tens of µs per call at small sizes)
  const wantQk = job.qkMode != null;
  // float64 (ONNX Attention; T1 = Q, K and T2 = V each may be float64): the kernel reads
  // float32 copies of the float64 ones (Q and the (present) K, or the (present) V) and, for
  // a float64 T1, writes float32 rows of Y and qk_matmul_output, widened into the outputs
  // afterwards. The scratch is sized for the plan runAttentionPlan gets (a copy of the plan,
  // for float64 only): it may take the row-decode kernel, whose scores need (N + D)·4 bytes
  const wideQ = Q.dtype === 'float64', wideV = V.dtype === 'float64', wide = wideQ || wideV;
  const narrowed = (d: string, w: boolean) => (w ? 'float32' : d);
  const rowDecodeN = rowDecodeCapacity(wide ? {
    ...plan, qDtype: narrowed(plan.qDtype, wideQ), kDtype: narrowed(plan.kDtype, wideQ), vDtype: narrowed(plan.vDtype, wideV), outDtype: narrowed(plan.outDtype, wideQ),
  } : plan);
  const kernelBytes = planScratchBytes(ctx, plan.D, plan.Dv, plan.seqs, wantQk ? (job.qkCols ?? 0) : 0, (plan.quant ?? 0) !== 0 || wantQk, seqGather(plan), rowDecodeN);
  // which outputs will exist (as prepareOutputs decides)
  const produced = (i: number) => {
    const r = requests[i];
    return job.outSpecs[i] != null && (r === true || (r !== null && r !== undefined) || (r === undefined && job.defaults[i]));
  };
  const concatInScratch = !!job.concat && (!produced(1) || !produced(2));
  // Y skipped (options.outputs[0] = null) still needs rows to write: scratch
  const ySpec = job.outSpecs[0]!;
  const yScratch = produced(0) ? 0 : pad16(ySpec.shape.reduce((a, x) => a * x, 1) * bytesOf(ySpec.dtype)) + 16;
  const kvRows = job.concat ? job.concat.B * job.concat.H * (job.concat.P + job.concat.S) : 0;
  const kElems = job.concat ? kvRows * job.concat.D : K.size, vElems = job.concat ? kvRows * job.concat.Dv : V.size;
  const yElems = ySpec.shape.reduce((a, x) => a * x, 1);
  const qkSpec = job.outSpecs[3];
  const qkElems = wideQ && job.qkMode != null && qkSpec ? qkSpec.shape.reduce((a, x) => a * x, 1) : 0;
  const wideBytes = (wideQ ? pad16(Q.size * 4) + pad16(kElems * 4) + pad16(yElems * 4) + pad16(qkElems * 4) : 0) + (wideV ? pad16(vElems * 4) : 0) + (wide ? 80 : 0);
  const total = 16 + (concatInScratch ? kBytes + vBytes + 32 : 0) + (mask?.bytes ?? 0) + yScratch + wideBytes + kernelBytes + 16;
  // the caller's outputs are checked before the scratch area may grow (a call failing on one
  // leaves the memory as it was); outputs allocated here are freed by run() if scratch then
  // runs out of memory
  const outs = ctx.prepareOutputs(op, job.outSpecs, requests, job.defaults, inputs);
  const s0 = ((ctx.scratch(total) + 15) & ~15) >>> 0;
  let sp = s0;
  // present / concatenation
  let kPtr = K.byteOffset, vPtr = V.byteOffset;
  if (job.concat) {
    const c = job.concat;
    const kDst = outs[1] && !concatInScratch ? outs[1].byteOffset : sp;
    if (concatInScratch) sp += kBytes + 16;
    const vDst = outs[2] && !concatInScratch ? outs[2].byteOffset : sp;
    if (concatInScratch) sp += vBytes + 16;
    concatInto(ctx, kDst, c.past[0], K, c, c.D);
    concatInto(ctx, vDst, c.past[1], V, c, c.Dv);
    if (concatInScratch) {
      // the caller asked for one present but not the other: copy the asked one out
      if (outs[1]) new Uint8Array(ctx.memory.buffer, outs[1].byteOffset, outs[1].byteLength).set(new Uint8Array(ctx.memory.buffer, kDst, outs[1].byteLength));
      if (outs[2]) new Uint8Array(ctx.memory.buffer, outs[2].byteOffset, outs[2].byteLength).set(new Uint8Array(ctx.memory.buffer, vDst, outs[2].byteLength));
    }
    kPtr = kDst;
    vPtr = vDst;
  } else if ((outs[1] || outs[2]) && job.present) {
    // present without past: K and V laid out as [B, Hkv, S, D]
    const c = job.present;
    if (outs[1]) concatInto(ctx, outs[1].byteOffset, null, K, c, c.D);
    if (outs[2]) concatInto(ctx, outs[2].byteOffset, null, V, c, c.Dv);
  }
  let maskPlan: AttentionPlan['mask'] = null;
  if (mask) {
    let ptr = mask.t.byteOffset;
    if (mask.convert) {
      ptr = sp;
      convertMask(ctx, mask, ptr);
      sp += mask.bytes;
    }
    maskPlan = { ptr, mB: mask.strides[0], mH: mask.strides[1], mI: mask.strides[2], len: mask.len };
  }
  const Y = outs[0];
  let yPtr = 0;
  if (Y) {
    yPtr = Y.byteOffset;
    if (job.zeroOut) Y.bytes().fill(0);
  } else {
    yPtr = sp;
    sp += yScratch;
  }
  const qkT = job.qkMode != null ? outs[3] : null;
  let qPtr = Q.byteOffset, qkPtr = qkT ? qkT.byteOffset : 0;
  const yOut = yPtr;
  if (wide) {
    // float32 copies (round to nearest even) in scratch; Y / qk rows in float32 there too
    const narrow = (src: number, n: number): number => {
      const dst = ((sp + 15) & ~15) >>> 0;
      ctx.exports.f64ToF32(src, dst, n, 0);
      sp = dst + pad16(n * 4);
      return dst;
    };
    if (wideQ) {
      qPtr = narrow(Q.byteOffset, Q.size);
      kPtr = narrow(kPtr, kElems);
    }
    if (wideV) vPtr = narrow(vPtr, vElems);
    if (wideQ) {
      yPtr = ((sp + 15) & ~15) >>> 0;
      sp = yPtr + pad16(yElems * 4);
      if (qkT) {
        qkPtr = ((sp + 15) & ~15) >>> 0;
        sp = qkPtr + pad16(qkElems * 4);
      }
    }
  }
  const qk = qkT ? { ptr: qkPtr, mode: job.qkMode!, cols: qkT.shape[3], bs: qkT.shape[1] * qkT.shape[2] * qkT.shape[3], hs: qkT.shape[2] * qkT.shape[3] } : null;
  const full: AttentionPlan = {
    q: qPtr, k: kPtr, v: vPtr, out: yPtr,
    Hq: plan.Hq, Hkv: plan.Hkv, D: plan.D, Dv: plan.Dv, seqs: plan.seqs,
    qHS: plan.qHS, qTS: plan.qTS, kHS: plan.kHS, kTS: plan.kTS, vHS: plan.vHS, vTS: plan.vTS, oHS: plan.oHS, oTS: plan.oTS,
    qDtype: narrowed(plan.qDtype, wideQ), kDtype: narrowed(plan.kDtype, wideQ), vDtype: narrowed(plan.vDtype, wideV), outDtype: narrowed(plan.outDtype, wideQ),
    scale: plan.scale, softcap: plan.softcap, mask: maskPlan, norm: plan.norm, quant: plan.quant, qScale: plan.qScale, qk,
    winLeft: plan.winLeft, winRight: plan.winRight,
  };
  if (full.seqs.length > 0 && full.Hq > 0 && (Y ? yElems : 0) + (qkT ? qkT.size : 0) > 0) runAttentionPlan(ctx, full, sp);
  if (wideQ) {
    // widen the float32 rows into the float64 outputs (exact)
    const buf = ctx.memory.buffer;
    if (Y) new Float64Array(buf, yOut, yElems).set(new Float32Array(buf, yPtr, yElems));
    if (qkT) new Float64Array(buf, qkT.byteOffset, qkElems).set(new Float32Array(buf, qkPtr, qkElems));
  }
  return outs;
}

function pad16(n: number): number {
  return Math.ceil(n / 16) * 16;
}

function bytesOf(dtype: string): number {
  return dtype === 'float64' ? 8 : dtype === 'float32' ? 4 : 2;
}

/** dst [B,H,P+S,D] ← past [B,H,P,D] then new rows (4D [B,H,S,D] or 3D [B,S,H·D]). */
function concatInto(ctx: OpContext, dst: number, past: Tensor | null, cur: Tensor, c: Layout, D: number): void {
  const es = bytesOf(cur.dtype);
  const T = c.P + c.S, row = D * es;
  if (past && c.P > 0) ctx.exports.copyRowsStrided(dst, c.H * T * row, T * row, row, past.byteOffset, c.H * c.P * row, c.P * row, row, c.B, c.H, c.P, row);
  if (c.S > 0) {
    const src = cur.byteOffset;
    if (c.k3d) ctx.exports.copyRowsStrided(dst + c.P * row, c.H * T * row, T * row, row, src, c.S * c.H * row, row, c.H * row, c.B, c.H, c.S, row);
    else ctx.exports.copyRowsStrided(dst + c.P * row, c.H * T * row, T * row, row, src, c.H * c.S * row, c.S * row, row, c.B, c.H, c.S, row);
  }
}

// ---- ONNX Attention -------------------------------------------------------------------

const onnxAttention: OpDef = {
  name: 'Attention',
  inputs: [
    { name: 'Q' }, { name: 'K' }, { name: 'V' },
    { name: 'attn_mask', optional: true }, { name: 'past_key', optional: true }, { name: 'past_value', optional: true },
    { name: 'nonpad_kv_seqlen', optional: true },
  ],
  outputs: [{ name: 'Y' }, { name: 'present_key' }, { name: 'present_value' }, { name: 'qk_matmul_output' }],
  attributes: {
    is_causal: { kind: 'int', default: 0, values: [0, 1] },
    q_num_heads: { kind: 'int' },
    kv_num_heads: { kind: 'int' },
    scale: { kind: 'float' },
    softcap: { kind: 'float', default: 0 },
    qk_matmul_output_mode: { kind: 'int', default: 0, values: [0, 1, 2, 3] },
    softmax_precision: { kind: 'int', values: [1, 10, 11, 16] },
    // Attention-25's sliding window (accepted at every opset: without them nothing changes)
    left_window_size: { kind: 'int', default: -1 },
    right_window_size: { kind: 'int', default: -1 },
  },
  run(ctx, inputs, attrs, requests) {
    const op = 'Attention';
    const [Q, K, V, M, PK, PV, NP] = inputs as (Tensor | null)[];
    const q = Q!, k = K!, v = V!;
    onnxFloatDtype(q, `${op} input Q`);
    onnxFloatDtype(k, `${op} input K`);
    onnxFloatDtype(v, `${op} input V`);
    if (k.dtype !== q.dtype) fail('INVALID_DTYPE', `${op} input K: expected ${q.dtype} (Q's dtype), got ${k.dtype}`);
    const rank = q.rank;
    if (rank !== 3 && rank !== 4) fail('INVALID_SHAPE', `${op} input Q: expected rank 3 or 4, got rank ${rank} (shape ${shapeOf(q)})`);
    if (k.rank !== rank) fail('INVALID_SHAPE', `${op} input K: expected rank ${rank} (Q's rank), got ${k.rank}`);
    if (v.rank !== rank) fail('INVALID_SHAPE', `${op} input V: expected rank ${rank} (Q's rank), got ${v.rank}`);
    const qh = attrs.q_num_heads as number | undefined, kvh = attrs.kv_num_heads as number | undefined;
    let B: number, Hq: number, Hkv: number, Sq: number, S: number, D: number, Dv: number;
    if (rank === 4) {
      [B, Hq, Sq, D] = q.shape;
      [, Hkv, S] = k.shape;
      if (k.shape[0] !== B) fail('INVALID_SHAPE', `${op} input K: batch ${k.shape[0]} differs from Q's ${B}`);
      if (k.shape[3] !== D) fail('INVALID_SHAPE', `${op} input K: head size ${k.shape[3]} differs from Q's ${D}`);
      if (v.shape[0] !== B || v.shape[1] !== Hkv || v.shape[2] !== S) fail('INVALID_SHAPE', `${op} input V: expected [${B},${Hkv},${S},Dv] to match K ${shapeOf(k)}, got ${shapeOf(v)}`);
      Dv = v.shape[3];
      if (qh !== undefined && qh !== Hq) fail('INVALID_ATTRIBUTE', `${op} attribute q_num_heads: ${qh} differs from Q's head dim ${Hq}`);
      if (kvh !== undefined && kvh !== Hkv) fail('INVALID_ATTRIBUTE', `${op} attribute kv_num_heads: ${kvh} differs from K's head dim ${Hkv}`);
    } else {
      if (qh === undefined || kvh === undefined) fail('INVALID_ATTRIBUTE', `${op}: 3D inputs need q_num_heads and kv_num_heads, got ${show(qh)} and ${show(kvh)}`);
      if (qh <= 0 || kvh <= 0) fail('INVALID_ATTRIBUTE', `${op} attributes q_num_heads / kv_num_heads: expected positive, got ${qh} / ${kvh}`);
      Hq = qh; Hkv = kvh;
      [B, Sq] = q.shape;
      S = k.shape[1];
      if (q.shape[2] % Hq) fail('INVALID_SHAPE', `${op} input Q: hidden size ${q.shape[2]} is not divisible by q_num_heads ${Hq}`);
      if (k.shape[2] % Hkv) fail('INVALID_SHAPE', `${op} input K: hidden size ${k.shape[2]} is not divisible by kv_num_heads ${Hkv}`);
      if (v.shape[2] % Hkv) fail('INVALID_SHAPE', `${op} input V: hidden size ${v.shape[2]} is not divisible by kv_num_heads ${Hkv}`);
      D = q.shape[2] / Hq;
      Dv = v.shape[2] / Hkv;
      if (k.shape[0] !== B || v.shape[0] !== B) fail('INVALID_SHAPE', `${op} inputs K, V: batch must be Q's ${B}, got ${k.shape[0]} and ${v.shape[0]}`);
      if (k.shape[2] / Hkv !== D) fail('INVALID_SHAPE', `${op} input K: head size ${k.shape[2] / Hkv} differs from Q's ${D}`);
      if (v.shape[1] !== S) fail('INVALID_SHAPE', `${op} input V: sequence length ${v.shape[1]} differs from K's ${S}`);
    }
    if (Hkv === 0 || Hq % Hkv !== 0) fail('INVALID_SHAPE', `${op}: q heads ${Hq} must be a multiple of kv heads ${Hkv}`);
    // past / present
    let P = 0;
    if ((PK === null) !== (PV === null)) fail('MISSING_INPUT', `${op}: past_key and past_value must be given together`);
    if (PK && PV) {
      if (PK.dtype !== k.dtype) fail('INVALID_DTYPE', `${op} input past_key: expected ${k.dtype} (K's dtype), got ${PK.dtype}`);
      if (PV.dtype !== v.dtype) fail('INVALID_DTYPE', `${op} input past_value: expected ${v.dtype} (V's dtype), got ${PV.dtype}`);
      if (PK.rank !== 4 || PK.shape[0] !== B || PK.shape[1] !== Hkv || PK.shape[3] !== D) fail('INVALID_SHAPE', `${op} input past_key: expected [${B},${Hkv},P,${D}], got ${shapeOf(PK)}`);
      P = PK.shape[2];
      if (PV.rank !== 4 || PV.shape[0] !== B || PV.shape[1] !== Hkv || PV.shape[2] !== P || PV.shape[3] !== Dv) fail('INVALID_SHAPE', `${op} input past_value: expected [${B},${Hkv},${P},${Dv}], got ${shapeOf(PV)}`);
    }
    const T = P + S;
    let nonpad: number[] | null = null;
    if (NP) nonpad = readPerBatch(NP, B, T, `${op} input nonpad_kv_seqlen`);
    let mask: MaskInfo | null = null;
    if (M) mask = checkMask(M, [B, Hq, Sq, T], true, `${op} input attn_mask`);
    const wl = attrs.left_window_size as number, wr = attrs.right_window_size as number;
    for (const [name, w] of [['left_window_size', wl], ['right_window_size', wr]] as const) {
      if (!Number.isInteger(w) || w < -1) fail('INVALID_ATTRIBUTE', `${op} attribute ${name}: expected -1 (unbounded) or a size >= 0, got ${show(w)}`);
    }
    // a window reaching past every key and query position hides nothing: the kernel takes
    // i32 sizes and adds them to positions, so it is given at most T + Sq (2^31 − 1, a common
    // "unbounded", wrapped there and hid every key)
    const left = Math.min(wl, T + Sq), right = Math.min(wr, T + Sq);
    // the offset of each batch entry's first query row: the causal frontier's and the window's
    const offsets = Array.from({ length: B }, (_, b) => (PK ? P : nonpad ? nonpad[b] - Sq : 0));
    let scale = attrs.scale as number | undefined;
    if (scale === undefined) {
      if (D === 0) fail('INVALID_SHAPE', `${op} input Q: head size 0 makes the default scale 1/sqrt(0) infinite; give the scale attribute`);
      scale = 1 / Math.sqrt(D);
    }
    finiteF32(scale, `${op} attribute scale`);
    const softcap = finiteF32(attrs.softcap, `${op} attribute softcap`);
    if (softcap < 0) fail('INVALID_ATTRIBUTE', `${op} attribute softcap: expected a number >= 0, got ${attrs.softcap}`);
    const causal = attrs.is_causal === 1;
    const seqs: AttentionSeq[] = [];
    const k4 = rank === 4 || !!PK; // K read from a [B,H,T,D] layout
    for (let b = 0; b < B; b++) {
      const kvLen = nonpad ? nonpad[b] : T;
      const diag = causal ? offsets[b] : null;
      seqs.push({
        qOff: rank === 4 ? b * Hq * Sq * D : b * Sq * Hq * D, qLen: Sq,
        kOff: k4 ? b * Hkv * T * D : b * S * Hkv * D,
        vOff: k4 ? b * Hkv * T * Dv : b * S * Hkv * Dv,
        kvLen, oOff: rank === 4 ? b * Hq * Sq * Dv : b * Sq * Hq * Dv, diag, woff: offsets[b],
      });
    }
    const plan: Job['plan'] = {
      Hq, Hkv, D, Dv, seqs,
      qHS: rank === 4 ? Sq * D : D, qTS: rank === 4 ? D : Hq * D,
      kHS: k4 ? T * D : D, kTS: k4 ? D : Hkv * D,
      vHS: k4 ? T * Dv : Dv, vTS: k4 ? Dv : Hkv * Dv,
      oHS: rank === 4 ? Sq * Dv : Dv, oTS: rank === 4 ? Dv : Hq * Dv,
      qDtype: q.dtype, kDtype: k.dtype, vDtype: v.dtype, outDtype: q.dtype,
      scale, softcap, norm: 0, quant: 0, winLeft: left, winRight: right,
    };
    const wantQk = requests[3] === true || (requests[3] !== null && requests[3] !== undefined);
    const outSpecs: OutputSpec[] = [
      { dtype: q.dtype, shape: rank === 4 ? [B, Hq, Sq, Dv] : [B, Sq, Hq * Dv] },
      { dtype: k.dtype, shape: [B, Hkv, T, D] },
      { dtype: v.dtype, shape: [B, Hkv, T, Dv] },
      { dtype: q.dtype, shape: [B, Hq, Sq, T] },
    ];
    const layout: Layout = { past: [PK, PV], B, H: Hkv, P, S, D, Dv, k3d: rank === 3 };
    const job: Job = {
      plan, Q: q, K: k, V: v, mask, outSpecs, defaults: [true, !!PK, !!PK, false],
      concat: PK ? layout : null,
      present: PK ? null : layout,
      qkMode: wantQk ? (attrs.qk_matmul_output_mode as number) : null,
      qkCols: T,
    };
    return execute(ctx, op, job, inputs as (Tensor | null)[], requests);
  },
};

// ---- TRT_Attention and TRT_QuantizedAttention ---------------------------------------------

interface SideShape {
  packed: boolean;
  B: number | null; // from a padded shape
  H: number; N: number; D: number; // N = padded length or packed token count
}

/** Q/K/V shape for a form; 3D padded tensors need a head count (ONNX layout [B,S,H·D]). */
function sideShape(t: Tensor, form: string, heads: number | undefined, allow3dPadded: boolean, what: string): SideShape & { onnx3d: boolean } {
  if (form === 'packed_nhd') {
    if (t.rank !== 3) fail('INVALID_SHAPE', `${what}: packed_nhd expects [T,H,D], got rank ${t.rank} (shape ${shapeOf(t)})`);
    if (heads !== undefined && heads !== t.shape[1]) fail('INVALID_SHAPE', `${what}: head dim ${t.shape[1]} differs from the head-count attribute ${heads}`);
    return { packed: true, B: null, N: t.shape[0], H: t.shape[1], D: t.shape[2], onnx3d: false };
  }
  if (t.rank === 4) {
    if (heads !== undefined && heads !== t.shape[1]) fail('INVALID_SHAPE', `${what}: head dim ${t.shape[1]} differs from the head-count attribute ${heads}`);
    return { packed: false, B: t.shape[0], H: t.shape[1], N: t.shape[2], D: t.shape[3], onnx3d: false };
  }
  if (allow3dPadded && t.rank === 3) {
    if (heads === undefined || heads <= 0) fail('INVALID_ATTRIBUTE', `${what}: 3D padded input [B,S,H·D] needs a positive head-count attribute (q_num_heads / kv_num_heads), got ${show(heads)}`);
    if (t.shape[2] % heads) fail('INVALID_SHAPE', `${what}: hidden size ${t.shape[2]} is not divisible by ${heads} heads`);
    return { packed: false, B: t.shape[0], H: heads, N: t.shape[1], D: t.shape[2] / heads, onnx3d: true };
  }
  fail('INVALID_SHAPE', `${what}: padded_bhnd expects [B,H,N,D]${allow3dPadded ? ' (or 3D [B,S,H·D] with a head count)' : ''}, got rank ${t.rank} (shape ${shapeOf(t)})`);
}

interface TrtOptions {
  op: string;
  quantized: boolean;
  Q: Tensor; K: Tensor; V: Tensor; M: Tensor | null;
  QL: Tensor | null; KL: Tensor | null;
  qForm: string; kvForm: string;
  qHeads?: number; kvHeads?: number;
  causal: 'none' | 'upper_left' | 'lower_right' | 'quantized';
  scale: number | undefined;
  norm: number;
  quant: number; qScale: number;
}

function trtJob(o: TrtOptions): Job {
  const { op, Q, K, V } = o;
  floatDtype(Q, `${op} input Q`);
  floatDtype(K, `${op} input K`);
  if (V.dtype !== K.dtype) fail('INVALID_DTYPE', `${op} input V: expected ${K.dtype} (K's dtype), got ${V.dtype}`);
  if (K.dtype !== Q.dtype && Q.dtype !== 'float32') fail('INVALID_DTYPE', `${op} input K: expected ${Q.dtype} (Q's dtype; only float32 queries may read a float16/bfloat16 K/V), got ${K.dtype}`);
  const qs = sideShape(Q, o.qForm, o.qHeads, o.quantized, `${op} input Q`);
  const ks = sideShape(K, o.kvForm, o.kvHeads, o.quantized, `${op} input K`);
  const vs = sideShape(V, o.kvForm, o.kvHeads, o.quantized, `${op} input V`);
  if (ks.onnx3d !== qs.onnx3d && !qs.packed && !ks.packed) fail('INVALID_SHAPE', `${op} inputs Q, K: both 3D or both 4D in padded form, got ranks ${Q.rank} and ${K.rank}`);
  if (vs.N !== ks.N || vs.H !== ks.H || vs.B !== ks.B) fail('INVALID_SHAPE', `${op} input V: ${shapeOf(V)} does not match K ${shapeOf(K)} except in the head size`);
  if (ks.D !== qs.D) fail('INVALID_SHAPE', `${op} input K: head size ${ks.D} differs from Q's ${qs.D}`);
  const Hq = qs.H, Hkv = ks.H, D = qs.D, Dv = vs.D;
  if (Hkv === 0 || Hq % Hkv !== 0) fail('INVALID_SHAPE', `${op}: Q heads ${Hq} must be a multiple of K/V heads ${Hkv}`);
  // batch
  let B: number;
  if (qs.B !== null) B = qs.B;
  else if (ks.B !== null) B = ks.B;
  else {
    if (!o.QL) fail('MISSING_INPUT', `${op}: input query_lengths is required when query_form is 'packed_nhd'`);
    if (o.QL.rank !== 1 || o.QL.shape[0] < 1) fail('INVALID_SHAPE', `${op} input query_lengths: expected shape [B+1], got ${shapeOf(o.QL)}`);
    B = o.QL.shape[0] - 1;
  }
  if (qs.B !== null && ks.B !== null && qs.B !== ks.B) fail('INVALID_SHAPE', `${op} input K: batch ${ks.B} differs from Q's ${qs.B}`);
  // query lengths
  let qStart: number[], qLen: number[];
  if (qs.packed) {
    if (!o.QL) fail('MISSING_INPUT', `${op}: input query_lengths is required when query_form is 'packed_nhd'`);
    const cum = readCumulative(o.QL, B, qs.N, `${op} input query_lengths`);
    qStart = cum.slice(0, B);
    qLen = cum.slice(1).map((x, b) => x - cum[b]);
  } else if (o.QL) {
    const cum = readCumulative(o.QL, B, null, `${op} input query_lengths`);
    qStart = Array(B).fill(0);
    qLen = cum.slice(1).map((x, b) => x - cum[b]);
    qLen.forEach((n, b) => {
      if (n > qs.N) fail('INVALID_VALUE', `${op} input query_lengths: batch entry ${b} has ${n} queries, more than Q's padded length ${qs.N}`);
    });
  } else {
    qStart = Array(B).fill(0);
    qLen = Array(B).fill(qs.N);
  }
  // kv lengths
  let kvStart: number[], kvLen: number[];
  if (ks.packed) {
    if (!o.KL) fail('MISSING_INPUT', `${op}: input kv_lengths is required when kv_form is 'packed_nhd'`);
    const cum = readCumulative(o.KL, B, ks.N, `${op} input kv_lengths`);
    kvStart = cum.slice(0, B);
    kvLen = cum.slice(1).map((x, b) => x - cum[b]);
  } else {
    kvStart = Array(B).fill(0);
    kvLen = o.KL ? readPerBatch(o.KL, B, ks.N, `${op} input kv_lengths`) : Array(B).fill(ks.N);
  }
  const NqMax = qs.packed ? Math.max(0, ...qLen) : qs.N;
  const NkvMax = ks.packed ? Math.max(0, ...kvLen) : ks.N;
  let mask: MaskInfo | null = null;
  if (o.M) {
    if (o.causal !== 'none' && o.causal !== 'quantized') fail('INVALID_ATTRIBUTE', `${op}: attn_mask cannot be combined with causal_kind ${show(o.causal)}; use 'none' or drop the mask`);
    mask = checkMask(o.M, [B, Hq, NqMax, NkvMax], o.quantized, `${op} input attn_mask`);
  }
  const lengthsKnown = qs.packed || ks.packed || !!o.KL;
  const seqs: AttentionSeq[] = [];
  const off = (s: SideShape & { onnx3d: boolean }, b: number, start: number, Dx: number) =>
    s.packed ? start * s.H * Dx : s.onnx3d ? b * s.N * s.H * Dx : b * s.H * s.N * Dx;
  for (let b = 0; b < B; b++) {
    let diag: number | null = null;
    if (o.causal === 'upper_left') diag = 0;
    else if (o.causal === 'lower_right') diag = kvLen[b] - qLen[b];
    else if (o.causal === 'quantized') diag = lengthsKnown ? kvLen[b] - qLen[b] : 0;
    seqs.push({
      qOff: off(qs, b, qStart[b], D), qLen: qLen[b],
      kOff: off(ks, b, kvStart[b], D), vOff: off(vs, b, kvStart[b], Dv), kvLen: kvLen[b],
      oOff: off(qs, b, qStart[b], Dv), diag,
    });
  }
  const hs = (s: SideShape & { onnx3d: boolean }, Dx: number) => (s.packed || s.onnx3d ? Dx : s.N * Dx);
  const ts = (s: SideShape & { onnx3d: boolean }, Dx: number) => (s.packed || s.onnx3d ? s.H * Dx : Dx);
  const scale = o.scale ?? 1;
  finiteF32(scale, `${op} attribute scale`);
  const outShape = qs.packed ? [qs.N, Hq, Dv] : qs.onnx3d ? [B, qs.N, Hq * Dv] : [B, Hq, qs.N, Dv];
  return {
    plan: {
      Hq, Hkv, D, Dv, seqs,
      qHS: hs(qs, D), qTS: ts(qs, D), kHS: hs(ks, D), kTS: ts(ks, D), vHS: hs(vs, Dv), vTS: ts(vs, Dv), oHS: hs(qs, Dv), oTS: ts(qs, Dv),
      qDtype: Q.dtype, kDtype: K.dtype, vDtype: V.dtype, outDtype: Q.dtype,
      scale, softcap: 0, norm: o.norm, quant: o.quant, qScale: o.qScale,
    },
    Q, K, V, mask,
    outSpecs: [{ dtype: Q.dtype, shape: outShape }],
    defaults: [true],
    // padded Q rows past a sequence's query length, and packed tokens outside every
    // sequence, are not computed: zero them so the output holds no stale bytes
    zeroOut: qLen.reduce((a, n) => a + n, 0) * Hq * Dv < shapeProduct(outShape),
  };
}

function shapeProduct(s: number[]): number {
  return s.reduce((a, b) => a * b, 1);
}

const FORMS = ['padded_bhnd', 'packed_nhd'];

const trtAttention: OpDef = {
  name: 'TRT_Attention',
  inputs: [
    { name: 'Q' }, { name: 'K' }, { name: 'V' },
    { name: 'attn_mask', optional: true }, { name: 'query_lengths', optional: true }, { name: 'kv_lengths', optional: true },
  ],
  outputs: [{ name: 'Y' }],
  attributes: {
    query_form: { kind: 'string', default: 'padded_bhnd', values: FORMS },
    kv_form: { kind: 'string', default: 'padded_bhnd', values: FORMS },
    causal_kind: { kind: 'string', default: 'none', values: ['none', 'upper_left', 'lower_right'] },
    TRT_normalization_op: { kind: 'string', default: 'softmax', values: ['softmax', 'none'] },
    TRT_decomposable: { kind: 'int', default: 0, values: [0, 1] },
    nb_rank: { kind: 'int', default: 1 },
  },
  run(ctx, inputs, attrs, requests) {
    const op = 'TRT_Attention';
    if (attrs.nb_rank !== 1) fail('INVALID_ATTRIBUTE', `${op} attribute nb_rank: only 1 (a single attention rank) is supported, got ${attrs.nb_rank}`);
    const [Q, K, V, M, QL, KL] = inputs as (Tensor | null)[];
    const job = trtJob({
      op, quantized: false, Q: Q!, K: K!, V: V!, M, QL, KL,
      qForm: attrs.query_form as string, kvForm: attrs.kv_form as string,
      causal: attrs.causal_kind as TrtOptions['causal'], scale: 1,
      norm: attrs.TRT_normalization_op === 'none' ? 1 : 0, quant: 0, qScale: 1,
    });
    return execute(ctx, op, job, inputs as (Tensor | null)[], requests);
  },
};

/** normalization_quantize_to_type → 1 (float8e4m3fn) or 2 (int8). */
function quantType(v: unknown, op: string): number {
  if (v === 'fp8' || v === 'FP8') return 1;
  if (v === 'int8' || v === 'INT8') return 2;
  const d = findDType(v);
  if (d?.name === 'float8e4m3fn') return 1;
  if (d?.name === 'int8') return 2;
  fail('INVALID_ATTRIBUTE', `${op} attribute normalization_quantize_to_type: expected 'fp8' / 'float8e4m3fn' / 17 or 'int8' / 3, got ${show(v)}`);
}

const trtQuantizedAttention: OpDef = {
  name: 'TRT_QuantizedAttention',
  inputs: [
    { name: 'Q' }, { name: 'K' }, { name: 'V' },
    { name: 'attn_mask', optional: true }, { name: 'normalization_quantize_scale', optional: true },
    { name: 'query_lengths', optional: true }, { name: 'kv_lengths', optional: true },
  ],
  outputs: [{ name: 'Y' }],
  attributes: {
    query_form: { kind: 'string', default: 'padded_bhnd', values: FORMS },
    kv_form: { kind: 'string', default: 'padded_bhnd', values: FORMS },
    is_causal: { kind: 'int', default: 0, values: [0, 1] },
    q_num_heads: { kind: 'int' },
    kv_num_heads: { kind: 'int' },
    scale: { kind: 'float' },
    normalization_quantize_to_type: { kind: 'dtype', default: 'float8e4m3fn' },
    TRT_normalization_op: { kind: 'string', default: 'softmax', values: ['softmax', 'none'] },
    TRT_decomposable: { kind: 'int', default: 0, values: [0, 1] },
  },
  run(ctx, inputs, attrs, requests) {
    const op = 'TRT_QuantizedAttention';
    const [Q, K, V, M, QS, QL, KL] = inputs as (Tensor | null)[];
    const quant = quantType(attrs.normalization_quantize_to_type, op);
    let qScale = quant === 1 ? 1 : 1 / 127;
    if (QS) {
      qScale = scalarValue(QS, `${op} input normalization_quantize_scale`);
      if (!(qScale > 0) || !Number.isFinite(qScale)) fail('INVALID_VALUE', `${op} input normalization_quantize_scale: expected a finite value > 0, got ${qScale}`);
    }
    const q = Q!;
    // head size for the default scale (validated again, fully, in trtJob)
    let D = q.shape[q.rank - 1];
    if (attrs.query_form !== 'packed_nhd' && q.rank === 3 && typeof attrs.q_num_heads === 'number' && attrs.q_num_heads > 0) D = q.shape[2] / attrs.q_num_heads;
    const job = trtJob({
      op, quantized: true, Q: q, K: K!, V: V!, M, QL, KL,
      qForm: attrs.query_form as string, kvForm: attrs.kv_form as string,
      qHeads: attrs.q_num_heads as number | undefined, kvHeads: attrs.kv_num_heads as number | undefined,
      causal: attrs.is_causal === 1 ? 'quantized' : 'none',
      scale: (attrs.scale as number | undefined) ?? (D === 0 ? fail('INVALID_SHAPE', `${op} input query: head size 0 makes the default scale 1/sqrt(0) infinite; give the scale attribute`) : 1 / Math.sqrt(D)),
      norm: attrs.TRT_normalization_op === 'none' ? 1 : 0, quant, qScale,
    });
    return execute(ctx, op, job, inputs as (Tensor | null)[], requests);
  },
};

export const attentionOps: readonly OpDef[] = [trtAttention, trtQuantizedAttention, onnxAttention];

// re-exported for tests of the host plumbing
export type { Attrs };
