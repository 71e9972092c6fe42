/**
 * Plain references for the scan family: sequential loops over flat arrays, one element
 * at a time, in the storage type's arithmetic (float32 rounded with Math.fround after
 * every operation, int32 wrapping, float64 as is). Independent of the kernels' layout
 * tricks (lane vectors, in-register prefix scans).
 */

export type ScanOp = 'add' | 'mul' | 'max' | 'min' | 'logaddexp';
export type NumDtype = 'float32' | 'float64' | 'int32';

/** The combine of one element pair, rounded to the dtype. */
export function applyOp(op: ScanOp, dtype: NumDtype, a: number, b: number): number {
  let r: number;
  switch (op) {
    case 'add':
      r = a + b;
      break;
    case 'mul':
      r = dtype === 'int32' ? Math.imul(a, b) : a * b;
      break;
    case 'max':
      r = Math.max(a, b);
      break;
    case 'min':
      r = Math.min(a, b);
      break;
    case 'logaddexp':
      r = logaddexp(a, b);
      break;
  }
  if (dtype === 'float32') return Math.fround(r);
  if (dtype === 'int32') return r | 0;
  return r;
}

/** log(exp(a) + exp(b)) without overflow; ±Inf and NaN as torch.logaddexp. */
export function logaddexp(a: number, b: number): number {
  if (Number.isNaN(a) || Number.isNaN(b)) return NaN;
  if (a === b) return a + Math.LN2;
  const m = Math.max(a, b);
  return m + Math.log1p(Math.exp(-Math.abs(a - b)));
}

/** The identity the scan starts from when there is no init. */
export function identityOf(op: ScanOp, dtype: NumDtype): number {
  const int = dtype === 'int32';
  switch (op) {
    case 'add':
      return int ? 0 : -0;
    case 'mul':
      return 1;
    case 'max':
      return int ? -(2 ** 31) : -Infinity;
    case 'min':
      return int ? 2 ** 31 - 1 : Infinity;
    case 'logaddexp':
      return -Infinity;
  }
}

export function sizeOf(shape: readonly number[]): number {
  return shape.reduce((a, b) => a * b, 1);
}

/**
 * Inclusive (or exclusive) scan of a row-major tensor along `dim` (already normalized),
 * starting from `init` (shape without dim; null: the identity). Returns ys (shape of x)
 * and the final carry.
 */
export function refScan(
  op: ScanOp, dtype: NumDtype, x: ArrayLike<number>, shape: readonly number[], dim: number,
  reverse: boolean, init: ArrayLike<number> | null, exclusive = false,
): { ys: number[]; last: number[] } {
  const O = sizeOf(shape.slice(0, dim)), N = shape[dim], I = sizeOf(shape.slice(dim + 1));
  const ys = new Array<number>(O * N * I).fill(0);
  const last = new Array<number>(O * I).fill(0);
  for (let o = 0; o < O; o++) {
    for (let i = 0; i < I; i++) {
      let c = init ? init[o * I + i] : identityOf(op, dtype);
      for (let s = 0; s < N; s++) {
        const t = reverse ? N - 1 - s : s;
        const k = (o * N + t) * I + i;
        const nc = applyOp(op, dtype, c, x[k]);
        // an exclusive float sum without init outputs +0 first (ONNX's reference: NumPy's
        // zeros, then cumsum of x[0..]), then x[0], x[0] + x[1], … (the carry is the
        // identity −0, so x[0] = −0 stays −0)
        ys[k] = exclusive ? (s === 0 && !init && op === 'add' ? 0 : c) : nc;
        c = nc;
      }
      last[o * I + i] = c;
    }
  }
  return { ys, last };
}

/** h_t = a_t·h_{t−1} + b_t, multiply then add, each rounded to the dtype. */
export function refLinearScan(
  dtype: 'float32' | 'float64', a: ArrayLike<number>, b: ArrayLike<number>, h0: ArrayLike<number>,
  shape: readonly number[], dim: number, reverse: boolean,
): { hs: number[]; last: number[] } {
  const r = dtype === 'float32' ? Math.fround : (v: number) => v;
  const O = sizeOf(shape.slice(0, dim)), N = shape[dim], I = sizeOf(shape.slice(dim + 1));
  const hs = new Array<number>(O * N * I).fill(0);
  const last = new Array<number>(O * I).fill(0);
  for (let o = 0; o < O; o++) {
    for (let i = 0; i < I; i++) {
      let h = h0[o * I + i];
      for (let s = 0; s < N; s++) {
        const t = reverse ? N - 1 - s : s;
        const k = (o * N + t) * I + i;
        h = r(r(a[k] * h) + b[k]);
        hs[k] = h;
      }
      last[o * I + i] = h;
    }
  }
  return { hs, last };
}

/** Cumulative sum of int64 values (wrapping modulo 2^64) along dim. */
export function refCumsumI64(x: ArrayLike<bigint>, shape: readonly number[], dim: number, reverse: boolean, exclusive: boolean): bigint[] {
  const O = sizeOf(shape.slice(0, dim)), N = shape[dim], I = sizeOf(shape.slice(dim + 1));
  const ys = new Array<bigint>(O * N * I).fill(0n);
  for (let o = 0; o < O; o++) {
    for (let i = 0; i < I; i++) {
      let c = 0n;
      for (let s = 0; s < N; s++) {
        const t = reverse ? N - 1 - s : s;
        const k = (o * N + t) * I + i;
        const nc = BigInt.asIntN(64, c + x[k]);
        ys[k] = exclusive ? c : nc;
        c = nc;
      }
    }
  }
  return ys;
}

/** Round half to even of a non-negative number. */
function roundHalfEven(v: number): number {
  const f = Math.floor(v);
  const d = v - f;
  if (d > 0.5) return f + 1;
  if (d < 0.5) return f;
  return f % 2 === 0 ? f : f + 1;
}

/** Exponent e with 2^e ≤ a < 2^(e+1), for finite a > 0 (exact, no log rounding). */
function exponentOf(a: number): number {
  let e = Math.floor(Math.log2(a));
  while (2 ** e > a) e--;
  while (2 ** (e + 1) <= a) e++;
  return e;
}

/** A float32 value to float16 bits, round to nearest even, by value arithmetic. */
export function toF16Bits(v: number): number {
  if (Number.isNaN(v)) return 0x7e00;
  const sign = v < 0 || Object.is(v, -0) ? 0x8000 : 0;
  const a = Math.abs(v);
  if (a === Infinity) return sign | 0x7c00;
  if (a < 2 ** -14) {
    const m = roundHalfEven(a / 2 ** -24); // up to 1024: then it is the smallest normal
    return sign | m;
  }
  let e = exponentOf(a);
  let m = roundHalfEven((a / 2 ** e - 1) * 1024);
  if (m === 1024) {
    m = 0;
    e++;
  }
  if (e > 15) return sign | 0x7c00;
  return sign | ((e + 15) << 10) | m;
}

const f32 = new Float32Array(1);
const u32 = new Uint32Array(f32.buffer);

/** A float32 value to bfloat16 bits, round to nearest even, by value arithmetic. */
export function toBf16Bits(v: number): number {
  if (Number.isNaN(v)) return 0x7fc0;
  const a = Math.abs(v);
  let q: number;
  if (a === 0 || a === Infinity) q = a;
  else if (a < 2 ** -126) q = roundHalfEven(a / 2 ** -133) * 2 ** -133;
  else {
    const e = exponentOf(a);
    q = roundHalfEven(a / 2 ** (e - 7)) * 2 ** (e - 7);
  }
  f32[0] = v < 0 || Object.is(v, -0) ? -q : q;
  return u32[0] >>> 16;
}

/** CumSum of float16 / bfloat16 bit patterns in the storage type's arithmetic: every partial sum rounded (nearest even). */
export function refCumsumHalf(
  bits: ArrayLike<number>, decode: (h: number) => number, encode: (v: number) => number,
  shape: readonly number[], dim: number, reverse: boolean, exclusive: boolean,
): number[] {
  const O = sizeOf(shape.slice(0, dim)), N = shape[dim], I = sizeOf(shape.slice(dim + 1));
  const ys = new Array<number>(O * N * I).fill(0);
  for (let o = 0; o < O; o++) {
    for (let i = 0; i < I; i++) {
      let c = -0;
      for (let s = 0; s < N; s++) {
        const t = reverse ? N - 1 - s : s;
        const k = (o * N + t) * I + i;
        // the storage type's arithmetic (NumPy's float16 cumsum, ml_dtypes' bfloat16): every
        // partial sum rounded to the type before the next value is added; exclusive: +0 first
        // (as refScan)
        const nc = decode(encode(c + decode(bits[k])));
        ys[k] = encode(exclusive ? (s === 0 ? 0 : c) : nc);
        c = nc;
      }
    }
  }
  return ys;
}

/** float16 / bfloat16 bits → their value (exact). */
export function fromHalfBits(dtype: 'float16' | 'bfloat16', h: number): number {
  const sign = h & 0x8000 ? -1 : 1;
  if (dtype === 'bfloat16') {
    u32[0] = h << 16;
    return f32[0];
  }
  const e = (h >> 10) & 0x1f, m = h & 0x3ff;
  if (e === 31) return m ? NaN : sign * Infinity;
  return sign * (e === 0 ? m * 2 ** -24 : (1 + m / 1024) * 2 ** (e - 15));
}

/**
 * A scan of float16 / bfloat16 bit patterns in the storage type's arithmetic, as PyTorch's CPU
 * ops run it: every step computed exactly (float64: exact for add and mul of two half values
 * up to its own rounding, which double rounding to 8 or 11 bits cannot change) and rounded to
 * the type, nearest even. logaddexp: float64's, rounded. Returns bit patterns (NaN as the
 * type's default NaN: compare NaN-ness, not payloads).
 */
export function refScanHalf(
  op: ScanOp, dtype: 'float16' | 'bfloat16', bits: ArrayLike<number>, shape: readonly number[], dim: number,
  reverse: boolean, initBits: ArrayLike<number>,
): { ys: number[]; last: number[] } {
  const enc = dtype === 'float16' ? toF16Bits : toBf16Bits;
  const dec = (h: number) => fromHalfBits(dtype, h);
  const O = sizeOf(shape.slice(0, dim)), N = shape[dim], I = sizeOf(shape.slice(dim + 1));
  const ys = new Array<number>(O * N * I).fill(0);
  const last = new Array<number>(O * I).fill(0);
  for (let o = 0; o < O; o++) {
    for (let i = 0; i < I; i++) {
      let c = initBits[o * I + i];
      for (let s = 0; s < N; s++) {
        const t = reverse ? N - 1 - s : s;
        const k = (o * N + t) * I + i;
        c = enc(applyOp(op, 'float64', dec(c), dec(bits[k])));
        ys[k] = c;
      }
      last[o * I + i] = c;
    }
  }
  return { ys, last };
}
