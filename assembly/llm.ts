// Decode-step kernels for a Llama-style forward pass (llama2.c's run.c, float32):
// matrix-vector product, RMSNorm, RoPE, SwiGLU, softmax, argmax, residual add and a
// single-sequence attention over a float32 KV cache.
//
// Layout. Every vector is a contiguous run of f32. Weight matrices W[d, n] are in the
// "rows16" layout (blocks of 16 rows stored column by column, described at the
// matrix-vector product below; the host repacks them once at load). The KV cache of one sequence is [Hkv, N, D] (N cache rows per head,
// D floats per row); queries and outputs are addressed through a head stride and a row
// stride given in floats, so both padded [H, S, D] and packed [S, H, D] forms work.
//
// Preconditions (the host guarantees them, nothing is checked here):
//   - every pointer is 4-byte aligned and its buffer holds the stated number of floats;
//     inputs may be read up to 16 bytes past their end (arena padding, DESIGN.md rule 4),
//     outputs are never written outside their stated extent;
//   - outputs do not overlap inputs unless a kernel says "may alias";
//   - dims are >= 0; attention: Hq is a multiple of Hkv, `scores` as stated there.
//
// Every SIMD loop has an `if (ASC_FEATURE_SIMD)` branch and a scalar branch computing the
// same arithmetic (the sums may be associated differently; results agree within float32
// rounding of the reduction order).

import { attendQ8 } from './kvattend';
import { expScalar, expV, f16BitsToF32V, f16FiniteToF32V, f16RowsFinite, f16ScaledV, hsum4, prescaleF16, touchLines } from './simd';

// exp: the shared expV / expScalar of simd.ts (Cephes polynomial, clamped; the scalar
// build and the tails use expScalar).

/** Sum of the four lanes (((l0 + l1) + (l2 + l3))). */
@inline function hsum(v: v128): f32 {
  const s = f32x4.add(v, i32x4.shuffle(v, v, 1, 0, 3, 2));
  return f32x4.extract_lane(s, 0) + f32x4.extract_lane(s, 2);
}

@inline function ld(p: usize, i: usize): f32 {
  return load<f32>(p + (i << 2));
}
@inline function st(p: usize, i: usize, v: f32): void {
  store<f32>(p + (i << 2), v);
}

// ---- matrix-vector product ----------------------------------------------------------
//
// Weights use the "rows16" layout, produced once at model load by the host
// (src/llm/pack.ts, packRows16). W[d, n] (row-major) is cut into blocks of 16 rows;
// block b holds rows 16b … 16b + h_b − 1 with h_b = min(16, d − 16b) (16 except possibly
// the last block) and starts at float 16·b·n. Inside a block the columns follow each other,
// each column holding its h_b values of consecutive rows:
//     P[16·b·n + j·h_b + r] = W[16b + r, j]      (r < h_b, j < n)
// so the packed matrix has exactly d·n floats, like W, and a full block is one sequential
// stream of n × 64 bytes: each column is four v128 loads that update the 16 row sums
// against one splatted x[j]. No horizontal reduction, no strided reads.
//
// Every output is summed in column order, out[i] = ((W[i,0]·x[0] + W[i,1]·x[1]) + …),
// each product and each sum rounded to float32 — llama2.c's matmul order. The SIMD and
// the scalar branches round identically, so both builds give bit-identical results.

/**
 * out[i] = Σ_j W[i, j] · x[j] for i < d; W in the rows16 layout above (d·n floats at w),
 * x [n], out [d]. out must not overlap w or x. Writes exactly out[0 … d−1]; reads nothing
 * past w's d·n floats or x's n floats.
 */
export function matvecRows16F32(out: usize, w: usize, x: usize, d: i32, n: i32): void {
  const nn = <usize>n, dd = <usize>d;
  const blockBytes = nn << 6; // 16 rows · n floats · 4 bytes
  let i: usize = 0;
  if (ASC_FEATURE_SIMD) {
    const xe = x + (nn << 2);
    for (; i + 16 <= dd; i += 16) {
      let a0 = f32x4.splat(0), a1 = f32x4.splat(0), a2 = f32x4.splat(0), a3 = f32x4.splat(0);
      let p = w + (i >> 4) * blockBytes;
      for (let q = x; q < xe; q += 4) {
        const xv = v128.load32_splat(q);
        a0 = f32x4.add(a0, f32x4.mul(v128.load(p), xv));
        a1 = f32x4.add(a1, f32x4.mul(v128.load(p, 16), xv));
        a2 = f32x4.add(a2, f32x4.mul(v128.load(p, 32), xv));
        a3 = f32x4.add(a3, f32x4.mul(v128.load(p, 48), xv));
        p += 64;
      }
      const o = out + (i << 2);
      v128.store(o, a0); v128.store(o, a1, 16); v128.store(o, a2, 32); v128.store(o, a3, 48);
    }
  }
  // Scalar: every row in the scalar build, the last partial block in the SIMD build.
  // Row i = 16b + r reads its column entries h_b floats apart; the scalar build takes four
  // adjacent rows per pass (one x load, four sums: ~1.4x the old row-major loop).
  while (i < dd) {
    const b0 = i & ~(<usize>15);
    const h = min<usize>(16, dd - b0);
    const step = h << 2;
    let p = w + (i >> 4) * blockBytes + ((i & 15) << 2);
    if (!ASC_FEATURE_SIMD && i + 4 <= b0 + h) {
      let t0: f32 = 0, t1: f32 = 0, t2: f32 = 0, t3: f32 = 0;
      for (let j: usize = 0; j < nn; j++) {
        const xj = ld(x, j);
        t0 += load<f32>(p) * xj; t1 += load<f32>(p, 4) * xj; t2 += load<f32>(p, 8) * xj; t3 += load<f32>(p, 12) * xj;
        p += step;
      }
      st(out, i, t0); st(out, i + 1, t1); st(out, i + 2, t2); st(out, i + 3, t3);
      i += 4;
    } else {
      let t: f32 = 0;
      for (let j: usize = 0; j < nn; j++) { t += load<f32>(p) * ld(x, j); p += step; }
      st(out, i, t);
      i++;
    }
  }
}

// ---- elementwise ----------------------------------------------------------------------

/** Σ x[i]² over n floats. */
function sumSquares(x: usize, n: usize): f32 {
  let i: usize = 0;
  let s: f32 = 0;
  if (ASC_FEATURE_SIMD) {
    let a = f32x4.splat(0);
    for (; i + 4 <= n; i += 4) {
      const v = v128.load(x + (i << 2));
      a = f32x4.add(a, f32x4.mul(v, v));
    }
    s = hsum(a);
  }
  for (; i < n; i++) { const v = ld(x, i); s += v * v; }
  return s;
}

/**
 * RMSNorm as llama2.c: out[i] = w[i] · (x[i] / sqrt(mean(x²) + eps)). out may alias x.
 */
export function rmsnormF32(out: usize, x: usize, w: usize, n: i32, eps: f32): void {
  const nn = <usize>n;
  if (nn == 0) return;
  const inv: f32 = 1.0 / Mathf.sqrt(sumSquares(x, nn) / <f32>n + eps);
  let i: usize = 0;
  if (ASC_FEATURE_SIMD) {
    const iv = f32x4.splat(inv);
    for (; i + 4 <= nn; i += 4) {
      const o = i << 2;
      v128.store(out + o, f32x4.mul(v128.load(w + o), f32x4.mul(iv, v128.load(x + o))));
    }
  }
  for (; i < nn; i++) st(out, i, ld(w, i) * (inv * ld(x, i)));
}

/**
 * RoPE, llama2.c's interleaved-pair convention, in place on `vec` [nHeads, headSize]:
 * for each pair (2m, 2m+1) of every head, (v0, v1) ← (v0·c − v1·s, v0·s + v1·c) with
 * c = cos(pos·θ_m), s = sin(pos·θ_m). The host computes the angles (so they are exactly
 * llama2.c's float arithmetic) and passes `cs` = headSize floats [c0, c0, c1, c1, …]
 * followed by headSize floats [−s0, s0, −s1, s1, …]. Then vec ← vec·C + swap(vec)·S,
 * swap exchanging the two lanes of each pair. headSize is even.
 */
export function ropeF32(vec: usize, cs: usize, nHeads: i32, headSize: i32): void {
  const hs = <usize>headSize;
  const sn = cs + (hs << 2);
  for (let h: usize = 0; h < <usize>nHeads; h++) {
    const v = vec + h * (hs << 2);
    let i: usize = 0;
    if (ASC_FEATURE_SIMD) {
      for (; i + 4 <= hs; i += 4) {
        const o = i << 2;
        const x = v128.load(v + o);
        const sw = i32x4.shuffle(x, x, 1, 0, 3, 2);
        v128.store(v + o, f32x4.add(f32x4.mul(x, v128.load(cs + o)), f32x4.mul(sw, v128.load(sn + o))));
      }
    }
    for (; i + 2 <= hs; i += 2) {
      const x0 = ld(v, i), x1 = ld(v, i + 1);
      st(v, i, x0 * ld(cs, i) + x1 * ld(sn, i));
      st(v, i + 1, x1 * ld(cs, i + 1) + x0 * ld(sn, i + 1));
    }
  }
}

/** SwiGLU as llama2.c, in place on h [n]: h[i] ← (h[i] · σ(h[i])) · g[i], σ(v) = 1 / (1 + e^−v). */
export function swigluF32(h: usize, g: usize, n: i32): void {
  const nn = <usize>n;
  let i: usize = 0;
  if (ASC_FEATURE_SIMD) {
    const one = f32x4.splat(1);
    for (; i + 4 <= nn; i += 4) {
      const o = i << 2;
      const v = v128.load(h + o);
      const sig = f32x4.div(one, f32x4.add(one, expV(f32x4.neg(v))));
      v128.store(h + o, f32x4.mul(f32x4.mul(v, sig), v128.load(g + o)));
    }
  }
  for (; i < nn; i++) {
    const v = ld(h, i);
    st(h, i, v * (<f32>1 / (<f32>1 + expScalar(-v))) * ld(g, i));
  }
}

/** out[i] = a[i] + b[i] (residual add). out may alias a or b. */
export function addF32(out: usize, a: usize, b: usize, n: i32): void {
  const nn = <usize>n;
  let i: usize = 0;
  if (ASC_FEATURE_SIMD) {
    for (; i + 4 <= nn; i += 4) {
      const o = i << 2;
      v128.store(out + o, f32x4.add(v128.load(a + o), v128.load(b + o)));
    }
  }
  for (; i < nn; i++) st(out, i, ld(a, i) + ld(b, i));
}

/** Largest of x[0..n) (−Infinity for n = 0). */
function maxOf(x: usize, n: usize): f32 {
  let m: f32 = -Infinity;
  let i: usize = 0;
  if (ASC_FEATURE_SIMD) {
    if (n >= 4) {
      let a = v128.load(x);
      for (i = 4; i + 4 <= n; i += 4) a = f32x4.max(a, v128.load(x + (i << 2)));
      const b = f32x4.max(a, i32x4.shuffle(a, a, 2, 3, 0, 1));
      const c = f32x4.max(b, i32x4.shuffle(b, b, 1, 0, 3, 2));
      m = f32x4.extract_lane(c, 0);
    }
  }
  // a NaN is kept, as f32x4.max keeps it above: NaN scores give a NaN row in both builds
  for (; i < n; i++) { const v = ld(x, i); if (v > m || v != v) m = v; }
  return m;
}

/** x ← exp(x − m) in place; returns the sum of the new values. */
function expShiftSum(x: usize, n: usize, m: f32): f32 {
  let i: usize = 0;
  let s: f32 = 0;
  if (ASC_FEATURE_SIMD) {
    const mv = f32x4.splat(m);
    let a = f32x4.splat(0);
    for (; i + 4 <= n; i += 4) {
      const o = i << 2;
      const e = expV(f32x4.sub(v128.load(x + o), mv));
      v128.store(x + o, e);
      a = f32x4.add(a, e);
    }
    s = hsum(a);
  }
  for (; i < n; i++) { const e = expScalar(ld(x, i) - m); st(x, i, e); s += e; }
  return s;
}

/** Softmax in place over x [n], as llama2.c: x ← exp(x − max) / Σ exp(x − max). */
export function softmaxF32(x: usize, n: i32): void {
  const nn = <usize>n;
  if (nn == 0) return;
  const s = expShiftSum(x, nn, maxOf(x, nn));
  let i: usize = 0;
  if (ASC_FEATURE_SIMD) {
    const sv = f32x4.splat(s);
    for (; i + 4 <= nn; i += 4) { const o = i << 2; v128.store(x + o, f32x4.div(v128.load(x + o), sv)); }
  }
  for (; i < nn; i++) st(x, i, ld(x, i) / s);
}

/**
 * llama2.c's sample_argmax, NaN included: max_p = x[0], then the first x[i] > max_p. A NaN
 * is never larger, so NaN elements are skipped, and a NaN x[0] is never beaten (index 0).
 * 0 for n = 0.
 */
export function argmaxF32(x: usize, n: i32): i32 {
  const nn = <usize>n;
  if (nn == 0) return 0;
  let m = ld(x, 0);
  if (m != m) return 0;
  let i: usize = 1;
  if (ASC_FEATURE_SIMD && nn >= 5) {
    // pmax(a, b) = a < b ? b : a keeps a when b is NaN
    let a = f32x4.splat(m);
    for (; i + 4 <= nn; i += 4) a = f32x4.pmax(a, v128.load(x + (i << 2)));
    a = f32x4.pmax(a, i32x4.shuffle(a, a, 2, 3, 0, 1));
    a = f32x4.pmax(a, i32x4.shuffle(a, a, 1, 0, 3, 2));
    m = f32x4.extract_lane(a, 0);
  }
  for (; i < nn; i++) { const v = ld(x, i); if (v > m) m = v; }
  // the first element equal to the maximum is the one run.c's strict > settles on
  for (let j: usize = 0; j < nn; j++) if (ld(x, j) == m) return <i32>j;
  return 0;
}

// ---- half-precision cache rows (float16 / bfloat16) ----------------------------------
// kind: 0 = float32, 1 = float16, 2 = bfloat16 (compile-time constants after inlining).
//
// float16 → float32, exact: shifting the 15 magnitude bits left by 13 puts the f16
// exponent and mantissa into the f32 fields with a bias of 15 instead of 127, i.e. the
// f32 pattern's value is v · 2^−112; multiplying by 2^112 restores v exactly — also for
// f16 subnormals, which land on f32 subnormals and become normal numbers. Exponent 31
// (Inf / NaN) is instead mapped to f32 exponent 255 with the same mantissa bits.
// bfloat16 → float32: the pattern is the high half of the f32 pattern.

const F16_SCALE: f32 = reinterpret<f32>(0x77800000); // 2^112

@inline function halfToF32(h: u32, kind: i32): f32 {
  if (kind == 2) return reinterpret<f32>(h << 16);
  const em = (h & 0x7fff) << 13;
  const sign = (h & 0x8000) << 16;
  if ((h & 0x7c00) == 0x7c00) return reinterpret<f32>(sign | em | 0x7f800000);
  return reinterpret<f32>(reinterpret<u32>(reinterpret<f32>(em) * F16_SCALE) | sign);
}

/**
 * Four halves at p → f32x4 (exact): bfloat16 (kind 2) by a shift of the zero-extended
 * bits, float16 by simd.ts's f16BitsToF32V on the sign-extended ones (7 ops instead of the
 * 10 of a separate sign / Inf-NaN select: the KVCache float16 builtin decode 0.95× the time).
 */
@inline function ldHalf4(p: usize, kind: i32): v128 {
  if (kind == 2) return i32x4.shl(v128.load16x4_u(p), 16);
  if (kind == F16_SCALED) return f16ScaledV(v128.load16x4_s(p));
  if (kind == F16_FINITE) return f16FiniteToF32V(v128.load16x4_s(p));
  return f16BitsToF32V(v128.load16x4_s(p));
}

/**
 * kind 5: a float16 row known to hold no Inf / NaN code (f16RowsFinite, 3 ops per 8 codes,
 * the row then read again from L1), widened by 3 ops per 4 values instead of 7.
 */
// @ts-ignore: decorator
@inline const F16_FINITE = 5;
/**
 * kind 6: a float16 row without Inf / NaN read as its value · 2^−112 (kind 5 without the
 * multiply: 2 ops per 4 values); the caller puts the 2^112 on the other operand — the
 * query row (simd.ts prescaleF16) or the softmax weights — so every product is the same real
 * number as with kind 5, rounded the same: bit-identical results.
 */
// @ts-ignore: decorator
@inline const F16_SCALED = 6;

/** A float16 row (kind 1) of D codes at p without Inf / NaN, in the SIMD build: kind 5 applies. */
@inline function finiteF16Row(p: usize, D: usize, kind: i32): bool {
  return ASC_FEATURE_SIMD && kind == 1 && f16RowsFinite(p, 0, 1, <i32>D);
}

// float32 → float16, round to nearest even (F. Giesen's float_to_half_fast3_rtne):
//   |x| >= 2^16 or Inf/NaN: Inf (0x7c00) or a quiet NaN (0x7e00);
//   |x| < 2^−14 (f16 subnormal range): adding 0.5 aligns the value so the FPU's own RNE
//     rounds it at the f16 subnormal quantum 2^−24; the result's low bits are the f16 pattern;
//   otherwise: rebias the exponent (−112 · 2^23), add 0xfff + (mantissa bit 13) — the
//     round-half-even increment at bit 13 — and shift right by 13; a mantissa carry
//     correctly bumps the exponent (65520 and above become Inf).
// float32 → bfloat16, round to nearest even: add 0x7fff + bit 16, keep the high half;
// NaN keeps its sign and becomes the quiet NaN 0x7fc0.
@inline function f32ToHalf(x: f32, kind: i32): u32 {
  const u = reinterpret<u32>(x);
  if (kind == 2) {
    if ((u & 0x7fffffff) > 0x7f800000) return ((u >> 16) & 0x8000) | 0x7fc0;
    return (u + 0x7fff + ((u >> 16) & 1)) >> 16;
  }
  const sign = (u >> 16) & 0x8000;
  const a = u & 0x7fffffff;
  let o: u32;
  if (a >= 0x47800000) o = a > 0x7f800000 ? 0x7e00 : 0x7c00;
  else if (a < 0x38800000) o = reinterpret<u32>(reinterpret<f32>(a) + <f32>0.5) - 0x3f000000;
  else o = (a + 0xc8000fff + ((a >> 13) & 1)) >> 13;
  return o | sign;
}

/**
 * KV-cache append with conversion: update rows of float32 (D floats per row) go to a
 * float16 (kind 1) or bfloat16 (kind 2) cache of rows of D halves, converted in the same
 * pass (round to nearest even). Addressing as scatterRows / scatterPackedRows:
 *   packed = 0: cache (B, H, N, D) ← update (B, H, S, D); batch b writes its first
 *               lengths[b+1] − lengths[b] rows at writeIdx[b] + s (mod N if circular).
 *   packed = 1: update (T, H, D); token lengths[b] + s of batch b goes to writeIdx[b] + s.
 * writeIdx: B int32 starts (< N); lengths: B + 1 int32 cumulative counts.
 */
export function appendHalfRows(
  cache: usize, update: usize, B: i32, H: i32, N: i32, S: i32, D: i32, writeIdx: usize, lengths: usize,
  circular: bool, packed: bool, kind: i32,
): void {
  const n = <usize>N, h = <usize>H, d = <usize>D;
  for (let b = 0; b < B; b++) {
    const start = <usize>load<i32>(writeIdx + (<usize>b << 2));
    const t0 = <usize>load<i32>(lengths + (<usize>b << 2));
    const count = <usize>load<i32>(lengths + (<usize>b << 2), 4) - t0;
    for (let j: usize = 0; j < h; j++) {
      for (let s: usize = 0; s < count; s++) {
        let pos = start + s;
        if (circular && pos >= n) pos -= n;
        const dst = cache + (((<usize>b * h + j) * n + pos) * d << 1);
        const src = update + ((packed ? (t0 + s) * h + j : (<usize>b * h + j) * <usize>S + s) * d << 2);
        if (kind == 2) for (let i: usize = 0; i < d; i++) store<u16>(dst + (i << 1), <u16>f32ToHalf(ld(src, i), 2));
        else for (let i: usize = 0; i < d; i++) store<u16>(dst + (i << 1), <u16>f32ToHalf(ld(src, i), 1));
      }
    }
  }
}

/**
 * KV-cache append into an int8 cache with one float32 scale per (token, head) row:
 * scale = max|x| / 127 over the row's D values, q = round-half-even(x / scale) clamped to
 * [−127, 127] (a zero row stores scale 0 and zeros), so x ≈ q · scale. Quantized in the
 * same pass that writes. Addressing as appendHalfRows; scales (B, H, N) f32 beside the cache.
 */
export function appendInt8Rows(
  cache: usize, scales: usize, update: usize, B: i32, H: i32, N: i32, S: i32, D: i32, writeIdx: usize, lengths: usize,
  circular: bool, packed: bool,
): void {
  appendScaledRows(false, cache, scales, update, B, H, N, S, D, writeIdx, lengths, circular, packed);
}

// float8e4m3fn (bias 7, 3 mantissa bits, largest finite 448 = 0x7e, NaN 0x7f, no Inf).
// Decode, exact: (b & 0x7f) << 20 puts exponent and mantissa into the f32 fields with bias 7,
// i.e. the value times 2^−120; multiplying by 2^120 restores it (subnormals included).
// Encode (round to nearest even, saturating to ±448 — inputs here are |x| ≤ 448 by the
// per-row scale, up to rounding): below 2^−6 (the subnormal range) adding 2^14, whose f32
// ulp is the e4m3 subnormal quantum 2^−9, lets the FPU round; the low bits are then the
// pattern (8 = the smallest normal). Otherwise rebias the exponent (−120 · 2^23), add the
// half-even increment at bit 20 (0x7ffff + bit 20) and shift right by 20.
const F8_SCALE: f32 = reinterpret<f32>(0x7b800000); // 2^120
const F8_MAGIC: f32 = 16384; // 2^14

@inline function f32ToE4m3(x: f32): u32 {
  const u = reinterpret<u32>(x);
  const sign = (u >> 24) & 0x80;
  const a = u & 0x7fffffff;
  let o: u32;
  if (a > 0x7f800000) o = 0x7f;
  else if (a < 0x3c800000) o = reinterpret<u32>(reinterpret<f32>(a) + F8_MAGIC) - reinterpret<u32>(F8_MAGIC);
  else {
    o = (a - 0x3c000000 + 0x7ffff + ((a >> 20) & 1)) >> 20;
    if (o > 0x7e) o = 0x7e;
  }
  return o | sign;
}

@inline function e4m3ToF32(b: u32): f32 {
  return reinterpret<f32>(reinterpret<u32>(reinterpret<f32>((b & 0x7f) << 20) * F8_SCALE) | ((b & 0x80) << 24));
}

/** Four e4m3 bytes at p → f32x4 (exact; NaN not expected). */
@inline function e4m3x4ToF32(p: usize): v128 {
  const b = i32x4.extend_low_i16x8_u(i16x8.extend_low_i8x16_u(v128.load32_zero(p)));
  const mag = f32x4.mul(i32x4.shl(v128.and(b, i32x4.splat(0x7f)), 20), f32x4.splat(F8_SCALE));
  return v128.or(mag, i32x4.shl(v128.and(b, i32x4.splat(0x80)), 24));
}

/**
 * KV-cache append into a float8e4m3fn cache with one float32 scale per (token, head) row:
 * scale = max|x| / 448, byte = e4m3(x / scale) rounded to nearest even (saturating), so
 * x ≈ e4m3(byte) · scale; a zero row stores scale 0 and zeros. Addressing as appendInt8Rows.
 */
export function appendE4m3Rows(
  cache: usize, scales: usize, update: usize, B: i32, H: i32, N: i32, S: i32, D: i32, writeIdx: usize, lengths: usize,
  circular: bool, packed: bool,
): void {
  appendScaledRows(true, cache, scales, update, B, H, N, S, D, writeIdx, lengths, circular, packed);
}

/** appendInt8Rows (fp8 = false: scale max|x|/127, codes round-half-even clamped to ±127) and appendE4m3Rows (fp8 = true: scale max|x|/448, e4m3 codes). */
@inline function appendScaledRows(
  fp8: bool, cache: usize, scales: usize, update: usize, B: i32, H: i32, N: i32, S: i32, D: i32, writeIdx: usize, lengths: usize,
  circular: bool, packed: bool,
): void {
  const n = <usize>N, h = <usize>H, d = <usize>D;
  for (let b = 0; b < B; b++) {
    const start = <usize>load<i32>(writeIdx + (<usize>b << 2));
    const t0 = <usize>load<i32>(lengths + (<usize>b << 2));
    const count = <usize>load<i32>(lengths + (<usize>b << 2), 4) - t0;
    for (let j: usize = 0; j < h; j++) {
      for (let s: usize = 0; s < count; s++) {
        let pos = start + s;
        if (circular && pos >= n) pos -= n;
        const row = (<usize>b * h + j) * n + pos;
        const dst = cache + row * d;
        const src = update + ((packed ? (t0 + s) * h + j : (<usize>b * h + j) * <usize>S + s) * d << 2);
        let amax: f32 = 0;
        for (let i: usize = 0; i < d; i++) amax = max(amax, abs(ld(src, i)));
        const scale: f32 = amax / (fp8 ? <f32>448 : <f32>127);
        st(scales, row, scale);
        if (fp8) {
          for (let i: usize = 0; i < d; i++) store<u8>(dst + i, <u8>(scale > 0 ? f32ToE4m3(ld(src, i) / scale) : 0));
        } else {
          for (let i: usize = 0; i < d; i++) {
            let qv: f32 = scale > 0 ? nearest<f32>(ld(src, i) / scale) : 0;
            qv = min(max(qv, -127), 127);
            store<i8>(dst + i, <i8><i32>qv);
          }
        }
      }
    }
  }
}

// ---- attention over one sequence's cache ---------------------------------------------

/** Widens one cache row of `kind` (D elements at src) into D floats at dst, scaled by `mul` (int8) or exact. */
@inline function widenRow(dst: usize, src: usize, D: usize, kind: i32, mul: f32): void {
  let i: usize = 0;
  if (ASC_FEATURE_SIMD) {
    if (kind == 3) {
      const m = f32x4.splat(mul);
      for (; i + 4 <= D; i += 4) v128.store(dst + (i << 2), f32x4.mul(i8x4ToF32(src + i), m));
    } else if (kind == 4) {
      const m = f32x4.splat(mul);
      for (; i + 4 <= D; i += 4) v128.store(dst + (i << 2), f32x4.mul(e4m3x4ToF32(src + i), m));
    } else {
      for (; i + 4 <= D; i += 4) v128.store(dst + (i << 2), ldHalf4(src + (i << 1), kind));
    }
  }
  if (kind == 3) for (; i < D; i++) st(dst, i, <f32>load<i8>(src + i) * mul);
  else if (kind == 4) for (; i < D; i++) st(dst, i, e4m3ToF32(<u32>load<u8>(src + i)) * mul);
  else for (; i < D; i++) st(dst, i, halfToF32(<u32>load<u16>(src + (i << 1)), kind));
}

/** Four int8 at p → f32x4. */
@inline function i8x4ToF32(p: usize): v128 {
  return f32x4.convert_i32x4_s(i32x4.extend_low_i16x8_s(i16x8.extend_low_i8x16_s(v128.load32_zero(p))));
}

/** Cache slot of visible position i: the rows run slot0 … slot0 + first − 1, then wrap to 0 (a window). */
@inline function slotOf(i: usize, first: usize, slot0: usize): usize {
  return i < first ? slot0 + i : i - first;
}

/** Four elements of a cache row of `kind` (0 float32, 1 / 5 float16, 2 bfloat16) at p, as f32x4 (exact). */
@inline function ldRow4(p: usize, kind: i32): v128 {
  return kind == 0 ? v128.load(p) : ldHalf4(p, kind);
}

// Row order. Reading the four rows of a pass interleaved (16 bytes of each in turn) keeps
// this CPU's hardware prefetcher from streaming them when a row is 512 bytes or more (a
// float32 row of D ≥ 128): a bare wasm loop reads 64 MiB in that order at 9 GB/s, one row
// after another at 26.5 GB/s (two rows interleaved: 9.9; 256-byte rows interleaved: 26).
// So float32 rows of 512 bytes or more are read whole, one after the other: the same sums
// in the same order (each key's lanes accumulate its chunks in order; each output chunk
// adds p0·v0 … p3·v3 in that order), so the same bits. 16-bit rows keep the interleaved
// loop (their passes span 1 KiB, and there the loop's arithmetic, not memory, is the
// limit: in order measured 1.12× / 1.35× the time for float16 / bfloat16), and so do
// shorter float32 rows: in order, P·V loads and stores the output row once per key instead
// of once per four, which cost 1.28× the time at D = 64 with the cache in L3 (0.93× with
// it in memory, where the interleaved order still streams).
// @ts-ignore: decorator
@inline const ROW_ORDER_MIN: usize = 128; // float32 elements per row from which rows are read in order

/** Σ_i q[i]·k[i] per lane (chunks of 4 in order, D a multiple of 4); a float32 row. */
@inline function dotRowF32(q: usize, k: usize, D: usize): v128 {
  const qe = q + (D << 2);
  let a = f32x4.splat(0);
  for (let qp = q; qp < qe; qp += 16) {
    a = f32x4.add(a, f32x4.mul(v128.load(qp), v128.load(k)));
    k += 16;
  }
  return a;
}

/** The four sums Σ_i q[i]·k_t[i] (t = 0..3, D a multiple of 4) as one v128; rows of `kind` ≤ 2, 5 or 6. */
@inline function dot4(q: usize, k0: usize, k1: usize, k2: usize, k3: usize, D: usize, kind: i32): v128 {
  if (kind == 0 && D >= ROW_ORDER_MIN) return hsum4(dotRowF32(q, k0, D), dotRowF32(q, k1, D), dotRowF32(q, k2, D), dotRowF32(q, k3, D));
  const qe = q + (D << 2), eStep: usize = kind == 0 ? 16 : 8;
  let a0 = f32x4.splat(0), a1 = f32x4.splat(0), a2 = f32x4.splat(0), a3 = f32x4.splat(0);
  for (let qp = q; qp < qe; qp += 16) {
    const x = v128.load(qp);
    a0 = f32x4.add(a0, f32x4.mul(x, ldRow4(k0, kind)));
    a1 = f32x4.add(a1, f32x4.mul(x, ldRow4(k1, kind)));
    a2 = f32x4.add(a2, f32x4.mul(x, ldRow4(k2, kind)));
    a3 = f32x4.add(a3, f32x4.mul(x, ldRow4(k3, kind)));
    k0 += eStep; k1 += eStep; k2 += eStep; k3 += eStep;
  }
  return hsum4(a0, a1, a2, a3);
}

/** o[i] += p · v[i] over dBytes of o (p in every lane); a float32 row. */
@inline function axpyRowF32(o: usize, v: usize, p: v128, dBytes: usize): void {
  for (let b: usize = 0; b < dBytes; b += 16) v128.store(o + b, f32x4.add(v128.load(o + b), f32x4.mul(p, v128.load(v + b))));
}

/** axpy4 over float32 rows read one after the other (see "Row order"): the same additions in the same order. */
@inline function axpy4RowsF32(o: usize, v0: usize, v1: usize, v2: usize, v3: usize, p: usize, dBytes: usize): void {
  axpyRowF32(o, v0, v128.load32_splat(p), dBytes); axpyRowF32(o, v1, v128.load32_splat(p, 4), dBytes);
  axpyRowF32(o, v2, v128.load32_splat(p, 8), dBytes); axpyRowF32(o, v3, v128.load32_splat(p, 12), dBytes);
}

/** o[i] += p[0]·v0[i] + … + p[3]·v3[i] (added in that order) over dBytes of o; rows of `kind` ≤ 2, 5 or 6. */
@inline function axpy4(o: usize, v0: usize, v1: usize, v2: usize, v3: usize, p: usize, dBytes: usize, kind: i32): void {
  const eShift: usize = kind == 0 ? 0 : 1; // o (float32 bytes) → V row bytes
  let p0 = v128.load32_splat(p), p1 = v128.load32_splat(p, 4), p2 = v128.load32_splat(p, 8), p3 = v128.load32_splat(p, 12);
  if (kind == F16_SCALED) {
    // rows read as value · 2^−112: the weights (≤ 1, or NaN) carry the 2^112, exactly
    const c = f32x4.splat(F16_SCALE);
    p0 = f32x4.mul(p0, c); p1 = f32x4.mul(p1, c); p2 = f32x4.mul(p2, c); p3 = f32x4.mul(p3, c);
  }
  for (let b: usize = 0; b < dBytes; b += 16) {
    const e = b >> eShift;
    let acc = v128.load(o + b);
    acc = f32x4.add(acc, f32x4.mul(p0, ldRow4(v0 + e, kind)));
    acc = f32x4.add(acc, f32x4.mul(p1, ldRow4(v1 + e, kind)));
    acc = f32x4.add(acc, f32x4.mul(p2, ldRow4(v2 + e, kind)));
    acc = f32x4.add(acc, f32x4.mul(p3, ldRow4(v3 + e, kind)));
    v128.store(o + b, acc);
  }
}

/**
 * sc[g·scStride] = scale · q_g · row for the G query heads of a group (q_g at
 * q + g·qStep, D a multiple of 4, row float32): four heads per pass, so each row
 * element is loaded once per four products and the four sums are independent chains (one
 * dot product at a time waits on its single accumulator's add latency).
 */
function scoreHeads(sc: usize, scStride: usize, q: usize, qStep: usize, row: usize, D: usize, G: usize, scale: f32): void {
  const rowEnd = row + (D << 2), sv = f32x4.splat(scale);
  for (let g: usize = 0; g < G; g += 4) {
    // a last group of 1–3 heads repeats its last head in the spare lanes (not stored)
    let q0 = q + g * qStep;
    let q1 = g + 1 < G ? q0 + qStep : q0, q2 = g + 2 < G ? q1 + qStep : q1, q3 = g + 3 < G ? q2 + qStep : q2;
    let a0 = f32x4.splat(0), a1 = f32x4.splat(0), a2 = f32x4.splat(0), a3 = f32x4.splat(0);
    for (let k = row; k < rowEnd; k += 16) {
      const x = v128.load(k);
      a0 = f32x4.add(a0, f32x4.mul(v128.load(q0), x));
      a1 = f32x4.add(a1, f32x4.mul(v128.load(q1), x));
      a2 = f32x4.add(a2, f32x4.mul(v128.load(q2), x));
      a3 = f32x4.add(a3, f32x4.mul(v128.load(q3), x));
      q0 += 16; q1 += 16; q2 += 16; q3 += 16;
    }
    const s = f32x4.mul(hsum4(a0, a1, a2, a3), sv);
    const o = sc + g * scStride;
    store<f32>(o, f32x4.extract_lane(s, 0));
    if (g + 1 < G) store<f32>(o + scStride, f32x4.extract_lane(s, 1));
    if (g + 2 < G) store<f32>(o + 2 * scStride, f32x4.extract_lane(s, 2));
    if (g + 3 < G) store<f32>(o + 3 * scStride, f32x4.extract_lane(s, 3));
  }
}

/**
 * o_g += p_g[0]·v0 + … + p_g[3]·v3 for the G query heads of a group: o_g at o + g·oStep,
 * p_g[t] at p + g·pStride + 4t, float32 rows of dBytes (a multiple of 16). The additions of
 * four axpy calls per head, in their order, with the output held in a register between them.
 */
function pvHeads(o: usize, oStep: usize, v0: usize, v1: usize, v2: usize, v3: usize, p: usize, pStride: usize, dBytes: usize, G: usize): void {
  for (let g: usize = 0; g < G; g++) axpy4(o + g * oStep, v0, v1, v2, v3, p + g * pStride, dBytes, 0);
}

/** Σ_i a[i]·b[i] over D elements; a float32, b of `kind` (3 = int8, unscaled). */
@inline function dot(a: usize, b: usize, D: usize, kind: i32): f32 {
  let i: usize = 0;
  let s: f32 = 0;
  if (ASC_FEATURE_SIMD) {
    let acc = f32x4.splat(0);
    if (kind == 0) {
      for (; i + 4 <= D; i += 4) acc = f32x4.add(acc, f32x4.mul(v128.load(a + (i << 2)), v128.load(b + (i << 2))));
    } else if (kind == 3) {
      for (; i + 4 <= D; i += 4) acc = f32x4.add(acc, f32x4.mul(v128.load(a + (i << 2)), i8x4ToF32(b + i)));
    } else {
      for (; i + 4 <= D; i += 4) acc = f32x4.add(acc, f32x4.mul(v128.load(a + (i << 2)), ldHalf4(b + (i << 1), kind)));
    }
    s = hsum(acc);
  }
  if (kind == 0) for (; i < D; i++) s += ld(a, i) * ld(b, i);
  else if (kind == 3) for (; i < D; i++) s += ld(a, i) * <f32>load<i8>(b + i);
  else for (; i < D; i++) s += ld(a, i) * halfToF32(<u32>load<u16>(b + (i << 1)), kind);
  return s;
}

/** o[i] += p · v[i] over D elements; o float32, v of `kind`. */
@inline function axpy(o: usize, v: usize, p: f32, D: usize, kind: i32): void {
  let i: usize = 0;
  if (ASC_FEATURE_SIMD) {
    const pv = f32x4.splat(p);
    if (kind == 0) {
      for (; i + 4 <= D; i += 4) {
        const k = i << 2;
        v128.store(o + k, f32x4.add(v128.load(o + k), f32x4.mul(pv, v128.load(v + k))));
      }
    } else if (kind == 3) {
      for (; i + 4 <= D; i += 4) {
        const k = i << 2;
        v128.store(o + k, f32x4.add(v128.load(o + k), f32x4.mul(pv, i8x4ToF32(v + i))));
      }
    } else {
      for (; i + 4 <= D; i += 4) {
        const k = i << 2;
        v128.store(o + k, f32x4.add(v128.load(o + k), f32x4.mul(pv, ldHalf4(v + (i << 1), kind))));
      }
    }
  }
  if (kind == 0) for (; i < D; i++) st(o, i, ld(o, i) + p * ld(v, i));
  else if (kind == 3) for (; i < D; i++) st(o, i, ld(o, i) + p * <f32>load<i8>(v + i));
  else for (; i < D; i++) st(o, i, ld(o, i) + p * halfToF32(<u32>load<u16>(v + (i << 1)), kind));
}

/**
 * Attention of one sequence's new queries over its cached keys and values.
 *
 *   q, out: float32; query s of head h at  q + (h·qHeadStride + s·qRowStride)·4  (D floats);
 *           rows s in [qLen, S) of the output are zeroed.
 *   k, v:   [Hkv, N, D] of float32 (attendF32), float16 (attendF16) or bfloat16
 *           (attendBF16, both dequantized in registers); q head h reads kv head
 *           h / (Hq / Hkv) (GQA). The query heads of a group are processed together, so
 *           each K and V row is read once per group and query row.
 *   kvLen:  the sequence's total length including the qLen new tokens (positions
 *           0 … kvLen−1). Query s is at position kvLen − qLen + s.
 *   causal: query s sees positions ≤ its own (bottom-right alignment); otherwise all.
 *   window: 0 = position p is cache row p (kvLen ≤ N); else a sliding window: row p mod N
 *           holds the latest position ≡ p (N ≥ window: a ring may keep window + S − 1 rows
 *           so that a multi-token step's earlier queries still find theirs), only positions
 *           ≥ kvLen − N are present, and the query at position p sees p − window + 1 … p
 *           (causal) or the last `window` positions (not causal) among them.
 *   A query that sees no position outputs zeros.
 *   scores: G·N + 4·D floats of scratch, G = Hq / Hkv (G·N + D when G = 1).
 * y = Σ_p softmax(scale · q·k_p) v_p over the visible positions (max-subtracted softmax).
 */
export function attendF32(
  out: usize, q: usize, k: usize, v: usize, Hq: i32, Hkv: i32, S: i32, qLen: i32, D: i32, N: i32,
  qHeadStride: i32, qRowStride: i32, kvLen: i32, window: i32, causal: i32, scale: f32, scores: usize,
): void {
  attendImpl(0, out, q, k, v, Hq, Hkv, S, qLen, D, N, qHeadStride, qRowStride, kvLen, window, causal, scale, scores, 0, 0);
}

/** attendF32 over a float16 cache. */
export function attendF16(
  out: usize, q: usize, k: usize, v: usize, Hq: i32, Hkv: i32, S: i32, qLen: i32, D: i32, N: i32,
  qHeadStride: i32, qRowStride: i32, kvLen: i32, window: i32, causal: i32, scale: f32, scores: usize,
): void {
  attendImpl(1, out, q, k, v, Hq, Hkv, S, qLen, D, N, qHeadStride, qRowStride, kvLen, window, causal, scale, scores, 0, 0);
}

/** attendF32 over a bfloat16 cache. */
export function attendBF16(
  out: usize, q: usize, k: usize, v: usize, Hq: i32, Hkv: i32, S: i32, qLen: i32, D: i32, N: i32,
  qHeadStride: i32, qRowStride: i32, kvLen: i32, window: i32, causal: i32, scale: f32, scores: usize,
): void {
  attendImpl(2, out, q, k, v, Hq, Hkv, S, qLen, D, N, qHeadStride, qRowStride, kvLen, window, causal, scale, scores, 0, 0);
}

/**
 * attendF32 over an int8 cache with per-(token, head) scales: kScales, vScales (Hkv, N) f32.
 * Row i dequantizes as k_i = kq_i · kScale_i, so q·k_i = kScale_i · (q·kq_i) and
 * p_i v_i = (p_i · vScale_i) · vq_i: one multiply per key instead of per element.
 */
/** attendI8 over a float8e4m3fn cache (bytes) with per-(token, head) scales kScales, vScales (Hkv, N). */
export function attendE4m3(
  out: usize, q: usize, k: usize, v: usize, Hq: i32, Hkv: i32, S: i32, qLen: i32, D: i32, N: i32,
  qHeadStride: i32, qRowStride: i32, kvLen: i32, window: i32, causal: i32, scale: f32, scores: usize,
  kScales: usize, vScales: usize,
): void {
  if (ASC_FEATURE_SIMD) attendQ8(true, out, q, k, v, Hq, Hkv, S, qLen, D, N, qHeadStride, qRowStride, kvLen, window, causal, scale, scores, kScales, vScales);
  else attendImpl(4, out, q, k, v, Hq, Hkv, S, qLen, D, N, qHeadStride, qRowStride, kvLen, window, causal, scale, scores, kScales, vScales);
}

export function attendI8(
  out: usize, q: usize, k: usize, v: usize, Hq: i32, Hkv: i32, S: i32, qLen: i32, D: i32, N: i32,
  qHeadStride: i32, qRowStride: i32, kvLen: i32, window: i32, causal: i32, scale: f32, scores: usize,
  kScales: usize, vScales: usize,
): void {
  if (ASC_FEATURE_SIMD) attendQ8(false, out, q, k, v, Hq, Hkv, S, qLen, D, N, qHeadStride, qRowStride, kvLen, window, causal, scale, scores, kScales, vScales);
  else attendImpl(3, out, q, k, v, Hq, Hkv, S, qLen, D, N, qHeadStride, qRowStride, kvLen, window, causal, scale, scores, kScales, vScales);
}

@inline function attendImpl(
  kind: i32, out: usize, q: usize, k: usize, v: usize, Hq: i32, Hkv: i32, S: i32, qLen: i32, D: i32, N: i32,
  qHeadStride: i32, qRowStride: i32, kvLen: i32, window: i32, causal: i32, scale: f32, scores: usize,
  kScales: usize, vScales: usize,
): void {
  const dd = <usize>D, nn = <usize>N, dBytes = dd << 2;
  const rowBytes = kind == 0 ? dd << 2 : kind >= 3 ? dd : dd << 1;
  const group = Hkv > 0 ? Hq / Hkv : 1;
  const G = <usize>group;
  // 4·D floats after the scores: up to four K or V rows widened to float32 (low-precision caches)
  const rowBuf = scores + ((G * nn) << 2);
  // positions older than kvLen − N are overwritten in a window's ring
  const ringLo = window > 0 ? max(0, kvLen - N) : 0;
  for (let hk = 0; hk < Hkv; hk++) {
    const kh = k + <usize>hk * nn * rowBytes;
    const vh = v + <usize>hk * nn * rowBytes;
    const ksh = kScales + ((<usize>hk * nn) << 2), vsh = vScales + ((<usize>hk * nn) << 2);
    const h0 = hk * group;
    for (let s = 0; s < S; s++) {
      for (let g = 0; g < group; g++) memory.fill(out + <usize>((h0 + g) * qHeadStride + s * qRowStride) * 4, 0, dBytes);
      if (s >= qLen) continue;
      const hi = causal != 0 ? kvLen - qLen + s : kvLen - 1;
      const lo = window > 0 ? max(ringLo, hi - window + 1) : 0;
      const count = hi - lo + 1;
      if (count <= 0) continue;
      const slot0 = <usize>(window > 0 ? lo % N : lo);
      const cnt = <usize>count;
      let first = cnt;
      if (slot0 + first > nn) first = nn - slot0;
      const qs = q + <usize>(h0 * qHeadStride + s * qRowStride) * 4;
      const os = out + <usize>(h0 * qHeadStride + s * qRowStride) * 4;
      const qStep = <usize>qHeadStride << 2;
      // scores[g·cnt + i] = scale · q_g · k_i, each K row read once for the group
      let i0: usize = 0;
      if (ASC_FEATURE_SIMD && kind <= 2 && G == 1 && (dd & 3) == 0) {
        // one query row (multi-head attention's decode step) over float32, float16 or
        // bfloat16 rows: four keys per pass, their four sums reduced together and stored as
        // one v128 (bfloat16 widened in registers by a shift; float16, when its four rows
        // hold no Inf / NaN, read by 2 ops as value · 2^−112 against the query row times
        // 2^112 — by 3 ops, exactly, when some |q| ≥ 2^15 — else by the exact 7)
        const sv = f32x4.splat(scale);
        // float16: the query row times 2^112 (rowBuf is free on this path) for kind 6
        const qPre = kind == 1 && prescaleF16(rowBuf, qs, dd);
        for (; i0 + 4 <= cnt; i0 += 4) {
          const k0 = kh + slotOf(i0, first, slot0) * rowBytes;
          const k1 = kh + slotOf(i0 + 1, first, slot0) * rowBytes;
          const k2 = kh + slotOf(i0 + 2, first, slot0) * rowBytes;
          const k3 = kh + slotOf(i0 + 3, first, slot0) * rowBytes;
          const h = kind == 1 && finiteF16Row(k0, dd, kind) && finiteF16Row(k1, dd, kind) && finiteF16Row(k2, dd, kind) && finiteF16Row(k3, dd, kind)
            ? (qPre ? dot4(rowBuf, k0, k1, k2, k3, dd, F16_SCALED) : dot4(qs, k0, k1, k2, k3, dd, F16_FINITE)) : dot4(qs, k0, k1, k2, k3, dd, kind);
          v128.store(scores + (i0 << 2), f32x4.mul(h, sv));
        }
      }
      for (let i: usize = i0; i < cnt; i++) {
        const slot = slotOf(i, first, slot0);
        const kr = kh + slot * rowBytes;
        if (ASC_FEATURE_SIMD && kind <= 2 && G > 2 && (dd & 3) == 0) {
          // grouped heads: four query heads per pass over the (widened) row (G = 2 stays on
          // the per-head path: two heads in four lanes measured 3–5% slower)
          let row = kr;
          if (kind != 0) { widenRow(rowBuf, kr, dd, kind, 1); row = rowBuf; }
          scoreHeads(scores + (i << 2), cnt << 2, qs, qStep, row, dd, G, scale);
        } else if (kind == 0 || kind == 3 || (G == 1 && kind != 4)) {
          const ks: f32 = kind == 3 ? scale * ld(ksh, slot) : scale;
          for (let g: usize = 0; g < G; g++) st(scores, g * cnt + i, dot(qs + g * qStep, kr, dd, kind) * ks);
        } else {
          // float16 / bfloat16: widen the row once (exactly), then G float32 dot products from L1
          // (int8 widens cheaply enough in the dot product itself, measured)
          widenRow(rowBuf, kr, dd, kind, kind >= 3 ? ld(ksh, slot) : 1);
          for (let g: usize = 0; g < G; g++) st(scores, g * cnt + i, dot(qs + g * qStep, rowBuf, dd, 0) * scale);
        }
      }
      for (let g: usize = 0; g < G; g++) {
        const sg = scores + ((g * cnt) << 2);
        const m = maxOf(sg, cnt);
        // every visible score −∞ (a −∞ key against the query): the row sees no key and
        // outputs zeros, as the flash kernel's rows do (exp(−∞ − (−∞)) would be NaN)
        if (m == -Infinity) { memory.fill(sg, 0, cnt << 2); continue; }
        // the 1/Σ of the softmax is folded into the probabilities before the V pass
        const inv: f32 = <f32>1 / expShiftSum(sg, cnt, m);
        let i: usize = 0;
        if (ASC_FEATURE_SIMD) {
          const iv = f32x4.splat(inv);
          for (; i + 4 <= cnt; i += 4) v128.store(sg + (i << 2), f32x4.mul(v128.load(sg + (i << 2)), iv));
        }
        for (; i < cnt; i++) st(sg, i, ld(sg, i) * inv);
      }
      // out_g = Σ_i p_g[i] · v_i, each V row read once for the group
      i0 = 0;
      if (ASC_FEATURE_SIMD && kind <= 2 && G == 1 && (dd & 3) == 0) {
        // one query row: four V rows per pass over the output row (same additions in the same
        // order as four axpy calls, with the output held in a register between them)
        for (; i0 + 4 <= cnt; i0 += 4) {
          const v0 = vh + slotOf(i0, first, slot0) * rowBytes;
          const v1 = vh + slotOf(i0 + 1, first, slot0) * rowBytes;
          const v2 = vh + slotOf(i0 + 2, first, slot0) * rowBytes;
          const v3 = vh + slotOf(i0 + 3, first, slot0) * rowBytes;
          const pp = scores + (i0 << 2);
          if (kind == 0 && dd >= ROW_ORDER_MIN) axpy4RowsF32(os, v0, v1, v2, v3, pp, dBytes);
          else if (kind == 1 && finiteF16Row(v0, dd, kind) && finiteF16Row(v1, dd, kind) && finiteF16Row(v2, dd, kind) && finiteF16Row(v3, dd, kind)) {
            axpy4(os, v0, v1, v2, v3, pp, dBytes, F16_SCALED);
          } else axpy4(os, v0, v1, v2, v3, pp, dBytes, kind);
        }
      } else if (ASC_FEATURE_SIMD && kind <= 2 && G > 1 && (dd & 3) == 0) {
        // grouped heads: four V rows (float16 / bfloat16 widened once into rowBuf) per pass
        // over each head's output row
        for (; i0 + 4 <= cnt; i0 += 4) {
          let v0 = vh + slotOf(i0, first, slot0) * rowBytes;
          if (kind != 0) {
            for (let t: usize = 0; t < 4; t++) widenRow(rowBuf + t * dBytes, vh + slotOf(i0 + t, first, slot0) * rowBytes, dd, kind, 1);
            v0 = rowBuf;
          }
          const v1 = kind != 0 ? v0 + dBytes : vh + slotOf(i0 + 1, first, slot0) * rowBytes;
          const v2 = kind != 0 ? v1 + dBytes : vh + slotOf(i0 + 2, first, slot0) * rowBytes;
          const v3 = kind != 0 ? v2 + dBytes : vh + slotOf(i0 + 3, first, slot0) * rowBytes;
          // float32: the G passes read the four rows interleaved; one in-order read of them
          // first lets the prefetcher stream them (see "Row order")
          if (kind == 0 && dd >= ROW_ORDER_MIN) { touchLines(v0, dBytes); touchLines(v1, dBytes); touchLines(v2, dBytes); touchLines(v3, dBytes); }
          pvHeads(os, qStep, v0, v1, v2, v3, scores + (i0 << 2), cnt << 2, dBytes, G);
        }
      }
      for (let i: usize = i0; i < cnt; i++) {
        const slot = slotOf(i, first, slot0);
        const vr = vh + slot * rowBytes;
        if (kind == 0 || kind == 3 || (G == 1 && kind != 4)) {
          const vs: f32 = kind == 3 ? ld(vsh, slot) : 1;
          for (let g: usize = 0; g < G; g++) axpy(os + g * qStep, vr, kind == 3 ? ld(scores, g * cnt + i) * vs : ld(scores, g * cnt + i), dd, kind);
        } else {
          widenRow(rowBuf, vr, dd, kind, kind >= 3 ? ld(vsh, slot) : 1);
          for (let g: usize = 0; g < G; g++) axpy(os + g * qStep, rowBuf, ld(scores, g * cnt + i), dd, 0);
        }
      }
    }
  }
}
