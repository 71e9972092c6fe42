/**
 * Plain reference for Cast / QuantizeLinear / DequantizeLinear, written from the ONNX
 * specification's tables and definitions (not from the kernels): every format is
 * described by its list of finite values; rounding picks the nearest listed value with
 * ties to the even code; overflow follows the saturate tables. All arithmetic is in
 * float64 / BigInt.
 */

export interface MiniFormat {
  name: string;
  /** exponent bits, mantissa bits, bias */
  E: number;
  M: number;
  bias: number;
  /** total bits (sign included) */
  bits: number;
  /** 'ieee': all-ones exponent is Inf/NaN; 'fn': only S.1111.111 is NaN; 'fnuz': 0x80 is NaN, no -0, no Inf; 'none': no Inf/NaN */
  special: 'ieee' | 'fn' | 'fnuz' | 'none';
}

export const FORMATS: Record<string, MiniFormat> = {
  float8e4m3fn: { name: 'float8e4m3fn', E: 4, M: 3, bias: 7, bits: 8, special: 'fn' },
  float8e4m3fnuz: { name: 'float8e4m3fnuz', E: 4, M: 3, bias: 8, bits: 8, special: 'fnuz' },
  float8e5m2: { name: 'float8e5m2', E: 5, M: 2, bias: 15, bits: 8, special: 'ieee' },
  float8e5m2fnuz: { name: 'float8e5m2fnuz', E: 5, M: 2, bias: 16, bits: 8, special: 'fnuz' },
  float16: { name: 'float16', E: 5, M: 10, bias: 15, bits: 16, special: 'ieee' },
  bfloat16: { name: 'bfloat16', E: 8, M: 7, bias: 127, bits: 16, special: 'ieee' },
  float4e2m1: { name: 'float4e2m1', E: 2, M: 1, bias: 1, bits: 4, special: 'none' },
};

/** Value of a code (NaN for NaN codes, ±Infinity for Inf codes). */
export function decodeMini(f: MiniFormat, code: number): number {
  const signBit = 1 << (f.bits - 1);
  const neg = (code & signBit) !== 0;
  const mag = code & (signBit - 1);
  const e = mag >> f.M, m = mag & ((1 << f.M) - 1);
  const eMax = (1 << f.E) - 1;
  if (f.special === 'fnuz' && code === signBit) return NaN;
  if (f.special === 'fn' && e === eMax && m === (1 << f.M) - 1) return NaN;
  if (f.special === 'ieee' && e === eMax) return m === 0 ? (neg ? -Infinity : Infinity) : NaN;
  const v = e === 0 ? m * 2 ** (1 - f.bias - f.M) : (1 + m / 2 ** f.M) * 2 ** (e - f.bias);
  return neg ? -v : v;
}

/** Finite non-negative values with their codes, ascending. */
function table(f: MiniFormat): { v: number; c: number }[] {
  const out: { v: number; c: number }[] = [];
  for (let c = 0; c < 1 << (f.bits - 1); c++) {
    const v = decodeMini(f, c);
    if (Number.isFinite(v)) out.push({ v, c });
  }
  return out;
}
const TABLES = new Map<string, { v: number; c: number }[]>();
function tableOf(f: MiniFormat) {
  let t = TABLES.get(f.name);
  if (!t) TABLES.set(f.name, (t = table(f)));
  return t;
}

/** NaN code of a format for an input NaN with the given sign. */
function nanCode(f: MiniFormat, neg: boolean): number {
  const s = neg ? 1 << (f.bits - 1) : 0;
  switch (f.special) {
    case 'fn': return 0x7f | s;
    case 'fnuz': return 0x80;
    // float4e2m1 has no NaN; ONNX's reference (ml_dtypes astype) gives −0 for +NaN and +0 for
    // −NaN, and the upstream Cast cases check it (ONNX's float4 note says 6)
    case 'none': return neg ? 0x0 : 0x8;
    default: return (f.name === 'float8e5m2' ? 0x7e : f.name === 'bfloat16' ? 0x7fc0 : 0x7e00) | s;
  }
}

/**
 * Encodes the exact value x (a float64 holding the source value) into a format with
 * round to nearest, ties to the even code, and ONNX Cast's saturate tables:
 * saturate: Inf and [x] beyond the largest finite value → ±max; otherwise NaN for
 * e4m3fn/fnuz types, Inf for e5m2/float16/bfloat16. float4e2m1 always saturates.
 */
export function encodeMini(f: MiniFormat, x: number, saturate: boolean, nanNeg = false): number {
  const signBit = 1 << (f.bits - 1);
  const neg = x < 0 || Object.is(x, -0);
  if (Number.isNaN(x)) return nanCode(f, nanNeg);
  const sat = saturate || f.special === 'none';
  const t = tableOf(f);
  const max = t[t.length - 1];
  const mag = Math.abs(x);
  const withSign = (c: number): number => (neg && !(f.special === 'fnuz' && c === 0) ? c | signBit : c);
  const overflow = (): number => {
    if (sat) return withSign(max.c);
    if (f.special === 'ieee') return withSign((((1 << f.E) - 1) << f.M));
    if (f.special === 'fn') return withSign(0x7f);
    return 0x80;
  };
  if (mag === Infinity) return overflow();
  if (mag > max.v) {
    // [x]: round with an unbounded exponent; the value after max is max + ulp(max).
    const ulp = 2 ** (Math.floor(Math.log2(max.v)) - f.M);
    const mid = max.v + ulp / 2;
    const maxEven = (max.c & 1) === 0;
    if (mag < mid || (mag === mid && maxEven)) return withSign(max.c);
    return overflow();
  }
  // nearest neighbours
  let lo = 0, hi = t.length - 1;
  while (hi - lo > 1) {
    const mid = (lo + hi) >> 1;
    if (t[mid].v <= mag) lo = mid;
    else hi = mid;
  }
  let pick: { v: number; c: number };
  if (t[hi].v <= mag) pick = t[hi];
  else if (t[lo].v === mag) pick = t[lo];
  else {
    const dl = mag - t[lo].v, dh = t[hi].v - mag;
    pick = dl < dh ? t[lo] : dh < dl ? t[hi] : (t[lo].c & 1) === 0 ? t[lo] : t[hi];
  }
  return withSign(pick.c);
}

/** float16 from float32 with numpy's NaN rule (payload kept: 0x7C00 | top mantissa bits, never 0). */
export function encodeF16(x: number, f32bits: number): number {
  if (Number.isNaN(x)) {
    const p = (f32bits & 0x7fffff) >>> 13;
    return ((f32bits >>> 16) & 0x8000) | 0x7c00 | (p === 0 ? 1 : p);
  }
  return encodeMini(FORMATS.float16, x, false);
}

/** float8e8m0 per Cast-25: round_mode up / down / nearest (ties up); saturate table. */
export function encodeE8m0(x: number, saturate: boolean, mode: 'up' | 'down' | 'nearest'): number {
  if (Number.isNaN(x)) return 0xff;
  if (x <= 0 || Object.is(x, -0)) return saturate ? 0x00 : 0xff;
  if (x === Infinity || x > 2 ** 127) return saturate ? 0xfe : 0xff;
  if (x < 2 ** -127) return saturate ? 0x00 : 0xff;
  let k = -127;
  while (2 ** (k + 1) <= x) k++;
  const lo = 2 ** k;
  let e = k;
  if (x !== lo) {
    if (mode === 'up') e = k + 1;
    else if (mode === 'nearest' && x >= 1.5 * lo) e = k + 1;
  }
  return e + 127;
}

export function decodeE8m0(c: number): number {
  return c === 0xff ? NaN : 2 ** (c - 127);
}

// ---- float32 bits helpers ---------------------------------------------------------

const f32 = new Float32Array(1);
const u32 = new Uint32Array(f32.buffer);
export function f32FromBits(b: number): number {
  u32[0] = b >>> 0;
  return f32[0];
}
export function f32Bits(x: number): number {
  f32[0] = x;
  return u32[0];
}

/** Bits of the float32 a decoded value becomes (NaN: quiet NaN with the code's sign). */
export function f32BitsOfValue(v: number, negNaN = false): number {
  if (Number.isNaN(v)) return negNaN ? 0xffc00000 : 0x7fc00000;
  return f32Bits(v);
}

// ---- dtype values --------------------------------------------------------------

export const INT_RANGES: Record<string, [bigint, bigint]> = {
  int8: [-128n, 127n], uint8: [0n, 255n], int16: [-32768n, 32767n], uint16: [0n, 65535n],
  int32: [-(2n ** 31n), 2n ** 31n - 1n], uint32: [0n, 2n ** 32n - 1n],
  int64: [-(2n ** 63n), 2n ** 63n - 1n], uint64: [0n, 2n ** 64n - 1n],
  int4: [-8n, 7n], uint4: [0n, 15n], int2: [-2n, 1n], uint2: [0n, 3n],
};
export const INT_BITS: Record<string, number> = {
  int8: 8, uint8: 8, int16: 16, uint16: 16, int32: 32, uint32: 32, int64: 64, uint64: 64, int4: 4, uint4: 4, int2: 2, uint2: 2,
};
const isSigned = (t: string): boolean => t.startsWith('int');

/** The value of an element: number for floats / small ints, bigint for 64-bit ints. */
export type Value = number | bigint;

/** Element values of a dtype from its raw codes (bit patterns for floats, integers for ints). */
export function valueOf(dtype: string, code: number | bigint): Value {
  if (dtype in FORMATS) return decodeMini(FORMATS[dtype], Number(code));
  if (dtype === 'float8e8m0') return decodeE8m0(Number(code));
  if (dtype === 'float32' || dtype === 'float64') return Number(code);
  if (dtype === 'bool') return Number(code) ? 1 : 0;
  return typeof code === 'bigint' ? code : Number(code);
}

/**
 * Reference Cast of one value to `to` (returns the stored code: bit pattern for floats,
 * integer for ints / bool, bigint for 64-bit ints). Rules (Cast-25 text): float → float
 * rounds to nearest even with the float8 tables; float → int truncates toward zero and
 * (this package's choice for the undefined out-of-range case) saturates, NaN → 0 — except
 * int4/uint4/int2/uint2, which wrap as ONNX's reference (ml_dtypes) and the upstream Cast
 * cases do (NaN, ±Inf, |x| ≥ 2^63 → 0);
 * int → int keeps the low bits; x → bool is x ≠ 0; bool → 1/0.
 */
export function castValue(v: Value, from: string, to: string, saturate = true, mode: 'up' | 'down' | 'nearest' = 'up', nanNeg = false): number | bigint {
  const fromInt = from in INT_BITS || from === 'bool';
  if (to === 'bool') return (typeof v === 'bigint' ? v !== 0n : v !== 0) ? 1 : 0;
  if (to in INT_BITS) {
    const [lo, hi] = INT_RANGES[to];
    let b: bigint;
    if (fromInt) {
      b = BigInt(v);
      b = isSigned(to) ? BigInt.asIntN(INT_BITS[to], b) : BigInt.asUintN(INT_BITS[to], b);
    } else {
      const n = v as number;
      if (INT_BITS[to] <= 4) {
        b = Number.isNaN(n) || Math.abs(n) >= 2 ** 63 ? 0n : BigInt(Math.trunc(n));
        return Number(isSigned(to) ? BigInt.asIntN(INT_BITS[to], b) : BigInt.asUintN(INT_BITS[to], b));
      }
      if (Number.isNaN(n)) b = 0n;
      else if (n === Infinity) b = hi;
      else if (n === -Infinity) b = lo;
      else {
        b = BigInt(Math.trunc(n));
        if (b < lo) b = lo;
        if (b > hi) b = hi;
      }
    }
    return INT_BITS[to] === 64 ? b : Number(b);
  }
  // float targets: the exact value as a number (64-bit ints in tests stay below 2^53)
  const x = typeof v === 'bigint' ? Number(v) : v;
  if (to === 'float64') return x;
  if (to === 'float32') return Math.fround(x);
  if (to === 'float8e8m0') return encodeE8m0(x, saturate, mode);
  if (to === 'float16') return Number.isNaN(x) ? (nanNeg ? 0xfe00 : 0x7e00) : encodeF16(x, f32Bits(x));
  if (to === 'bfloat16') return Number.isNaN(x) ? (nanNeg ? 0xffc0 : 0x7fc0) : encodeMini(FORMATS.bfloat16, x, false);
  return encodeMini(FORMATS[to], x, saturate, nanNeg);
}

// ---- QuantizeLinear / DequantizeLinear ------------------------------------------------

export function roundHalfEven(v: number): number {
  const f = Math.floor(v);
  const d = v - f;
  if (d < 0.5) return f;
  if (d > 0.5) return f + 1;
  return f % 2 === 0 ? f : f + 1;
}

/** Index of the scale for element `flat` of x (shape), per-tensor / per-axis / blocked. */
export function scaleIndex(shape: number[], flat: number, scaleShape: number[], axis: number, blockSize: number): number {
  if (scaleShape.length === 0 || (scaleShape.length === 1 && scaleShape[0] === 1 && blockSize === 0)) return 0;
  const idx: number[] = [];
  let r = flat;
  for (let i = shape.length - 1; i >= 0; i--) {
    idx[i] = r % shape[i];
    r = Math.floor(r / shape[i]);
  }
  if (blockSize === 0) return idx[axis];
  let s = 0;
  for (let i = 0; i < shape.length; i++) {
    const j = i === axis ? Math.floor(idx[i] / blockSize) : idx[i];
    s = s * scaleShape[i] + j;
  }
  return s;
}

/**
 * QuantizeLinear of one value: q = x / s in the division precision (float32, or rounded
 * to float16 / bfloat16), then integers: round half to even, + zero point, clamp (NaN →
 * the type's minimum); float8: the Cast rounding with `saturate` (a zero point left out, as
 * ONNX's reference does); float4e2m1: saturating, of q + zp when a zero point is given (the
 * spec's formula: only the sign of a zero can change, −0 + +0 = +0). zp null: none given.
 */
export function quantizeValue(x: number, s: number, zp: number | null, to: string, saturate: boolean, precision: 'float32' | 'float16' | 'bfloat16'): number {
  const toPrec = (v: number): number => {
    if (precision === 'float16') return Number.isNaN(v) ? NaN : decodeMini(FORMATS.float16, encodeMini(FORMATS.float16, v, false));
    if (precision === 'bfloat16') return Number.isNaN(v) ? NaN : decodeMini(FORMATS.bfloat16, encodeMini(FORMATS.bfloat16, v, false));
    return v;
  };
  const q = toPrec(Math.fround(toPrec(x) / toPrec(s)));
  if (to in INT_RANGES) {
    const [lo, hi] = INT_RANGES[to].map(Number);
    if (Number.isNaN(q)) return lo;
    return Math.min(hi, Math.max(lo, roundHalfEven(q) + (zp ?? 0)));
  }
  if (to === 'float4e2m1' && zp !== null) return encodeMini(FORMATS[to], Math.fround(q + zp), true);
  return encodeMini(FORMATS[to], q, saturate);
}

/** DequantizeLinear of one value (float32 arithmetic): (x − zp) · s. */
export function dequantizeValue(x: number, s: number, zp: number): number {
  return Math.fround(Math.fround(x - zp) * s);
}

// ---- packing ----------------------------------------------------------------------

/** Packs small codes (4 or 2 bits each) into bytes, element 0 in the low bits. */
export function pack(codes: number[], bits: number): Uint8Array {
  const per = 8 / bits;
  const out = new Uint8Array(Math.ceil(codes.length / per));
  codes.forEach((c, i) => {
    out[Math.floor(i / per)] |= (c & ((1 << bits) - 1)) << ((i % per) * bits);
  });
  return out;
}

/** Unpacks codes (unsigned fields). */
export function unpack(bytes: ArrayLike<number>, n: number, bits: number): number[] {
  const per = 8 / bits;
  const out: number[] = [];
  for (let i = 0; i < n; i++) out.push((bytes[Math.floor(i / per)] >> ((i % per) * bits)) & ((1 << bits) - 1));
  return out;
}
