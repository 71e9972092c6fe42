/**
 * Cast (ONNX 25), QuantizeLinear and DequantizeLinear (ONNX 25).
 *
 * Cast runs in chunks of CHUNK elements through a pivot buffer in scratch (see
 * assembly/quant.ts): integers → integers through int64 (two's complement wrap);
 * floats and integers → floats through float32 when the source is exact in float32,
 * else through float64 and a round-to-odd float32, so every result is one correct
 * rounding of the source value; floats → integers truncate toward zero and saturate.
 * String ↔ number casts run on the host.
 *
 * QuantizeLinear / DequantizeLinear fold x into (outer, D, inner) around the quantization
 * axis and make one kernel call; scales and zero points are converted to float32 first.
 * Everything (dtypes, shapes, block sizes, scale and zero-point values) is validated before
 * the output is allocated or anything is written.
 */
import { DTYPES, type DType, type DTypeInfo, findDType } from '../dtypes.js';
import { show } from '../errors.js';
import type { Tensor } from '../tensor.js';
import { fail, normalizeAxis, product } from './checks.js';
import type { AttrValue, OpContext, OpDef } from './registry.js';

/** Elements per pivot chunk (a multiple of 8 so packed types start on a byte). */
const CHUNK = 16384;

/** Dtypes whose every value float32 holds exactly. */
const F32_EXACT = new Set<DType>([
  'float32', 'float16', 'bfloat16', 'float8e4m3fn', 'float8e4m3fnuz', 'float8e5m2', 'float8e5m2fnuz',
  'float8e8m0', 'float4e2m1', 'int8', 'uint8', 'bool', 'int16', 'uint16', 'int4', 'uint4', 'int2', 'uint2',
]);

const ROUND_MODES: Record<string, number> = { up: 0, down: 1, nearest: 2 };

const FLOAT8 = new Set<DType>(['float8e4m3fn', 'float8e4m3fnuz', 'float8e5m2', 'float8e5m2fnuz']);
const Q_TYPES: readonly DType[] = [
  'int8', 'uint8', 'int16', 'uint16', 'int4', 'uint4', 'int2', 'uint2',
  'float8e4m3fn', 'float8e4m3fnuz', 'float8e5m2', 'float8e5m2fnuz', 'float4e2m1',
];
const SCALE_TYPES: readonly DType[] = ['float32', 'float16', 'bfloat16', 'float8e8m0'];
// QuantizeLinear-25's T2 adds int32 (an integer scale: x / s is computed in float32)
const Q_SCALE_TYPES: readonly DType[] = [...SCALE_TYPES, 'int32'];
const Q_X_TYPES: readonly DType[] = ['float32', 'float16', 'bfloat16', 'int32'];
const DQ_X_TYPES: readonly DType[] = [...Q_TYPES, 'int32'];
const DQ_OUT_TYPES: readonly DType[] = ['float32', 'float16', 'bfloat16'];
const align16 = (n: number): number => Math.ceil(n / 16) * 16;

function dtypeAttr(op: string, name: string, v: AttrValue): DTypeInfo | undefined {
  if (v === undefined || v === 0) return undefined;
  const d = findDType(v);
  if (!d) fail('INVALID_ATTRIBUTE', `${op} attribute ${name}: expected a dtype name or ONNX TensorProto code, got ${show(v)}`);
  return d;
}

// ---- Cast ----------------------------------------------------------------------------

const isIntLike = (d: DTypeInfo): boolean => d.kind === 'int' || d.kind === 'uint' || d.kind === 'bool';

/** Byte address of element `start` of a tensor (start is a multiple of 4 for packed types). */
const addr = (t: Tensor, start: number): number => t.byteOffset + (start * t.info.bits) / 8;

/** Single-pass kernels for the common conversions (each its own optimized export). */
const FROM_F32: Partial<Record<DType, string>> = {
  float8e4m3fn: 'quantizeF32ToE4m3', float8e4m3fnuz: 'castF32ToE4m3fnuz', float8e5m2: 'castF32ToE5m2',
  float8e5m2fnuz: 'castF32ToE5m2fnuz', float16: 'castF32ToF16', bfloat16: 'castF32ToBf16',
};
const TO_F32: Partial<Record<DType, string>> = {
  float8e4m3fn: 'dequantizeE4m3ToF32', float8e4m3fnuz: 'castE4m3fnuzToF32', float8e5m2: 'castE5m2ToF32',
  float8e5m2fnuz: 'castE5m2fnuzToF32', float16: 'castF16ToF32', bfloat16: 'castBf16ToF32',
};

function castNumeric(ctx: OpContext, x: Tensor, y: Tensor, saturate: boolean, mode: number): void {
  const e = ctx.exports;
  const n = x.size;
  const src = x.info, dst = y.info;
  if (src.name === 'float32' && dst.name === 'float8e4m3fn' && saturate) {
    // The quantize loop with an exact scale of 1 (x · 1 = x) measured faster than the plain
    // cast loop on V8 (same rounding code, same results).
    const one = ctx.scratch(16);
    new Float32Array(ctx.memory.buffer, one, 1)[0] = 1;
    e.quantizeF32(x.byteOffset, y.byteOffset, 1, 1, n, 1, one, 0, 0, 0, 0, dst.onnx, 1, 1, 0);
    return;
  }
  if (src.name === 'float32' && FROM_F32[dst.name]) {
    e[FROM_F32[dst.name]!](x.byteOffset, y.byteOffset, n, saturate ? 1 : 0);
    return;
  }
  if (dst.name === 'float32' && TO_F32[src.name]) {
    e[TO_F32[src.name]!](x.byteOffset, y.byteOffset, n);
    return;
  }
  // Identity, except that saturating float8e5m2 → float8e5m2 maps ±Inf to ±max (Cast's table).
  if (src.name === dst.name && !(saturate && src.name === 'float8e5m2')) {
    const mem = new Uint8Array(ctx.memory.buffer);
    mem.copyWithin(y.byteOffset, x.byteOffset, x.byteOffset + x.byteLength);
    // packed 2- and 4-bit types: the fields past the last element of a partial last byte are
    // zero in every output (the input's may hold anything the caller wrote)
    const used = (n * src.bits) & 7;
    if (used !== 0) mem[y.byteOffset + y.byteLength - 1] &= (1 << used) - 1;
    return;
  }
  const base = ctx.scratch(8 * CHUNK + 4 * CHUNK + CHUNK + 64);
  const A = base, B = base + 8 * CHUNK, T = B + 4 * CHUNK;
  const sc = src.onnx, dc = dst.onnx, sat = saturate ? 1 : 0;
  for (let start = 0; start < n; start += CHUNK) {
    const len = Math.min(CHUNK, n - start);
    const s = addr(x, start), d = addr(y, start);
    if (isIntLike(src) && (dst.kind === 'int' || dst.kind === 'uint' || dst.kind === 'bool')) {
      e.decodeToI64(s, A, len, sc, T);
      e.encodeFromI64(A, d, len, dc, T);
    } else if (F32_EXACT.has(src.name)) {
      if (dst.name === 'float32') e.decodeToF32(s, d, len, sc, T);
      else if (src.name === 'float32') e.encodeFromF32(s, d, len, dc, sat, mode, T);
      else {
        e.decodeToF32(s, B, len, sc, T);
        e.encodeFromF32(B, d, len, dc, sat, mode, T);
      }
    } else if (dst.name === 'float64') {
      e.decodeToF64(s, d, len, sc, 0);
    } else if (dst.kind === 'float') {
      const a = src.name === 'float64' ? s : A;
      if (a === A) e.decodeToF64(s, A, len, sc, 1);
      if (dst.name === 'float32') e.f64ToF32(a, d, len, 0);
      else {
        e.f64ToF32(a, B, len, 1);
        e.encodeFromF32(B, d, len, dc, sat, mode, T);
      }
    } else {
      // float64 → integer / bool
      e.encodeFromF64(s, d, len, dc, T);
    }
  }
}

/** Parses a string as ONNX Cast does: decimal / scientific numbers, [+|-]INF, NaN (any case). */
export function parseNumber(s: string): number {
  const t = s.trim();
  const l = t.toLowerCase();
  if (l === 'inf' || l === '+inf' || l === 'infinity' || l === '+infinity') return Infinity;
  if (l === '-inf' || l === '-infinity') return -Infinity;
  if (l === 'nan' || l === '+nan' || l === '-nan' || t === '') return NaN;
  if (l === 'true') return 1;
  if (l === 'false') return 0;
  return Number(t);
}

/**
 * Shortest decimal that reads back as the same value of the source type: float64, float32, or
 * (`roundTrip` given) a narrower float whose rounding of a number `roundTrip` computes —
 * float16 0.1 is "0.1" (NumPy's str), not float32's "0.099975586".
 */
export function formatNumber(v: number, single: boolean, roundTrip?: (x: number) => number): string {
  if (Number.isNaN(v)) return 'NaN';
  if (v === Infinity) return 'INF';
  if (v === -Infinity) return '-INF';
  if (Object.is(v, -0)) return '-0';
  if (!single) return String(v);
  const same = roundTrip ?? Math.fround;
  for (let p = 1; p <= 9; p++) {
    const s = Number(v.toPrecision(p));
    if (same(s) === v) return String(s);
  }
  return String(v);
}

/** x rounded to the nearest value of a float type (round to nearest even), through the package's own Cast kernels. */
function narrowRounder(ctx: OpContext, dtype: DTypeInfo, scratch: number): (x: number) => number {
  const e = ctx.exports;
  return (x) => {
    // through float32 (the candidates are short decimals, far from a float32 midpoint), as
    // the package's own string → float16 / bfloat16 / float8 Cast reads them back
    new Float32Array(ctx.memory.buffer, scratch, 1)[0] = x;
    e.encodeFromF32(scratch, scratch + 16, 1, dtype.onnx, 1, 0, scratch + 32);
    e.decodeToF32(scratch + 16, scratch, 1, dtype.onnx, scratch + 32);
    return new Float32Array(ctx.memory.buffer, scratch, 1)[0];
  };
}

function castFromString(ctx: OpContext, x: Tensor, y: Tensor, saturate: boolean, mode: number): void {
  const strs = x.data as string[];
  const n = x.size;
  const dst = y.info;
  const e = ctx.exports;
  const base = ctx.scratch(8 * CHUNK + 4 * CHUNK + CHUNK + 64);
  const A = base, B = base + 8 * CHUNK, T = B + 4 * CHUNK;
  const intTarget = dst.kind === 'int' || dst.kind === 'uint';
  // An integer literal is an integer: exact, its low bits kept (as integer → integer casts do).
  // Any other numeric string is a float64 and follows the float → integer rule: truncate,
  // saturate to the *target's* range (not int64's: "1e19" is a uint64, +INF an int32's max),
  // NaN → 0; the 4-bit and 2-bit targets keep the low bits (NaN, ±Inf, |x| ≥ 2^63 → 0).
  const packed = dst.bits < 8;
  const lo = dst.kind === 'uint' ? 0n : -(1n << BigInt(dst.bits - 1));
  const hi = dst.kind === 'uint' ? (1n << BigInt(dst.bits)) - 1n : (1n << BigInt(dst.bits - 1)) - 1n;
  for (let start = 0; start < n; start += CHUNK) {
    const len = Math.min(CHUNK, n - start);
    const d = addr(y, start);
    if (intTarget) {
      const v = new BigInt64Array(ctx.memory.buffer, A, len);
      for (let i = 0; i < len; i++) {
        const t = strs[start + i].trim();
        if (/^[+-]?\d+$/.test(t)) v[i] = BigInt.asIntN(64, BigInt(t));
        else {
          const f = Math.trunc(parseNumber(t));
          if (Number.isNaN(f)) v[i] = 0n;
          else if (packed) v[i] = Math.abs(f) < 2 ** 63 ? BigInt(f) : 0n;
          else v[i] = BigInt.asIntN(64, f >= hi ? hi : f <= lo ? lo : BigInt(f));
        }
      }
      e.encodeFromI64(A, d, len, dst.onnx, T);
    } else {
      const v = new Float64Array(ctx.memory.buffer, A, len);
      for (let i = 0; i < len; i++) v[i] = parseNumber(strs[start + i]);
      if (dst.name === 'float64') new Float64Array(ctx.memory.buffer, d, len).set(v);
      else if (dst.name === 'float32') e.f64ToF32(A, d, len, 0);
      else if (dst.kind === 'bool') e.encodeFromF64(A, d, len, dst.onnx, T);
      else {
        e.f64ToF32(A, B, len, 1);
        e.encodeFromF32(B, d, len, dst.onnx, saturate ? 1 : 0, mode, T);
      }
    }
  }
}

function castToString(ctx: OpContext, x: Tensor, y: Tensor): void {
  const out = y.data as string[];
  const n = x.size;
  const src = x.info;
  const e = ctx.exports;
  const base = ctx.scratch(8 * CHUNK + 4 * CHUNK + CHUNK + 64);
  const A = base, T = base + 12 * CHUNK;
  for (let start = 0; start < n; start += CHUNK) {
    const len = Math.min(CHUNK, n - start);
    const s = addr(x, start);
    if (src.name === 'bool') {
      const v = new Uint8Array(ctx.memory.buffer, s, len);
      for (let i = 0; i < len; i++) out[start + i] = v[i] ? 'True' : 'False';
    } else if (isIntLike(src)) {
      e.decodeToI64(s, A, len, src.onnx, T);
      const v = src.name === 'uint64' ? new BigUint64Array(ctx.memory.buffer, A, len) : new BigInt64Array(ctx.memory.buffer, A, len);
      for (let i = 0; i < len; i++) out[start + i] = String(v[i]);
    } else if (src.name === 'float64') {
      const v = new Float64Array(ctx.memory.buffer, s, len);
      for (let i = 0; i < len; i++) out[start + i] = formatNumber(v[i], false);
    } else {
      e.decodeToF32(s, A, len, src.onnx, T);
      const v = new Float32Array(ctx.memory.buffer, A, len).slice();
      const round = src.name === 'float32' ? undefined : narrowRounder(ctx, src, base + 8 * CHUNK);
      for (let i = 0; i < len; i++) out[start + i] = formatNumber(v[i], true, round);
    }
  }
}

const cast: OpDef = {
  name: 'Cast',
  inputs: [{ name: 'input' }],
  outputs: [{ name: 'output' }],
  attributes: {
    to: { kind: 'dtype' },
    saturate: { kind: 'int', default: 1, values: [0, 1] },
    round_mode: { kind: 'string', default: 'up', values: ['up', 'down', 'nearest'] },
  },
  run(ctx, [x], attrs, outs) {
    const op = 'Cast';
    if (attrs.to === undefined) fail('INVALID_ATTRIBUTE', `${op} attribute to: required (a dtype name or ONNX TensorProto code), got nothing`);
    const to = dtypeAttr(op, 'to', attrs.to);
    if (!to) fail('INVALID_ATTRIBUTE', `${op} attribute to: expected a dtype, got ${show(attrs.to)}`);
    if (x!.info.kind === 'complex') fail('INVALID_DTYPE', `${op} input input: casting from ${x!.dtype} is not supported (ONNX Cast takes no complex types)`);
    if (to.kind === 'complex') fail('INVALID_DTYPE', `${op} attribute to: casting to ${to.name} is not supported (ONNX Cast takes no complex types)`);
    const saturate = attrs.saturate === 1;
    const mode = ROUND_MODES[attrs.round_mode as string];
    // a package string tensor's data is a plain array the caller may have written anything
    // into: check it before the output is allocated or anything is written
    if (x!.dtype === 'string') {
      const a = x!.data as unknown[];
      for (let i = 0; i < a.length; i++) if (typeof a[i] !== 'string') fail('INVALID_VALUE', `${op} input input: data[${i}]: expected a string, got ${show(a[i])}`);
    }
    const [y] = ctx.prepareOutputs(op, [{ dtype: to.name, shape: x!.shape }], outs, [true], [x]);
    if (y === null || x!.size === 0) return [y];
    if (x!.dtype === 'string' && to.name === 'string') { const a = x!.data as string[], b = y.data as string[]; for (let i = 0; i < a.length; i++) b[i] = a[i]; }
    else if (x!.dtype === 'string') castFromString(ctx, x!, y, saturate, mode);
    else if (to.name === 'string') castToString(ctx, x!, y);
    else castNumeric(ctx, x!, y, saturate, mode);
    return [y];
  },
};

// ---- QuantizeLinear / DequantizeLinear ---------------------------------------------------

interface Fold {
  outer: number; D: number; inner: number; B: number; sO: number; sD: number; sI: number;
}

/** Checks the scale (and zero point) shape against x, axis and block_size; returns the folded view. */
function foldFor(op: string, x: Tensor, scale: Tensor, zp: Tensor | null, axisAttr: number, blockSize: number): Fold {
  const xs = x.shape, ss = scale.shape;
  if (!Number.isInteger(blockSize) || blockSize < 0) fail('INVALID_ATTRIBUTE', `${op} attribute block_size: expected an integer >= 0, got ${blockSize}`);
  const scaleName = `${op} input ${op === 'QuantizeLinear' ? 'y_scale' : 'x_scale'}`;
  const scalarLike = (t: Tensor): boolean => t.rank <= 1 && t.size === 1;
  const sameShape = zp === null || (zp.rank === scale.rank && zp.shape.every((v, i) => v === ss[i])) || (scalarLike(zp) && scalarLike(scale));
  if (!sameShape) {
    fail('INVALID_SHAPE', `${op} input ${op === 'QuantizeLinear' ? 'y_zero_point' : 'x_zero_point'}: expected the scale's shape ${show([...ss])}, got ${show([...zp!.shape])}`);
  }
  const n = x.size;
  if (blockSize === 0) {
    if (scale.rank <= 1 && scale.size === 1) return { outer: 1, D: 1, inner: n, B: 1, sO: 0, sD: 0, sI: 0 };
    if (scale.rank !== 1) fail('INVALID_SHAPE', `${scaleName}: expected a scalar (per-tensor) or a 1-D tensor (per-axis) when block_size is 0, got shape ${show([...ss])}`);
    if (x.rank === 0) fail('INVALID_SHAPE', `${scaleName}: a scalar x takes a per-tensor scale (one value), got shape ${show([...ss])}`);
    const axis = normalizeAxis(axisAttr, x.rank, `${op} attribute axis`);
    if (ss[0] !== xs[axis]) fail('INVALID_SHAPE', `${scaleName}: per-axis scale must have x.shape[${axis}] = ${xs[axis]} values, got ${ss[0]}`);
    const outer = product(xs, 0, axis), D = xs[axis], inner = product(xs, axis + 1);
    if (inner === 1) return { outer, D: 1, inner: D, B: 1, sO: 0, sD: 0, sI: 1 };
    return { outer, D, inner, B: 1, sO: 0, sD: 1, sI: 0 };
  }
  if (scale.rank !== x.rank) fail('INVALID_SHAPE', `${scaleName}: blocked quantization needs a scale of x's rank ${x.rank}, got shape ${show([...ss])}`);
  const axis = normalizeAxis(axisAttr, x.rank, `${op} attribute axis`);
  for (let i = 0; i < xs.length; i++) {
    if (i === axis) continue;
    if (ss[i] !== xs[i]) fail('INVALID_SHAPE', `${scaleName}: dimension ${i} must equal x's ${xs[i]} (blocking is on axis ${axis}), got ${ss[i]} (scale ${show([...ss])}, x ${show([...xs])})`);
  }
  const D = xs[axis];
  const Sb = Math.ceil(D / blockSize);
  if (ss[axis] !== Sb) fail('INVALID_SHAPE', `${scaleName}: dimension ${axis} must be ceil(${D} / block_size ${blockSize}) = ${Sb}, got ${ss[axis]}`);
  const outer = product(xs, 0, axis), inner = product(xs, axis + 1);
  // a block_size past the axis is one (short) block: the kernels take an i32 block size,
  // so they are given at most D (a size of 2^31 or more wrapped there)
  const B = Math.min(blockSize, Math.max(D, 1));
  if (inner === 1) return { outer, D, inner: 1, B, sO: Sb, sD: 1, sI: 0 };
  return { outer, D, inner, B, sO: Sb * inner, sD: inner, sI: 1 };
}

/**
 * How QuantizeLinear / DequantizeLinear go over x at most CHUNK elements at a time: per
 * tensor (`run`) in runs of CHUNK; else `rows` whole outer rows of the fold per chunk, or,
 * rows being longer, `blocks` whole blocks of one outer row; blocks (or per-axis slices)
 * being longer still, pieces of one block: `part` positions d of it per piece, or, a single
 * position holding more than CHUNK elements, `cols` (runs of CHUNK inner elements). A piece
 * inside one block starts its kernel call at that block's scales, so the kernel's block
 * arithmetic (d / B) holds within it. The packed side (4 / 2 bits: x of DequantizeLinear, y
 * of QuantizeLinear) must start every chunk on a byte: a count of elements that is a
 * multiple of 8 always does (CHUNK is one), so a count that does not is rounded down to one.
 * null when none of these starts every chunk on a byte (a whole-tensor buffer then).
 */
type ChunkPlan = { run: boolean; rows: number; blocks: number; part: number; cols: boolean };
function chunkPlan(f: Fold, bits: number): ChunkPlan | null {
  const none = { run: false, rows: 0, blocks: 0, part: 0, cols: false };
  if (f.outer === 1 && f.D === 1 && f.sI === 0) return { ...none, run: true };
  const rowElems = f.D * f.inner, blockElems = f.B * f.inner;
  const onByte = (elems: number) => (elems * bits) % 8 === 0;
  /** Units of `elems` elements per chunk, so that the chunk starts on a byte. */
  const fit = (elems: number) => {
    const k = Math.floor(CHUNK / elems);
    return onByte(k * elems) ? k : k - (k % 8);
  };
  if (rowElems === 0) return null;
  if (rowElems <= CHUNK) {
    const rows = fit(rowElems);
    return rows > 0 ? { ...none, rows } : null;
  }
  // (each row's first chunk starts at a multiple of rowElems, each block's at one of blockElems)
  if (!onByte(rowElems)) return null;
  if (blockElems <= CHUNK) {
    const blocks = fit(blockElems);
    return blocks > 0 ? { ...none, blocks } : null;
  }
  if (!onByte(blockElems)) return null;
  if (f.inner <= CHUNK) {
    const part = fit(f.inner);
    return part > 0 ? { ...none, part } : null;
  }
  return onByte(f.inner) ? { ...none, cols: true } : null;
}

/**
 * Calls piece(e0, m, outer, D, inner, sIdx) for each chunk of `plan` over the n elements of
 * fold f: elements [e0, e0 + m) are `outer` rows of D × inner (or D rows of one outer row's
 * whole blocks, or a run of a per-tensor x), whose scales and zero points start at index sIdx
 * (blocks start on multiples of B, so a kernel's block arithmetic holds within the piece).
 */
function forEachChunk(f: Fold, plan: ChunkPlan, n: number, piece: (e0: number, m: number, outer: number, D: number, inner: number, sIdx: number) => void): void {
  const rowElems = f.D * f.inner;
  if (plan.run) {
    for (let i = 0; i < n; i += CHUNK) piece(i, Math.min(CHUNK, n - i), 1, 1, Math.min(CHUNK, n - i), 0);
  } else if (plan.rows) {
    for (let o = 0; o < f.outer; o += plan.rows) {
      const k = Math.min(plan.rows, f.outer - o);
      piece(o * rowElems, k * rowElems, k, f.D, f.inner, o * f.sO);
    }
  } else if (plan.blocks) {
    const step = plan.blocks * f.B;
    for (let o = 0; o < f.outer; o++) {
      for (let d0 = 0; d0 < f.D; d0 += step) {
        const d1 = Math.min(f.D, d0 + step);
        piece(o * rowElems + d0 * f.inner, (d1 - d0) * f.inner, 1, d1 - d0, f.inner, o * f.sO + (d0 / f.B) * f.sD);
      }
    }
  } else if (plan.part) {
    for (let o = 0; o < f.outer; o++) {
      for (let j0 = 0; j0 < f.D; j0 += f.B) {
        const j1 = Math.min(f.D, j0 + f.B), s0 = o * f.sO + (j0 / f.B) * f.sD;
        for (let d0 = j0; d0 < j1; d0 += plan.part) {
          const d1 = Math.min(j1, d0 + plan.part);
          piece(o * rowElems + d0 * f.inner, (d1 - d0) * f.inner, 1, d1 - d0, f.inner, s0);
        }
      }
    }
  } else {
    for (let o = 0; o < f.outer; o++) {
      for (let d = 0; d < f.D; d++) {
        const s0 = o * f.sO + Math.floor(d / f.B) * f.sD;
        for (let i0 = 0; i0 < f.inner; i0 += CHUNK) {
          const m = Math.min(CHUNK, f.inner - i0);
          piece(o * rowElems + d * f.inner + i0, m, 1, 1, m, s0 + i0 * f.sI);
        }
      }
    }
  }
}

/** Scale values: finite everywhere; non-zero too when `nonZero`. */
function checkScales(op: string, what: string, s: Tensor, nonZero: boolean): void {
  const d = s.data as Float32Array | Uint16Array | Uint8Array;
  for (let i = 0; i < d.length; i++) {
    const v = d[i];
    let finite: boolean, zero: boolean;
    switch (s.dtype) {
      case 'float16': finite = (v & 0x7c00) !== 0x7c00; zero = (v & 0x7fff) === 0; break;
      case 'bfloat16': finite = (v & 0x7f80) !== 0x7f80; zero = (v & 0x7fff) === 0; break;
      case 'float8e8m0': finite = v !== 0xff; zero = false; break;
      default: finite = Number.isFinite(v); zero = v === 0;
    }
    if (!finite) fail('INVALID_VALUE', `${op} input ${what}[${i}]: expected a finite scale, got a non-finite value (bits ${s.dtype === 'float32' ? v : '0x' + v.toString(16)})`);
    if (nonZero && zero) fail('INVALID_VALUE', `${op} input ${what}[${i}]: expected a non-zero scale, got 0`);
  }
}

/** Float8 / float4 zero points must be zero (ONNX: they select the type, not an offset). */
function checkFloatZeroPoint(op: string, what: string, zp: Tensor): void {
  const t = zp.dtype;
  const d = zp.data as Uint8Array;
  for (let i = 0; i < zp.size; i++) {
    let code: number;
    if (t === 'float4e2m1') code = (d[i >> 1] >> ((i & 1) * 4)) & 0xf;
    else code = d[i];
    const isZero = t === 'float4e2m1' ? (code & 7) === 0 : FLOAT8.has(t) && t.endsWith('fnuz') ? code === 0 : (code & 0x7f) === 0;
    if (!isZero) fail('INVALID_VALUE', `${op} input ${what}[${i}]: a ${t} zero point must be 0, got bits 0x${code.toString(16)}`);
  }
}

const PRECISION: Record<string, number> = { float32: 1, float16: 10, bfloat16: 16, float64: 11 };

/** Integer ranges of the integer quantized types. */
const Q_RANGE: Record<string, [number, number]> = {
  int8: [-128, 127], uint8: [0, 255], int16: [-32768, 32767], uint16: [0, 65535], int4: [-8, 7], uint4: [0, 15], int2: [-2, 1], uint2: [0, 3],
};

/** Round half to even of a float64. */
function rintEven(v: number): number {
  const r = Math.round(v); // half up
  return r - v === 0.5 && r % 2 !== 0 ? r - 1 : r;
}

/**
 * QuantizeLinear with `precision` float64: x / y_scale divided in float64 (x and the scale
 * are exact there) on the host, one correctly rounded quotient per element, then the same
 * steps as the float32 kernel: integers round half to even, clamp (NaN → the lower bound)
 * and add the zero point; float8 / float4 codes come from that float64 quotient through a
 * round-to-odd float32 (one correct rounding, see f64ToF32), float4 after adding its ±0 zero
 * point. Chunks of CHUNK elements through scratch.
 */
function quantizeF64(
  ctx: OpContext, x: Tensor, scale: Tensor, f: Fold, out: string, sPtr: number, zPtr: number, y: Tensor, saturate: boolean, base: number,
): void {
  const e = ctx.exports;
  const n = x.size;
  const info = DTYPES[out as DType];
  const mem = () => ctx.memory.buffer;
  const A = base, B = A + 8 * CHUNK, T = B + 4 * CHUNK;
  // x as float64: float32 / int32 read directly, float16 / bfloat16 through their exact float32
  const xs = x.dtype === 'int32' ? (x.data as Int32Array) : null;
  const sc = scale.dtype === 'int32' ? Float64Array.from(scale.data as Int32Array) : Float64Array.from(new Float32Array(mem(), sPtr, scale.size));
  const zs = zPtr ? Float64Array.from(new Float32Array(mem(), zPtr, scale.size)) : null;
  const range = Q_RANGE[out];
  const float4 = out === 'float4e2m1';
  for (let start = 0; start < n; start += CHUNK) {
    const len = Math.min(CHUNK, n - start);
    let xv: ArrayLike<number>;
    if (xs) xv = xs.subarray(start, start + len);
    else if (x.dtype === 'float32') xv = new Float32Array(mem(), x.byteOffset + start * 4, len);
    else { e.decodeToF32(addr(x, start), B, len, x.info.onnx, T); xv = new Float32Array(mem(), B, len); }
    const q = new Float64Array(mem(), A, len);
    for (let k = 0; k < len; k++) {
      const el = start + k;
      const i = el % f.inner, rest = (el - i) / f.inner, d = rest % f.D, o = (rest - d) / f.D;
      const si = o * f.sO + Math.floor(d / f.B) * f.sD + i * f.sI;
      let v = xv[k] / sc[si];
      const z = zs ? zs[si] : 0;
      if (range) {
        const [lo, hi] = range;
        v = rintEven(v);
        v = Number.isNaN(v) || v < lo - z ? lo - z : v > hi - z ? hi - z : v;
        v += z;
      } else if (float4 && zs) v += z;
      q[k] = v;
    }
    if (range) {
      if (info.bits === 16) (out === 'int16' ? new Int16Array(mem(), y.byteOffset + start * 2, len) : new Uint16Array(mem(), y.byteOffset + start * 2, len)).set(q);
      else if (info.bits === 8) (out === 'int8' ? new Int8Array(mem(), y.byteOffset + start, len) : new Uint8Array(mem(), y.byteOffset + start, len)).set(q);
      else {
        new Int8Array(mem(), T, len).set(q);
        e.packBits(T, addr(y, start), len, info.bits);
      }
    } else {
      e.f64ToF32(A, B, len, 1);
      e.encodeFromF32(B, addr(y, start), len, info.onnx, float4 || saturate ? 1 : 0, 0, T);
    }
  }
}

/** Converts scales (and integer zero points) to float32 in scratch; returns pointers. */
function scaleZpPointers(ctx: OpContext, base: number, scale: Tensor, zp: Tensor | null, useZp: boolean): { sPtr: number; zPtr: number; next: number } {
  const count = scale.size;
  const sPtr = base;
  const zPtr = useZp ? sPtr + align16(count * 4) : 0;
  const tmp = (useZp ? zPtr : sPtr) + align16(count * 4);
  if (scale.dtype === 'int32') new Float32Array(ctx.memory.buffer, sPtr, count).set(scale.data as Int32Array);
  else ctx.exports.decodeToF32(scale.byteOffset, sPtr, count, scale.info.onnx, tmp);
  if (useZp) {
    if (zp!.dtype === 'int32') new Float32Array(ctx.memory.buffer, zPtr, count).set(zp!.data as Int32Array);
    else ctx.exports.decodeToF32(zp!.byteOffset, zPtr, count, zp!.info.onnx, tmp);
  }
  return { sPtr, zPtr, next: tmp + align16(count) };
}

const quantizeLinear: OpDef = {
  name: 'QuantizeLinear',
  inputs: [{ name: 'x' }, { name: 'y_scale' }, { name: 'y_zero_point', optional: true }],
  outputs: [{ name: 'y' }],
  attributes: {
    axis: { kind: 'int', default: 1 },
    block_size: { kind: 'int', default: 0 },
    saturate: { kind: 'int', default: 1, values: [0, 1] },
    output_dtype: { kind: 'dtype' },
    precision: { kind: 'dtype' },
  },
  run(ctx, [x, scale, zp], attrs, outs) {
    const op = 'QuantizeLinear';
    if (!Q_X_TYPES.includes(x!.dtype)) fail('INVALID_DTYPE', `${op} input x: expected ${Q_X_TYPES.join(', ')}, got ${x!.dtype}`);
    if (!Q_SCALE_TYPES.includes(scale!.dtype)) fail('INVALID_DTYPE', `${op} input y_scale: expected ${Q_SCALE_TYPES.join(', ')}, got ${scale!.dtype}`);
    const od = dtypeAttr(op, 'output_dtype', attrs.output_dtype);
    if (od && zp && od.name !== zp.dtype) fail('INVALID_DTYPE', `${op} input y_zero_point: its dtype must equal output_dtype ${od.name}, got ${zp.dtype}`);
    const out = (zp?.info ?? od ?? DTYPES.uint8).name;
    if (!Q_TYPES.includes(out)) fail('INVALID_DTYPE', `${op} ${zp ? 'input y_zero_point' : 'attribute output_dtype'}: expected a quantized type (${Q_TYPES.join(', ')}), got ${out}`);
    const pd = dtypeAttr(op, 'precision', attrs.precision);
    if (pd && PRECISION[pd.name] === undefined) fail('INVALID_ATTRIBUTE', `${op} attribute precision: expected float32, float16, bfloat16 or float64, got ${pd.name}`);
    const fold = foldFor(op, x!, scale!, zp, attrs.axis as number, attrs.block_size as number);
    checkScales(op, 'y_scale', scale!, true);
    const floatOut = FLOAT8.has(out) || out === 'float4e2m1';
    if (zp && floatOut) checkFloatZeroPoint(op, 'y_zero_point', zp);
    const prec = pd ? PRECISION[pd.name] : x!.dtype === scale!.dtype && (x!.dtype === 'float16' || x!.dtype === 'bfloat16') ? PRECISION[x!.dtype] : 1;

    const n = x!.size;
    const count = scale!.size;
    const bits = DTYPES[out].bits;
    const needX = x!.dtype !== 'float32';
    const f64 = prec === PRECISION.float64;
    // x decoded to float32 first (float16 / bfloat16) or the codes packed after (4 / 2 bits):
    // a chunk of whole rows or blocks at a time through cache-resident buffers (chunkPlan),
    // so the scratch area holds a chunk, not a float32 copy of x and a byte per code
    const plan = !f64 && x!.dtype !== 'int32' && (needX || bits < 8) ? chunkPlan(fold, bits) : null;
    const scratchBytes = 2 * align16(count * 4) + align16(count) + 64 + (f64 ? 13 * CHUNK :
      (plan ? align16(CHUNK * 4) + align16(CHUNK) : (needX ? align16(n * 4) : 0) + (bits < 8 ? align16(n) : 0)) + (ctx.exports.quantizeF32ScratchBytes() >>> 0));
    // a caller's output is checked before the scratch area may grow (a call that fails on it
    // leaves the memory as it was); an output allocated here is freed by run() if scratch
    // then runs out of memory
    const [y] = ctx.prepareOutputs(op, [{ dtype: out, shape: x!.shape }], outs, [true], [x, scale, zp]);
    if (y === null || n === 0) return [y];
    const base = ctx.scratch(scratchBytes);
    // float4e2m1 adds its (±0) zero point as the spec's formula and ONNX's reference do; the
    // float8 types leave it out, as the reference does (see quantOne in assembly/quant.ts)
    const useZp = zp !== null && (!floatOut || out === 'float4e2m1');
    const { sPtr, zPtr, next } = scaleZpPointers(ctx, base, scale!, zp, useZp);
    if (f64) {
      quantizeF64(ctx, x!, scale!, fold, out, sPtr, zPtr, y, attrs.saturate === 1, align16(next));
      return [y];
    }
    let xPtr = x!.byteOffset;
    let p = next;
    const f = fold;
    if (plan) {
      const e = ctx.exports, xBuf = p, qBuf = p + align16(CHUNK * 4), tmp = qBuf + align16(CHUNK);
      const code = DTYPES[out].onnx, sat = attrs.saturate === 1 ? 1 : 0;
      forEachChunk(f, plan, n, (e0, m, outer, D, inner, sIdx) => {
        let src = x!.byteOffset + e0 * 4;
        if (needX) {
          e.decodeToF32(x!.byteOffset + (e0 * x!.info.bits) / 8, xBuf, m, x!.info.onnx, 0);
          src = xBuf;
        }
        const dst = bits < 8 ? qBuf : y.byteOffset + (e0 * bits) / 8;
        e.quantizeF32(src, dst, outer, D, inner, f.B, sPtr + sIdx * 4, zPtr ? zPtr + sIdx * 4 : 0, f.sO, f.sD, f.sI, code, sat, prec, tmp);
        if (bits < 8) e.packBits(qBuf, y.byteOffset + (e0 * bits) / 8, m, bits);
      });
      return [y];
    }
    if (needX) {
      xPtr = p;
      p += align16(n * 4);
      if (x!.dtype === 'int32') new Float32Array(ctx.memory.buffer, xPtr, n).set(x!.data as Int32Array);
      else ctx.exports.decodeToF32(x!.byteOffset, xPtr, n, x!.info.onnx, 0);
    }
    const yPtr = bits < 8 ? p : y.byteOffset;
    if (bits < 8) p += align16(n);
    ctx.exports.quantizeF32(xPtr, yPtr, f.outer, f.D, f.inner, f.B, sPtr, zPtr, f.sO, f.sD, f.sI, DTYPES[out].onnx, attrs.saturate === 1 ? 1 : 0, prec, p);
    if (bits < 8) ctx.exports.packBits(yPtr, y.byteOffset, n, bits);
    return [y];
  },
};

const dequantizeLinear: OpDef = {
  name: 'DequantizeLinear',
  inputs: [{ name: 'x' }, { name: 'x_scale' }, { name: 'x_zero_point', optional: true }],
  outputs: [{ name: 'y' }],
  attributes: {
    axis: { kind: 'int', default: 1 },
    block_size: { kind: 'int', default: 0 },
    output_dtype: { kind: 'dtype' },
  },
  run(ctx, [x, scale, zp], attrs, outs) {
    const op = 'DequantizeLinear';
    if (!DQ_X_TYPES.includes(x!.dtype)) fail('INVALID_DTYPE', `${op} input x: expected ${DQ_X_TYPES.join(', ')}, got ${x!.dtype}`);
    if (!SCALE_TYPES.includes(scale!.dtype)) fail('INVALID_DTYPE', `${op} input x_scale: expected ${SCALE_TYPES.join(', ')}, got ${scale!.dtype}`);
    if (zp && zp.dtype !== x!.dtype) fail('INVALID_DTYPE', `${op} input x_zero_point: expected x's dtype ${x!.dtype}, got ${zp.dtype}`);
    const od = dtypeAttr(op, 'output_dtype', attrs.output_dtype);
    const out: DType = od ? od.name : scale!.dtype === 'float8e8m0' ? 'float32' : scale!.dtype;
    if (!DQ_OUT_TYPES.includes(out)) fail('INVALID_DTYPE', `${op} attribute output_dtype: expected ${DQ_OUT_TYPES.join(', ')}, got ${out}`);
    const fold = foldFor(op, x!, scale!, zp, attrs.axis as number, attrs.block_size as number);
    checkScales(op, 'x_scale', scale!, false);
    const floatIn = FLOAT8.has(x!.dtype) || x!.dtype === 'float4e2m1';
    if (zp && floatIn) checkFloatZeroPoint(op, 'x_zero_point', zp);

    const n = x!.size;
    const count = scale!.size;
    const direct = x!.dtype === 'int8' || x!.dtype === 'uint8' || x!.dtype === 'float8e4m3fn';
    const needY32 = out !== 'float32';
    const bits = x!.info.bits;
    // A 16-bit output, or a per-tensor x the kernels decode first: a chunk at a time (see
    // below). Into float32 per axis / blocked, x decoded (in chunks, so the unpacking of
    // 4- / 2-bit codes needs CHUNK bytes, not n) into y and scaled there in place: a
    // chunk at a time, that took 1.06× the time (int4 → float32, [1024, 4096], block 32:
    // a store-only stream into y is slower here than y read, scaled and written back).
    // int8 / uint8 / e4m3fn into float32 is one pass anyway.
    const f = fold;
    const plan = x!.dtype !== 'int32' && (needY32 || (!direct && count === 1)) ? chunkPlan(f, bits) : null;
    const scratchBytes = 2 * align16(count * 4) + align16(count) + 64 +
      (plan ? align16(CHUNK * 4) + align16(CHUNK) : (needY32 ? align16(n * 4) : 0) + (bits < 8 ? align16(CHUNK) : 0));
    // a caller's output is checked before the scratch area may grow (a call that fails on it
    // leaves the memory as it was); an output allocated here is freed by run() if scratch
    // then runs out of memory
    const [y] = ctx.prepareOutputs(op, [{ dtype: out, shape: x!.shape }], outs, [true], [x, scale, zp]);
    if (y === null || n === 0) return [y];
    const base = ctx.scratch(scratchBytes);
    const useZp = zp !== null && !floatIn;
    const { sPtr, zPtr, next } = scaleZpPointers(ctx, base, scale!, zp, useZp);
    let p = next;
    if (plan) {
      // Decode, scale (and encode a 16-bit output) up to CHUNK elements at a time through
      // a cache-resident buffer: one pass over y instead of decoding all of x into y (or a
      // float32 copy of it) and going over that again.
      const e = ctx.exports, buf = p, unpack = p + align16(CHUNK * 4), outBits = y.info.bits;
      forEachChunk(f, plan, n, (e0, m, outer, D, inner, sIdx) => {
        let src = x!.byteOffset + e0, code = x!.info.onnx;
        if (!direct) {
          e.decodeToF32(x!.byteOffset + (e0 * bits) / 8, buf, m, code, unpack);
          src = buf;
          code = 1;
        }
        e.dequantizeF32(src, needY32 ? buf : y.byteOffset + e0 * 4, outer, D, inner, f.B, sPtr + sIdx * 4, zPtr ? zPtr + sIdx * 4 : 0, f.sO, f.sD, f.sI, code);
        if (needY32) e.encodeFromF32(buf, y.byteOffset + (e0 * outBits) / 8, m, y.info.onnx, 1, 0, 0);
      });
      return [y];
    }
    const y32 = needY32 ? p : y.byteOffset;
    if (needY32) p += align16(n * 4);
    let xPtr = x!.byteOffset, code = x!.info.onnx;
    if (!direct) {
      if (x!.dtype === 'int32') new Float32Array(ctx.memory.buffer, y32, n).set(x!.data as Int32Array);
      else {
        // CHUNK elements at a time (a multiple of 8: packed x starts each on a byte)
        for (let i = 0; i < n; i += CHUNK) ctx.exports.decodeToF32(x!.byteOffset + (i * bits) / 8, y32 + i * 4, Math.min(CHUNK, n - i), code, p);
      }
      xPtr = y32;
      code = 1;
    }
    ctx.exports.dequantizeF32(xPtr, y32, f.outer, f.D, f.inner, f.B, sPtr, zPtr, f.sO, f.sD, f.sI, code);
    if (needY32) ctx.exports.encodeFromF32(y32, y.byteOffset, n, y.info.onnx, 1, 0, 0);
    return [y];
  },
};

export const quantOps: readonly OpDef[] = [cast, quantizeLinear, dequantizeLinear];
