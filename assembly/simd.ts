// Shared v128 helpers: a vectorized exp and tanh, horizontal sums, and loads that
// widen float16 / bfloat16 lanes to float32 in registers.
//
// Every function here is @inline and is only called inside `if (ASC_FEATURE_SIMD)`
// branches; the scalar equivalents (expScalar, f16ToF32Scalar …) serve the scalar build.
// Other modules may APPEND helpers to this file; keep existing signatures stable.

// ---- exp -------------------------------------------------------------------------
// exp(x) = 2^n · exp(r), n = nearest(x·log2 e), r = x − n·ln 2 with ln 2 split in a high
// part (exact in 9 bits, so n·C1 is exact for |n| < 2^15) and a low correction, so
// |r| ≤ ln2/2 is computed to full float32 precision. exp(r) is the Cephes expf minimax
// polynomial (relative error ≈ 1e-7 on that interval). 2^n is built directly as the float
// bits (n + 127) << 23, valid for n in [−126, 127]; x is clamped to [−87.3, 88.7] so n
// stays in range, and inputs below −87.3 (including −∞) give exactly 0, the value the
// softmax needs for a hidden key. NaN propagates.

// @ts-ignore: decorator
@inline const EXP_HI: f32 = 88.7;
// @ts-ignore: decorator
@inline const EXP_LO: f32 = -87.3;
// @ts-ignore: decorator
@inline const LOG2E: f32 = 1.44269504088896341;
// @ts-ignore: decorator
@inline const LN2_HI: f32 = 0.693359375;
// @ts-ignore: decorator
@inline const LN2_LO: f32 = -2.12194440e-4;
// @ts-ignore: decorator
@inline const P0: f32 = 1.9875691500e-4;
// @ts-ignore: decorator
@inline const P1: f32 = 1.3981999507e-3;
// @ts-ignore: decorator
@inline const P2: f32 = 8.3334519073e-3;
// @ts-ignore: decorator
@inline const P3: f32 = 4.1665795894e-2;
// @ts-ignore: decorator
@inline const P4: f32 = 1.6666665459e-1;
// @ts-ignore: decorator
@inline const P5: f32 = 5.0000001201e-1;
// @ts-ignore: decorator
@inline export const MAGIC: f32 = 12582912.0; // 1.5 · 2^23: x + MAGIC rounds x to an integer (|x| < 2^22)

/** exp of 4 float32 lanes (see the derivation above). */
// @ts-ignore: decorator
@inline export function expV(x: v128): v128 {
  // pmax / pmin (one instruction each, where max / min need a NaN and ±0 fix-up of about
  // eight): pmax(x, c) = x < c ? c : x and pmin(x, c) = c < x ? c : x pass a NaN x through
  const xc = f32x4.pmin(f32x4.pmax(x, f32x4.splat(EXP_LO)), f32x4.splat(EXP_HI));
  // nearest(xc·log2 e) without a float→int conversion: adding 1.5·2^23 leaves the rounded
  // integer (ties to even, as f32x4.nearest) in the low mantissa bits, |xc·log2 e| < 2^22
  const t = f32x4.add(f32x4.mul(xc, f32x4.splat(LOG2E)), f32x4.splat(MAGIC));
  const n = f32x4.sub(t, f32x4.splat(MAGIC));
  let r = f32x4.sub(xc, f32x4.mul(n, f32x4.splat(LN2_HI)));
  r = f32x4.sub(r, f32x4.mul(n, f32x4.splat(LN2_LO)));
  let y = f32x4.splat(P0);
  y = f32x4.add(f32x4.mul(y, r), f32x4.splat(P1));
  y = f32x4.add(f32x4.mul(y, r), f32x4.splat(P2));
  y = f32x4.add(f32x4.mul(y, r), f32x4.splat(P3));
  y = f32x4.add(f32x4.mul(y, r), f32x4.splat(P4));
  y = f32x4.add(f32x4.mul(y, r), f32x4.splat(P5));
  const r2 = f32x4.mul(r, r);
  y = f32x4.add(f32x4.add(f32x4.mul(y, r2), r), f32x4.splat(1.0));
  // t's bits are 0x4b400000 + n; shifted left by 23 the constant's bits leave the word,
  // so (bits(t) + 127) << 23 = (n + 127) << 23 = 2^n
  const pow2 = i32x4.shl(i32x4.add(t, i32x4.splat(127)), 23);
  const res = f32x4.mul(y, pow2);
  // x < EXP_LO (and −∞) → 0; NaN compares false and keeps the NaN from the arithmetic.
  return v128.andnot(res, f32x4.lt(x, f32x4.splat(EXP_LO)));
}

/** Scalar twin of expV (same polynomial, same clamping) for the scalar build and tails. */
// @ts-ignore: decorator
@inline export function expScalar(x: f32): f32 {
  if (x < EXP_LO) return 0;
  const xc = x > EXP_HI ? EXP_HI : x;
  const n = nearest<f32>(xc * LOG2E);
  let r = xc - n * LN2_HI;
  r = r - n * LN2_LO;
  let y = P0;
  y = y * r + P1;
  y = y * r + P2;
  y = y * r + P3;
  y = y * r + P4;
  y = y * r + P5;
  y = y * (r * r) + r + 1.0;
  return y * reinterpret<f32>((<i32>n + 127) << 23);
}

// ---- tanh ------------------------------------------------------------------------
// Cephes tanhf. For |x| < 0.625: tanh(x) = x + x·z·P(z), z = x², P of degree 4 (relative
// error ≈ 1e-7: the softcapped scores softcap · tanh(s / softcap) keep the relative
// accuracy of small s, which 1 − 2/(e^2x + 1) loses to cancellation: 1.4e-3 at s/cap = 3e-5).
// For |x| ≥ 0.625: sign(x) · (1 − 2 / (exp(2|x|) + 1)), no cancellation there; for |x| ≥ 9,
// exp(2|x|) > 6.5e7 and the result rounds to ±1 in float32. NaN propagates.
// @ts-ignore: decorator
@inline const TANH_P0: f32 = -5.70498872745e-3;
// @ts-ignore: decorator
@inline const TANH_P1: f32 = 2.06390887954e-2;
// @ts-ignore: decorator
@inline const TANH_P2: f32 = -5.37397155531e-2;
// @ts-ignore: decorator
@inline const TANH_P3: f32 = 1.33314422036e-1;
// @ts-ignore: decorator
@inline const TANH_P4: f32 = -3.33332819422e-1;

// @ts-ignore: decorator
@inline export function tanhV(x: v128): v128 {
  const sign = v128.and(x, i32x4.splat(0x80000000));
  const ax = v128.andnot(x, i32x4.splat(0x80000000));
  const e = expV(f32x4.mul(f32x4.pmin(ax, f32x4.splat(9.0)), f32x4.splat(2.0)));
  const big = v128.or(f32x4.sub(f32x4.splat(1.0), f32x4.div(f32x4.splat(2.0), f32x4.add(e, f32x4.splat(1.0)))), sign);
  const z = f32x4.mul(x, x);
  let p = f32x4.add(f32x4.mul(f32x4.splat(TANH_P0), z), f32x4.splat(TANH_P1));
  p = f32x4.add(f32x4.mul(p, z), f32x4.splat(TANH_P2));
  p = f32x4.add(f32x4.mul(p, z), f32x4.splat(TANH_P3));
  p = f32x4.add(f32x4.mul(p, z), f32x4.splat(TANH_P4));
  const small = f32x4.add(f32x4.mul(f32x4.mul(p, z), x), x);
  return v128.bitselect(small, big, f32x4.lt(ax, f32x4.splat(0.625)));
}

// @ts-ignore: decorator
@inline export function tanhScalar(x: f32): f32 {
  // NaN stays NaN (below, the clamp to 9 would make it 1, as tanhV's pmin does not)
  if (x != x) return x;
  const ax = x < 0 ? -x : x;
  if (ax < 0.625) {
    const z = x * x;
    return ((((TANH_P0 * z + TANH_P1) * z + TANH_P2) * z + TANH_P3) * z + TANH_P4) * z * x + x;
  }
  const e = expScalar((ax < 9.0 ? ax : <f32>9.0) * 2.0);
  const t: f32 = 1.0 - 2.0 / (e + 1.0);
  return x < 0 ? -t : t;
}

// ---- horizontal sums and maxima -------------------------------------------------

/** Sum of the 4 float32 lanes. */
// @ts-ignore: decorator
@inline export function hsum(v: v128): f32 {
  const s = f32x4.add(v, v128.shuffle<f32>(v, v, 2, 3, 0, 1));
  return f32x4.extract_lane(f32x4.add(s, v128.shuffle<f32>(s, s, 1, 0, 3, 2)), 0);
}

/** Maximum of the 4 float32 lanes (NaN-free inputs). */
// @ts-ignore: decorator
@inline export function hmax(v: v128): f32 {
  const s = f32x4.max(v, v128.shuffle<f32>(v, v, 2, 3, 0, 1));
  return f32x4.extract_lane(f32x4.max(s, v128.shuffle<f32>(s, s, 1, 0, 3, 2)), 0);
}

/** [Σa, Σb, Σc, Σd]: four horizontal sums at once. */
// @ts-ignore: decorator
@inline export function hsum4(a: v128, b: v128, c: v128, d: v128): v128 {
  const ab = f32x4.add(v128.shuffle<f32>(a, b, 0, 4, 1, 5), v128.shuffle<f32>(a, b, 2, 6, 3, 7)); // a0+a2 b0+b2 a1+a3 b1+b3
  const cd = f32x4.add(v128.shuffle<f32>(c, d, 0, 4, 1, 5), v128.shuffle<f32>(c, d, 2, 6, 3, 7));
  return f32x4.add(v128.shuffle<f32>(ab, cd, 0, 1, 4, 5), v128.shuffle<f32>(ab, cd, 2, 3, 6, 7));
}

/** [Σa, Σb, Σc, Σd] of int32 lanes (wrapping: the caller keeps each total below 2^31). */
// @ts-ignore: decorator
@inline export function hsum4i(a: v128, b: v128, c: v128, d: v128): v128 {
  const ab = i32x4.add(v128.shuffle<i32>(a, b, 0, 4, 1, 5), v128.shuffle<i32>(a, b, 2, 6, 3, 7));
  const cd = i32x4.add(v128.shuffle<i32>(c, d, 0, 4, 1, 5), v128.shuffle<i32>(c, d, 2, 6, 3, 7));
  return i32x4.add(v128.shuffle<i32>(ab, cd, 0, 1, 4, 5), v128.shuffle<i32>(ab, cd, 2, 3, 6, 7));
}

// ---- float16 / bfloat16 widening -------------------------------------------------
// float16 → float32: put the 15 magnitude bits at bit 13 (exponent field lands in the
// float32 exponent field, mantissa at the top of the float32 mantissa), then multiply by
// 2^112 to move the exponent bias from 15 to 127. The multiply is exact and also handles
// subnormal halves (they become float32 subnormals, which the multiply normalizes).
// Inf/NaN halves (exponent 31) are rebuilt with exponent 255 and the same mantissa.

/** 4 float16 bit patterns (sign-extended to i32 lanes) → 4 float32. */
// @ts-ignore: decorator
@inline export function f16BitsToF32V(h: v128): v128 {
  return f16BitsToF32VC(h, i32x4.splat(0x8fffe000), f32x4.splat(reinterpret<f32>(0x77800000)), f32x4.splat(65536.0), i32x4.splat(0x7f800000));
}
/**
 * f16BitsToF32V with its constants passed in: mask 0x8fffe000, scale 2^112, limit 65536,
 * Inf 0x7f800000 — F16W's four rows, which a loop reads from memory before it starts (V8
 * otherwise rebuilds each v128 constant at its use inside the loop, 3–4 instructions).
 */
@inline export function f16BitsToF32VC(h: v128, mask: v128, scale: v128, lim: v128, inf: v128): v128 {
  // h: the patterns sign-extended to 32 bits (v128.load16x4_s). Shifted left by 13 the
  // exponent and mantissa land in the float32 fields and the sign in bit 31; the and clears
  // the three copies of the sign shifted into bits 28–30. The multiply by 2^112 rebiases
  // (exact, subnormal halves included, sign kept); exponent 31 (Inf / NaN) comes out as
  // 2^16 · 1.m, so |v| ≥ 65536 marks it and or-ing 0x7f800000 makes it Inf / the same NaN.
  const v = f32x4.mul(v128.and(i32x4.shl(h, 13), mask), scale);
  return v128.or(v, v128.and(f32x4.ge(f32x4.abs(v), lim), inf));
}
/** f16BitsToF32VC's constants, one v128 each: mask, scale, limit, Inf (0 in the scalar build, which never reads them: the bytes stay out of that module). */
export const F16W: usize = ASC_FEATURE_SIMD ? memory.data<u32>([
  0x8fffe000, 0x8fffe000, 0x8fffe000, 0x8fffe000, 0x77800000, 0x77800000, 0x77800000, 0x77800000,
  0x47800000, 0x47800000, 0x47800000, 0x47800000, 0x7f800000, 0x7f800000, 0x7f800000, 0x7f800000,
], 16) : 0;
/** 4 float16 at p → 4 float32 (exact). */
// @ts-ignore: decorator
@inline export function loadF16x4(p: usize): v128 {
  return f16BitsToF32V(v128.load16x4_s(p));
}

/** Loads 4 bfloat16 values at p (8 bytes) as float32 lanes: the bits move up by 16. */
// @ts-ignore: decorator
@inline export function loadBF16x4(p: usize): v128 {
  return i32x4.shl(v128.load16x4_u(p), 16);
}

/**
 * float16 bits (sign-extended to 32) → float32 for values that are not Inf / NaN: the shift
 * and the and place sign, exponent and mantissa (as f16BitsToF32V), the multiply by 2^112
 * rebiases exactly (subnormal halves included); without the Inf / NaN patch (four more
 * instructions and two more constants: in the flash score loop they made V8 spill four
 * accumulators), so callers check a block of rows first (f16RowsFinite) and take this
 * path when it has no Inf / NaN code.
 */
// @ts-ignore: decorator
@inline export function f16FiniteToF32V(h: v128): v128 {
  return f32x4.mul(f16ScaledV(h), f32x4.splat(reinterpret<f32>(0x77800000)));
}

/**
 * float16 bits (sign-extended to 32, no Inf / NaN) → the value times 2^−112 as float32:
 * f16FiniteToF32V without its multiply by 2^112, two instructions per 4 values, for a caller
 * that puts the 2^112 on the other operand of its products (prescaleF16, or weights ≤ 1
 * times 2^112): each product is then the same real number as with the exact value, rounded
 * the same.
 */
// @ts-ignore: decorator
@inline export function f16ScaledV(h: v128): v128 {
  return v128.and(i32x4.shl(h, 13), i32x4.splat(0x8fffe000));
}

/**
 * dst[i] = src[i] · 2^112 for n floats (n a multiple of 4; dst may be src) when every
 * |src[i]| < 2^15 (a NaN fails the test; the bound keeps the products of f16ScaledV values
 * far from overflow): the other operand of float16 values read by f16ScaledV. Returns
 * whether it scaled.
 */
export function prescaleF16(dst: usize, src: usize, n: usize): bool {
  let mx = f32x4.splat(0);
  for (let i: usize = 0; i < n; i += 4) mx = f32x4.max(mx, f32x4.abs(v128.load(src + (i << 2))));
  if (!i32x4.all_true(f32x4.lt(mx, f32x4.splat(32768)))) return false;
  const c = f32x4.splat(reinterpret<f32>(0x77800000));
  for (let i: usize = 0; i < n; i += 4) v128.store(dst + (i << 2), f32x4.mul(v128.load(src + (i << 2)), c));
  return true;
}

/**
 * One load per 64 bytes of [p, p + bytes), in order, the values dropped (a wasm load may
 * trap, so it stays): brings rows that a kernel then reads in an order this CPU's prefetcher
 * does not stream (llm.ts, "Row order").
 */
// @ts-ignore: decorator
@inline export function touchLines(p: usize, bytes: usize): void {
  for (let b: usize = 0; b < bytes; b += 64) load<u32>(p + b);
}

/** True when none of n float16 rows of D elements (stride bytes apart) holds an Inf / NaN code. */
export function f16RowsFinite(p: usize, stride: usize, n: i32, D: i32): bool {
  // exponent 31 (Inf / NaN) ⇔ the pattern shifted left by one (the sign dropped) ≥ 0xf800:
  // a running unsigned maximum of the shifted patterns, two instructions per 8 elements
  let mx = i16x8.splat(0);
  if (stride == (<usize>D << 1) && n > 0) {
    // contiguous rows: one run of n·D values, two vectors per step into two maxima
    const end = p + <usize>n * stride, end16 = p + ((<usize>n * stride) & ~<usize>31);
    let my = i16x8.splat(0), a = p;
    for (; a < end16; a += 32) {
      mx = i16x8.max_u(mx, i16x8.shl(v128.load(a), 1));
      my = i16x8.max_u(my, i16x8.shl(v128.load(a, 16), 1));
    }
    for (; a < end; a += 2) if ((<u32>load<u16>(a) & 0x7c00) == 0x7c00) return false;
    return !v128.any_true(i16x8.ge_u(i16x8.max_u(mx, my), i16x8.splat(<i16>0xf800)));
  }
  const D8 = D & ~7;
  for (let j = 0; j < n; j++) {
    const row = p + <usize>j * stride;
    let d = 0;
    for (; d < D8; d += 8) mx = i16x8.max_u(mx, i16x8.shl(v128.load(row + (<usize>d << 1)), 1));
    for (; d < D; d++) if ((<u32>load<u16>(row + (<usize>d << 1)) & 0x7c00) == 0x7c00) return false;
  }
  return !v128.any_true(i16x8.ge_u(mx, i16x8.splat(<i16>0xf800)));
}

/** float16 bit pattern → float32 (scalar twin of f16BitsToF32V). */
// @ts-ignore: decorator
@inline export function f16ToF32Scalar(h: u32): f32 {
  const em = (h & 0x7fff) << 13;
  const sign = (h & 0x8000) << 16;
  let bits: u32;
  if ((h & 0x7c00) == 0x7c00) bits = em | 0x7f800000;
  else bits = reinterpret<u32>(reinterpret<f32>(em) * reinterpret<f32>(0x77800000));
  return reinterpret<f32>(bits | sign);
}

/** bfloat16 bit pattern → float32. */
// @ts-ignore: decorator
@inline export function bf16ToF32Scalar(h: u32): f32 {
  return reinterpret<f32>(h << 16);
}

// float32 → float16, round to nearest even. For |x| ≥ 2^−14 (normal halves): add the
// rounding bias 0xfff plus the lowest kept bit to the float32 bits and drop the 13 low
// mantissa bits; a carry out of the mantissa bumps the exponent, which is the correct
// rounding up to the next binade (and to Inf past 65504 + half an ulp). For smaller |x|
// (subnormal halves): adding 0.5 (= 2^−1) makes the float32 ulp 2^−24, the half
// subnormal step, so the hardware addition rounds |x| to nearest even at that step and
// the low mantissa bits are the half's subnormal code. NaN keeps a quiet NaN.

/** float32 → float16 bit pattern (round to nearest even, overflow to Inf). */
export function f32ToF16Scalar(x: f32): u32 {
  const bits = reinterpret<u32>(x);
  const sign = (bits >> 16) & 0x8000;
  const abs = bits & 0x7fffffff;
  if (abs >= 0x7f800000) return sign | (abs > 0x7f800000 ? 0x7e00 : 0x7c00);
  if (abs >= 0x47800000) return sign | 0x7c00; // ≥ 65536: Inf
  if (abs < 0x38800000) {
    // below 2^−14
    const v = reinterpret<f32>(abs) + <f32>0.5;
    return sign | (reinterpret<u32>(v) - 0x3f000000);
  }
  const r = abs + 0xfff + ((abs >> 13) & 1);
  const h = (r >> 13) - ((127 - 15) << 10);
  return sign | (h > 0x7c00 ? 0x7c00 : h);
}

/** float32 → bfloat16 bit pattern (round to nearest even; NaN stays a quiet NaN). */
// @ts-ignore: decorator
@inline export function f32ToBF16Scalar(x: f32): u32 {
  const bits = reinterpret<u32>(x);
  if ((bits & 0x7fffffff) > 0x7f800000) return ((bits >> 16) | 0x40) & 0xffff;
  return ((bits + 0x7fff + ((bits >> 16) & 1)) >> 16) & 0xffff;
}

// ---- multiply-add -----------------------------------------------------------------

/** a·b + c: one fused (relaxed) multiply-add where the build has relaxed SIMD, else mul + add. */
// @ts-ignore: decorator
@inline export function madd(a: v128, b: v128, c: v128): v128 {
  if (ASC_FEATURE_RELAXED_SIMD) return f32x4.relaxed_madd(a, b, c);
  else return f32x4.add(c, f32x4.mul(a, b));
}

// ---- the softmax exponential (arguments ≤ 0) -----------------------------------------
// Its arguments are s − max ≤ 0 (or −∞, or NaN), so it needs no upper clamp; it works in
// base 2: xl = x·log2 e, clamped below at −127; n = nearest(xl) by adding and subtracting
// 1.5·2^23 (ties to even, |xl| < 2^22); f = xl − n in [−0.5, 0.5]; 2^f = 1 + f·P(f) with P
// of degree 4 (a relative-error minimax fit on [−0.5, 0.5], constant term exactly 1 so
// exp(0) = 1 exactly: alpha = 1 skips the rescale; max relative error 1.9e-7 evaluated in
// float32); 2^n from the bits of t = 1.5·2^23 + n: (bits + 127) << 23 keeps n + 127 (0..127)
// in the exponent field and shifts the constant's bits out, and n = −127 gives +0, so every
// x below about −87.7 (and −∞) yields 0 with no separate mask. The rounding of x·log2 e
// adds a relative error of |x|·6e-8 (≤ 4e-6 over the range; absolute error ≤ 1.3e-7).
// A NaN x passes pmax and the arithmetic and stays NaN. About 17 instructions per vector
// where the general expV (upper and lower clamps, split ln 2, degree-5 + square) has ~28.
// @ts-ignore: decorator
@inline const SM_LOG2E: f32 = 1.44269504088896341;
// @ts-ignore: decorator
@inline const SM_MAGIC: f32 = 12582912.0;
// @ts-ignore: decorator
@inline const SM_C1: f32 = 6.931470037e-01;
// @ts-ignore: decorator
@inline const SM_C2: f32 = 2.402224243e-01;
// @ts-ignore: decorator
@inline const SM_C3: f32 = 5.550733581e-02;
// @ts-ignore: decorator
@inline const SM_C4: f32 = 9.671512991e-03;
// @ts-ignore: decorator
@inline const SM_C5: f32 = 1.326472731e-03;

/** exp(x) for x ≤ 0, −∞ or NaN (see above). */
// @ts-ignore: decorator
@inline export function expNegV(x: v128): v128 {
  const xl = f32x4.pmax(f32x4.mul(x, f32x4.splat(SM_LOG2E)), f32x4.splat(-127.0));
  const t = f32x4.add(xl, f32x4.splat(SM_MAGIC));
  const f = f32x4.sub(xl, f32x4.sub(t, f32x4.splat(SM_MAGIC)));
  let y = madd(f32x4.splat(SM_C5), f, f32x4.splat(SM_C4));
  y = madd(y, f, f32x4.splat(SM_C3));
  y = madd(y, f, f32x4.splat(SM_C2));
  y = madd(y, f, f32x4.splat(SM_C1));
  y = madd(y, f, f32x4.splat(1.0));
  return f32x4.mul(y, i32x4.shl(i32x4.add(t, i32x4.splat(127)), 23));
}
