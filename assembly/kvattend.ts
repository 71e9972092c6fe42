// Decode attention straight from an int8 or float8e4m3fn KV cache, in 16-bit integer
// arithmetic (the SIMD build's attendI8 / attendE4m3; the scalar build uses llm.ts).
//
// Why integers. A decode step reads every cached K and V element once and multiplies it
// with each of the G query heads of its group. In float32 that is a multiply and an add
// per 4 products; i32x4.dot_i16x8_s does 8 products (and their pairwise sums) in one
// instruction. So the cache rows are widened to int16 — int8 K rows in the load itself
// (v128.load8x8_s), int8 V rows zipped into byte pairs once per block and widened in P·V's
// loads, fp8 rows converted once per block into scratch, shared by the G heads — and the
// query rows and the softmax weights are put on a 16-bit grid:
//
//   scores:  s_gj = scale · q_g · k_j = kScale_j · qs_g · Σ_d Q_gd K_jd
//            K_jd = the int8 code (int8 cache) or round(32 · e4m3(byte)) (fp8 cache);
//            Q_gd = round(scale · q_gd / qs_g), qs_g = max_d |scale · q_gd| / QM (× 1/32 fp8).
//   output:  y_g  = Σ_j p_gj v_j / Σ_j p_gj, with p the running (online) softmax over blocks
//            of KB keys; per block w_gj = p_gj · vScale_j is put on the grid
//            W_gj = round(w_gj / ws_g), ws_g = max_j w_gj / WQ, and Σ_j W_gj V_jd is summed
//            in int32 (V_jd as K_jd), then added to a float32 accumulator times ws_g.
//
// Error. Q and W carry a relative error of at most 1/(2·QM), 1/(2·WQ) of their row's /
// block's largest entry (WQ ≥ 2184 always, QM ≥ 2184 up to D = 256: ≤ 2.3e−4; beyond, fp8's
// QM = 2^31 / (Dp/4 · KMAX_F8) shrinks with D, 546 at D = 1024: ≤ 9.2e−4), below the cache's
// own rounding (int8: 1/254 of the row's largest |x|; e4m3: 2^−4 relative per element). Summed
// over a block, W's rounding moves an output by at most KB/2 steps of ws_g, i.e. 16/WQ of
// max|v| (each of a block's weights but the largest just under half a step: 4.9e−4 for int8's
// WQ = 32767, 3.7e−3 for fp8's 4369; test/kvcache.test.ts builds that block). fp8 codes are
// put on the grid 1/32 of the scaled row (whose largest element is 448): every element of
// magnitude ≥ 1/4 (exponent ≥ 5) is exact, smaller ones round to the nearest 1/32, an error
// of at most 2^−6 against the row's 448 (3.5e−5 relative). The int32 sums cannot overflow:
// QM and WQ are chosen so that Dp · QM · KMAX (a row's whole dot product: int8 sums its
// lanes in int32) or, for fp8, Dp/4 · QM · KMAX (one lane; fp8 sums the lanes in float32),
// and KB · WQ · KMAX stay below 2^31.
//
// fp8 → int16 (value × 32) per 16 bytes, branch-free, two table lookups per byte:
// byte = s e3 e2 e1 | e0 m2 m1 m0 (high nibble hn, low nibble ln). For a normal code
// value = (8 + m) · 2^(e − 10) = T(ln) · 4^E(hn) · 2^−10 with T = (8 + m) << e0 ∈ [8, 30]
// and E = e3e2e1. With X = T · 2^10 and Y = ±4^E (both int16: X ≤ 30720, |Y| ≤ 2^14)
// the Q15 product (X·Y + 2^14) >> 15 = T · 4^E · 2^−5 = round(32 · value). Subnormal codes
// (e = 0: value m · 2^−9, i.e. 32 · value ≤ 7/16) go through the same formula with
// T = 8 + m and give (8 + m)/32 < 1/2, which rounds to 0 as the exact value does.
// X's high byte T·4 comes from i8x16.swizzle of ln, Y's two bytes from two swizzles of hn.
//
// Blocks. Keys go in blocks of KB = 32 (a block of widened fp8 K and V rows stays in L1);
// per block and group of 4 heads: scores → online-softmax update (running max m and sum
// l per lane, the accumulators rescaled only when m moved) → weights on the grid, packed
// as int16 pairs (W_2t, W_2t+1) per head → P·V as dot_i16x8_s of interleaved V pairs
// (v_2t[d], v_2t+1[d]) with the splatted pair. Heads beyond a multiple of 4 run one by one.
//
// Layout and preconditions as attendI8 in llm.ts: one sequence, K/V rows [Hkv, N, D]
// bytes with scales (Hkv, N) f32; q / out float32 addressed by head and row strides;
// `scratch` holds attendQ8ScratchBytes(G, D) bytes (16-byte aligned). Cache rows may be
// read up to 15 bytes past their end (arena padding).

import { MAGIC, expNegV, hsum4, hsum4i } from './simd';

// @ts-ignore: decorator
@inline const KB = 32; // keys per block
// @ts-ignore: decorator
@inline const KMAX_I8: i32 = 127;
// @ts-ignore: decorator
@inline const KMAX_F8: i32 = 15360; // 32 · 480 (the NaN code's T·4^E, above 448's 14336)

@inline function roundUp(x: i32, m: i32): i32 {
  return (x + m - 1) / m * m;
}

/** Query heads are processed in groups of 4 (one per f32x4 lane), the G mod 4 rest one by one. */
@inline function groupsOf(G: i32): i32 {
  return (G >> 2) + (G & 3);
}

/** Scratch bytes attendI8 / attendE4m3 need for G query heads per kv head and head size D. */
export function attendQ8ScratchBytes(G: i32, D: i32): usize {
  const NG = <usize>groupsOf(max(G, 1)), Dp = <usize>roundUp(max(D, 1), 16);
  // Q rows + accumulators (4 lanes per group), m / l / qs / ws per group, scores, pair
  // weights per group, the K block, the V block (pairs) and a zero row
  return NG * 4 * Dp * 6 + NG * 64 + KB * 16 + NG * (KB / 2) * 16 + <usize>KB * Dp * 4 + Dp + 32 + 64;
}

// ---- fp8 → int16 -------------------------------------------------------------------------

// The three lookups of 16 codes: X's high bytes, Y's low and high bytes (m0f = splat(0x0f),
// held in a register by the caller). The indices are always < 16 and no product is
// −32768·−32768, so the relaxed build may use relaxed_swizzle / relaxed_q15mulr (one x86
// instruction each, where the strict forms add a range fix-up and a saturation fix-up);
// both give the same results here.
@inline function swz(t: v128, i: v128): v128 {
  if (ASC_FEATURE_RELAXED_SIMD) return i8x16.relaxed_swizzle(t, i);
  return i8x16.swizzle(t, i);
}
@inline function q15(a: v128, b: v128): v128 {
  if (ASC_FEATURE_RELAXED_SIMD) return i16x8.relaxed_q15mulr_s(a, b);
  return i16x8.q15mulr_sat_s(a, b);
}
@inline function lookX(b: v128, m0f: v128): v128 {
  return swz(i8x16(32, 36, 40, 44, 48, 52, 56, 60, 64, 72, 80, 88, 96, 104, 112, 120), v128.and(b, m0f));
}
@inline function lookYlo(hn: v128): v128 {
  return swz(i8x16(1, 4, 16, 64, 0, 0, 0, 0, -1, -4, -16, -64, 0, 0, 0, 0), hn);
}
@inline function lookYhi(hn: v128): v128 {
  return swz(i8x16(0, 0, 0, 0, 1, 4, 16, 64, -1, -1, -1, -1, -1, -4, -16, -64), hn);
}
/** round(32 · value) of codes 0..7 (low) or 8..15 (high) of the 16 looked up. */
@inline function e4m3Lo(xa: v128, ylo: v128, yhi: v128): v128 {
  return q15(
    i8x16.shuffle(i8x16.splat(0), xa, 0, 16, 1, 17, 2, 18, 3, 19, 4, 20, 5, 21, 6, 22, 7, 23),
    i8x16.shuffle(ylo, yhi, 0, 16, 1, 17, 2, 18, 3, 19, 4, 20, 5, 21, 6, 22, 7, 23));
}
@inline function e4m3Hi(xa: v128, ylo: v128, yhi: v128): v128 {
  return q15(
    i8x16.shuffle(i8x16.splat(0), xa, 8, 24, 9, 25, 10, 26, 11, 27, 12, 28, 13, 29, 14, 30, 15, 31),
    i8x16.shuffle(ylo, yhi, 8, 24, 9, 25, 10, 26, 11, 27, 12, 28, 13, 29, 14, 30, 15, 31));
}

/** nb fp8 cache rows (D bytes each, consecutive) → int16 rows of Dp at dst. c0f: 16 bytes of 0x0f (read into a register once). */
export function widenK(dst: usize, src: usize, nb: i32, D: i32, Dp: i32, c0f: usize): void {
  const rs = <usize>Dp << 1, m0f = v128.load(c0f);
  for (let j = 0; j < nb; j++) {
    const s = src + <usize>j * <usize>D, d0 = dst + <usize>j * rs;
    for (let d = 0; d < Dp; d += 16) {
      const b = v128.load(s + d);
      const hn = v128.and(i16x8.shr_u(b, 4), m0f);
      const xa = lookX(b, m0f), ylo = lookYlo(hn), yhi = lookYhi(hn);
      v128.store(d0 + (<usize>d << 1), e4m3Lo(xa, ylo, yhi));
      v128.store(d0 + (<usize>d << 1), e4m3Hi(xa, ylo, yhi), 16);
    }
  }
}

/** nb fp8 cache rows → pairs (2t, 2t+1) of int16 rows interleaved element by element; an odd last row pairs with zeros. */
export function widenV(dst: usize, src: usize, nb: i32, D: i32, Dp: i32, zero: usize, c0f: usize): void {
  const ps = <usize>Dp << 2, m0f = v128.load(c0f);
  for (let j = 0; j < nb; j += 2) {
    const r0 = src + <usize>j * <usize>D, r1 = j + 1 < nb ? r0 + <usize>D : zero;
    const d0 = dst + <usize>(j >> 1) * ps;
    for (let d = 0; d < Dp; d += 16) {
      const o = d0 + (<usize>d << 2);
      // interleave the two rows' bytes first: the conversion keeps lane order, so its
      // outputs are already the (v_2t[d], v_2t+1[d]) pairs
      const ba = v128.load(r0 + d), bb = v128.load(r1 + d);
      const za = i8x16.shuffle(ba, bb, 0, 16, 1, 17, 2, 18, 3, 19, 4, 20, 5, 21, 6, 22, 7, 23);
      const zb = i8x16.shuffle(ba, bb, 8, 24, 9, 25, 10, 26, 11, 27, 12, 28, 13, 29, 14, 30, 15, 31);
      const ha = v128.and(i16x8.shr_u(za, 4), m0f), hb = v128.and(i16x8.shr_u(zb, 4), m0f);
      const xa = lookX(za, m0f), la = lookYlo(ha), ua = lookYhi(ha);
      v128.store(o, e4m3Lo(xa, la, ua)); v128.store(o, e4m3Hi(xa, la, ua), 16);
      const xb = lookX(zb, m0f), lb = lookYlo(hb), ub = lookYhi(hb);
      v128.store(o, e4m3Lo(xb, lb, ub), 32); v128.store(o, e4m3Hi(xb, lb, ub), 48);
    }
  }
}

/**
 * nb int8 cache rows → pairs (2t, 2t+1) interleaved byte by byte (an odd last row pairs with
 * zeros), Dp·2 bytes per pair: P·V widens them in its own loads (v128.load8x8_s gives the
 * int16 pairs of 4 columns), so this pass only zips, half the work and scratch of widening here.
 */
function zipV8(dst: usize, src: usize, nb: i32, D: i32, Dp: i32, zero: usize): void {
  const ps = <usize>Dp << 1;
  for (let j = 0; j < nb; j += 2) {
    const r0 = src + <usize>j * <usize>D, r1 = j + 1 < nb ? r0 + <usize>D : zero;
    const d0 = dst + <usize>(j >> 1) * ps;
    for (let d = 0; d < Dp; d += 16) {
      const a = v128.load(r0 + d), b = v128.load(r1 + d);
      const o = d0 + (<usize>d << 1);
      v128.store(o, i8x16.shuffle(a, b, 0, 16, 1, 17, 2, 18, 3, 19, 4, 20, 5, 21, 6, 22, 7, 23));
      v128.store(o, i8x16.shuffle(a, b, 8, 24, 9, 25, 10, 26, 11, 27, 12, 28, 13, 29, 14, 30, 15, 31), 16);
    }
  }
}

// ---- scores -------------------------------------------------------------------------------

@inline function cvt(a: v128): v128 {
  return f32x4.convert_i32x4_s(a);
}

// K and V are read either as int16 rows widened into scratch (E = i16: fp8, and int8 when
// the rows are gathered) or straight from an int8 cache (E = i8: v128.load8x8_s widens 8
// codes in the load). rs = row stride in bytes; rows may be read up to 15 bytes past D.
// @ts-ignore: decorator
@inline function ldK<E>(p: usize, e: usize): v128 {
  return sizeof<E>() == 1 ? v128.load8x8_s(p + e) : v128.load(p + (e << 1));
}

/** Four heads (Q rows group-interleaved at qi) × nb keys (rows at kc, stride rs bytes): sc[j] = lanes of the 4 heads' scores. */
function scores4<E>(qi: usize, kc: usize, rs: usize, nb: i32, Dp: i32, sc: usize, qs: v128, ks: usize): void {
  const qEnd = qi + (<usize>Dp << 3); // 8 elements of the 4 rows per 64 bytes
  const kStep: usize = sizeof<E>() == 1 ? 8 : 16;
  for (let j = 0; j < nb; j += 2) {
    const k0 = kc + <usize>j * rs, k1 = j + 1 < nb ? k0 + rs : k0;
    let a00 = i32x4.splat(0), a10 = i32x4.splat(0), a20 = i32x4.splat(0), a30 = i32x4.splat(0);
    let a01 = i32x4.splat(0), a11 = i32x4.splat(0), a21 = i32x4.splat(0), a31 = i32x4.splat(0);
    // pointers, not an index: V8 otherwise rebuilds k0 / k1 inside the loop
    let kp0 = k0, kp1 = k1;
    for (let qp = qi; qp < qEnd; qp += 64) {
      const x0 = ldK<E>(kp0, 0), x1 = ldK<E>(kp1, 0);
      const y0 = v128.load(qp), y1 = v128.load(qp, 16), y2 = v128.load(qp, 32), y3 = v128.load(qp, 48);
      kp0 += kStep; kp1 += kStep;
      a00 = i32x4.add(a00, i32x4.dot_i16x8_s(y0, x0)); a01 = i32x4.add(a01, i32x4.dot_i16x8_s(y0, x1));
      a10 = i32x4.add(a10, i32x4.dot_i16x8_s(y1, x0)); a11 = i32x4.add(a11, i32x4.dot_i16x8_s(y1, x1));
      a20 = i32x4.add(a20, i32x4.dot_i16x8_s(y2, x0)); a21 = i32x4.add(a21, i32x4.dot_i16x8_s(y2, x1));
      a30 = i32x4.add(a30, i32x4.dot_i16x8_s(y3, x0)); a31 = i32x4.add(a31, i32x4.dot_i16x8_s(y3, x1));
    }
    const c = sc + (<usize>j << 4);
    if (sizeof<E>() == 1) {
      // int8 K: QM keeps a row's whole int32 total below 2^31 (see attendQ8), so the
      // horizontal sums stay in int32 and one conversion per key follows
      v128.store(c, f32x4.mul(cvt(hsum4i(a00, a10, a20, a30)), f32x4.mul(qs, v128.load32_splat(ks + (<usize>j << 2)))));
      if (j + 1 < nb) v128.store(c, f32x4.mul(cvt(hsum4i(a01, a11, a21, a31)), f32x4.mul(qs, v128.load32_splat(ks + (<usize>j << 2), 4))), 16);
    } else {
      // lanes → float before the horizontal sums (fp8's int32 total of a row could overflow)
      v128.store(c, f32x4.mul(hsum4(cvt(a00), cvt(a10), cvt(a20), cvt(a30)), f32x4.mul(qs, v128.load32_splat(ks + (<usize>j << 2)))));
      if (j + 1 < nb) v128.store(c, f32x4.mul(hsum4(cvt(a01), cvt(a11), cvt(a21), cvt(a31)), f32x4.mul(qs, v128.load32_splat(ks + (<usize>j << 2), 4))), 16);
    }
  }
}

/** One head (Q row at qi, in the group-interleaved layout: 16 bytes every 64) × nb keys: sc[j] = the score in every lane. */
function scores1<E>(qi: usize, kc: usize, rs: usize, nb: i32, Dp: i32, sc: usize, qs: v128, ks: usize): void {
  const qEnd = qi + (<usize>Dp << 3);
  const kStep: usize = sizeof<E>() == 1 ? 8 : 16;
  for (let j = 0; j < nb; j += 4) {
    const k0 = kc + <usize>j * rs;
    const k1 = j + 1 < nb ? k0 + rs : k0, k2 = j + 2 < nb ? k1 + rs : k0, k3 = j + 3 < nb ? k2 + rs : k0;
    let a0 = i32x4.splat(0), a1 = i32x4.splat(0), a2 = i32x4.splat(0), a3 = i32x4.splat(0);
    let kp0 = k0, kp1 = k1, kp2 = k2, kp3 = k3;
    for (let qp = qi; qp < qEnd; qp += 64) {
      const y = v128.load(qp);
      a0 = i32x4.add(a0, i32x4.dot_i16x8_s(y, ldK<E>(kp0, 0)));
      a1 = i32x4.add(a1, i32x4.dot_i16x8_s(y, ldK<E>(kp1, 0)));
      a2 = i32x4.add(a2, i32x4.dot_i16x8_s(y, ldK<E>(kp2, 0)));
      a3 = i32x4.add(a3, i32x4.dot_i16x8_s(y, ldK<E>(kp3, 0)));
      kp0 += kStep; kp1 += kStep; kp2 += kStep; kp3 += kStep;
    }
    // int8: sums in int32 (see scores4); fp8: lanes → float first (its row total could overflow)
    const h = sizeof<E>() == 1 ? cvt(hsum4i(a0, a1, a2, a3)) : hsum4(cvt(a0), cvt(a1), cvt(a2), cvt(a3));
    const s = f32x4.mul(f32x4.mul(h, qs),
      v128.load(ks + (<usize>j << 2))); // reads up to 3 scales past the block: arena padding
    // each key's score into all four lanes of its row (via the row itself: lane t of s → row j + t)
    v128.store(sc + (<usize>j << 4), s);
    for (let t = min(4, nb - j) - 1; t >= 0; t--) v128.store(sc + (<usize>(j + t) << 4), v128.load32_splat(sc + (<usize>j << 4) + (<usize>t << 2)));
  }
}

// ---- P·V ----------------------------------------------------------------------------------

/**
 * acc[h][d] += ws_h · Σ_t dot(V pair t, W pair t of head h) for the group's nh (4 or 1)
 * heads; accumulators at acc (rows of Dp f32), pair weights at wp (16 bytes per pair: one
 * i32 = two int16 per lane/head), ws the 4 lanes' grid steps; vc: the block's V rows as
 * interleaved pairs (v_2t[d], v_2t+1[d]): int16 from widenV (E = i16, Dp·4 bytes per pair) or
 * bytes from zipV8 (E = i8, Dp·2 bytes per pair, widened by v128.load8x8_s here: the same
 * number of loads, half the widening pass — int8 step 0.97× the time, same process).
 * (Reading int8 rows in place here, zipping the pairs in registers, measured 4–5% slower:
 * the extra live vectors make V8 spill an accumulator every step.)
 */
// @ts-ignore: decorator
@inline function ldV<E>(p: usize, half: usize): v128 {
  // E = i16: pairs stored as int16; E = i8: as bytes, widened in the load
  return sizeof<E>() == 1 ? v128.load8x8_s(p + (half << 3)) : v128.load(p + (half << 4));
}

function pvGroup<E>(acc: usize, vc: usize, nb: i32, wp: usize, ws: v128, Dp: i32, D8: i32, nh: i32): void {
  const es = <usize>sizeof<E>();
  const ps = <usize>Dp * es << 1, ar = <usize>Dp << 2;
  const wEnd = wp + (<usize>((nb + 1) >> 1) << 4); // one 16-byte weight record per key pair
  if (nh == 4) {
    const ws0 = f32x4.splat(f32x4.extract_lane(ws, 0)), ws1 = f32x4.splat(f32x4.extract_lane(ws, 1));
    const ws2 = f32x4.splat(f32x4.extract_lane(ws, 2)), ws3 = f32x4.splat(f32x4.extract_lane(ws, 3));
    for (let d: usize = 0; d < <usize>D8; d += 8) {
      let x0 = i32x4.splat(0), y0 = i32x4.splat(0), x1 = i32x4.splat(0), y1 = i32x4.splat(0);
      let x2 = i32x4.splat(0), y2 = i32x4.splat(0), x3 = i32x4.splat(0), y3 = i32x4.splat(0);
      let vp = vc + (d * es << 1);
      for (let w = wp; w < wEnd; w += 16) {
        const lo = ldV<E>(vp, 0), hi = ldV<E>(vp, 1);
        const w0 = v128.load32_splat(w), w1 = v128.load32_splat(w, 4), w2 = v128.load32_splat(w, 8), w3 = v128.load32_splat(w, 12);
        x0 = i32x4.add(x0, i32x4.dot_i16x8_s(lo, w0)); y0 = i32x4.add(y0, i32x4.dot_i16x8_s(hi, w0));
        x1 = i32x4.add(x1, i32x4.dot_i16x8_s(lo, w1)); y1 = i32x4.add(y1, i32x4.dot_i16x8_s(hi, w1));
        x2 = i32x4.add(x2, i32x4.dot_i16x8_s(lo, w2)); y2 = i32x4.add(y2, i32x4.dot_i16x8_s(hi, w2));
        x3 = i32x4.add(x3, i32x4.dot_i16x8_s(lo, w3)); y3 = i32x4.add(y3, i32x4.dot_i16x8_s(hi, w3));
        vp += ps;
      }
      const o = acc + (d << 2);
      v128.store(o, f32x4.add(v128.load(o), f32x4.mul(cvt(x0), ws0)));
      v128.store(o, f32x4.add(v128.load(o, 16), f32x4.mul(cvt(y0), ws0)), 16);
      v128.store(o + ar, f32x4.add(v128.load(o + ar), f32x4.mul(cvt(x1), ws1)));
      v128.store(o + ar, f32x4.add(v128.load(o + ar, 16), f32x4.mul(cvt(y1), ws1)), 16);
      v128.store(o + 2 * ar, f32x4.add(v128.load(o + 2 * ar), f32x4.mul(cvt(x2), ws2)));
      v128.store(o + 2 * ar, f32x4.add(v128.load(o + 2 * ar, 16), f32x4.mul(cvt(y2), ws2)), 16);
      v128.store(o + 3 * ar, f32x4.add(v128.load(o + 3 * ar), f32x4.mul(cvt(x3), ws3)));
      v128.store(o + 3 * ar, f32x4.add(v128.load(o + 3 * ar, 16), f32x4.mul(cvt(y3), ws3)), 16);
    }
  } else {
    const ws0 = f32x4.splat(f32x4.extract_lane(ws, 0));
    for (let d: usize = 0; d < <usize>D8; d += 8) {
      let x0 = i32x4.splat(0), y0 = i32x4.splat(0);
      let vp = vc + (d * es << 1);
      for (let w = wp; w < wEnd; w += 16) {
        const w0 = v128.load32_splat(w);
        x0 = i32x4.add(x0, i32x4.dot_i16x8_s(ldV<E>(vp, 0), w0));
        y0 = i32x4.add(y0, i32x4.dot_i16x8_s(ldV<E>(vp, 1), w0));
        vp += ps;
      }
      const o = acc + (d << 2);
      v128.store(o, f32x4.add(v128.load(o), f32x4.mul(cvt(x0), ws0)));
      v128.store(o, f32x4.add(v128.load(o, 16), f32x4.mul(cvt(y0), ws0)), 16);
    }
  }
}

// ---- the step ------------------------------------------------------------------------------

/** acc rows (nh of them, Dp floats) ← acc · alpha[h] (alpha: nh f32 in memory). */
function rescale(acc: usize, alpha: usize, nh: i32, Dp: i32): void {
  for (let h = 0; h < nh; h++) {
    const a = v128.load32_splat(alpha + (<usize>h << 2));
    const r = acc + <usize>h * (<usize>Dp << 2);
    for (let d = 0; d < Dp; d += 4) v128.store(r + (<usize>d << 2), f32x4.mul(v128.load(r + (<usize>d << 2)), a));
  }
}

/**
 * The SIMD attendI8 (fp8 = false) / attendE4m3 (fp8 = true); arguments as in llm.ts.
 */
export function attendQ8(
  fp8: bool, out: usize, q: usize, k: usize, v: usize, Hq: i32, Hkv: i32, S: i32, qLen: i32, D: i32, N: i32,
  qHeadStride: i32, qRowStride: i32, kvLen: i32, window: i32, causal: i32, scale: f32, scratch: usize,
  kScales: usize, vScales: usize,
): void {
  const G = Hkv > 0 ? Hq / Hkv : 1;
  const NG = groupsOf(G), G4 = G >> 2;
  const Dp = roundUp(max(D, 1), 16), D8 = roundUp(D, 8);
  const dd = <usize>D, nn = <usize>N;
  const kmax = fp8 ? KMAX_F8 : KMAX_I8;
  // fp8: one lane's int32 sum (Dp/4 products) stays below 2^31; int8: the row's whole sum
  // (Dp products, summed in int32 by scores4 / scores1) does — QM is 32767 either way up to
  // D = 512 for int8
  const QM = <f32>min(32767, 2147483647 / ((fp8 ? Dp >> 2 : Dp) * kmax));
  const WQ = <f32>min(32767, 2147483647 / (KB * kmax));
  const gridK: f32 = fp8 ? <f32>1 / 32 : 1;
  // scratch
  let sp = (scratch + 15) & ~15;
  const sQ = sp; sp += <usize>NG * 4 * <usize>Dp * 2;
  const sAcc = sp; sp += <usize>NG * 4 * <usize>Dp * 4;
  const sM = sp; sp += <usize>NG * 16;
  const sL = sp; sp += <usize>NG * 16;
  const sQs = sp; sp += <usize>NG * 16;
  const sWs = sp; sp += <usize>NG * 16;
  const sSc = sp; sp += KB * 16;
  const sW = sp; sp += <usize>NG * (KB / 2) * 16;
  const sK = sp; sp += <usize>KB * <usize>Dp * 2;
  const sV = sp; sp += <usize>KB * <usize>Dp * 2;
  const sAlpha = sp; sp += 16;
  const sZero = sp;
  memory.fill(sZero, 0, <usize>Dp);
  // splat(0x0f) through memory, so the engine keeps it in a register instead of rebuilding it per use
  const c0f = sZero + <usize>Dp;
  store<u64>(c0f, 0x0f0f0f0f0f0f0f0f); store<u64>(c0f, 0x0f0f0f0f0f0f0f0f, 8);
  // positions older than kvLen − N are overwritten in a window's ring (see attendF32)
  const ringLo = window > 0 ? max(0, kvLen - N) : 0;
  for (let hk = 0; hk < Hkv; hk++) {
    const kh = k + <usize>hk * nn * dd, vh = v + <usize>hk * nn * dd;
    const ksh = kScales + ((<usize>hk * nn) << 2), vsh = vScales + ((<usize>hk * nn) << 2);
    const h0 = hk * G;
    for (let s = 0; s < S; s++) {
      const hi = causal != 0 ? kvLen - qLen + s : kvLen - 1;
      const lo = window > 0 ? max(ringLo, hi - window + 1) : 0;
      const count = hi - lo + 1;
      if (s >= qLen || count <= 0) {
        for (let g = 0; g < G; g++) memory.fill(out + <usize>((h0 + g) * qHeadStride + s * qRowStride) * 4, 0, dd << 2);
        continue;
      }
      // Q rows on the grid; group gi holds heads 4gi..4gi+3 (gi < G4) or the single head G4·4 + gi − G4
      memory.fill(sQ, 0, <usize>NG * 4 * <usize>Dp * 2);
      memory.fill(sAcc, 0, <usize>NG * 4 * <usize>Dp * 4);
      for (let gi = 0; gi < NG; gi++) {
        const nh = gi < G4 ? 4 : 1;
        const hb = gi < G4 ? gi * 4 : G4 * 4 + gi - G4;
        for (let t = 0; t < nh; t++) {
          const qr = q + <usize>((h0 + hb + t) * qHeadStride + s * qRowStride) * 4;
          let amax: f32 = 0;
          for (let d = 0; d < D; d++) amax = max(amax, abs(load<f32>(qr + (<usize>d << 2)) * scale));
          const qs = amax / QM;
          const inv: f32 = amax > 0 ? QM / amax : 0;
          // group-interleaved: elements 8c..8c+7 of the group's 4 rows lie together (64 bytes),
          // row t at offset 16·t, so the dot-product loops step one pointer by 64
          const dst = sQ + (<usize>(gi * 4) * <usize>Dp << 1) + (<usize>t << 4);
          for (let d = 0; d < D; d++) store<i16>(dst + ((<usize>d >> 3) << 6) + ((<usize>d & 7) << 1), <i16><i32>nearest(load<f32>(qr + (<usize>d << 2)) * scale * inv));
          store<f32>(sQs + (<usize>(gi * 4 + t) << 2), qs * gridK);
        }
        v128.store(sM + (<usize>gi << 4), f32x4.splat(-Infinity));
        v128.store(sL + (<usize>gi << 4), f32x4.splat(0));
      }
      // visible positions lo..hi live in rows slot0.. (mod N for a window): up to two runs
      const slot0 = window > 0 ? lo % N : lo;
      const first = min(count, N - slot0);
      for (let i = 0; i < count; ) {
        const slot = i < first ? slot0 + i : i - first;
        const nb = min(KB, (i < first ? first : count) - i);
        const np = (nb + 1) >> 1;
        const ks = ksh + (<usize>slot << 2), vs = vsh + (<usize>slot << 2);
        const kRow = kh + <usize>slot * dd, vRow = vh + <usize>slot * dd;
        if (fp8) widenK(sK, kRow, nb, D, Dp, c0f);
        for (let gi = 0; gi < NG; gi++) {
          const nh = gi < G4 ? 4 : 1;
          const qs = v128.load(sQs + (<usize>gi << 4));
          const qg = sQ + (<usize>gi * 4 * <usize>Dp << 1);
          if (fp8) {
            if (nh == 4) scores4<i16>(qg, sK, <usize>Dp << 1, nb, Dp, sSc, qs, ks);
            else scores1<i16>(qg, sK, <usize>Dp << 1, nb, Dp, sSc, i32x4.shuffle(qs, qs, 0, 0, 0, 0), ks);
          } else {
            if (nh == 4) scores4<i8>(qg, kRow, dd, nb, Dp, sSc, qs, ks);
            else scores1<i8>(qg, kRow, dd, nb, Dp, sSc, i32x4.shuffle(qs, qs, 0, 0, 0, 0), ks);
          }
          // online softmax over the block, all lanes at once
          let mx = v128.load(sSc);
          for (let j = 1; j < nb; j++) mx = f32x4.pmax(mx, v128.load(sSc + (<usize>j << 4))); // a NaN first score stays (pmax(a, b) = a < b ? b : a)
          const mOld = v128.load(sM + (<usize>gi << 4));
          const mNew = f32x4.pmax(mOld, mx);
          let sum = f32x4.splat(0), wmax = f32x4.splat(0);
          for (let j = 0; j < nb; j++) {
            const a = sSc + (<usize>j << 4);
            const p = expNegV(f32x4.sub(v128.load(a), mNew)); // arguments ≤ 0
            sum = f32x4.add(sum, p);
            const w = f32x4.mul(p, v128.load32_splat(vs + (<usize>j << 2)));
            v128.store(a, w);
            wmax = f32x4.pmax(wmax, w);
          }
          const alpha = expNegV(f32x4.sub(mOld, mNew)); // ≤ 0; mOld = −∞ gives 0
          v128.store(sL + (<usize>gi << 4), f32x4.add(f32x4.mul(v128.load(sL + (<usize>gi << 4)), alpha), sum));
          v128.store(sM + (<usize>gi << 4), mNew);
          // once the running max has settled (most blocks), alpha is 1 in every lane
          if (!i32x4.all_true(f32x4.eq(alpha, f32x4.splat(1)))) {
            v128.store(sAlpha, alpha);
            rescale(sAcc + (<usize>gi * 4 * <usize>Dp << 2), sAlpha, nh, Dp);
          }
          // weights on the grid, packed as (W_2t, W_2t+1) int16 pairs per lane
          const pos = f32x4.gt(wmax, f32x4.splat(0));
          const inv = v128.and(f32x4.div(f32x4.splat(WQ), wmax), pos);
          v128.store(sWs + (<usize>gi << 4), f32x4.mul(wmax, f32x4.splat(gridK / WQ)));
          const wp = sW + <usize>gi * (KB / 2) * 16;
          for (let t = 0; t < np; t++) {
            const j = t << 1;
            // round(w · inv) as int32: add 1.5·2^23, subtract its bits (w · inv ≤ WQ < 2^22)
            const a = i32x4.sub(f32x4.add(f32x4.mul(v128.load(sSc + (<usize>j << 4)), inv), f32x4.splat(MAGIC)), f32x4.splat(MAGIC));
            const b = j + 1 < nb ? i32x4.sub(f32x4.add(f32x4.mul(v128.load(sSc + (<usize>j << 4), 16), inv), f32x4.splat(MAGIC)), f32x4.splat(MAGIC)) : i32x4.splat(0);
            v128.store(wp + (<usize>t << 4), i8x16.shuffle(i16x8.narrow_i32x4_s(a, b), b, 0, 1, 8, 9, 2, 3, 10, 11, 4, 5, 12, 13, 6, 7, 14, 15));
          }
        }
        if (fp8) widenV(sV, vRow, nb, D, Dp, sZero, c0f);
        else zipV8(sV, vRow, nb, D, Dp, sZero);
        for (let gi = 0; gi < NG; gi++) {
          const acc = sAcc + (<usize>gi * 4 * <usize>Dp << 2);
          const ws = v128.load(sWs + (<usize>gi << 4)), wp = sW + <usize>gi * (KB / 2) * 16;
          if (fp8) pvGroup<i16>(acc, sV, nb, wp, ws, Dp, D8, gi < G4 ? 4 : 1);
          else pvGroup<i8>(acc, sV, nb, wp, ws, Dp, D8, gi < G4 ? 4 : 1);
        }
        i += nb;
      }
      // y = acc / l
      for (let gi = 0; gi < NG; gi++) {
        const nh = gi < G4 ? 4 : 1;
        const hb = gi < G4 ? gi * 4 : G4 * 4 + gi - G4;
        for (let t = 0; t < nh; t++) {
          const l = load<f32>(sL + (<usize>gi << 4) + (<usize>t << 2));
          const c: f32 = l > 0 ? <f32>1 / l : 0;
          const src = sAcc + (<usize>(gi * 4 + t) * <usize>Dp << 2);
          const dst = out + <usize>((h0 + hb + t) * qHeadStride + s * qRowStride) * 4;
          let d = 0;
          const vc = f32x4.splat(c);
          for (; d + 4 <= D; d += 4) v128.store(dst + (<usize>d << 2), f32x4.mul(v128.load(src + (<usize>d << 2)), vc));
          for (; d < D; d++) store<f32>(dst + (<usize>d << 2), load<f32>(src + (<usize>d << 2)) * c);
        }
      }
    }
  }
}
