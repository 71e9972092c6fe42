// Cumulative kernels: inclusive / exclusive scans with add, mul, max, min, logaddexp;
// CumSum for int64; float16 / bfloat16 scans in their own arithmetic; the linear
// recurrence h_t = a_t * h_{t-1} + b_t.
//
// Layout. The host folds a tensor of shape (D0 … Dk) scanned along axis `dim` into
// (O, N, I): O = product of the dims before `dim`, N = the scanned length, I = product
// of the dims after `dim` (row-major, element (o, t, i) at index (o·N + t)·I + i).
// `init` / `last` / `h0` are (O, I): one carry per independent lane.
//
// Two shapes of loop:
//   - I > 1 ("lanes"): the I lanes of one step are contiguous, so each step is one
//     elementwise row operation out[t] = op(out[t−1], x[t]) over I elements, vectorized
//     across lanes. The operation order per lane is exactly the sequential one, so the
//     result is bit-identical to a step-by-step scan.
//   - I = 1 ("innermost"): each lane is one contiguous run; it is scanned 4 (or 2)
//     elements per v128 with an in-register prefix scan (log2(L) shift+op steps) plus a
//     broadcast carry. Floating add/mul are therefore re-associated inside each
//     4-element block (max / min / integer ops stay exact); a run where that gives any
//     ±Inf or NaN is scanned again in the sequential order (see scanRuns).
//
// Operations (op): 0 add, 1 mul, 2 max, 3 min, 4 logaddexp (floats only). Element types:
// float32, float64, int32, int64 (the host runs the other integer types on the two integer
// kernels: see src/scan.ts).
// flags: bit 0 reverse (scan from t = N−1 down to 0), bit 1 exclusive (out[t] = carry
// before x[t]).
// init = 0 means "no init": the carry starts at the operation's identity
// (−0.0 for float add, so that −0 + x == x bit-exactly; 1; −Inf / INT_MIN; +Inf / INT_MAX;
// −Inf for logaddexp). last = 0 means "do not write the final carry".
// max / min follow wasm f32.max / f32.min = IEEE 754-2019 maximum / minimum (NaN
// propagates, −0 < +0), the same as JS Math.max / Math.min.
//
// Preconditions (the host checks them): x and y are distinct, non-overlapping buffers
// of O·N·I elements; init / last are O·I elements and do not overlap y; O, N, I ≥ 0.
// The kernels read and write only inside those buffers (output tails are scalar).

import { f16BitsToF32V, f16BitsToF32VC, F16W } from './simd';

// The operation is a type parameter O, so that every (dtype, op) pair is its own function
// with no op tests in its loops: O is one of these marker types (only their size and
// signedness are looked at, both compile-time constants).
type OpAdd = u8;
type OpMul = u16;
type OpMax = i8;
type OpMin = i16;
type OpLae = u32;

const LN2: f64 = 0.6931471805599453;

// ---- scalar operations -----------------------------------------------------------

/**
 * r = a + b or a · b of a scan's running value a and an element b, with a's NaN when both are
 * NaN. x64's scalar add and mul return their first operand's NaN then, and V8's optimizing
 * tier may swap a scalar add's or mul's operands (to fold a load) where its baseline tier does
 * not, so a call's NaN bits changed when its code tiered up (a bfloat16 CumSum gave 0xffc0,
 * then 0x7fc0 for the same call). The vector add and mul keep their operands' order, the
 * running value first; this pins the scalar ones to it. a + a quietens a as the add would.
 */
@inline function nanFirst<T>(a: T, r: T): T {
  return a != a ? a + a : r;
}

/** logaddexp(a, b) = max + log1p(exp(−|a − b|)); a == b (including ±Inf) gives a + ln 2. */
function laeF64(a: f64, b: f64): f64 {
  if (a == b) return a + LN2;
  const m = max<f64>(a, b);
  return m + Math.log1p(Math.exp(-Math.abs(a - b)));
}

// In SIMD builds the float max / min / logaddexp of one element go through the vector
// instructions too (one lane used), so that an element's result, NaN bits included, does not
// depend on whether it falls in a vector or in a scalar tail: the fused scan along a
// non-innermost dim splits each row of I lanes, the callable combiner run step by step its
// whole slice, and they must agree bit for bit. (Engines give f32.max and f32x4.max different
// NaN bits — V8 on x64: the scalar one sets the sign; the logaddexp tails used libm and
// differed by a few ulps.) add / mul: see nanFirst.
@inline function sop<T, O>(a: T, b: T): T {
  if (sizeof<O>() == 1) {
    if (isSigned<O>()) {
      if (ASC_FEATURE_SIMD && isFloat<T>()) return v128.extract_lane<T>(v128.max<T>(v128.splat<T>(a), v128.splat<T>(b)), 0);
      return max<T>(a, b);
    } else {
      if (isFloat<T>()) return nanFirst<T>(a, a + b);
      return a + b;
    }
  } else if (sizeof<O>() == 2) {
    if (isSigned<O>()) {
      if (ASC_FEATURE_SIMD && isFloat<T>()) return v128.extract_lane<T>(v128.min<T>(v128.splat<T>(a), v128.splat<T>(b)), 0);
      return min<T>(a, b);
    } else {
      if (isFloat<T>()) return nanFirst<T>(a, a * b);
      return a * b;
    }
  } else {
    if (isFloat<T>()) {
      // SIMD builds: the vector lanes' exp / log1p polynomials (see above)
      if (ASC_FEATURE_SIMD) {
        if (sizeof<T>() == 4) return <T>f32x4.extract_lane(laeF32x4Call(f32x4.splat(<f32>a), f32x4.splat(<f32>b)), 0);
        return <T>f64x2.extract_lane(laeF64x2Call(f64x2.splat(<f64>a), f64x2.splat(<f64>b)), 0);
      }
      return <T>laeF64(<f64>a, <f64>b);
    } else {
      return a;
    }
  }
}

/** The first output of an exclusive scan without init: the identity, except +0.0 (not −0.0)
 *  for float add, so that an exclusive cumulative sum starts at +0 as in ONNX / NumPy. It is
 *  written, never carried: the carry starts at the identity, so that y[1] = x[0] exactly
 *  (+0.0 + x[0] would turn x[0] = −0.0 into +0.0; ONNX's reference keeps the −0). */
@inline function seed<T, O>(): T {
  if (seedIsNotIdentity<T, O>()) {
    return <T>0.0;
  } else {
    return identity<T, O>();
  }
}

/** Float add, the one scan whose seed (+0) differs from its identity (−0). */
@inline function seedIsNotIdentity<T, O>(): bool {
  return isFloat<T>() && sizeof<O>() == 1 && !isSigned<O>();
}

@inline function identity<T, O>(): T {
  if (sizeof<O>() == 1) {
    if (isSigned<O>()) {
      if (isFloat<T>()) return <T>(-Infinity); // max
      if (sizeof<T>() == 8) return <T>i64.MIN_VALUE;
      return <T>i32.MIN_VALUE;
    } else {
      if (isFloat<T>()) return <T>(-0.0); else return <T>0; // add
    }
  } else if (sizeof<O>() == 2) {
    if (isSigned<O>()) {
      if (isFloat<T>()) return <T>Infinity; // min
      if (sizeof<T>() == 8) return <T>i64.MAX_VALUE;
      return <T>i32.MAX_VALUE;
    } else {
      return <T>1; // mul
    }
  } else {
    return <T>(-Infinity); // logaddexp
  }
}

// ---- vector operations -----------------------------------------------------------

// MAGIC = 1.5 · 2^23: for |y| < 2^22, y + MAGIC rounds y to the nearest integer n (ties to
// even, the current rounding mode) and holds n in the low bits of its pattern:
// bits(y + MAGIC) = bits(MAGIC) + n. So one add gives both n (as (y + MAGIC) − MAGIC) and
// 2^n's exponent field ((bits + 127 − bits(MAGIC)) << 23) without a float → int conversion.
// @ts-ignore: decorator
@inline const MAGIC_F32: f32 = 12582912.0;
// @ts-ignore: decorator
@inline const MAGIC_BITS: i32 = 0x4b400000;
// the same for float64: 1.5 · 2^52
// @ts-ignore: decorator
@inline const MAGIC_F64: f64 = 6755399441055744.0;
// @ts-ignore: decorator
@inline const MAGIC_BITS64: i64 = 0x4338000000000000;

/** a + b·x (Estrin's scheme pairs two coefficients of a polynomial in x this way). */
@inline function pairF32(x: v128, a: f64, b: f64): v128 {
  return f32x4.add(f32x4.mul(x, f32x4.splat(<f32>b)), f32x4.splat(<f32>a));
}
@inline function pairF64(x: v128, a: f64, b: f64): v128 {
  return f64x2.add(f64x2.mul(x, f64x2.splat(b)), f64x2.splat(a));
}

/** exp(d) for d ≤ 0 (NaN propagates), 4 × f32.
 *  d = n·ln2 + r with n = nearest(d/ln2), |r| ≤ ln2/2 (ln2 split hi+lo, so r is exact to
 *  ~2^-32); e^r by its Taylor polynomial to r^7 (truncation ≤ 0.347^8/8! ≈ 5e-9) evaluated
 *  by Estrin's scheme (pairs, then r², r⁴: a dependency chain of 4 multiply-adds instead of
 *  Horner's 7); 2^n built in the exponent field. d < −86 gives 0 (e^−86 ≈ 4.5e-38, so
 *  neither this nor log1p's e / (2 + e) is ever subnormal: x86 computes a subnormal result
 *  in a microcode assist ~100× slower, and logaddexp of far-apart values met them every
 *  step; dropping e^d < 4.5e-38 changes m + log1p(e^d) by far less than the error bound). */
@inline function expNegF32x4(d: v128): v128 {
  const dc = f32x4.pmax(d, f32x4.splat(-86.0)); // a NaN d stays (pmax(a, b) = a < b ? b : a)
  const t = f32x4.add(f32x4.mul(dc, f32x4.splat(1.4426950408889634)), f32x4.splat(MAGIC_F32));
  const n = f32x4.sub(t, f32x4.splat(MAGIC_F32));
  let r = f32x4.sub(dc, f32x4.mul(n, f32x4.splat(0.693145751953125)));
  r = f32x4.sub(r, f32x4.mul(n, f32x4.splat(1.428606765330187e-6)));
  // r² held at 2^-60 or more so that r⁴ cannot be subnormal (its term is then far below 1 ulp)
  const r2 = f32x4.pmax(f32x4.mul(r, r), f32x4.splat(8.673617379884035e-19)), r4 = f32x4.mul(r2, r2);
  const p01 = f32x4.add(r, f32x4.splat(1.0));
  const p23 = pairF32(r, 0.5, 1.0 / 6.0);
  const p45 = pairF32(r, 1.0 / 24.0, 1.0 / 120.0);
  const p67 = pairF32(r, 1.0 / 720.0, 1.0 / 5040.0);
  const p03 = f32x4.add(f32x4.mul(p23, r2), p01);
  const p47 = f32x4.add(f32x4.mul(p67, r2), p45);
  const p = f32x4.add(f32x4.mul(p47, r4), p03);
  const scale = i32x4.shl(i32x4.add(t, i32x4.splat(127 - MAGIC_BITS)), 23);
  const e = f32x4.mul(p, scale);
  return v128.andnot(e, f32x4.lt(d, f32x4.splat(-86.0)));
}

/** log1p(e) for e in [0, 1], 4 × f32: log1p(e) = 2·atanh(s), s = e / (2 + e) ∈ [0, 1/3],
 *  atanh(s) = s·(1 + z/3 + z²/5 + … + z⁶/13), z = s² (truncation ≤ 2·(1/3)^15/15 ≈ 1e-8,
 *  and relative accuracy is kept for tiny e since s ≈ e/2), the polynomial in z by Estrin's
 *  scheme. z comes from s raised to at least 2^-15, so z⁴ ≥ 2^-120 is never subnormal (a
 *  slow assist on x86, from |a − b| > 10 on); below that the polynomial is 1 either way. */
@inline function log1pUnitF32x4(e: v128): v128 {
  const s = f32x4.div(e, f32x4.add(e, f32x4.splat(2.0)));
  const sc = f32x4.pmax(s, f32x4.splat(3.0517578125e-5)); // 2^-15; a NaN s stays
  const z = f32x4.mul(sc, sc), z2 = f32x4.mul(z, z), z4 = f32x4.mul(z2, z2);
  const q01 = pairF32(z, 1.0, 1.0 / 3.0);
  const q23 = pairF32(z, 1.0 / 5.0, 1.0 / 7.0);
  const q45 = pairF32(z, 1.0 / 9.0, 1.0 / 11.0);
  const q03 = f32x4.add(f32x4.mul(q23, z2), q01);
  const q46 = f32x4.add(f32x4.mul(f32x4.splat(1.0 / 13.0), z2), q45);
  const q = f32x4.add(f32x4.mul(q46, z4), q03);
  return f32x4.mul(f32x4.add(s, s), q);
}

/** logaddexp, 4 × f32 (see laeF64 for the special cases). m = pmax(a, b) (one
 *  instruction, where wasm's max is eight on x64) is exact for a ≠ b; a NaN argument makes
 *  d = −|a − b| NaN, which the exp and log1p carry into the result. */
@inline function laeF32x4(a: v128, b: v128): v128 {
  const m = f32x4.pmax(a, b);
  const d = f32x4.neg(f32x4.abs(f32x4.sub(a, b)));
  const r = f32x4.add(m, log1pUnitF32x4(expNegF32x4(d)));
  const same = f32x4.add(a, f32x4.splat(<f32>LN2));
  return v128.bitselect(same, r, f32x4.eq(a, b));
}

/** exp(d) for d ≤ 0 (NaN propagates), 2 × f64: as expNegF32x4 with fdlibm's ln2 split
 *  (ln2_hi has 32 trailing zero bits, so n·ln2_hi is exact for |n| < 2^20), the Taylor
 *  polynomial to r^13 (truncation ≤ 0.347^14/14! ≈ 4e-18) by Estrin's scheme (a chain of 4
 *  multiply-adds instead of 13; r² held at 2^-100 or more so r⁸ stays normal), n and 2^n by
 *  the 1.5·2^52 rounding trick. d < −700 gives 0 (e^−700 ≈ 1e-304: neither this nor
 *  log1p's e / (2 + e) is ever subnormal, see expNegF32x4). */
@inline function expNegF64x2(d: v128): v128 {
  const dc = f64x2.pmax(d, f64x2.splat(-700.0)); // a NaN d stays
  const t = f64x2.add(f64x2.mul(dc, f64x2.splat(1.4426950408889634)), f64x2.splat(MAGIC_F64));
  const n = f64x2.sub(t, f64x2.splat(MAGIC_F64));
  let r = f64x2.sub(dc, f64x2.mul(n, f64x2.splat(6.93147180369123816490e-01)));
  r = f64x2.sub(r, f64x2.mul(n, f64x2.splat(1.90821492927058770002e-10)));
  const r2 = f64x2.pmax(f64x2.mul(r, r), f64x2.splat(7.888609052210118e-31)); // 2^-100
  const r4 = f64x2.mul(r2, r2), r8 = f64x2.mul(r4, r4);
  const q0 = f64x2.add(r, f64x2.splat(1.0));
  const q1 = pairF64(r, 0.5, 1.0 / 6.0);
  const q2 = pairF64(r, 1.0 / 24.0, 1.0 / 120.0);
  const q3 = pairF64(r, 1.0 / 720.0, 1.0 / 5040.0);
  const q4 = pairF64(r, 1.0 / 40320.0, 1.0 / 362880.0);
  const q5 = pairF64(r, 1.0 / 3628800.0, 1.0 / 39916800.0);
  const q6 = pairF64(r, 1.0 / 479001600.0, 1.0 / 6227020800.0);
  const s0 = f64x2.add(f64x2.mul(q1, r2), q0), s1 = f64x2.add(f64x2.mul(q3, r2), q2);
  const s2 = f64x2.add(f64x2.mul(q5, r2), q4);
  const t0 = f64x2.add(f64x2.mul(s1, r4), s0), t1 = f64x2.add(f64x2.mul(q6, r4), s2);
  const p = f64x2.add(f64x2.mul(t1, r8), t0);
  const scale = i64x2.shl(i64x2.add(t, i64x2.splat(1023 - MAGIC_BITS64)), 52);
  return v128.andnot(f64x2.mul(p, scale), f64x2.lt(d, f64x2.splat(-700.0)));
}

/** log1p(e) for e in [0, 1], 2 × f64: 2·atanh(e / (2 + e)) as in log1pUnitF32x4, the series
 *  to s^33 (next term ≤ 2·(1/3)^35/35 ≈ 1e-18, below half an ulp of log 2), in z = s² by
 *  Estrin's scheme (a chain of 5 multiply-adds instead of 16); z from s raised to at least
 *  2^-31, so z¹⁶ ≥ 2^-992 stays normal (below, the polynomial is 1 either way). */
@inline function log1pUnitF64x2(e: v128): v128 {
  const s = f64x2.div(e, f64x2.add(e, f64x2.splat(2.0)));
  const sc = f64x2.pmax(s, f64x2.splat(4.656612873077393e-10)); // 2^-31; a NaN s stays
  const z = f64x2.mul(sc, sc), z2 = f64x2.mul(z, z), z4 = f64x2.mul(z2, z2), z8 = f64x2.mul(z4, z4), z16 = f64x2.mul(z8, z8);
  const u0 = pairF64(z, 1.0, 1.0 / 3.0);
  const u1 = pairF64(z, 1.0 / 5.0, 1.0 / 7.0);
  const u2 = pairF64(z, 1.0 / 9.0, 1.0 / 11.0);
  const u3 = pairF64(z, 1.0 / 13.0, 1.0 / 15.0);
  const u4 = pairF64(z, 1.0 / 17.0, 1.0 / 19.0);
  const u5 = pairF64(z, 1.0 / 21.0, 1.0 / 23.0);
  const u6 = pairF64(z, 1.0 / 25.0, 1.0 / 27.0);
  const u7 = pairF64(z, 1.0 / 29.0, 1.0 / 31.0);
  const v0 = f64x2.add(f64x2.mul(u1, z2), u0), v1 = f64x2.add(f64x2.mul(u3, z2), u2);
  const v2 = f64x2.add(f64x2.mul(u5, z2), u4), v3 = f64x2.add(f64x2.mul(u7, z2), u6);
  const w0 = f64x2.add(f64x2.mul(v1, z4), v0), w1 = f64x2.add(f64x2.mul(v3, z4), v2);
  const x0 = f64x2.add(f64x2.mul(w1, z8), w0);
  const q = f64x2.add(f64x2.mul(f64x2.splat(1.0 / 33.0), z16), x0);
  return f64x2.mul(f64x2.add(s, s), q);
}

/** logaddexp, 2 × f64 (see laeF64 for the special cases; as laeF32x4: pmax, NaN through d). */
@inline function laeF64x2(a: v128, b: v128): v128 {
  const m = f64x2.pmax(a, b);
  const d = f64x2.neg(f64x2.abs(f64x2.sub(a, b)));
  const r = f64x2.add(m, log1pUnitF64x2(expNegF64x2(d)));
  const same = f64x2.add(a, f64x2.splat(LN2));
  return v128.bitselect(same, r, f64x2.eq(a, b));
}

// logaddexp out of line: the in-register prefix scans apply the op at several sites per
// vector; inlining exp/log1p at each of them cost ~40 KB of code for a few % of speed.
function laeF32x4Call(a: v128, b: v128): v128 {
  return laeF32x4(a, b);
}
function laeF64x2Call(a: v128, b: v128): v128 {
  return laeF64x2(a, b);
}

/** As vop, with logaddexp as a call (for the code-heavy in-register scans). */
@inline function vopSmall<T, O>(a: v128, b: v128): v128 {
  if (sizeof<O>() == 4 && isFloat<T>()) {
    if (sizeof<T>() == 4) return laeF32x4Call(a, b);
    return laeF64x2Call(a, b);
  }
  return vop<T, O>(a, b);
}

@inline function vop<T, O>(a: v128, b: v128): v128 {
  if (sizeof<O>() == 1) {
    if (isSigned<O>()) {
      // int64: wasm has no i64x2.max / min; a compare and a select (2 instructions)
      if (sizeof<T>() == 8 && !isFloat<T>()) return v128.bitselect(a, b, i64x2.gt_s(a, b));
      return v128.max<T>(a, b);
    } else {
      return v128.add<T>(a, b);
    }
  } else if (sizeof<O>() == 2) {
    if (isSigned<O>()) {
      if (sizeof<T>() == 8 && !isFloat<T>()) return v128.bitselect(a, b, i64x2.lt_s(a, b));
      return v128.min<T>(a, b);
    } else {
      return v128.mul<T>(a, b);
    }
  } else {
    if (isFloat<T>()) {
      if (sizeof<T>() == 4) {
        return laeF32x4(a, b);
      } else {
        // float64 logaddexp out of line: inlined into every float64 scan loop it made that
        // one instantiation ~20 KB of the module (a call per 2 lanes costs little next to
        // the exp/log1p polynomials it wraps)
        return laeF64x2Call(a, b);
      }
    } else {
      return a;
    }
  }
}

/** [id, v0, v1, v2] (4 lanes) or [id, v0] (2 lanes): shift one lane towards the end. */
@inline function shiftUp1<T>(v: v128, id: v128): v128 {
  if (sizeof<T>() == 4) {
    return i8x16.shuffle(id, v, 0, 1, 2, 3, 16, 17, 18, 19, 20, 21, 22, 23, 24, 25, 26, 27);
  } else {
    return i8x16.shuffle(id, v, 0, 1, 2, 3, 4, 5, 6, 7, 16, 17, 18, 19, 20, 21, 22, 23);
  }
}

/** [v1, v2, v3, id] or [v1, id]: shift one lane towards the start. */
@inline function shiftDown1<T>(v: v128, id: v128): v128 {
  if (sizeof<T>() == 4) {
    return i8x16.shuffle(v, id, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19);
  } else {
    return i8x16.shuffle(v, id, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22, 23);
  }
}

@inline function bcastLast<T>(v: v128): v128 {
  if (sizeof<T>() == 4) {
    return i8x16.shuffle(v, v, 12, 13, 14, 15, 12, 13, 14, 15, 12, 13, 14, 15, 12, 13, 14, 15);
  } else {
    return i8x16.shuffle(v, v, 8, 9, 10, 11, 12, 13, 14, 15, 8, 9, 10, 11, 12, 13, 14, 15);
  }
}

@inline function bcastFirst<T>(v: v128): v128 {
  if (sizeof<T>() == 4) {
    return i8x16.shuffle(v, v, 0, 1, 2, 3, 0, 1, 2, 3, 0, 1, 2, 3, 0, 1, 2, 3);
  } else {
    return i8x16.shuffle(v, v, 0, 1, 2, 3, 4, 5, 6, 7, 0, 1, 2, 3, 4, 5, 6, 7);
  }
}

/**
 * Inclusive prefix (forward) or suffix (reverse) scan of the lanes of one vector. The shifted
 * vector (the elements before each lane in scan order) is the first operand: x64's vector add
 * keeps its first operand's NaN when both are NaN, so a NaN running sum keeps its own NaN as
 * in the sequential order (the later element's NaN won before, in the SIMD build only).
 */
@inline function scanInRegister<T, O>(v: v128, id: v128, rev: bool): v128 {
  if (sizeof<T>() == 4) {
    if (rev) {
      v = vopSmall<T, O>(shiftDown1<T>(v, id), v);
      return vopSmall<T, O>(i8x16.shuffle(v, id, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22, 23), v);
    }
    v = vopSmall<T, O>(shiftUp1<T>(v, id), v);
    return vopSmall<T, O>(i8x16.shuffle(id, v, 0, 1, 2, 3, 4, 5, 6, 7, 16, 17, 18, 19, 20, 21, 22, 23), v);
  } else {
    if (rev) return vopSmall<T, O>(shiftDown1<T>(v, id), v);
    return vopSmall<T, O>(shiftUp1<T>(v, id), v);
  }
}

// ---- generic drivers ---------------------------------------------------------------

/** dst[i] = op(a[i], b[i]) for i < n; a == 0 means a copy of b (op(identity, b) == b).
 *  small: logaddexp as a call (vopSmall; the same bits), for a row done once per lane group. */
@inline function rowOp<T, O>(dst: usize, a: usize, b: usize, n: usize, small: bool = false): void {
  if (a == 0) {
    memory.copy(dst, b, n * sizeof<T>());
    return;
  }
  let i: usize = 0;
  if (ASC_FEATURE_SIMD) {
    const L: usize = 16 / sizeof<T>();
    for (; i + L <= n; i += L) {
      const k = i * sizeof<T>();
      const va = v128.load(a + k), vb = v128.load(b + k);
      v128.store(dst + k, small ? vopSmall<T, O>(va, vb) : vop<T, O>(va, vb));
    }
  }
  for (; i < n; i++) {
    const k = i * sizeof<T>();
    store<T>(dst + k, sop<T, O>(load<T>(a + k), load<T>(b + k)));
  }
}

@inline function fillRow<T>(dst: usize, v: T, n: usize): void {
  for (let i: usize = 0; i < n; i++) store<T>(dst + i * sizeof<T>(), v);
}

/** I > 1: every step is one row operation over the I lanes. */
@inline function scanLanes<T, O>(x: usize, y: usize, init: usize, last: usize, outer: usize, N: usize, I: usize, rev: bool, excl: bool): void {
  const rowBytes = I * sizeof<T>();
  const id = identity<T, O>();
  for (let o: usize = 0; o < outer; o++) {
    const xb = x + o * N * rowBytes, yb = y + o * N * rowBytes;
    const ib: usize = init == 0 ? <usize>0 : init + o * rowBytes;
    let prevY: usize = 0, prevX: usize = 0;
    // exclusive: the carry before prevX — init's row, or 0 (the identity: rowOp copies) until
    // the second step, so y[1] = x[0] and not seed + x[0] (see seed)
    let carry: usize = ib;
    for (let s: usize = 0; s < N; s++) {
      const t = rev ? N - 1 - s : s;
      const xt = xb + t * rowBytes, yt = yb + t * rowBytes;
      if (excl) {
        if (s == 0) {
          if (ib != 0) memory.copy(yt, ib, rowBytes);
          else fillRow<T>(yt, seed<T, O>(), I);
        } else {
          rowOp<T, O>(yt, carry, prevX, I);
          carry = yt;
        }
      } else {
        rowOp<T, O>(yt, s == 0 ? ib : prevY, xt, I);
      }
      prevY = yt;
      prevX = xt;
    }
    if (last != 0) {
      const lt = last + o * rowBytes;
      if (N == 0) {
        if (ib != 0) memory.copy(lt, ib, rowBytes);
        else fillRow<T>(lt, id, I);
      } else if (excl) {
        rowOp<T, O>(lt, carry, prevX, I, true);
      } else {
        memory.copy(lt, prevY, rowBytes);
      }
    }
  }
}

// ---- logaddexp along a long contiguous run: chunks side by side ---------------------

// The in-register prefix scan spends 7 logaddexps per 8 elements, each a latency chain of a
// dozen multiply-adds, and the run's carry passes through one of them every 8 elements. A
// long run instead goes in two passes: (1) it is cut into K = 4·lanes chunks, scanned side
// by side, lane l of vector g holding chunk g·lanes + l (4 vectors of independent chains, so
// their latencies overlap); (2) each chunk after the first takes the carry of all before it,
// y = logaddexp(C_q, y) over contiguous memory, C_q+1 = its last element. About 2 vector
// logaddexps per `lanes` elements instead of 7 per 8, and no loop-carried chain in pass 2.
// The order of operations changes (as in the in-register scan): errors stay within a few
// ulps of the value, logaddexp being contracting in its carry.
// @ts-ignore: decorator
@inline const LAE_RUN_MIN: usize = 1024; // shorter runs: the in-register scan

// lane l of vector g reads / writes the element at byte address p + (g·L + l)·dq
// @ts-ignore: decorator
@inline function gatherRun<T>(p: isize, dq: isize, g: isize): v128 {
  if (sizeof<T>() == 4) {
    const b = p + g * 4 * dq;
    let v = v128.load32_zero(<usize>b);
    v = v128.load32_lane(<usize>(b + dq), v, 1);
    v = v128.load32_lane(<usize>(b + 2 * dq), v, 2);
    return v128.load32_lane(<usize>(b + 3 * dq), v, 3);
  }
  const b = p + g * 2 * dq;
  return v128.load64_lane(<usize>(b + dq), v128.load64_zero(<usize>b), 1);
}
// @ts-ignore: decorator
@inline function scatterRun<T>(p: isize, dq: isize, g: isize, v: v128): void {
  if (sizeof<T>() == 4) {
    const b = p + g * 4 * dq;
    v128.store32_lane(<usize>b, v, 0);
    v128.store32_lane(<usize>(b + dq), v, 1);
    v128.store32_lane(<usize>(b + 2 * dq), v, 2);
    v128.store32_lane(<usize>(b + 3 * dq), v, 3);
  } else {
    const b = p + g * 2 * dq;
    v128.store64_lane(<usize>b, v, 0);
    v128.store64_lane(<usize>(b + dq), v, 1);
  }
}

/** Inclusive logaddexp scan of one run of N ≥ LAE_RUN_MIN elements (reverse: from the end), carry c in; returns the final carry. */
function laeRun<T>(xb: usize, yb: usize, c: T, N: usize, rev: bool): T {
  const sz = <isize>sizeof<T>();
  const L = <usize>16 / sizeof<T>();
  const K: usize = 4 * L; // chunks
  const Lc = N / K; // elements per chunk (the last N − K·Lc run after pass 2)
  const step: isize = rev ? -sz : sz; // one element on in scan order
  const dq: isize = <isize>Lc * step; // one chunk on
  const first: isize = rev ? <isize>(N - 1) * sz : 0; // scan index 0
  // pass 1
  const none = v128.splat<T>(<T>(-Infinity)); // logaddexp(−∞, x) = x exactly
  let a0 = v128.replace_lane<T>(none, 0, c), a1 = none, a2 = none, a3 = none;
  let px = <isize>xb + first, py = <isize>yb + first;
  for (let j: usize = 0; j < Lc; j++) {
    a0 = vop<T, OpLae>(a0, gatherRun<T>(px, dq, 0));
    a1 = vop<T, OpLae>(a1, gatherRun<T>(px, dq, 1));
    a2 = vop<T, OpLae>(a2, gatherRun<T>(px, dq, 2));
    a3 = vop<T, OpLae>(a3, gatherRun<T>(px, dq, 3));
    scatterRun<T>(py, dq, 0, a0);
    scatterRun<T>(py, dq, 1, a1);
    scatterRun<T>(py, dq, 2, a2);
    scatterRun<T>(py, dq, 3, a3);
    px += step;
    py += step;
  }
  // pass 2: chunk q covers scan indices [q·Lc, (q+1)·Lc), contiguous in memory either way
  // scan index i lives at byte yb + (rev ? N − 1 − i : i)·sz
  let C = load<T>(yb + (rev ? N - Lc : Lc - 1) * <usize>sz);
  for (let q: usize = 1; q < K; q++) {
    const lo = yb + (rev ? N - (q + 1) * Lc : q * Lc) * <usize>sz;
    const cv = v128.splat<T>(C);
    let k: usize = 0;
    const bytes = Lc * <usize>sz;
    for (; k + 16 <= bytes; k += 16) v128.store(lo + k, vop<T, OpLae>(cv, v128.load(lo + k)));
    for (; k < bytes; k += <usize>sz) store<T>(lo + k, sop<T, OpLae>(C, load<T>(lo + k)));
    C = load<T>(yb + (rev ? N - (q + 1) * Lc : (q + 1) * Lc - 1) * <usize>sz);
  }
  for (let i = K * Lc; i < N; i++) {
    const k = <usize>((rev ? <isize>(N - 1 - i) : <isize>i) * sz);
    C = sop<T, OpLae>(C, load<T>(xb + k));
    store<T>(yb + k, C);
  }
  return C;
}

/** I = 1: each lane is a contiguous run, scanned with an in-register prefix scan. */
@inline function scanRuns<T, O>(x: usize, y: usize, init: usize, last: usize, outer: usize, N: usize, rev: bool, excl: bool): void {
  const sz = sizeof<T>();
  const id = identity<T, O>();
  for (let o: usize = 0; o < outer; o++) {
    const xb = x + o * N * sz, yb = y + o * N * sz;
    // the carry starts at the identity; exclusive without init: y[first] = seed, written
    // after the loop (see seed)
    const fixFirst = seedIsNotIdentity<T, O>() && excl && init == 0 && N > 0;
    let c: T = init == 0 ? id : load<T>(init + o * sz);
    if (ASC_FEATURE_SIMD && sizeof<O>() == 4 && isFloat<T>() && !excl && N >= LAE_RUN_MIN) {
      c = laeRun<T>(xb, yb, c, N, rev);
      if (last != 0) store<T>(last + o * sz, c);
      continue;
    }
    const c0 = c;
    let i: usize = 0; // elements done
    // int64 runs go one element at a time: two lanes per vector buy an in-register scan
    // nothing over a scalar add (the loop is bound by memory either way), and its code was
    // 2.8 KB of the module for the four ops
    if (ASC_FEATURE_SIMD && (isFloat<T>() || sizeof<T>() == 4)) {
      const L: usize = 16 / sz;
      const idv = v128.splat<T>(id);
      let cv = v128.splat<T>(c);
      // Float add / mul re-associate inside a block, which can overflow where the sequential
      // order does not, or not where it does: [3e38, 3e38, −3e38, −3e38] gives 3e38 + 3e38 =
      // Inf then Inf − Inf = NaN, where the sequential sums are 3e38, Inf, Inf, Inf. nf sums
      // the outputs: once one is ±Inf or NaN, nf is ±Inf or NaN for good (Inf + finite = Inf,
      // Inf − Inf = NaN), and a run with a non-finite nf is scanned again sequentially below,
      // so specials come out as the reference's (finite runs keep the re-associated sums; a
      // sum of finite outputs that overflows only costs the run its sequential rescan).
      const CHECK = isFloat<T>() && sizeof<O>() <= 2 && !isSigned<O>();
      let nf = v128.splat<T>(0);
      // Two vectors per iteration: the second one's prefix is completed from the first
      // one's last lane before the carry is added, so the loop-carried chain is one op and
      // one shuffle per 2·L elements.
      if (!rev) {
        for (; i + 2 * L <= N; i += 2 * L) {
          const k = i * sz;
          const p1 = scanInRegister<T, O>(v128.load(xb + k), idv, false);
          const t1 = bcastLast<T>(p1);
          const p2 = vop<T, O>(t1, scanInRegister<T, O>(v128.load(xb + k, 16), idv, false));
          const q1 = vop<T, O>(cv, p1);
          const q2 = vop<T, O>(cv, p2);
          if (CHECK) nf = v128.add<T>(nf, v128.add<T>(q1, q2));
          if (excl) {
            v128.store(yb + k, vop<T, O>(cv, shiftUp1<T>(p1, idv)));
            v128.store(yb + k, vop<T, O>(cv, shiftUp1<T>(p2, t1)), 16);
          } else {
            v128.store(yb + k, q1);
            v128.store(yb + k, q2, 16);
          }
          cv = bcastLast<T>(q2);
        }
      } else {
        for (; i + 2 * L <= N; i += 2 * L) {
          const k = (N - i - 2 * L) * sz; // the lower block; the upper one is at k + 16
          const s1 = scanInRegister<T, O>(v128.load(xb + k, 16), idv, true);
          const t1 = bcastFirst<T>(s1);
          const s2 = vop<T, O>(t1, scanInRegister<T, O>(v128.load(xb + k), idv, true));
          const q1 = vop<T, O>(cv, s1);
          const q2 = vop<T, O>(cv, s2);
          if (CHECK) nf = v128.add<T>(nf, v128.add<T>(q1, q2));
          if (excl) {
            v128.store(yb + k, vop<T, O>(cv, shiftDown1<T>(s1, idv)), 16);
            v128.store(yb + k, vop<T, O>(cv, shiftDown1<T>(s2, t1)));
          } else {
            v128.store(yb + k, q1, 16);
            v128.store(yb + k, q2);
          }
          cv = bcastFirst<T>(q2);
        }
      }
      c = v128.extract_lane<T>(cv, 0);
      nf = v128.sub<T>(nf, nf); // NaN in a lane exactly where nf is not finite
      if (CHECK && v128.any_true(v128.ne<T>(nf, nf))) {
        i = 0;
        c = c0;
      }
    }
    for (; i < N; i++) {
      const k = (rev ? N - 1 - i : i) * sz;
      const nc = sop<T, O>(c, load<T>(xb + k));
      store<T>(yb + k, excl ? c : nc);
      c = nc;
    }
    if (fixFirst) store<T>(yb + (rev ? N - 1 : 0) * sz, seed<T, O>());
    if (last != 0) store<T>(last + o * sz, c);
  }
}

function scanAny<T, O>(x: usize, y: usize, init: usize, last: usize, O_: i32, N: i32, I: i32, flags: i32): void {
  const rev = (flags & 1) != 0, excl = (flags & 2) != 0;
  if (I == 1) scanRuns<T, O>(x, y, init, last, <usize>O_, <usize>N, rev, excl);
  else if (I > 1) scanLanes<T, O>(x, y, init, last, <usize>O_, <usize>N, <usize>I, rev, excl);
}

@inline function scanOps<T>(op: i32, x: usize, y: usize, init: usize, last: usize, O: i32, N: i32, I: i32, flags: i32): void {
  if (op == 0) scanAny<T, OpAdd>(x, y, init, last, O, N, I, flags);
  else if (op == 1) scanAny<T, OpMul>(x, y, init, last, O, N, I, flags);
  else if (op == 2) scanAny<T, OpMax>(x, y, init, last, O, N, I, flags);
  else if (op == 3) scanAny<T, OpMin>(x, y, init, last, O, N, I, flags);
  else if (isFloat<T>()) scanAny<T, OpLae>(x, y, init, last, O, N, I, flags);
}

/** Scan of float32 (O, N, I) along N: y = scan(op, init, x); last = final carry (O, I). */
export function scanF32(x: usize, y: usize, init: usize, last: usize, O: i32, N: i32, I: i32, op: i32, flags: i32): void {
  scanOps<f32>(op, x, y, init, last, O, N, I, flags);
}

/** As scanF32 for float64. */
export function scanF64(x: usize, y: usize, init: usize, last: usize, O: i32, N: i32, I: i32, op: i32, flags: i32): void {
  scanOps<f64>(op, x, y, init, last, O, N, I, flags);
}

/** As scanF32 for int32 (add and mul wrap modulo 2^32; op 4 is not available). */
export function scanI32(x: usize, y: usize, init: usize, last: usize, O: i32, N: i32, I: i32, op: i32, flags: i32): void {
  scanOps<i32>(op, x, y, init, last, O, N, I, flags);
}

/**
 * As scanI32 for int64 (two lanes per vector, as float64; add and mul wrap modulo 2^64, max /
 * min by a signed compare and a select). uint64 and uint32 add / mul run the int64 / int32
 * kernels: wrapping arithmetic gives the same bits whatever the signedness.
 */
export function scanI64(x: usize, y: usize, init: usize, last: usize, O: i32, N: i32, I: i32, op: i32, flags: i32): void {
  scanOps<i64>(op, x, y, init, last, O, N, I, flags);
}

/** Cumulative sum of int64 (wrapping), no init: CumSum-14 for int64. */
export function cumsumI64(x: usize, y: usize, O: i32, N: i32, I: i32, flags: i32): void {
  const rev = (flags & 1) != 0, excl = (flags & 2) != 0;
  const o_ = <usize>O, n = <usize>N, l = <usize>I;
  if (I == 1) {
    for (let o: usize = 0; o < o_; o++) {
      const xb = x + o * n * 8, yb = y + o * n * 8;
      let c: i64 = 0;
      for (let i: usize = 0; i < n; i++) {
        const k = (rev ? n - 1 - i : i) * 8;
        const nc = c + load<i64>(xb + k);
        store<i64>(yb + k, excl ? c : nc);
        c = nc;
      }
    }
    return;
  }
  const rowBytes = l * 8;
  for (let o: usize = 0; o < o_; o++) {
    const xb = x + o * n * rowBytes, yb = y + o * n * rowBytes;
    let prevY: usize = 0, prevX: usize = 0;
    for (let s: usize = 0; s < n; s++) {
      const t = rev ? n - 1 - s : s;
      const xt = xb + t * rowBytes, yt = yb + t * rowBytes;
      let a: usize, b: usize;
      if (excl) {
        if (s == 0) {
          memory.fill(yt, 0, rowBytes);
          prevY = yt;
          prevX = xt;
          continue;
        }
        a = prevY;
        b = prevX;
      } else {
        if (s == 0) {
          memory.copy(yt, xt, rowBytes);
          prevY = yt;
          prevX = xt;
          continue;
        }
        a = prevY;
        b = xt;
      }
      let i: usize = 0;
      if (ASC_FEATURE_SIMD) {
        for (; i + 2 <= l; i += 2) {
          const k = i * 8;
          v128.store(yt + k, i64x2.add(v128.load(a + k), v128.load(b + k)));
        }
      }
      for (; i < l; i++) {
        const k = i * 8;
        store<i64>(yt + k, load<i64>(a + k) + load<i64>(b + k));
      }
      prevY = yt;
      prevX = xt;
    }
  }
}

// ---- float16 / bfloat16 ------------------------------------------------------------

/** float16 bits → float32 (exact). */
@inline function f16ToF32(h: u32): f32 {
  const s = (h & 0x8000) << 16;
  const e = (h >> 10) & 0x1f;
  const m = h & 0x3ff;
  if (e == 0) {
    // subnormal or zero: m · 2^-24, exact in f32
    const v = <f32>m * reinterpret<f32>(<u32>0x33800000);
    return reinterpret<f32>(reinterpret<u32>(v) | s);
  }
  if (e == 31) return reinterpret<f32>(s | 0x7f800000 | (m << 13));
  return reinterpret<f32>(s | ((e + 112) << 23) | (m << 13));
}

/** float32 → float16 bits, round to nearest even; overflow → ±Inf; NaN stays NaN (quiet). */
@inline function f32ToF16(f: f32): u32 {
  const x = reinterpret<u32>(f);
  const s = (x >> 16) & 0x8000;
  const ax = x & 0x7fffffff;
  if (ax >= 0x7f800000) return s | 0x7c00 | (ax > 0x7f800000 ? 0x200 | ((ax >> 13) & 0x3ff) : 0);
  if (ax >= 0x477ff000) return s | 0x7c00; // ≥ 65520 rounds to Inf
  if (ax < 0x38800000) {
    // result subnormal (|f| < 2^-14): value / 2^-24 rounded to nearest even integer.
    // Adding 0.5 (in the f32 domain, 2^-1) aligns the f16 subnormal ulp with the f32
    // integer ulp of 0.5..1: the f32 addition itself rounds to nearest even.
    const v = reinterpret<f32>(ax) + 0.5;
    return s | (reinterpret<u32>(v) - 0x3f000000);
  }
  // normal: rebias exponent and round the 13 dropped mantissa bits to nearest even
  const odd = (ax >> 13) & 1;
  return s | ((ax + 0xc8000fff + odd) >> 13);
}

/** float32 → bfloat16 bits, round to nearest even; NaN stays NaN (quiet). */
@inline function f32ToBf16(f: f32): u32 {
  const x = reinterpret<u32>(f);
  if ((x & 0x7fffffff) > 0x7f800000) return (x >> 16) | 0x40;
  return (x + 0x7fff + ((x >> 16) & 1)) >> 16;
}

// SIMD twins of f32ToF16 / f32ToBf16 (same bits, NaN payloads included) and of the
// widening (f16BitsToF32V: exact, Inf / NaN kept), on i32 lanes holding one 16-bit code each.
@inline function f32ToF16V(f: v128): v128 {
  // the constants are read from F16N (a load each) rather than written as v128 constants:
  // 18 bytes of code for each of those at each of the ten uses, 1.3 KB of the module in all,
  // and the same speed (V8 rebuilds a v128 constant at each use inside a loop; see F16W)
  const c = F16N;
  const ax = v128.and(f, v128.load(c));
  const s = v128.and(i32x4.shr_u(f, 16), v128.load(c, 16));
  const nrm = i32x4.shr_u(i32x4.add(i32x4.add(ax, v128.load(c, 32)), v128.and(i32x4.shr_u(ax, 13), v128.load(c, 48))), 13);
  const half = v128.load(c, 64);
  const sub = i32x4.sub(f32x4.add(ax, half), half);
  let r = v128.bitselect(sub, nrm, i32x4.lt_s(ax, v128.load(c, 80)));
  r = v128.bitselect(v128.load(c, 96), r, i32x4.gt_s(ax, v128.load(c, 112)));
  const nan = v128.or(v128.load(c, 128), v128.and(i32x4.shr_u(ax, 13), v128.load(c, 144)));
  return v128.or(v128.bitselect(nan, r, i32x4.gt_s(ax, v128.load(c, 160))), s);
}
/** f32ToF16V's constants, one v128 each: abs mask, 0x8000, the rebias and round 0xc8000fff, 1,
 *  0.5 (whose bits are also the subnormal path's 0x3f000000), the smallest normal 0x38800000,
 *  0x7c00, the overflow bound 0x477fefff, 0x7e00, 0x3ff, Inf 0x7f800000 (0 in the scalar build). */
const F16N: usize = ASC_FEATURE_SIMD ? memory.data<u32>([
  0x7fffffff, 0x7fffffff, 0x7fffffff, 0x7fffffff, 0x8000, 0x8000, 0x8000, 0x8000,
  0xc8000fff, 0xc8000fff, 0xc8000fff, 0xc8000fff, 1, 1, 1, 1,
  0x3f000000, 0x3f000000, 0x3f000000, 0x3f000000, 0x38800000, 0x38800000, 0x38800000, 0x38800000,
  0x7c00, 0x7c00, 0x7c00, 0x7c00, 0x477fefff, 0x477fefff, 0x477fefff, 0x477fefff,
  0x7e00, 0x7e00, 0x7e00, 0x7e00, 0x3ff, 0x3ff, 0x3ff, 0x3ff,
  0x7f800000, 0x7f800000, 0x7f800000, 0x7f800000,
], 16) : 0;
@inline function f32ToBf16V(f: v128): v128 {
  const hi = i32x4.shr_u(f, 16);
  const r = i32x4.shr_u(i32x4.add(i32x4.add(f, i32x4.splat(0x7fff)), v128.and(hi, i32x4.splat(1))), 16);
  return v128.bitselect(v128.or(hi, i32x4.splat(0x40)), r, i32x4.gt_s(v128.and(f, i32x4.splat(0x7fffffff)), i32x4.splat(0x7f800000)));
}
/**
 * 4 float32 lanes rounded to float16's precision (nearest even), as float32: the exact float16
 * value, ±Inf on overflow, a NaN quiet. C = 1.5 · 2^(e+13), 2^e the lane's binade floored at
 * 2^−14 (below it float16's quantum stays 2^−24): v + C lies in C's float32 binade, whose ulp
 * is float16's quantum at v, so (v + C) − C is v rounded to it, ties to even (C is an even
 * number of quanta); a round up to 2^(e+1) is that binade's first value. For v at or past
 * 65520 this gives 65536 or more, which float16 rounds to Inf: r · 2^112 overflows to ±Inf
 * exactly when |r| ≥ 2^16, and the multiply back by 2^−112 is exact otherwise. A NaN lane's
 * C (its exponent field all ones, + 0x06c00000, wraps to a finite value) keeps it NaN, and
 * Inf stays Inf. The same values as roundHalf (a NaN keeps the low payload bits roundHalf
 * clears, which no encoding reads), ~10 operations per 4 lanes instead of the encoder and a
 * widening (~25). A float16 subnormal result costs a microcode assist in f16ExactBitsV on
 * x86 (a float32 subnormal product), as the widening's multiply does for subnormal inputs.
 */
@inline function roundF16V(v: v128, t: usize): v128 {
  const c = i32x4.add(i32x4.max_u(v128.and(v, v128.load(t)), v128.load(t, 16)), v128.load(t, 32));
  // (v + C) − C is +0 for v = −0 or a negative v that rounds to zero: v's sign goes back in
  // (every other result already has it, a NaN included)
  const r = v128.or(f32x4.sub(f32x4.add(v, c), c), v128.and(v, v128.load(t, 80)));
  return f32x4.mul(f32x4.mul(r, v128.load(t, 48)), v128.load(t, 64));
}
/**
 * The float16 bits of 4 float32 lanes holding float16 values (roundF16V's results: exact
 * values, ±Inf, quiet NaNs), sign-extended to i32 lanes for i16x8.narrow_i32x4_s. Times
 * 2^−112 a float16 value's float32 exponent field holds its float16 field (its top three bits
 * clear; all ones for Inf / NaN), and its top ten mantissa bits the float16 mantissa, float16
 * subnormals included (they become float32 subnormals, m · 2^13 · 2^−149). Shifted left by 3,
 * the 15 bits sit at 16–30; the sign goes back in at bit 31, and shr_s 16 moves them down.
 */
@inline function f16ExactBitsV(r: v128, t: usize): v128 {
  const s = f32x4.mul(r, v128.load(t, 64));
  return i32x4.shr_s(v128.bitselect(s, i32x4.shl(s, 3), v128.load(t, 80)), 16);
}
/** roundF16V's and f16ExactBitsV's constants, one v128 each: 0x7f800000, 0x38800000 (2^−14),
 *  0x06c00000 (C's offset from 2^e), 2^112, 2^−112, 0x80000000 (0 in the scalar build). */
const F16R: usize = ASC_FEATURE_SIMD ? memory.data<u32>([
  0x7f800000, 0x7f800000, 0x7f800000, 0x7f800000, 0x38800000, 0x38800000, 0x38800000, 0x38800000,
  0x06c00000, 0x06c00000, 0x06c00000, 0x06c00000, 0x77800000, 0x77800000, 0x77800000, 0x77800000,
  0x07800000, 0x07800000, 0x07800000, 0x07800000, 0x80000000, 0x80000000, 0x80000000, 0x80000000,
], 16) : 0;
/** 8 halves at p → two float32 vectors (low four, high four). */
@inline function halfToF32Lo(v: v128, bf16: bool): v128 {
  return bf16 ? i32x4.shl(i32x4.extend_low_i16x8_u(v), 16) : f16BitsToF32V(i32x4.extend_low_i16x8_s(v));
}
@inline function halfToF32Hi(v: v128, bf16: bool): v128 {
  return bf16 ? i32x4.shl(i32x4.extend_high_i16x8_u(v), 16) : f16BitsToF32V(i32x4.extend_high_i16x8_s(v));
}
/** Two float32 vectors → 8 halves. */
@inline function f32ToHalf8(a: v128, b: v128, bf16: bool): v128 {
  return bf16 ? i16x8.narrow_i32x4_u(f32ToBf16V(a), f32ToBf16V(b)) : i16x8.narrow_i32x4_u(f32ToF16V(a), f32ToF16V(b));
}

// @ts-ignore: decorator
@inline const HALF_CHUNK: usize = 1024; // float32 values of scanHalf's chunk buffer

/** Scratch bytes scanHalf needs for I lanes: the carries, then a chunk buffer (+16: halfChunkV
 *  reads a whole vector at the start of each row, up to 8 bytes past a full buffer's last one). */
export function scanHalfScratchBytes(I: i32): usize {
  return ((<usize>I * 4 + 15) & ~15) + HALF_CHUNK * 4 + 16;
}

/** n halves at src → float32 at dst. */
function halvesToF32(src: usize, dst: usize, n: usize, bf16: bool): void {
  let i: usize = 0;
  if (ASC_FEATURE_SIMD) {
    for (; i + 8 <= n; i += 8) {
      const v = v128.load(src + (i << 1));
      v128.store(dst + (i << 2), halfToF32Lo(v, bf16));
      v128.store(dst + (i << 2), halfToF32Hi(v, bf16), 16);
    }
  }
  for (; i < n; i++) {
    const h = <u32>load<u16>(src + (i << 1));
    store<f32>(dst + (i << 2), bf16 ? reinterpret<f32>(h << 16) : f16ToF32(h));
  }
}

/** n float32 at src → halves at dst. */
function f32ToHalves(src: usize, dst: usize, n: usize, bf16: bool): void {
  let i: usize = 0;
  if (ASC_FEATURE_SIMD) {
    for (; i + 8 <= n; i += 8) {
      v128.store(dst + (i << 1), f32ToHalf8(v128.load(src + (i << 2)), v128.load(src + (i << 2), 16), bf16));
    }
  }
  for (; i < n; i++) {
    const f = load<f32>(src + (i << 2));
    store<u16>(dst + (i << 1), <u16>(bf16 ? f32ToBf16(f) : f32ToF16(f)));
  }
}

/**
 * f rounded to the nearest float16 (bf16 false) or bfloat16 value (ties to even), as float32.
 * bfloat16: round the float32 bits at bit 16 (+0x7fff, +1 more when bit 16 is set, then drop
 * the low half); a carry out of the mantissa steps the exponent, up to Inf. A NaN stays NaN:
 * the sums' NaNs come from bfloat16 values, whose low 16 bits are 0. float16: through its
 * bits and back. (A branch-free float16 rounding, (f + C) − C with C = 1.5 · 2^(binade + 13),
 * exact too, made the one-lane scan, whose loop is this function's latency, 1.25× slower:
 * C's exponent came from the sum's bits on every step. The one-lane float16 sum keeps C
 * across steps instead, see halfAddRun.)
 */
@inline function roundHalf(f: f32, bf16: bool): f32 {
  if (bf16) {
    const b = reinterpret<u32>(f);
    return reinterpret<f32>((b + 0x7fff + ((b >> 16) & 1)) & 0xffff0000);
  }
  return f16ToF32(f32ToF16(f));
}

// scanHalf's loops come in two instantiations: add's (O = OpAdd: CumSum and the cumulative
// sum), and one for mul / max / min / logaddexp (O = OpRt) that tests the run-time op code at
// each operation. That test made the lanes scans of bfloat16 1.4–1.5× and of float16 1.15–1.3×
// slower than a loop with the add written in ((2048,2048) axis 0, same process); a copy of
// the loops for each of the five ops cost 15 KB of the module.
type OpRt = u64;
/** max and min (op 2, 3) pick one of their two half values, so the result needs no rounding;
 *  a NaN they return is quiet already (wasm's max / min give a canonical or arithmetic NaN),
 *  which the rounding would have made it. The paths below skip it for them: the same bits. */
@inline function picks<O>(op: i32): bool {
  return sizeof<O>() == 8 && (op == 2 || op == 3);
}
@inline function halfOp<O>(op: i32, a: f32, b: f32): f32 {
  if (sizeof<O>() == 8) {
    if (op == 1) return nanFirst<f32>(a, a * b);
    if (op == 2) return sop<f32, OpMax>(a, b);
    if (op == 3) return sop<f32, OpMin>(a, b);
    if (op == 4) return sop<f32, OpLae>(a, b);
    return nanFirst<f32>(a, a + b);
  }
  return sop<f32, O>(a, b);
}
@inline function halfVop<O>(op: i32, a: v128, b: v128): v128 {
  if (sizeof<O>() == 8) {
    if (op == 1) return f32x4.mul(a, b);
    if (op == 2) return v128.max<f32>(a, b);
    if (op == 3) return v128.min<f32>(a, b);
    if (op == 4) return laeF32x4Call(a, b);
    return f32x4.add(a, b);
  }
  return vopSmall<f32, O>(a, b);
}

/** One step of I ≥ 8 lanes: carry ← round(op(carry, x)), y ← the new carry (exclusive: the old one). */
@inline function halfRow<O>(op: i32, xb: usize, yb: usize, carry: usize, l: usize, excl: bool, b16: bool): void {
  let i: usize = 0;
  if (ASC_FEATURE_SIMD) {
    if (b16) for (; i + 8 <= l; i += 8) {
      const v = v128.load(xb + (i << 1));
      const cp = carry + (i << 2);
      const ca = v128.load(cp), cb = v128.load(cp, 16);
      const h = f32ToHalf8(halfVop<O>(op, ca, halfToF32Lo(v, true)), halfVop<O>(op, cb, halfToF32Hi(v, true)), true);
      v128.store(cp, halfToF32Lo(h, true));
      v128.store(cp, halfToF32Hi(h, true), 16);
      v128.store(yb + (i << 1), excl ? f32ToHalf8(ca, cb, true) : h);
    } else {
      // float16: rounded in float32 (roundF16V), the carry stored as is, y encoded from it
      const t = F16R;
      for (; i + 8 <= l; i += 8) {
        const v = v128.load(xb + (i << 1));
        const cp = carry + (i << 2);
        const ca = v128.load(cp), cb = v128.load(cp, 16);
        const w = F16W; // f16BitsToF32V's constants, loaded (not rebuilt in the loop)
        const xa = f16BitsToF32VC(i32x4.extend_low_i16x8_s(v), v128.load(w), v128.load(w, 16), v128.load(w, 32), v128.load(w, 48));
        const xb_ = f16BitsToF32VC(i32x4.extend_high_i16x8_s(v), v128.load(w), v128.load(w, 16), v128.load(w, 32), v128.load(w, 48));
        const va = halfVop<O>(op, ca, xa), vb = halfVop<O>(op, cb, xb_);
        const ra = picks<O>(op) ? va : roundF16V(va, t);
        const rb = picks<O>(op) ? vb : roundF16V(vb, t);
        v128.store(cp, ra);
        v128.store(cp, rb, 16);
        v128.store(yb + (i << 1), excl ? f32ToHalf8(ca, cb, false) : i16x8.narrow_i32x4_s(f16ExactBitsV(ra, t), f16ExactBitsV(rb, t)));
      }
    }
  }
  for (; i < l; i++) {
    const h = <u32>load<u16>(xb + (i << 1));
    const c = load<f32>(carry + (i << 2));
    const v = halfOp<O>(op, c, b16 ? reinterpret<f32>(h << 16) : f16ToF32(h));
    const nc = picks<O>(op) ? v : roundHalf(v, b16);
    store<u16>(yb + (i << 1), <u16>(b16 ? f32ToBf16(excl ? c : nc) : f32ToF16(excl ? c : nc)));
    store<f32>(carry + (i << 2), nc);
  }
}

/** m rows of l < 8 lanes widened at buf, scanned in place in scan order (one lane: the carry in a
 *  register); SIMD builds take halfChunkV for 2 ≤ l < 8. */
@inline function halfChunk<O>(op: i32, buf: usize, carry: usize, m: usize, l: usize, rev: bool, excl: bool, b16: bool): void {
  if (l == 1) {
    let c = load<f32>(carry);
    for (let s: usize = 0; s < m; s++) {
      const p = buf + ((rev ? m - 1 - s : s) << 2);
      const v = halfOp<O>(op, c, load<f32>(p));
      const nc = picks<O>(op) ? v : roundHalf(v, b16);
      store<f32>(p, excl ? c : nc);
      c = nc;
    }
    store<f32>(carry, c);
    return;
  }
  for (let s: usize = 0; s < m; s++) {
    const row = buf + (rev ? m - 1 - s : s) * l * 4;
    for (let i: usize = 0; i < l; i++) {
      const c = load<f32>(carry + (i << 2));
      const v = halfOp<O>(op, c, load<f32>(row + (i << 2)));
      const nc = picks<O>(op) ? v : roundHalf(v, b16);
      store<f32>(row + (i << 2), excl ? c : nc);
      store<f32>(carry + (i << 2), nc);
    }
  }
}

/** op(c, x) rounded to the storage type, 4 lanes: roundF16V, or bfloat16 through its bits and back (as halfRow). */
@inline function roundHalfV(v: v128, b16: bool, t: usize): v128 {
  return b16 ? i32x4.shl(f32ToBf16V(v), 16) : roundF16V(v, t);
}

/** Stores lanes 0 … l−1 (2 ≤ l < 8) at p: a holds lanes 0–3, b lanes l−4 … l−1 (for l > 4; the
 *  lanes both hold are equal). */
@inline function storeRow(p: usize, a: v128, b: v128, l: usize): void {
  if (l >= 4) {
    v128.store(p, a);
    if (l > 4) v128.store(p + ((l - 4) << 2), b);
  } else {
    v128.store64_lane(p, a, 0);
    if (l == 3) v128.store32_lane(p, a, 2, 8);
  }
}

/**
 * halfChunk for 2 ≤ l < 8 lanes with SIMD: the carries in one vector (lanes 0–3) or two (and lanes
 * l−4 … l−1: a lane in both is computed twice, the same way), a whole vector read at each row's
 * start (for l < 4 its last lanes are the next row's, computed and never stored). Each lane takes
 * the same operations as halfChunk's, whose scalar ops are the vector instructions' (see sop), and
 * roundHalfV is roundHalf's value: the same bits. Each step still waits for the one before (the
 * rounding's ~16-cycle chain for float16), but for up to 4 lanes at once: 0.31–0.82× the
 * scalar loop's time over the ops and lane counts. mul, max, min and logaddexp run here; add
 * runs in halfAddChunkV, which keeps most of that chain off each step.
 */
@inline function halfChunkV<O>(op: i32, buf: usize, carry: usize, m: usize, l: usize, rev: bool, excl: bool, b16: bool): void {
  const t = F16R;
  const hi = (l - 4) << 2, stride = l << 2;
  let ca = v128.load(carry);
  let cb = l > 4 ? v128.load(carry + hi) : ca;
  for (let s: usize = 0; s < m; s++) {
    const row = buf + (rev ? m - 1 - s : s) * stride;
    const va = halfVop<O>(op, ca, v128.load(row));
    const na = picks<O>(op) ? va : roundHalfV(va, b16, t);
    const vb = l > 4 ? halfVop<O>(op, cb, v128.load(row + hi)) : va;
    const nb = l > 4 ? (picks<O>(op) ? vb : roundHalfV(vb, b16, t)) : na;
    storeRow(row, excl ? ca : na, excl ? cb : nb, l);
    ca = na;
    cb = nb;
  }
  storeRow(carry, ca, cb, l);
}

/**
 * halfChunkV's add (CumSum, cumulative sums) with halfAddRun's band kept per lane: a lane's sum
 * v is rounded as (v + k) − k while lo ≤ |v| < hi, the band of the binade of normal numbers the
 * lane's last rounding through roundHalfV landed in (halfAddRun's derivation: the same bits).
 * A step with every lane in its band puts two float adds on the carry's chain after the add
 * itself, instead of roundHalfV's ~16 cycles (float16) or its trip through the bits
 * (bfloat16); a step with a lane outside takes roundHalfV for all and resets every lane's band
 * from its result (lo, halfBandHi, k). Lanes a vector holds past the row (l < 4: the next
 * row's, never stored) are left out of the test. The bands start empty (hi = 0).
 */
@inline function halfAddChunkV(buf: usize, carry: usize, m: usize, l: usize, rev: bool, excl: bool, b16: bool): void {
  const t = F16R, bt = HALF_BAND + (b16 ? 112 : 0);
  const hOff = (l - 4) << 2, stride = l << 2;
  const absMask = v128.load(HALF_BAND, 224);
  // lanes l … 3 of a row of l < 4: always "in band"
  const pad = l >= 4 ? i32x4.splat(0) : l == 3 ? i32x4(0, 0, 0, -1) : i32x4(0, 0, -1, -1);
  let ca = v128.load(carry);
  let cb = l > 4 ? v128.load(carry + hOff) : ca;
  let loA = i32x4.splat(0), hiA = loA, kA = loA;
  let loB = loA, hiB = loA, kB = loA;
  for (let s: usize = 0; s < m; s++) {
    const row = buf + (rev ? m - 1 - s : s) * stride;
    const va = f32x4.add(ca, v128.load(row));
    const vb = l > 4 ? f32x4.add(cb, v128.load(row + hOff)) : va;
    const aa = v128.and(va, absMask);
    let inBand = v128.or(v128.and(f32x4.ge(aa, loA), f32x4.lt(aa, hiA)), pad);
    if (l > 4) {
      const ab = v128.and(vb, absMask);
      inBand = v128.and(inBand, v128.and(f32x4.ge(ab, loB), f32x4.lt(ab, hiB)));
    }
    let na: v128, nb: v128;
    if (i32x4.all_true(inBand)) {
      na = f32x4.sub(f32x4.add(va, kA), kA);
      nb = l > 4 ? f32x4.sub(f32x4.add(vb, kB), kB) : na;
    } else {
      na = roundHalfV(va, b16, t);
      nb = l > 4 ? roundHalfV(vb, b16, t) : na;
      const ea = v128.and(na, v128.load(bt));
      loA = i32x4.sub(ea, v128.load(bt, 96));
      hiA = halfBandHi(ea, bt);
      kA = i32x4.add(ea, v128.load(bt, 48));
      if (l > 4) {
        const eb = v128.and(nb, v128.load(bt));
        loB = i32x4.sub(eb, v128.load(bt, 96));
        hiB = halfBandHi(eb, bt);
        kB = i32x4.add(eb, v128.load(bt, 48));
      }
    }
    storeRow(row, excl ? ca : na, excl ? cb : nb, l);
    ca = na;
    cb = nb;
  }
  storeRow(carry, ca, cb, l);
}
/** The top of the band of a rounded sum's binade 2^e (e: its exponent bits): 2^(e+1), capped
 *  at 65520 for float16's top binade (sums from there round to Inf); 0 (an empty band) where e
 *  is outside [emin, emax] (zeros, subnormals, Inf / NaN, bfloat16's binades from 2^112, where
 *  k would overflow). */
@inline function halfBandHi(e: v128, bt: usize): v128 {
  const ok = v128.and(i32x4.ge_s(e, v128.load(bt, 16)), i32x4.le_s(e, v128.load(bt, 32)));
  return v128.and(i32x4.min_u(i32x4.add(e, v128.load(bt, 80)), v128.load(bt, 64)), ok);
}
/** halfAddChunkV's constants, one v128 each, float16's seven then bfloat16's: the exponent mask
 *  0x7f800000, emin (the smallest normal's exponent bits), emax (the top binade with a band),
 *  k's offset from 2^e (k = 1.5 · 2^(e+13) or 1.5 · 2^(e+16)), the band top's cap (65520, or
 *  Inf: none), one binade 0x00800000, lo's offset below 2^e (2^e − lo = 2^(e−12) or 2^(e−9):
 *  0x1000 or 0x8000 off 2^e's bits); then the abs mask (0 in the scalar build). */
const HALF_BAND: usize = ASC_FEATURE_SIMD ? memory.data<u32>([
  0x7f800000, 0x7f800000, 0x7f800000, 0x7f800000, 0x38800000, 0x38800000, 0x38800000, 0x38800000,
  0x47000000, 0x47000000, 0x47000000, 0x47000000, 0x06c00000, 0x06c00000, 0x06c00000, 0x06c00000,
  0x477fe000, 0x477fe000, 0x477fe000, 0x477fe000, 0x00800000, 0x00800000, 0x00800000, 0x00800000,
  0x00001000, 0x00001000, 0x00001000, 0x00001000,
  0x7f800000, 0x7f800000, 0x7f800000, 0x7f800000, 0x00800000, 0x00800000, 0x00800000, 0x00800000,
  0x77000000, 0x77000000, 0x77000000, 0x77000000, 0x08400000, 0x08400000, 0x08400000, 0x08400000,
  0x7f800000, 0x7f800000, 0x7f800000, 0x7f800000, 0x00800000, 0x00800000, 0x00800000, 0x00800000,
  0x00008000, 0x00008000, 0x00008000, 0x00008000,
  0x7fffffff, 0x7fffffff, 0x7fffffff, 0x7fffffff,
], 16) : 0;

/**
 * float16 (b16 false) or bfloat16 (b16 true) add along one lane: while the sums stay in one
 * binade [2^e, hi) of normal numbers of the storage type, they are rounded as (v + C) − C with
 * C = 1.5 · 2^(e+13) for float16 and 1.5 · 2^(e+16) for bfloat16 (float32's ulp at v + C is
 * the storage type's quantum 2^(e−10) / 2^(e−7) there, and C is an even number of them, so the
 * hardware's ties-to-even is the storage type's; exact: the same bits as roundHalf at every
 * step for every pair of float16 or bfloat16 values [a, b] summed from 0): three float
 * operations on the carry's chain instead of the round trip through the bits, which only runs
 * when a sum leaves the band (and then sets the band to its binade). float16's hi is 65520 in
 * its top binade: from there on a sum rounds to Inf. lo is a quarter quantum q below 2^e: a v
 * in [2^e − q/4, 2^e) rounds to 2^e in the binade below (whose quantum is q/2, or q below the
 * smallest normal; ties to 2^e, the even one) and to 2^e with C too (nearer to it than to
 * 2^e − q), so a sum that sits at a power of two while small negative terms round back to it
 * stays in the band (random-sign data stuck there left it at every other step: mispredicted
 * branches). bfloat16's subnormals and its binades from 2^112 up (C would overflow) keep the
 * band empty. The band starts empty. (1-D float16
 * sums ~2× faster than roundHalf at every step. Holding the carry as c + C, one add on the
 * chain, measured no faster in this loop: its band test took the time it saved.) In SIMD
 * builds the steps go four at a time while they stay in the band (halfAddBlocks), and one at
 * a time here for the tail and after a block that does not: its four steps, or up to 64 when
 * blocks keep failing within two.
 */
@inline function halfAddRun(buf: usize, carry: usize, m: usize, rev: bool, excl: bool, b16: bool): void {
  let c = load<f32>(carry);
  let lo: f32 = 1, hi: f32 = 0, k: f32 = 0, qh: f32 = 0;
  let s: usize = 0, run: usize = 4;
  while (s < m) {
    if (ASC_FEATURE_SIMD && qh > 0) {
      const s0 = s;
      const C = halfAddBlocks(buf, m, s, c, lo, hi, k, qh, rev, excl);
      s = <usize>i32x4.extract_lane(C, 1);
      c = f32x4.extract_lane(C, 0);
      // fewer than two blocks before one failed: step longer before the next try (data full
      // of ties, or of sums that keep leaving their band, would otherwise pay a failed block,
      // a mispredicted branch, every few steps)
      run = s >= s0 + 8 ? 4 : min<usize>(run << 1, 64);
    }
    // step by step: the tail, or (SIMD) the steps from a block that left the band
    const stop = ASC_FEATURE_SIMD ? min<usize>(m, s + run) : m;
    for (; s < stop; s++) {
      const p = buf + ((rev ? m - 1 - s : s) << 2);
      let nc = nanFirst<f32>(c, c + load<f32>(p));
      const a = abs(nc);
      if (a >= lo && a < hi) nc = (nc + k) - k;
      else {
        nc = roundHalf(nc, b16);
        const e = reinterpret<u32>(abs(nc)) & 0x7f800000;
        if (e >= (b16 ? <u32>0x00800000 : <u32>0x38800000) && e <= (b16 ? <u32>0x77000000 : <u32>0x47000000)) {
          lo = reinterpret<f32>(e - (b16 ? 0x8000 : 0x1000)); // 2^e less a quarter quantum: see above
          hi = !b16 && e == 0x47000000 ? <f32>65520 : reinterpret<f32>(e + 0x00800000);
          k = reinterpret<f32>(e + (b16 ? 0x08400000 : 0x06c00000));
          // half the quantum, for halfAddBlocks (bfloat16's lowest binades: none, as it would
          // be a float32 subnormal)
          qh = b16 ? (e >= 0x04800000 ? reinterpret<f32>(e - 0x04000000) : 0) : reinterpret<f32>(e - 0x05800000);
        } else {
          lo = 1;
          hi = 0;
          qh = 0;
        }
      }
      store<f32>(p, excl ? c : nc);
      c = nc;
    }
  }
  store<f32>(carry, c);
}

/**
 * halfAddRun's steps four at a time, from step s while they stay in the band [lo, hi) (quantum
 * q = 2·qh, rounding constant k) of the carry c. Returns (the carry, as f32 bits; the first step
 * not done, as an i32) in lanes 0 and 1.
 *
 * Why the steps of a block can be summed side by side: c is a multiple of q (it lies in the band,
 * or at its top 2^(e+1) after rounding up). While every sum u_t = S_(t−1) + x_t of the block lies
 * in the band, S_t = round_q(u_t) = S_(t−1) + round_q(x_t) when x_t is not a tie, i.e. x_t / q is
 * not an integer plus 1/2 (rounding to the nearest multiple of q commutes with adding one). So
 * r_t = (x_t + k) − k (round_q(x_t) for the |x_t| < 2^(e+12) a band sum allows), the block's
 * sums are c plus the prefix sums of r (an in-register scan of 2 shifts and adds), and every
 * value in it is a multiple of q below 2^(e+4): exact in float32, in any order. Then the check,
 * for all four lanes, that x_t − r_t is not ±qh (no tie) and u_t = S_t − r_t + x_t is in the
 * band (u_t as float32 may round, but only lo itself could round into the band from outside, and
 * lo's rounding is the band's, see halfAddRun). A block that fails is left to halfAddRun's
 * steps; its stores are not made.
 */
@inline function halfAddBlocks(buf: usize, m: usize, s0: usize, c: f32, lo: f32, hi: f32, k: f32, qh: f32, rev: bool, excl: bool): v128 {
  const LO = f32x4.splat(lo), HI = f32x4.splat(hi), K = f32x4.splat(k), QH = f32x4.splat(qh);
  const absMask = i32x4.splat(0x7fffffff), zero = i32x4.splat(0);
  let C = f32x4.splat(c);
  let s = s0;
  for (; s + 4 <= m; s += 4) {
    const p = buf + ((rev ? m - 4 - s : s) << 2);
    let x = v128.load(p);
    if (rev) x = i32x4.shuffle(x, x, 3, 2, 1, 0);
    const r = f32x4.sub(f32x4.add(x, K), K);
    const s1 = f32x4.add(r, i32x4.shuffle(zero, r, 0, 4, 5, 6));
    const S = f32x4.add(C, f32x4.add(s1, i32x4.shuffle(zero, s1, 0, 1, 4, 5)));
    const prev = f32x4.sub(S, r);
    const u = v128.and(f32x4.add(prev, x), absMask);
    const tie = f32x4.eq(v128.and(f32x4.sub(x, r), absMask), QH);
    if (!i32x4.all_true(v128.andnot(v128.and(f32x4.ge(u, LO), f32x4.lt(u, HI)), tie))) break;
    let o = excl ? prev : S;
    if (rev) o = i32x4.shuffle(o, o, 3, 2, 1, 0);
    v128.store(p, o);
    C = i32x4.shuffle(S, S, 3, 3, 3, 3);
  }
  return i32x4.replace_lane(C, 1, <i32>s);
}

/**
 * Scan of float16 (flags bit 2 clear) or bfloat16 (bit 2 set) data, (O, N, I) along N, in the
 * storage type's arithmetic, as PyTorch's CPU ops and the ONNX reference (NumPy's cumsum,
 * ml_dtypes for bfloat16) compute it: every step's result is rounded to the storage type
 * (nearest even) before the next step. y = scan(op, init, x), last = the final carry (O, I);
 * op, init = 0 / last = 0, flags bits 0 (reverse) and 1 (exclusive) as for scanF32.
 * Each step is formed in float32 and then rounded once more. For add and mul that is the
 * correctly rounded result of the two half values, because float32's 24-bit significand is
 * at least 2p + 2 bits for both (p = 11 / 8), so double rounding cannot change it; max and
 * min pick one of their inputs; logaddexp is float32's (its polynomials, as scanF32), rounded.
 * So 3,000 float16 ones sum to 2,048 (2,048 + 1 rounds back to 2,048), as NumPy's do.
 * The carries are kept as float32 holding those exact half values. `carry`: scratch of
 * scanHalfScratchBytes(I) bytes (16-byte aligned): I carries, then a chunk buffer.
 * Rows of I ≥ 8 lanes are scanned a row at a time (SIMD: 8 lanes per vector); narrower
 * rows go a chunk of rows at a time: widened into the buffer with SIMD, scanned in order
 * there (2–7 lanes: their carries in vectors; one lane: in a register), rounded back with
 * SIMD. Either way every lane combines its values in the scan's
 * order, so the results are those of the plain scalar loop, bit for bit.
 */
export function scanHalf(x: usize, y: usize, init: usize, last: usize, carry: usize, O: i32, N: i32, I: i32, op: i32, flags: i32): void {
  const rev = (flags & 1) != 0, excl = (flags & 2) != 0, b16 = (flags & 4) != 0;
  const n = <usize>N, l = <usize>I;
  const buf = carry + ((l * 4 + 15) & ~15);
  // the carry starts at init, or the identity (−0 for add: y[1] = x[0], even for x[0] = −0);
  // an exclusive scan's first row, written from it, is set to the seed +0 after the row group
  // (as in scanRuns)
  const id: f32 = op == 0 ? -0.0 : op == 1 ? 1 : op == 3 ? Infinity : -Infinity;
  for (let o: usize = 0; o < <usize>O; o++) {
    if (init != 0) halvesToF32(init + o * l * 2, carry, l, b16);
    else for (let i: usize = 0; i < l; i++) store<f32>(carry + i * 4, id);
    if (l >= 8) {
      for (let s: usize = 0; s < n; s++) {
        const t = rev ? n - 1 - s : s;
        const xb = x + (o * n + t) * l * 2, yb = y + (o * n + t) * l * 2;
        if (op == 0) halfRow<OpAdd>(op, xb, yb, carry, l, excl, b16);
        else halfRow<OpRt>(op, xb, yb, carry, l, excl, b16);
      }
    } else if (l > 0) {
      // chunks of R whole rows (l < 8: R ≥ 128), from the scan's start (its end when reversed)
      const R = HALF_CHUNK / l;
      for (let c0: usize = 0; c0 < n; c0 += R) {
        const m = min<usize>(R, n - c0);
        const r0 = rev ? n - c0 - m : c0;
        const off = (o * n + r0) * l * 2, cnt = m * l;
        halvesToF32(x + off, buf, cnt, b16);
        // (SIMD builds reach the scalar calls with l = 1 only: the literal drops halfChunk's
        // loop over l lanes, and halfChunk<OpAdd>, from them)
        if (ASC_FEATURE_SIMD && l > 1) {
          if (op != 0) halfChunkV<OpRt>(op, buf, carry, m, l, rev, excl, b16);
          else halfAddChunkV(buf, carry, m, l, rev, excl, b16);
        } else if (op != 0) halfChunk<OpRt>(op, buf, carry, m, ASC_FEATURE_SIMD ? 1 : l, rev, excl, b16);
        else if (ASC_FEATURE_SIMD || l == 1) halfAddRun(buf, carry, m, rev, excl, b16);
        else halfChunk<OpAdd>(op, buf, carry, m, l, rev, excl, b16);
        f32ToHalves(buf, y + off, cnt, b16);
      }
    }
    if (excl && init == 0 && op == 0 && n > 0) memory.fill(y + (o * n + (rev ? n - 1 : 0)) * l * 2, 0, l * 2);
    if (last != 0) f32ToHalves(carry, last + o * l * 2, l, b16);
  }
}

// ---- linear recurrence -----------------------------------------------------------

@inline function linearAny<T>(a: usize, b: usize, h0: usize, hs: usize, last: usize, O: usize, N: usize, I: usize, rev: bool): void {
  const sz = sizeof<T>();
  const rowBytes = I * sz;
  for (let o: usize = 0; o < O; o++) {
    const off = o * N * rowBytes;
    let prev = h0 + o * rowBytes;
    for (let s: usize = 0; s < N; s++) {
      const t = rev ? N - 1 - s : s;
      const k0 = off + t * rowBytes;
      const at = a + k0, bt = b + k0, ht = hs + k0;
      let i: usize = 0;
      if (ASC_FEATURE_SIMD) {
        const L: usize = 16 / sz;
        for (; i + L <= I; i += L) {
          const k = i * sz;
          v128.store(ht + k, v128.add<T>(v128.mul<T>(v128.load(at + k), v128.load(prev + k)), v128.load(bt + k)));
        }
      }
      for (; i < I; i++) {
        const k = i * sz;
        store<T>(ht + k, load<T>(at + k) * load<T>(prev + k) + load<T>(bt + k));
      }
      prev = ht;
    }
    memory.copy(last + o * rowBytes, prev, rowBytes);
  }
}

/**
 * h_t = a_t · h_{t−1} + b_t (multiply, then add: no fused multiply-add) over float32
 * (O, N, I) along N, starting from h0 (O, I); hs (O, N, I) gets every h_t, last (O, I)
 * the final state (h0 when N = 0). flags bit 0: reverse. a, b, h0 may alias each other
 * but not hs or last.
 */
export function linearScanF32(a: usize, b: usize, h0: usize, hs: usize, last: usize, O: i32, N: i32, I: i32, flags: i32): void {
  linearAny<f32>(a, b, h0, hs, last, <usize>O, <usize>N, <usize>I, (flags & 1) != 0);
}

/** As linearScanF32 for float64. */
export function linearScanF64(a: usize, b: usize, h0: usize, hs: usize, last: usize, O: i32, N: i32, I: i32, flags: i32): void {
  linearAny<f64>(a, b, h0, hs, last, <usize>O, <usize>N, <usize>I, (flags & 1) != 0);
}
