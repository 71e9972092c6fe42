// Q8_0 matrix-vector product: llama2.c's int8 forward pass (runq.c), weights and activations
// quantized to int8 in groups of GS consecutive elements, one float32 scale per group.
//
// Arithmetic (runq.c's quantize() and matmul(), reproduced bit for bit):
//   quantize:  per group g of x:  wmax = max_i |x_i|,  s_g = wmax / 127 (float32 division),
//              q_i = round(x_i / s_g) with round half away from zero (C's round());
//              a group of zeros gives s_g = 0 and codes 0 (0/0 is NaN, which C's int8
//              conversion on x86 turns into 0; here trunc_sat(NaN) = 0).
//   matvec:    out_i = Σ_g ((float) ival_ig · ws_ig) · xs_g,  summed over g in order, each
//              product and sum rounded to float32, where ival_ig = Σ_{k in g} Wq_ik · xq_k is
//              an exact int32 sum (|ival| ≤ GS · 127², GS ≤ 1024 keeps it below 2^24, so
//              (float) ival is exact too). The order of the integer sum does not matter,
//              so the SIMD build (i32x4.dot_i16x8_s over 8 codes) and the scalar build give
//              bit-identical results, and both equal runq.c's.
//
// Layout. Weights Wq [d, n] int8, row-major (the checkpoint's own order) for matvecQ8; in
// 4-row tiles for matvecQ8Tiled (below; GS a multiple of 8, which llama2.c's export gives
// whenever the model dimension is a multiple of 8). Weight scales transposed, [n / GS, d]
// float32: the scales of rows i … i+3 for group g are the four consecutive floats at
// (g·d + i)·4, one v128 load for a tile of 4 rows (the host transposes them once at load).
// Activations xq [n] as int16 (the int8 codes widened, so the dot product loads them
// directly) and xs [n / GS] float32.
//
// Preconditions (the host guarantees them): n is a multiple of GS, 1 ≤ GS ≤ 1024; xq and xs
// hold n and n / GS entries; out [d] does not overlap any input; inputs may be read up to 16
// bytes past their end (arena padding). The SIMD path takes GS a multiple of 4 (8 codes per
// step, then a last 4); GS = 1 or 2 (llama2.c halves GS until it divides dim) runs the
// scalar loop.

import { hsum4i, touchLines } from './simd';

// @ts-ignore: decorator
@inline const QMAX: f32 = 127;

/** round(v) half away from zero, as C's round() (exact: v − trunc(v) is exact in float32). */
@inline function roundAway(v: f32): f32 {
  const t = trunc(v);
  return abs(v - t) >= 0.5 ? t + copysign<f32>(1, v) : t;
}

/** roundAway on four lanes: + copysign(1, v) where |v − trunc v| ≥ 0.5 (NaN compares false; trunc_sat then gives 0). */
@inline function roundAwayV(v: v128): v128 {
  const t = f32x4.trunc(v);
  const adj = v128.and(f32x4.ge(f32x4.abs(f32x4.sub(v, t)), f32x4.splat(0.5)), v128.or(f32x4.splat(1), v128.and(v, i32x4.splat(0x80000000))));
  return f32x4.add(t, adj);
}

/**
 * Quantizes x [n] (float32) in groups of gs: codes as int16 at q [n], scales at s [n / gs].
 * Exactly runq.c's quantize(). q and s must not overlap x.
 */
/** Clamps rounded codes to [−QMAX, QMAX] (a subnormal scale, see quantizeQ8); NaN stays NaN (→ 0 by trunc_sat). */
@inline function clampQ(v: v128): v128 {
  return f32x4.pmax(f32x4.pmin(v, f32x4.splat(<f32>QMAX)), f32x4.splat(-<f32>QMAX));
}

export function quantizeQ8(q: usize, s: usize, x: usize, n: i32, gs: i32): void {
  const groups = n / gs;
  for (let g = 0; g < groups; g++) {
    const x0 = x + (<usize>(g * gs) << 2), q0 = q + (<usize>(g * gs) << 1);
    let k = 0;
    let wmax: f32 = 0;
    if (ASC_FEATURE_SIMD && (gs & 3) == 0) {
      // pmax(m, v) = m < v ? v : m: a NaN element is skipped, as C's `if (val > wmax)`
      let m = f32x4.splat(0);
      for (; k < gs; k += 4) m = f32x4.pmax(m, f32x4.abs(v128.load(x0 + (<usize>k << 2))));
      m = f32x4.pmax(m, v128.shuffle<f32>(m, m, 2, 3, 0, 1));
      m = f32x4.pmax(m, v128.shuffle<f32>(m, m, 1, 0, 3, 2));
      wmax = f32x4.extract_lane(m, 0);
      const scale = wmax / QMAX, sv = f32x4.splat(scale);
      store<f32>(s + (<usize>g << 2), scale);
      if (scale == 0) { memory.fill(q0, 0, <usize>gs << 1); continue; } // see the scalar loop
      for (k = 0; k + 8 <= gs; k += 8) {
        const a = clampQ(roundAwayV(f32x4.div(v128.load(x0 + (<usize>k << 2)), sv)));
        const b = clampQ(roundAwayV(f32x4.div(v128.load(x0 + (<usize>k << 2), 16), sv)));
        v128.store(q0 + (<usize>k << 1), i16x8.narrow_i32x4_s(i32x4.trunc_sat_f32x4_s(a), i32x4.trunc_sat_f32x4_s(b)));
      }
      if (k < gs) { // a last 4 (GS = 4, 12, …)
        const a = clampQ(roundAwayV(f32x4.div(v128.load(x0 + (<usize>k << 2)), sv)));
        v128.store64_lane(q0 + (<usize>k << 1), i16x8.narrow_i32x4_s(i32x4.trunc_sat_f32x4_s(a), a), 0);
      }
      continue;
    }
    for (; k < gs; k++) {
      const v = abs(load<f32>(x0 + (<usize>k << 2)));
      if (v > wmax) wmax = v;
    }
    const scale = wmax / QMAX;
    store<f32>(s + (<usize>g << 2), scale);
    // A zero scale (a zero group, or a subnormal wmax / 127 that rounds to 0) gives codes 0:
    // x / 0 is ±Inf or NaN, which runq.c's (int8_t) round(…) turns into 0 on x86 (undefined
    // in C) and which the zero scale multiplies away anyway.
    if (scale == 0) { memory.fill(q0, 0, <usize>gs << 1); continue; }
    for (k = 0; k < gs; k++) {
      // r is an integer in [−127, 127] for normal groups; a subnormal scale (rounded in
      // wmax / 127) can put x / scale a little past 127, clamped here (undefined in C),
      // and a NaN x gives NaN → 0 (runq.c on x86)
      const r = roundAway(load<f32>(x0 + (<usize>k << 2)) / scale);
      store<i16>(q0 + (<usize>k << 1), r == r ? <i16><i32>min(<f32>QMAX, max(-<f32>QMAX, r)) : 0);
    }
  }
}

/**
 * out[i] = Σ_g ((float) Σ_{k in g} Wq[i, k] · xq[k]) · ws[g, i] · xs[g] for i < d, in runq.c's
 * order (see the file comment). w: Wq [d, n] int8; sT: weight scales [n / gs, d] f32; xq:
 * int16 [n]; xs: f32 [n / gs]. Writes exactly out[0 … d−1].
 */
export function matvecQ8(out: usize, w: usize, sT: usize, xq: usize, xs: usize, d: i32, n: i32, gs: i32): void {
  const nn = <usize>n, groups = n / gs, gsb = <usize>gs;
  let i = 0;
  if (ASC_FEATURE_SIMD && (gs & 3) == 0) {
    // Tiles of 4 rows: per group, 4 int32x4 partial sums (one per row) of dot_i16x8_s over
    // 8 codes at a time, reduced to one int32x4 of the 4 rows' group sums; then the 4 rows'
    // float32 sums advance together, lane r doing row i + r's runq.c arithmetic.
    for (; i + 4 <= d; i += 4) {
      let p = w + <usize>i * nn;
      // A tile reads its four rows interleaved, 8 codes of each in turn. From 384-byte rows
      // that order keeps this CPU's prefetcher from streaming them (a bare loop over 64 MiB:
      // 23.7 GB/s at 288-byte rows, 15.3 at 384, 9.1 at 768 — llm.ts, "Row order"), so the
      // next tile's rows are touched once, in order (one load per 64 bytes, values dropped):
      // the stories15M-shaped Q8_0 step, whose w2 rows are 768 codes, ~0.92× the time.
      if (nn >= 384 && i + 8 <= d) touchLines(p + (nn << 2), nn << 2);
      let val = f32x4.splat(0);
      let sp = sT + (<usize>i << 2);
      const sStep = <usize>d << 2;
      for (let g = 0; g < groups; g++) {
        let a0 = i32x4.splat(0), a1 = i32x4.splat(0), a2 = i32x4.splat(0), a3 = i32x4.splat(0);
        const xg = xq + (<usize>(g * gs) << 1), xe = xg + (gsb << 1);
        let x = xg;
        for (; x + 16 <= xe; x += 16) {
          const xv = v128.load(x);
          a0 = i32x4.add(a0, i32x4.dot_i16x8_s(v128.load8x8_s(p), xv));
          a1 = i32x4.add(a1, i32x4.dot_i16x8_s(v128.load8x8_s(p + nn), xv));
          a2 = i32x4.add(a2, i32x4.dot_i16x8_s(v128.load8x8_s(p + 2 * nn), xv));
          a3 = i32x4.add(a3, i32x4.dot_i16x8_s(v128.load8x8_s(p + 3 * nn), xv));
          p += 8;
        }
        if (x < xe) {
          // a last 4 codes (GS = 4, 12, …): zero-extended loads, so the upper lanes add 0
          const xv = v128.load64_zero(x);
          a0 = i32x4.add(a0, i32x4.dot_i16x8_s(i16x8.extend_low_i8x16_s(v128.load32_zero(p)), xv));
          a1 = i32x4.add(a1, i32x4.dot_i16x8_s(i16x8.extend_low_i8x16_s(v128.load32_zero(p + nn)), xv));
          a2 = i32x4.add(a2, i32x4.dot_i16x8_s(i16x8.extend_low_i8x16_s(v128.load32_zero(p + 2 * nn)), xv));
          a3 = i32x4.add(a3, i32x4.dot_i16x8_s(i16x8.extend_low_i8x16_s(v128.load32_zero(p + 3 * nn)), xv));
          p += 4;
        }
        const iv = f32x4.convert_i32x4_s(hsum4i(a0, a1, a2, a3));
        val = f32x4.add(val, f32x4.mul(f32x4.mul(iv, v128.load(sp)), v128.load32_splat(xs + (<usize>g << 2))));
        sp += sStep;
      }
      v128.store(out + (<usize>i << 2), val);
    }
  }
  // Scalar: every row in the scalar build, the last d mod 4 rows (or every row when GS is not
  // a multiple of 8) in the SIMD build.
  for (; i < d; i++) out1Q8(out, w, sT, xq, xs, d, n, gs, i);
}

/** Row i of matvecQ8 (row-major at w + i·n), scalar. */
function out1Q8(out: usize, w: usize, sT: usize, xq: usize, xs: usize, d: i32, n: i32, gs: i32, i: i32): void {
  const row = w + <usize>i * <usize>n, groups = n / gs, gsb = <usize>gs;
  let val: f32 = 0;
  for (let g = 0; g < groups; g++) {
    const k0 = <usize>(g * gs);
    let ival: i32 = 0;
    for (let k: usize = 0; k < gsb; k++) {
      ival += <i32>load<i8>(row + k0 + k) * <i32>load<i16>(xq + ((k0 + k) << 1));
    }
    val += <f32>ival * load<f32>(sT + ((<usize>g * <usize>d + <usize>i) << 2)) * load<f32>(xs + (<usize>g << 2));
  }
  store<f32>(out + (<usize>i << 2), val);
}

// ---- the tiled layout ---------------------------------------------------------------------
//
// matvecQ8 reads a tile's four rows side by side, 8 codes of each in turn: four streams n
// bytes apart, which this CPU's prefetcher does not follow (hence its touch of the next
// tile). The tiled layout stores them in that order instead, so a tile is one sequential
// run (the host packs the codes once at load, src/llm/pack.ts packQ8Tiles):
//     P[4t·n + 32c + 8r + k] = W[4t + r, 8c + k]      (tile t = rows 4t … 4t+3, c < n/8, k < 8)
// for every full tile; the last d mod 4 rows stay row-major after them (row i at i·n), so P
// has W's size and every tile and row starts where it did. Same arithmetic as matvecQ8, same
// order, so the same bits (runq.c's). The stories15M-shaped Q8_0 step's products (six layers
// and the classifier, 17 MB): 0.82× the time of matvecQ8 with the cache warm, 0.85× evicted.

/**
 * matvecQ8 over W in the tiled layout above: out[i] = Σ_g ((float) Σ_{k in g} Wq[i, k] · xq[k])
 * · ws[g, i] · xs[g] for i < d, in runq.c's order. Preconditions as matvecQ8, and gs a
 * multiple of 8. Writes exactly out[0 … d−1].
 */
export function matvecQ8Tiled(out: usize, w: usize, sT: usize, xq: usize, xs: usize, d: i32, n: i32, gs: i32): void {
  const nn = <usize>n, groups = n / gs, gsb = <usize>gs, dt = d & ~3;
  const sStep = <usize>d << 2;
  for (let i = 0; i < dt; i += 4) {
    let p = w + <usize>i * nn;
    let sp = sT + (<usize>i << 2);
    if (ASC_FEATURE_SIMD) {
      // lane r of each partial sum is row i + r's runq.c arithmetic (see matvecQ8)
      let val = f32x4.splat(0);
      for (let g = 0; g < groups; g++) {
        let a0 = i32x4.splat(0), a1 = i32x4.splat(0), a2 = i32x4.splat(0), a3 = i32x4.splat(0);
        const xg = xq + (<usize>(g * gs) << 1), xe = xg + (gsb << 1);
        for (let x = xg; x < xe; x += 16) {
          const xv = v128.load(x);
          a0 = i32x4.add(a0, i32x4.dot_i16x8_s(v128.load8x8_s(p), xv));
          a1 = i32x4.add(a1, i32x4.dot_i16x8_s(v128.load8x8_s(p, 8), xv));
          a2 = i32x4.add(a2, i32x4.dot_i16x8_s(v128.load8x8_s(p, 16), xv));
          a3 = i32x4.add(a3, i32x4.dot_i16x8_s(v128.load8x8_s(p, 24), xv));
          p += 32;
        }
        const iv = f32x4.convert_i32x4_s(hsum4i(a0, a1, a2, a3));
        val = f32x4.add(val, f32x4.mul(f32x4.mul(iv, v128.load(sp)), v128.load32_splat(xs + (<usize>g << 2))));
        sp += sStep;
      }
      v128.store(out + (<usize>i << 2), val);
    } else {
      let v0: f32 = 0, v1: f32 = 0, v2: f32 = 0, v3: f32 = 0;
      for (let g = 0; g < groups; g++) {
        let s0: i32 = 0, s1: i32 = 0, s2: i32 = 0, s3: i32 = 0;
        const xg = xq + (<usize>(g * gs) << 1), xe = xg + (gsb << 1);
        for (let x = xg; x < xe; x += 16) {
          for (let k: usize = 0; k < 8; k++) {
            const xk = <i32>load<i16>(x + (k << 1));
            s0 += <i32>load<i8>(p + k) * xk;
            s1 += <i32>load<i8>(p + 8 + k) * xk;
            s2 += <i32>load<i8>(p + 16 + k) * xk;
            s3 += <i32>load<i8>(p + 24 + k) * xk;
          }
          p += 32;
        }
        const xsg = load<f32>(xs + (<usize>g << 2));
        v0 += <f32>s0 * load<f32>(sp) * xsg;
        v1 += <f32>s1 * load<f32>(sp, 4) * xsg;
        v2 += <f32>s2 * load<f32>(sp, 8) * xsg;
        v3 += <f32>s3 * load<f32>(sp, 12) * xsg;
        sp += sStep;
      }
      const o = out + (<usize>i << 2);
      store<f32>(o, v0); store<f32>(o, v1, 4); store<f32>(o, v2, 8); store<f32>(o, v3, 12);
    }
  }
  // the last d mod 4 rows, row-major
  for (let i = dt; i < d; i++) out1Q8(out, w, sT, xq, xs, d, n, gs, i);
}
