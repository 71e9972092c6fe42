// Attention kernels: online-softmax ("flash") attention in float32 over float32, float16
// or bfloat16 K and V (widened in registers), for TRT_Attention, TRT_QuantizedAttention
// and ONNX Attention-23/24.
//
// What it computes. For every sequence b, query head h (kv head h / G, G = Hq / Hkv) and
// query row i < qLen[b]:
//     s_j = softcap?( Σ_d (scale · q_d) k_jd ) + mask(b, h, i, j)     for visible keys j
//     p   = softmax_j(s)            (normalization 0)   or   p = s   (normalization 1)
//     p   = dequant(quant(p / qs)) · qs   when a quantization type is set (fp8 e4m3fn / int8)
//     y_i = Σ_j p_j v_j
// Key j is visible to row i iff j < kvLen[b], j ≤ i + diag[b] (causal frontier; a huge diag
// means "not causal") and j < maskLen (when a mask is given). A row that sees no key, or
// whose visible scores are all −∞, outputs zeros. With normalization 1, keys whose score is
// −∞ (bool mask false) contribute nothing.
//
// Layout: flat pointers + strides. Every tensor is addressed by element offsets:
//   Q row (b, h, i)  at q   + (qOff[b] + h·qHS + i·qTS) · sizeof(Q dtype)
//   K row (b, kh, j) at k   + (kOff[b] + kh·kHS + j·kTS) · sizeof(K dtype)     (V likewise)
//   Y row (b, h, i)  at out + (oOff[b] + h·oHS + i·oTS) · sizeof(out dtype)
// so padded [B,H,N,D] (batch offset b·H·N·D, head stride N·D, token stride D), packed
// [T,H,D] (offset cum[b]·H·D, head stride D, token stride H·D), ONNX 3D [B,S,H·D] and a
// KV cache of capacity N with per-sequence valid lengths all go through the same code.
//
// Entry: attention(params) with `params` a block of PARAM_SLOTS i32/f32 slots (P_* below)
// and `seqs` (slot P_SEQS) pointing at B records of SEQ_SLOTS int32:
//     qOff, qLen, kOff, vOff, kvLen, oOff, diag, woff, rot
// rot > 0 makes a sequence's K / V rows a ring (a sliding-window KV cache that wrapped):
// key t lives in row (rot + t) mod kvLen, i.e. keys 0 … kvLen − rot − 1 are rows rot …
// kvLen − 1 and the rest rows 0 … rot − 1 (kOff / vOff name row 0). One-pass path only
// (no quantization, no qk output): the host never combines them.
// dtype codes (slot P_DTYPES = q | k << 4 | v << 8 | out << 12): 0 float32, 1 float16,
// 2 bfloat16. Scratch (slot P_SCRATCH) must hold attentionScratchBytes(D, Dv, maxCols,
// twoPhase) bytes, 16-byte aligned.
//
// Paths. Rows are processed in tiles of up to R_MAX (query row, head-of-group) pairs that
// share one KV head: a decode step (one query row) puts all G query heads of a KV group in
// one tile, so each K and V row is read from memory once per step; a prefill tile holds
// consecutive query rows. A tile walks key blocks of KB keys and stops at the last key any
// of its rows can see, so blocks a causal frontier hides entirely are never touched.
// The one-pass path keeps a running max m and sum l per row and rescales the accumulator
// when m grows (online softmax). The two-phase path (quantized probabilities, or when the
// qk_matmul_output matrix is requested) first computes the tile's full score rows into
// scratch, then normalizes, quantizes and multiplies with V block by block; it writes no
// probability matrix to memory except the requested qk output.
//
// Preconditions (the host checks them): all lengths ≥ 0; every visible row lies inside
// its tensor; qLen, kvLen, maskLen as described; scratch large enough; outputs do not
// overlap inputs. Reads may run up to 16 bytes past a row's end (arena padding); writes
// never leave the output rows.
import {
  F16W, bf16ToF32Scalar, expNegV, expScalar, f16BitsToF32V, f16BitsToF32VC, f16RowsFinite, f16ScaledV, f16ToF32Scalar, f32ToBF16Scalar,
  f32ToF16Scalar, hsum4, loadBF16x4, loadF16x4, madd, prescaleF16, tanhScalar, tanhV,
} from './simd';

// ---- parameter block ----------------------------------------------------------------
// @ts-ignore: decorator
@inline const P_Q = 0;
// @ts-ignore: decorator
@inline const P_K = 1;
// @ts-ignore: decorator
@inline const P_V = 2;
// @ts-ignore: decorator
@inline const P_OUT = 3;
// @ts-ignore: decorator
@inline const P_SEQS = 4;
// @ts-ignore: decorator
@inline const P_B = 5;
// @ts-ignore: decorator
@inline const P_HQ = 6;
// @ts-ignore: decorator
@inline const P_HKV = 7;
// @ts-ignore: decorator
@inline const P_D = 8;
// @ts-ignore: decorator
@inline const P_DV = 9;
// @ts-ignore: decorator
@inline const P_QHS = 10;
// @ts-ignore: decorator
@inline const P_QTS = 11;
// @ts-ignore: decorator
@inline const P_KHS = 12;
// @ts-ignore: decorator
@inline const P_KTS = 13;
// @ts-ignore: decorator
@inline const P_VHS = 14;
// @ts-ignore: decorator
@inline const P_VTS = 15;
// @ts-ignore: decorator
@inline const P_OHS = 16;
// @ts-ignore: decorator
@inline const P_OTS = 17;
// @ts-ignore: decorator
@inline const P_DTYPES = 18;
// @ts-ignore: decorator
@inline const P_SCALE = 19; // f32
// @ts-ignore: decorator
@inline const P_SOFTCAP = 20; // f32, ≤ 0 = none
// @ts-ignore: decorator
@inline const P_MASK = 21; // float32 additive mask rows, 0 = none
// @ts-ignore: decorator
@inline const P_MB = 22; // mask strides (elements) for b, h, i; 0 broadcasts
// @ts-ignore: decorator
@inline const P_MH = 23;
// @ts-ignore: decorator
@inline const P_MI = 24;
// @ts-ignore: decorator
@inline const P_MLEN = 25; // mask row length: keys at or past it are hidden
// @ts-ignore: decorator
@inline const P_NORM = 26; // 0 softmax, 1 none
// @ts-ignore: decorator
@inline const P_QUANT = 27; // 0 none, 1 float8e4m3fn, 2 int8
// @ts-ignore: decorator
@inline const P_QSCALE = 28; // f32
// @ts-ignore: decorator
@inline const P_QK = 29; // qk_matmul_output [B,Hq,Nq,cols] (out dtype), 0 = none
// @ts-ignore: decorator
@inline const P_QKMODE = 30; // 0 scaled QK, 1 softcap(QK), 2 softcap(QK) + bias, 3 softmax
// @ts-ignore: decorator
@inline const P_QKCOLS = 31; // columns of the qk matrix (= rows of K and V read)
// @ts-ignore: decorator
@inline const P_QKBS = 32; // qk batch stride (elements)
// @ts-ignore: decorator
@inline const P_QKHS = 33; // qk head stride (elements); row stride is cols
// @ts-ignore: decorator
@inline const P_SCRATCH = 34;
// @ts-ignore: decorator
@inline const P_MAXCOLS = 35; // largest kvLen (or qk cols): sizes the two-phase rows
// @ts-ignore: decorator
@inline const P_SEQGATHER = 36; // 1: scratch holds seqGatherRows K and V rows (see attention())
// @ts-ignore: decorator
@inline const P_WLEFT = 37; // Attention-25's left_window_size (−1: unbounded)
// @ts-ignore: decorator
@inline const P_WRIGHT = 38; // right_window_size (−1: unbounded)
// @ts-ignore: decorator
@inline const PARAM_SLOTS = 39;
// @ts-ignore: decorator
@inline const SEQ_SLOTS = 9; // qOff, qLen, kOff, vOff, kvLen, oOff, diag, woff (the window's position offset), rot (a ring's rotation)

// @ts-ignore: decorator
@inline const R_MAX = 32; // rows per tile
// @ts-ignore: decorator
@inline const KB = 64; // keys per block
// @ts-ignore: decorator
@inline const NO_DIAG: i32 = 0x3fffffff;
// @ts-ignore: decorator
@inline const NEG_INF: f32 = -Infinity;

/** Number of parameter slots (the host sizes the block with it). */
export function attentionParamSlots(): i32 {
  return PARAM_SLOTS;
}

@inline function roundUp(x: i32, m: i32): i32 {
  return (x + m - 1) / m * m;
}

/** Row stride (floats) of the score buffer. */
@inline function scoreStride(maxCols: i32, twoPhase: bool): i32 {
  return twoPhase ? roundUp(max(maxCols, 1), KB) : KB;
}

// @ts-ignore: decorator
@inline const SEQ_GATHER_BYTES = 1 << 20;

/** K and V rows a sequence-wide gather may hold (at most SEQ_GATHER_BYTES of scratch). */
@inline function seqGatherRows(D: i32, Dv: i32, maxCols: i32): i32 {
  const dp = roundUp(max(D, 1), 4), dvp = roundUp(max(Dv, 1), 8);
  return min(max(maxCols, 0), SEQ_GATHER_BYTES / ((dp + dvp) * 4));
}

/**
 * Scratch bytes attention() needs: Q tile, accumulators, scores, per-row state.
 * twoPhase: quantized probabilities or a qk output requested. seqGather: room for the
 * K and V rows of one sequence and head (K/V rows far apart, see attention()).
 */
export function attentionScratchBytes(D: i32, Dv: i32, maxCols: i32, twoPhase: bool, seqGather: bool): usize {
  const dp = roundUp(max(D, 1), 4), dvp = roundUp(max(Dv, 1), 8);
  const sb = scoreStride(maxCols, twoPhase);
  const sg = seqGather ? <usize>seqGatherRows(D, Dv, maxCols) * 4 * (<usize>dp + <usize>dvp) + 32 : 0;
  // + one block of K rows and one of V rows (gathered when rows are far apart), 16 bytes of over-read each,
  // + one block of float16 rows widened to float32 (sCv, see scores())
  return <usize>R_MAX * 4 * (<usize>dp + <usize>dvp + <usize>sb + 8) + <usize>KB * 4 * (<usize>dp + <usize>dvp) + 96 + sg +
    <usize>KB * 4 * <usize>max(dp, dvp) + 16;
}

// ---- current call (module globals, set by attention()) ------------------------------
let gD: i32 = 0;
let gDv: i32 = 0;
let gDp: i32 = 0; // D rounded up to 4
let gDvp: i32 = 0; // Dv rounded up to 8
let gSB: i32 = 0; // score row stride (floats)
// keys per L1 sub-block inside a block: rows of up to 256 bytes (D ≤ 64 float32) take the
// whole block (8–16 KB of K or V; prefill (1,8,512,64) ~2.5% faster than 32), longer ones 32
// (D = 128 / 256 prefill 3% / 5% slower with 64)
let gSub: i32 = 32;
let gSoftcap: f32 = 0;
/**
 * Scores × gPost in postGroup, before anything else reads them. The spec scales Q and K by
 * √scale each before the product, so neither overflows unless its own elements times √scale
 * do; scale · q could overflow where that does not. A scale ≤ 1 goes on Q (scale · q is no
 * larger than q, and each product scale · q_i · k_i is the spec's); a larger one is split,
 * √scale on Q here and √scale on the scores (a q of 1e38 with scale 10 gave NaN, the spec
 * a finite row).
 */
let gPost: f32 = 1;
let gNorm: i32 = 0;
let gQuant: i32 = 0;
let gQScale: f32 = 1;
let gQk: usize = 0;
let gQkMode: i32 = 0;
let gQkCols: i32 = 0;
let gOutT: i32 = 0;
let gTwoPhase: bool = false;
let gKT: i32 = 0;
let gVT: i32 = 0;
// float16 K / V in the SIMD build are read as their bits moved into float32's fields, i.e.
// the value times 2^−112 (see ld4: one multiply fewer per 4 elements, and a register
// fewer, without which V8 spilled two accumulators of the score and P·V loops), and the
// factor 2^112 goes onto the other operand instead: gQPre — the tile's Q rows (runTile),
// when every |q · scale| < 2^15, so no product overflows; gVPre — the probabilities
// before P·V (softmax weights ≤ 1, also after the quantize-dequantize of the two-phase
// path: e4m3 saturates at 448 · qs, int8 rounds p / qs to at most 1 unless qs < 2, where
// p' ≤ p + qs / 2 < 2). Both products are the same real number as value · weight, so the
// results are bit for bit those of the exact widening. Without pre-scaling (huge queries,
// normalization none) the rows go through the exact float32 copy (widenF16Rows).
let gQPre = false;
let gVPre = false;
// scratch areas
let sQ: usize = 0; // R_MAX × Dp floats: the tile's scaled query rows
let sAcc: usize = 0; // R_MAX × Dvp floats
let sS: usize = 0; // R_MAX × SB floats: scores / probabilities
let sM: usize = 0; // R_MAX f32 running max
let sL: usize = 0; // R_MAX f32 running sum
let sEnd: usize = 0; // R_MAX i32 visible-key end per row
let sStart: usize = 0; // R_MAX i32 first visible key per row (a sliding window; else 0)
let sMaskRow: usize = 0; // R_MAX ptr: mask row (0 = none)
let sOutRow: usize = 0; // R_MAX ptr: output row
let sQkRow: usize = 0; // R_MAX ptr: qk output row
let sGLim: usize = 0; // R_MAX / 4 i32: per row group, keys of the current block its rows may see; then (at + R_MAX) the first of them (see gFirst)
let gJ0: i32 = 0; // key index of the block P·V is given (sStart / sEnd are key indices)
let sKb: usize = 0; // KB rows of K, gathered contiguous
let sVb: usize = 0; // KB rows of V, gathered contiguous
let sCv: usize = 0; // KB float16 rows with an Inf / NaN, widened to float32 (see scores())
// Touch-ahead loads are plain loads whose value is dropped: a wasm load may trap, so
// neither binaryen (which runs without traps-never-happen here) nor the engine removes it,
// and nothing has to combine the loaded words (an earlier xor into a sink cost two
// instructions per touch pair: decode ~1.5% faster without).
// @ts-ignore: decorator
@inline function touch(p: usize): void {
  load<u32>(p);
}

// ---- element loads, generic over the K / V element type ------------------------------
// Marker types: f32 = float32, u16 = float16, i16 = bfloat16, u64 = float16 rows known to
// hold no Inf / NaN (checked per block, see scores()), read as value · 2^−112 (f16ScaledV:
// two instructions per 4 elements) against Q rows or weights that carry the 2^112.


/** Bytes of one element of marker type T. */
// @ts-ignore: decorator
@inline function elemBytes<T>(): usize {
  return sizeof<T>() == 8 ? 2 : sizeof<T>();
}

// @ts-ignore: decorator
@inline function ld4<T>(p: usize): v128 {
  if (sizeof<T>() == 8) return f16ScaledV(v128.load16x4_s(p));
  if (sizeof<T>() == 4) return v128.load(p);
  else if (isSigned<T>()) return loadBF16x4(p);
  else return loadF16x4(p);
}

// @ts-ignore: decorator
@inline function ld1<T>(p: usize): f32 {
  if (sizeof<T>() == 8) return f16ToF32Scalar(<u32>load<u16>(p));
  if (sizeof<T>() == 4) return load<f32>(p);
  else if (isSigned<T>()) return bf16ToF32Scalar(<u32>load<u16>(p));
  else return f16ToF32Scalar(<u32>load<u16>(p));
}

@inline function ldAny(p: usize, t: i32): f32 {
  if (t == 0) return load<f32>(p);
  if (t == 1) return f16ToF32Scalar(<u32>load<u16>(p));
  return bf16ToF32Scalar(<u32>load<u16>(p));
}

@inline function stAny(p: usize, t: i32, x: f32): void {
  if (t == 0) store<f32>(p, x);
  else if (t == 1) store<u16>(p, <u16>f32ToF16Scalar(x));
  else store<u16>(p, <u16>f32ToBF16Scalar(x));
}

@inline function esize(t: i32): usize {
  return t == 0 ? 4 : 2;
}

/** Lane mask with the first n (0..3) lanes set; n = 0 means all four. */
@inline function tailMask(n: i32): v128 {
  return i32x4.lt_s(i32x4(0, 1, 2, 3), i32x4.splat(n == 0 ? 4 : n));
}

// ---- quantize → dequantize of probabilities ------------------------------------------
// float8e4m3fn (bias 7, 3 mantissa bits, max 448, no Inf): for |x| ≥ 2^−6 (normal codes)
// round the float32 to 3 mantissa bits by adding 0x7ffff plus the lowest kept bit (bit 20)
// and clearing the 20 dropped bits — round to nearest, ties to even, a carry moving to the
// next binade as it should. Below 2^−6 the codes are subnormal with step 2^−9: adding and
// subtracting 2^14 (whose float32 ulp is 2^−9) rounds to that step, ties to even, in the
// hardware. Saturation: anything that rounds above 448 becomes 448 (min after rounding;
// values in (448, 464) already round to 448). The sign is carried separately.
// int8: x rounded half to even (f32 nearest), clamped to [−128, 127].

@inline function quantE4m3Scalar(x: f32): f32 {
  const bits = reinterpret<u32>(x);
  const sign = bits & 0x80000000;
  const a = reinterpret<f32>(bits & 0x7fffffff);
  let r: f32;
  if (a >= <f32>0.015625) {
    const ab = reinterpret<u32>(a);
    r = reinterpret<f32>((ab + 0x7ffff + ((ab >> 20) & 1)) & 0xfff00000);
    if (r > 448) r = 448;
  } else {
    r = (a + <f32>16384.0) - <f32>16384.0;
  }
  return reinterpret<f32>(reinterpret<u32>(r) | sign);
}

@inline function quantE4m3V(x: v128): v128 {
  const sign = v128.and(x, i32x4.splat(0x80000000));
  const a = v128.andnot(x, i32x4.splat(0x80000000));
  const rn = v128.and(
    i32x4.add(i32x4.add(a, i32x4.splat(0x7ffff)), v128.and(i32x4.shr_u(a, 20), i32x4.splat(1))),
    i32x4.splat(0xfff00000),
  );
  const rs = f32x4.sub(f32x4.add(a, f32x4.splat(16384.0)), f32x4.splat(16384.0));
  const r = v128.bitselect(f32x4.min(rn, f32x4.splat(448.0)), rs, f32x4.ge(a, f32x4.splat(0.015625)));
  return v128.or(r, sign);
}

@inline function quantInt8Scalar(x: f32): f32 {
  let r = nearest<f32>(x);
  if (r > 127) r = 127;
  if (r < -128) r = -128;
  return r;
}

@inline function quantInt8V(x: v128): v128 {
  return f32x4.max(f32x4.min(f32x4.nearest(x), f32x4.splat(127.0)), f32x4.splat(-128.0));
}

/**
 * p ← dequant(quant(p / qs)) · qs over n floats (n a multiple of 4 in the SIMD build).
 * p / qs is a true division, as QuantizeLinear's x / y_scale: a multiply by 1/qs rounds twice
 * and moves a quotient at a rounding boundary to the neighbouring code (with int8's default
 * qs = 1/127, 1/qs is not 127 in float32). A subnormal qs needs no special case: 0 / qs = 0
 * for the zero probabilities (hidden keys, row padding), and a quotient that overflows to ∞
 * saturates (448 / 127) as the spec's p / s does. Cost: one `f32x4.div` per 4 probabilities,
 * ~1% of a TRT_QuantizedAttention decode step.
 */
function quantizeRow(p: usize, n: i32): void {
  const qs = gQScale;
  if (ASC_FEATURE_SIMD) {
    const vq = f32x4.splat(qs);
    if (gQuant == 1) {
      for (let j = 0; j < n; j += 4) {
        const a = p + (<usize>j << 2);
        v128.store(a, f32x4.mul(quantE4m3V(f32x4.div(v128.load(a), vq)), vq));
      }
    } else {
      for (let j = 0; j < n; j += 4) {
        const a = p + (<usize>j << 2);
        v128.store(a, f32x4.mul(quantInt8V(f32x4.div(v128.load(a), vq)), vq));
      }
    }
  } else {
    for (let j = 0; j < n; j++) {
      const a = p + (<usize>j << 2);
      const x = load<f32>(a) / qs;
      store<f32>(a, (gQuant == 1 ? quantE4m3Scalar(x) : quantInt8Scalar(x)) * qs);
    }
  }
}

// ---- tile layouts ------------------------------------------------------------------------
// Rows of a tile come in groups of 4 (row r: group r >> 2, lane r & 3), and the Q tile and
// the score block are stored group-interleaved so that the microkernels address them with
// one pointer and constant offsets, and the softmax runs on 4 rows at once (one v128 per key):
//   Q tile  [group][Dp/4][lane][4]   q(r, d) at float (r>>2)·4·Dp + (d>>2)·16 + (r&3)·4 + (d&3)
//           (the scalar build: row-major, q(r, d) at float r·Dp + d)
//   scores  [group][SB][lane]        s(r, j) at float ((r>>2)·SB + j)·4 + (r&3)
// The accumulators stay row-major (R_MAX × Dvp), the running max / sum per row contiguous
// (a group's four at one v128).

/** Byte address of q(r, d) in the Q tile (the scalar build keeps it row-major: r·Dp + d). */
@inline function qAddr(r: i32, d: i32): usize {
  if (ASC_FEATURE_SIMD) return sQ + ((<usize>(r >> 2) * <usize>gDp * 4 + (<usize>(d >> 2) << 4) + (<usize>(r & 3) << 2) + <usize>(d & 3)) << 2);
  else return sQ + ((<usize>r * <usize>gDp + <usize>d) << 2);
}

/** Byte address of key 0 of row r's group in the score buffer, lane r & 3. */
@inline function sAddr(r: i32): usize {
  return sS + (<usize>(r >> 2) * <usize>gSB << 4) + (<usize>(r & 3) << 2);
}

/** Copies row `src` (dtype t, D elements) into the tile's float32 row r, times scale, zero-padded to Dp. */
function gatherQ(r: i32, src: usize, t: i32, scale: f32): void {
  const es = esize(t);
  let d0 = 0;
  if (ASC_FEATURE_SIMD && t == 0) {
    // float32: four elements at a time (q(r, d..d+3) are adjacent in the tile)
    const vs = f32x4.splat(scale);
    for (; d0 + 4 <= gD; d0 += 4) v128.store(qAddr(r, d0), f32x4.mul(v128.load(src + (<usize>d0 << 2)), vs));
  }
  for (let d = d0; d < gD; d++) store<f32>(qAddr(r, d), ldAny(src + <usize>d * es, t) * scale);
  for (let d = gD; d < gDp; d++) store<f32>(qAddr(r, d), 0);
}

// ---- scores: S[r][jj] = qt_r · k_(j0+jj) for a block ------------------------------------

// (the 4 lanes of the K / V load 16 bytes of float32 or 8 bytes of 16-bit values further)
// @ts-ignore: decorator
@inline function ld4Next<T>(p: usize): v128 {
  if (sizeof<T>() == 8) return f16ScaledV(v128.load16x4_s(p, 8));
  if (sizeof<T>() == 4) return v128.load(p, 16);
  else if (isSigned<T>()) return i32x4.shl(v128.load16x4_u(p, 8), 16);
  else return f16BitsToF32V(v128.load16x4_s(p, 8));
}

function scoresBlock<KT, SP>(kRow: usize, kStride: usize, nb: i32, nR4: i32, sOff: usize, tK: usize, tV: usize, tStride: usize, tBytes: usize, tN: i32): void {
  const D = gD;
  const es = elemBytes<KT>();
  const gS = <usize>gSB << 4; // bytes of one group's score rows
  const gQ = <usize>gDp << 4; // bytes of one group's Q rows
  if (ASC_FEATURE_SIMD) {
    const D4 = D & ~3, tail = D & 3;
    const tm = tailMask(tail);
    const kStep = <usize>es << 2, tStep = <usize>es << 3;
    const SPREAD = sizeof<SP>() == 1; // compile time: the decode form (see scores())
    // keys in sub-blocks of gSub rows, so a sub-block stays in L1 across the row groups
    // (K rows may be far apart: packed [T,H,D] puts one head's rows H·D elements apart)
    const SUB = gSub;
    for (let jb = 0; jb < nb; jb += SUB) {
    const je = min(nb, jb + SUB);
    for (let rg = 0; rg < nR4; rg += 4) {
      const qBase = sQ + <usize>(rg >> 2) * gQ, qEnd = qBase + (<usize>D4 << 4);
      const s0 = sS + <usize>(rg >> 2) * gS + sOff;
      const ge = min(je, load<i32>(sGLim + <usize>rg)); // keys past every row's end: not needed
      let j = max(jb, gFirst(rg)); // nor keys before every row's window
      for (; j + 1 < ge; j += 2) {
        const k0 = kRow + <usize>j * kStride;
        let kp0 = k0, kp1 = k0 + kStride;
        let a00 = f32x4.splat(0), a10 = f32x4.splat(0), a20 = f32x4.splat(0), a30 = f32x4.splat(0);
        let a01 = f32x4.splat(0), a11 = f32x4.splat(0), a21 = f32x4.splat(0), a31 = f32x4.splat(0);
        let qp = qBase;
        if (SPREAD && j + 1 < tN) {
          // touch-ahead spread over the dot-product loop (see scores())
          let tv = tV + <usize>j * tStride, tk = tK + <usize>j * kStride;
          for (; qp < qEnd; qp += 64) {
            touch(tv); touch(tk);
            tv += tStep; tk += tStep;
            const kv0 = ld4<KT>(kp0), kv1 = ld4<KT>(kp1);
            let x = v128.load(qp);
            a00 = madd(x, kv0, a00); a01 = madd(x, kv1, a01);
            x = v128.load(qp, 16);
            a10 = madd(x, kv0, a10); a11 = madd(x, kv1, a11);
            x = v128.load(qp, 32);
            a20 = madd(x, kv0, a20); a21 = madd(x, kv1, a21);
            x = v128.load(qp, 48);
            a30 = madd(x, kv0, a30); a31 = madd(x, kv1, a31);
            kp0 += kStep; kp1 += kStep;
          }
        }
        for (; qp < qEnd; qp += 64) {
          const kv0 = ld4<KT>(kp0), kv1 = ld4<KT>(kp1);
          let x = v128.load(qp);
          a00 = madd(x, kv0, a00); a01 = madd(x, kv1, a01);
          x = v128.load(qp, 16);
          a10 = madd(x, kv0, a10); a11 = madd(x, kv1, a11);
          x = v128.load(qp, 32);
          a20 = madd(x, kv0, a20); a21 = madd(x, kv1, a21);
          x = v128.load(qp, 48);
          a30 = madd(x, kv0, a30); a31 = madd(x, kv1, a31);
          kp0 += kStep; kp1 += kStep;
        }
        if (tail) {
          const kv0 = v128.and(ld4<KT>(kp0), tm), kv1 = v128.and(ld4<KT>(kp1), tm);
          let x = v128.load(qp);
          a00 = madd(x, kv0, a00); a01 = madd(x, kv1, a01);
          x = v128.load(qp, 16);
          a10 = madd(x, kv0, a10); a11 = madd(x, kv1, a11);
          x = v128.load(qp, 32);
          a20 = madd(x, kv0, a20); a21 = madd(x, kv1, a21);
          x = v128.load(qp, 48);
          a30 = madd(x, kv0, a30); a31 = madd(x, kv1, a31);
        }
        if (!SPREAD && j + 1 < tN) {
          // touch-ahead (wasm has no prefetch): read one word per cache line of the V and
          // K rows 2·KB keys ahead (tK, tV, tN: rows the tile will read), so the hardware
          // prefetcher streams them in while this block computes (decode step ~16% faster)
          const t0 = tV + <usize>j * tStride, t1 = t0 + tStride;
          for (let o: usize = 0; o < tBytes; o += 64) { touch(t0 + o); touch(t1 + o); }
          const u0 = tK + <usize>j * kStride, u1 = u0 + kStride, kBytes = <usize>D * es;
          for (let o: usize = 0; o < kBytes; o += 64) { touch(u0 + o); touch(u1 + o); }
        }
        // one v128 per key: the group's four scores
        const c = s0 + (<usize>j << 4);
        v128.store(c, hsum4(a00, a10, a20, a30));
        v128.store(c, hsum4(a01, a11, a21, a31), 16);
      }
      if (j < ge) {
        let kp = kRow + <usize>j * kStride;
        let a0 = f32x4.splat(0), a1 = f32x4.splat(0), a2 = f32x4.splat(0), a3 = f32x4.splat(0);
        let qp = qBase;
        for (; qp < qEnd; qp += 64) {
          const kv = ld4<KT>(kp);
          a0 = madd(v128.load(qp), kv, a0);
          a1 = madd(v128.load(qp, 16), kv, a1);
          a2 = madd(v128.load(qp, 32), kv, a2);
          a3 = madd(v128.load(qp, 48), kv, a3);
          kp += kStep;
        }
        if (tail) {
          const kv = v128.and(ld4<KT>(kp), tm);
          a0 = madd(v128.load(qp), kv, a0);
          a1 = madd(v128.load(qp, 16), kv, a1);
          a2 = madd(v128.load(qp, 32), kv, a2);
          a3 = madd(v128.load(qp, 48), kv, a3);
        }
        v128.store(s0 + (<usize>j << 4), hsum4(a0, a1, a2, a3));
      }
    }
    }
  } else {
    for (let r = 0; r < nR4; r++) {
      const sr = sAddr(r) + sOff;
      const qr = qAddr(r, 0);
      for (let j = 0; j < nb; j++) {
        const kr = kRow + <usize>j * kStride;
        let acc: f32 = 0;
        for (let d = 0; d < D; d++) acc += load<f32>(qr + (<usize>d << 2)) * ld1<KT>(kr + <usize>d * es);
        store<f32>(sr + (<usize>j << 4), acc);
      }
    }
  }
}

// ---- score post-processing, one row group at a time ----------------------------------------

/** Every key of the block [j0, j0 + nb) as it stands, into the qk rows of rows g..g+3. */
function writeQkRows(g: i32, blk: usize, j0: i32, nb: i32, es: usize): void {
  for (let r = g; r < g + 4; r++) {
    const qkRow = load<usize>(sQkRow + (<usize>r << 2));
    if (qkRow != 0) writeQkRow(qkRow + <usize>j0 * es, blk + (<usize>(r & 3) << 2), nb);
  }
}

/** n scores of one row of a group block (at sr, sr + 16, …) into a qk row at dst (gOutT). */
function writeQkRow(dst: usize, sr: usize, n: i32): void {
  const es = esize(gOutT);
  for (let jj = 0; jj < n; jj++) stAny(dst + <usize>jj * es, gOutT, load<f32>(sr + (<usize>jj << 4)));
}

/**
 * The group of rows g..g+3 over the block [j0, j0 + nb) at blk (key j0 of the group):
 * writes qk mode 0 (the scaled scores), applies softcap, writes qk mode 1 (softcapped,
 * before the mask: ONNX's order since onnx#7867 / #7913 — QK → softcap → mask → softmax),
 * adds the mask, hides keys at or past each row's end with −∞ up to nbPad (a multiple of
 * 4), writes qk mode 2.
 */
function postGroup(g: i32, blk: usize, j0: i32, nb: i32, nbPad: i32): void {
  const es = esize(gOutT);
  if (gPost != 1) scaleRow(blk, nbPad << 2, gPost);
  if (gQk != 0 && gQkMode == 0) writeQkRows(g, blk, j0, nb, es);
  // softcap over the whole group block (keys past a row's end are hidden below)
  const cap = gSoftcap;
  if (cap > 0) {
    const n = nbPad << 2;
    if (ASC_FEATURE_SIMD) {
      // s / cap, a division as in the scalar build and the spec's body (Div → Tanh → Mul):
      // a multiply by 1 / cap would overflow to ∞ for a cap below ~2.9e−39 (0 · ∞ = NaN)
      const vc = f32x4.splat(cap);
      for (let jj = 0; jj < n; jj += 4) {
        const a = blk + (<usize>jj << 2);
        v128.store(a, f32x4.mul(tanhV(f32x4.div(v128.load(a), vc)), vc));
      }
    } else {
      for (let jj = 0; jj < n; jj++) {
        const a = blk + (<usize>jj << 2);
        store<f32>(a, tanhScalar(load<f32>(a) / cap) * cap);
      }
    }
  }
  if (gQk != 0 && gQkMode == 1) writeQkRows(g, blk, j0, nb, es);
  for (let r = g; r < g + 4; r++) {
    let lim = load<i32>(sEnd + (<usize>r << 2)) - j0;
    if (lim < 0) lim = 0;
    if (lim > nb) lim = nb;
    const sr = blk + (<usize>(r & 3) << 2);
    const maskRow = load<usize>(sMaskRow + (<usize>r << 2));
    if (maskRow != 0) {
      // a mask value of −∞ (a bool mask's false) hides the key whatever its score: NaN or
      // +∞ (a NaN or Inf in its K row) plus −∞ would be NaN and spoil the row
      const mrow = maskRow + (<usize>j0 << 2);
      for (let jj = 0; jj < lim; jj++) {
        const a = sr + (<usize>jj << 4);
        const m = load<f32>(mrow + (<usize>jj << 2));
        store<f32>(a, m == NEG_INF ? NEG_INF : load<f32>(a) + m);
      }
    }
    for (let jj = lim; jj < nbPad; jj++) store<f32>(sr + (<usize>jj << 4), NEG_INF);
    // keys before a sliding window's start (after the mask: −∞ + a mask's +∞ would be NaN)
    const st = min(nb, load<i32>(sStart + (<usize>r << 2)) - j0);
    for (let jj = 0; jj < st; jj++) store<f32>(sr + (<usize>jj << 4), NEG_INF);
  }
  // (each row's scores are final here: the loop above leaves the other rows' lanes alone)
  if (gQk != 0 && gQkMode == 2) writeQkRows(g, blk, j0, nb, es);
}

/** p_j ← p_j · c over n floats. */
function scaleRow(p: usize, n: i32, c: f32): void {
  if (ASC_FEATURE_SIMD) {
    const vc = f32x4.splat(c);
    for (let j = 0; j < n; j += 4) {
      const a = p + (<usize>j << 2);
      v128.store(a, f32x4.mul(v128.load(a), vc));
    }
  } else {
    for (let j = 0; j < n; j++) {
      const a = p + (<usize>j << 2);
      store<f32>(a, load<f32>(a) * c);
    }
  }
}

/** Accumulator row r ← · a unless a is 1. */
@inline function rescaleAcc(r: i32, a: f32): void {
  if (a != 1) scaleRow(sAcc + <usize>r * <usize>gDvp * 4, gDvp, a);
}

// Softmax over a group block of n keys (4 rows at once, one v128 per key). The maximum is
// taken with pmax (m < s ? s : m): one instruction, and a NaN score leaves m alone but
// still gives exp(NaN − m) = NaN, so a NaN score makes its row's output NaN as before. A
// row whose visible scores are all −∞ keeps m = −∞; its exponentials are taken against 0
// instead (exp(−∞) = 0), so it sums to 0 and outputs zeros.

/**
 * max(m, s_0 … s_(n−1)) of a group block (one v128 per key), by pmax in four independent
 * chains (a single chain waited on each pmax's latency: 64 keys took ~200 cycles). pmax
 * never picks a NaN, so the order of the chains does not change the result.
 */
function blockMax(blk: usize, n: i32, m: v128): v128 {
  let m0 = m, m1 = m, m2 = m, m3 = m;
  let j = 0;
  for (; j + 4 <= n; j += 4) {
    const a = blk + (<usize>j << 4);
    m0 = f32x4.pmax(m0, v128.load(a)); m1 = f32x4.pmax(m1, v128.load(a, 16));
    m2 = f32x4.pmax(m2, v128.load(a, 32)); m3 = f32x4.pmax(m3, v128.load(a, 48));
  }
  for (; j < n; j++) m0 = f32x4.pmax(m0, v128.load(blk + (<usize>j << 4)));
  return f32x4.pmax(f32x4.pmax(m0, m1), f32x4.pmax(m2, m3));
}

/**
 * p ← exp(s − mS) in place over a group block of n keys; returns Σp, summed in two chains
 * (one add chain per key was as long as the exponentials' own throughput).
 */
function blockExp(blk: usize, n: i32, mS: v128): v128 {
  let s0 = f32x4.splat(0), s1 = f32x4.splat(0);
  let j = 0;
  for (; j + 2 <= n; j += 2) {
    const a = blk + (<usize>j << 4);
    const e0 = expNegV(f32x4.sub(v128.load(a), mS)), e1 = expNegV(f32x4.sub(v128.load(a, 16), mS));
    v128.store(a, e0); v128.store(a, e1, 16);
    s0 = f32x4.add(s0, e0); s1 = f32x4.add(s1, e1);
  }
  if (j < n) {
    const a = blk + (<usize>j << 4);
    const e = expNegV(f32x4.sub(v128.load(a), mS));
    v128.store(a, e);
    s0 = f32x4.add(s0, e);
  }
  return f32x4.add(s0, s1);
}

/**
 * One-pass step for rows g..g+3: m_new = max(m, block), p ← exp(s − m_new),
 * l ← l·exp(m − m_new) + Σp, accumulators rescaled by exp(m − m_new).
 */
function softmaxStep(g: i32, blk: usize, n: i32): void {
  const mA = sM + (<usize>g << 2), lA = sL + (<usize>g << 2);
  if (ASC_FEATURE_SIMD) {
    const mOld = v128.load(mA);
    const mx = blockMax(blk, n, mOld);
    const mS = v128.andnot(mx, f32x4.eq(mx, f32x4.splat(NEG_INF)));
    const s = blockExp(blk, n, mS);
    const alpha = expNegV(f32x4.sub(mOld, mS));
    v128.store(lA, f32x4.add(f32x4.mul(v128.load(lA), alpha), s));
    v128.store(mA, mx);
    if (!i32x4.all_true(f32x4.eq(alpha, f32x4.splat(1)))) {
      rescaleAcc(g, f32x4.extract_lane(alpha, 0));
      rescaleAcc(g + 1, f32x4.extract_lane(alpha, 1));
      rescaleAcc(g + 2, f32x4.extract_lane(alpha, 2));
      rescaleAcc(g + 3, f32x4.extract_lane(alpha, 3));
    }
  } else {
    for (let lane = 0; lane < 4; lane++) {
      const sr = blk + (<usize>lane << 2);
      const mOld = load<f32>(mA + (<usize>lane << 2));
      let mx = mOld;
      for (let j = 0; j < n; j++) {
        const x = load<f32>(sr + (<usize>j << 4));
        if (mx < x) mx = x;
      }
      const mS: f32 = mx == NEG_INF ? 0 : mx;
      let s: f32 = 0;
      for (let j = 0; j < n; j++) {
        const a = sr + (<usize>j << 4);
        const e = expScalar(load<f32>(a) - mS);
        store<f32>(a, e);
        s += e;
      }
      const alpha = expScalar(mOld - mS);
      store<f32>(lA + (<usize>lane << 2), load<f32>(lA + (<usize>lane << 2)) * alpha + s);
      store<f32>(mA + (<usize>lane << 2), mx);
      rescaleAcc(g + lane, alpha);
    }
  }
}

/**
 * Full softmax of rows g..g+3's block of n keys in place (two-phase path); all-hidden rows
 * give zeros. Each row's sum of exponentials goes to sL (0: the row sees no key).
 */
function softmaxFull(g: i32, blk: usize, n: i32): void {
  if (ASC_FEATURE_SIMD) {
    const mx = blockMax(blk, n, f32x4.splat(NEG_INF));
    const mS = v128.andnot(mx, f32x4.eq(mx, f32x4.splat(NEG_INF)));
    const s = blockExp(blk, n, mS);
    v128.store(sL + (<usize>g << 2), s);
    // 1 / Σ, and 0 where Σ = 0 (a row that sees nothing); a NaN sum keeps its NaN
    const inv = v128.andnot(f32x4.div(f32x4.splat(1), s), f32x4.eq(s, f32x4.splat(0)));
    for (let j = 0; j < n; j++) {
      const a = blk + (<usize>j << 4);
      v128.store(a, f32x4.mul(v128.load(a), inv));
    }
  } else {
    for (let lane = 0; lane < 4; lane++) {
      const sr = blk + (<usize>lane << 2);
      let mx: f32 = NEG_INF;
      for (let j = 0; j < n; j++) {
        const x = load<f32>(sr + (<usize>j << 4));
        if (mx < x) mx = x;
      }
      const mS: f32 = mx == NEG_INF ? 0 : mx;
      let s: f32 = 0;
      for (let j = 0; j < n; j++) {
        const a = sr + (<usize>j << 4);
        const e = expScalar(load<f32>(a) - mS);
        store<f32>(a, e);
        s += e;
      }
      store<f32>(sL + (<usize>(g + lane) << 2), s);
      const inv: f32 = s == 0 ? 0 : <f32>1.0 / s;
      for (let j = 0; j < n; j++) {
        const a = sr + (<usize>j << 4);
        store<f32>(a, load<f32>(a) * inv);
      }
    }
  }
}

/**
 * p_j ← (p_j == −∞ ? 0 : p_j) over rows g..g+3's block (n = 4 × keys, interleaved): hidden
 * keys contribute nothing without a softmax. Each row's count of keys it sees is added to
 * its sL slot (0 after the last block: the row sees no key).
 */
function unhideRow(g: i32, p: usize, n: i32): void {
  for (let j = 0; j < n; j++) {
    const a = p + (<usize>j << 2);
    const l = sL + (<usize>(g + (j & 3)) << 2);
    if (load<f32>(a) == NEG_INF) store<f32>(a, 0);
    else store<f32>(l, load<f32>(l) + 1);
  }
}

// ---- P·V: acc[r] += Σ_jj P[r][jj] · v_(j0+jj) ------------------------------------------

/**
 * P·V of the keys [a, b) of the sub-block at key jb of the block (weights at pRow, key 0 of
 * the block) that some rows of group rg do not see, by their end (a length, a causal kind)
 * or their window start: row by row, each row adding only the keys it sees, in key order. So
 * such a key is never read for a row it is hidden from (its weight there is 0, and 0 · NaN or
 * 0 · Inf from its V row would spoil the row), and a row's output does not depend on which
 * rows share its group. (A key hidden by the mask is read: its −∞ score is data.)
 */
function pvEdge(rg: i32, vRow: usize, vStride: usize, pRow: usize, jb: i32, a: i32, b: i32, t: i32, c: f32): void {
  // a few keys per group, so one function for every V type (t as ldAny; c = 2^−112 for
  // float16 rows read as value · 2^−112, see ld4), one element at a time but for float32
  // rows: the same products and sums as the vector loops' multiply and add
  const Dv = gDv, es = esize(t), aRow = <usize>gDvp << 2;
  for (let r = rg; r < rg + 4; r++) {
    const k0 = gJ0 + jb;
    const lo = max(a, load<i32>(sStart + (<usize>r << 2)) - k0), hi = min(b, load<i32>(sEnd + (<usize>r << 2)) - k0);
    const acc = sAcc + <usize>r * aRow;
    for (let j = lo; j < hi; j++) {
      const w = load<f32>(pRow + (<usize>(jb + j) << 4) + (<usize>(r & 3) << 2));
      const vp = vRow + <usize>(jb + j) * vStride;
      let d = 0;
      // float32 rows (every prefill tile's: 16-bit rows are widened for them) 4 columns at a time
      if (t == 0) {
        const wv = f32x4.splat(w);
        for (; d + 4 <= Dv; d += 4) {
          const o = acc + (<usize>d << 2);
          v128.store(o, madd(wv, v128.load(vp + (<usize>d << 2)), v128.load(o)));
        }
      }
      for (; d < Dv; d++) {
        const o = acc + (<usize>d << 2);
        store<f32>(o, load<f32>(o) + w * (ldAny(vp + <usize>d * es, t) * c));
      }
    }
  }
}

let gCs: i32 = 0, gCe: i32 = 0; // groupCore's result

/**
 * The core [gCs, gCe) of keys [f0, gn) of the sub-block at jb: the keys every row of group rg
 * that sees any key sees (by its end and window start). One function for every pvBlock
 * instantiation, as it runs once per group and sub-block (the module's size budget).
 */
function groupCore(rg: i32, jb: i32, f0: i32, gn: i32): void {
  let cs = f0, ce = gn;
  for (let r = rg; r < rg + 4; r++) {
    const st = load<i32>(sStart + (<usize>r << 2)), en = load<i32>(sEnd + (<usize>r << 2));
    if (en > st) {
      cs = max(cs, st - gJ0 - jb);
      ce = min(ce, en - gJ0 - jb);
    }
  }
  cs = min(cs, gn);
  gCs = cs;
  gCe = max(ce, cs);
}

function pvBlock<VT, SP>(vRow: usize, vStride: usize, nb: i32, nR4: i32, sOff: usize): void {
  const Dv = gDv, Dvp = gDvp, gS = <usize>gSB << 4;
  const es = elemBytes<VT>();
  // the decode form (SP = u8, float32 K and V of one head size, see runTile): one word of
  // the K row and one of the V row 2·KB keys ahead per step, stepping 8·es bytes, so the
  // (Dv/8)·n steps of a sub-block of n keys cover exactly its n K and V rows ahead; on the
  // first block of a pair (gTMul = 2, see touchTarget) 16·es bytes: 2n rows, a line each
  const SPREAD = sizeof<SP>() == 1;
  const tStep = (<usize>es << 3) * gTMul;
  let tk = gTK, tv = gTV;
  const aRow = <usize>Dvp << 2;
  if (ASC_FEATURE_SIMD) {
    const D8 = Dv & ~7;
    // pvEdge's element type and scale (ldAny's codes; the u64 marker: float16 at 2^−112)
    const et = sizeof<VT>() == 4 ? 0 : sizeof<VT>() == 8 || !isSigned<VT>() ? 1 : 2;
    const ec: f32 = sizeof<VT>() == 8 ? F16_UNSCALE : 1;
    // keys in sub-blocks of gSub rows: the V rows of a sub-block stay in L1 across the
    // column chunks and row groups
    const SUB = gSub;
    for (let jb = 0; jb < nb; jb += SUB) {
    const jn = min(nb - jb, SUB);
    for (let rg = 0; rg < nR4; rg += 4) {
      // the keys of the sub-block the group's rows may see: from the first after every row's
      // window start (a hidden key's V is never read) to the last before every row's end
      const f0 = max(0, gFirst(rg) - jb);
      const gn = min(jn, load<i32>(sGLim + <usize>rg) - jb);
      if (gn <= f0) continue;
      // the core [cs, ce): keys every row of the group that sees any key sees (by ends and
      // window starts); the keys before and after it, seen by some rows only, go through
      // pvEdge (a causal tile's diagonal, a window's start: a few keys per group)
      groupCore(rg, jb, f0, gn);
      const cs = gCs, ce = gCe;
      const pRow = sS + <usize>(rg >> 2) * gS + sOff; // the group's weights, key 0 of the block
      if (cs > f0) pvEdge(rg, vRow, vStride, pRow, jb, f0, cs, et, ec);
      const vBase = vRow + <usize>(jb + cs) * vStride;
      const pBase = pRow + (<usize>(jb + cs) << 4), pEnd = pRow + (<usize>(jb + ce) << 4);
      const c0 = sAcc + <usize>rg * aRow, c1 = c0 + aRow, c2 = c1 + aRow, c3 = c2 + aRow;
      let d = 0;
      if (sizeof<VT>() == 8 && !SPREAD) {
        // float16 (read as value · 2^−112, one more register for the mask): two heads at a
        // time, so the four accumulators, two weights, two V vectors and the mask fit the
        // registers (eight accumulators made V8 spill one, a store and reload on every key)
        for (; d < D8; d += 8) {
          const o = <usize>d << 2;
          for (let hp = 0; hp < 2; hp++) {
            const ca = hp == 0 ? c0 : c2, cb = ca + aRow;
            const wo = <usize>hp << 3;
            let x0 = v128.load(ca + o), y0 = v128.load(ca + o, 16);
            let x1 = v128.load(cb + o), y1 = v128.load(cb + o, 16);
            let vp = vBase + <usize>d * es;
            for (let pp = pBase + wo; pp < pEnd; pp += 16) {
              const va = ld4<VT>(vp), vb = ld4Next<VT>(vp);
              const w0 = v128.load32_splat(pp), w1 = v128.load32_splat(pp, 4);
              x0 = madd(w0, va, x0); y0 = madd(w0, vb, y0);
              x1 = madd(w1, va, x1); y1 = madd(w1, vb, y1);
              vp += vStride;
            }
            v128.store(ca + o, x0); v128.store(ca + o, y0, 16);
            v128.store(cb + o, x1); v128.store(cb + o, y1, 16);
          }
        }
      }
      for (; d < D8; d += 8) {
        const o = <usize>d << 2;
        let x0 = v128.load(c0 + o), y0 = v128.load(c0 + o, 16);
        let x1 = v128.load(c1 + o), y1 = v128.load(c1 + o, 16);
        let x2 = v128.load(c2 + o), y2 = v128.load(c2 + o, 16);
        let x3 = v128.load(c3 + o), y3 = v128.load(c3 + o, 16);
        let vp = vBase + <usize>d * es;
        for (let pp = pBase; pp < pEnd; pp += 16) {
          if (SPREAD) {
            touch(tk); touch(tv);
            tk += tStep; tv += tStep;
          }
          const va = ld4<VT>(vp), vb = ld4Next<VT>(vp);
          let w = v128.load32_splat(pp);
          x0 = madd(w, va, x0); y0 = madd(w, vb, y0);
          w = v128.load32_splat(pp, 4);
          x1 = madd(w, va, x1); y1 = madd(w, vb, y1);
          w = v128.load32_splat(pp, 8);
          x2 = madd(w, va, x2); y2 = madd(w, vb, y2);
          w = v128.load32_splat(pp, 12);
          x3 = madd(w, va, x3); y3 = madd(w, vb, y3);
          vp += vStride;
        }
        v128.store(c0 + o, x0); v128.store(c0 + o, y0, 16);
        v128.store(c1 + o, x1); v128.store(c1 + o, y1, 16);
        v128.store(c2 + o, x2); v128.store(c2 + o, y2, 16);
        v128.store(c3 + o, x3); v128.store(c3 + o, y3, 16);
      }
      // remaining 1..7 columns: up to two chunks, the last one masked
      for (; d < Dv; d += 4) {
        const left = Dv - d;
        const tm = tailMask(left >= 4 ? 0 : left);
        const o = <usize>d << 2;
        let x0 = v128.load(c0 + o), x1 = v128.load(c1 + o), x2 = v128.load(c2 + o), x3 = v128.load(c3 + o);
        let vp = vBase + <usize>d * es;
        for (let pp = pBase; pp < pEnd; pp += 16) {
          const va = v128.and(ld4<VT>(vp), tm);
          x0 = madd(v128.load32_splat(pp), va, x0);
          x1 = madd(v128.load32_splat(pp, 4), va, x1);
          x2 = madd(v128.load32_splat(pp, 8), va, x2);
          x3 = madd(v128.load32_splat(pp, 12), va, x3);
          vp += vStride;
        }
        v128.store(c0 + o, x0); v128.store(c1 + o, x1); v128.store(c2 + o, x2); v128.store(c3 + o, x3);
      }
      if (gn > ce) pvEdge(rg, vRow, vStride, pRow, jb, ce, gn, et, ec);
    }
    }
  } else {
    for (let r = 0; r < nR4; r++) {
      const pr = sAddr(r) + sOff;
      const cr = sAcc + <usize>r * aRow;
      // the row's own keys (its end, its window start), as the SIMD build's pvEdge: a key
      // hidden from it by those is never read. No skip of w = 0 otherwise: a mask-hidden
      // key's 0 · Inf / NaN value is NaN in both builds
      const n = min(min(nb, load<i32>(sGLim + <usize>(r & ~3))), load<i32>(sEnd + (<usize>r << 2)) - gJ0);
      for (let jj = max(gFirst(r & ~3), load<i32>(sStart + (<usize>r << 2)) - gJ0); jj < n; jj++) {
        const w = load<f32>(pr + (<usize>jj << 4));
        const vr = vRow + <usize>jj * vStride;
        for (let d = 0; d < Dv; d++) {
          const a = cr + (<usize>d << 2);
          store<f32>(a, load<f32>(a) + w * ld1<VT>(vr + <usize>d * es));
        }
      }
    }
  }
}

// K / V element type dispatch (one instantiation of each microkernel per dtype)
function scores(kRow: usize, kStride: usize, nb: i32, nR4: i32, sOff: usize, tK: usize = 0, tV: usize = 0, tStride: usize = 0, tN: i32 = 0): void {
  const tBytes = <usize>gDv * esize(gVT);
  // prefill tiles (more than one row group) read each K row once per group: 16-bit rows are
  // widened to float32 once per block instead (exact) and the float32 kernel runs on the copy
  if (ASC_FEATURE_SIMD && nR4 > 4 && gKT != 0) {
    widen16Rows(sCv, kRow, kStride, nb, gD, gKT);
    scoresBlock<f32, u16>(sCv, <usize>gD << 2, nb, nR4, sOff, 0, 0, 0, 0, 0);
    return;
  }
  // float16 rows of a decode tile (SIMD): a block without Inf / NaN codes is read in
  // registers as value · 2^−112 against the pre-scaled Q rows (u64 marker, see gQPre); one
  // with them, or Q rows too large to pre-scale, go through an exact float32 copy
  if (ASC_FEATURE_SIMD && gKT == 1 && (!gQPre || !f16RowsFinite(kRow, kStride, nb, gD))) {
    widenF16Rows(sCv, kRow, kStride, nb, gD, gQPre ? F16_UNSCALE : 1);
    scoresBlock<f32, u16>(sCv, <usize>gD << 2, nb, nR4, sOff, 0, 0, 0, 0, 0);
    return;
  }
  // Decode tiles (one group of 4 rows) over contiguous K and V rows (padded [B,H,N,D] or a
  // cache) spread the touch-ahead over the dot-product loop (SP = u8): each step reads one
  // word of the two V rows and one of the two K rows 2·KB keys ahead, stepping 8·es bytes,
  // so the D/4 steps cover exactly those rows (every cache line twice) and the misses come
  // one or two per step instead of the burst of 4·D·es/64 loads per key pair of the other
  // form (SP = u16), which fills the core's miss buffers and stalls (decode step 11–16%
  // faster, same process). A separate instantiation, so the prefill loops stay as they are.
  // float32 decode tiles touch from the P·V loop instead (tN = 0 here, see runTile): the
  // same reads, spread over both halves of the block's work (2–5% faster, same process).
  if (ASC_FEATURE_SIMD && nR4 == 4 && (tN <= 0 || tStride == tBytes) && kStride == <usize>gD * esize(gKT)) {
    if (gKT == 0) scoresBlock<f32, u8>(kRow, kStride, nb, nR4, sOff, tK, tV, tStride, tBytes, tN);
    else if (gKT == 1) scoresBlock<u64, u8>(kRow, kStride, nb, nR4, sOff, tK, tV, tStride, tBytes, tN);
    else scoresBlock<i16, u8>(kRow, kStride, nb, nR4, sOff, tK, tV, tStride, tBytes, tN);
    return;
  }
  if (gKT == 0) scoresBlock<f32, u16>(kRow, kStride, nb, nR4, sOff, tK, tV, tStride, tBytes, tN);
  else if (gKT == 1) {
    if (ASC_FEATURE_SIMD) scoresBlock<u64, u16>(kRow, kStride, nb, nR4, sOff, tK, tV, tStride, tBytes, tN);
    else scoresBlock<u16, u16>(kRow, kStride, nb, nR4, sOff, tK, tV, tStride, tBytes, tN);
  } else scoresBlock<i16, u16>(kRow, kStride, nb, nR4, sOff, tK, tV, tStride, tBytes, tN);
}

function pv(vRow: usize, vStride: usize, nb: i32, nR4: i32, sOff: usize, touch: bool = false): void {
  if (ASC_FEATURE_SIMD && touch) {
    pvBlock<f32, u8>(vRow, vStride, nb, nR4, sOff);
    return;
  }
  if (ASC_FEATURE_SIMD && nR4 > 4 && gVT != 0) {
    // prefill tiles: as in scores()
    widen16Rows(sCv, vRow, vStride, nb, gDv, gVT);
    pvBlock<f32, u16>(sCv, <usize>gDv << 2, nb, nR4, sOff);
    return;
  }
  if (gVT == 0) pvBlock<f32, u16>(vRow, vStride, nb, nR4, sOff);
  else if (gVT == 1) {
    if (!ASC_FEATURE_SIMD) pvBlock<u16, u16>(vRow, vStride, nb, nR4, sOff);
    else if (gVPre && f16RowsFinite(vRow, vStride, nb, gDv)) pvBlock<u64, u16>(vRow, vStride, nb, nR4, sOff);
    else {
      widenF16Rows(sCv, vRow, vStride, nb, gDv, gVPre ? F16_UNSCALE : 1);
      pvBlock<f32, u16>(sCv, <usize>gDv << 2, nb, nR4, sOff);
    }
  } else pvBlock<i16, u16>(vRow, vStride, nb, nR4, sOff);
}

/**
 * n float16 rows (stride bytes apart) → float32 rows of D at dst, times c (1, or 2^−112 when
 * the other operand carries 2^112: exact either way, float16's smallest 2^−24 becoming
 * float32's subnormal 2^−136; Inf / NaN kept).
 */
function widenF16Rows(dst: usize, src: usize, stride: usize, n: i32, D: i32, c: f32): void {
  const D4 = D & ~3;
  const vc = f32x4.splat(c);
  // the widening's constants read before the loops, so they stay in registers (see F16W)
  const m = v128.load(F16W), sc = v128.load(F16W, 16), lim = v128.load(F16W, 32), inf = v128.load(F16W, 48);
  for (let j = 0; j < n; j++) {
    const s = src + <usize>j * stride, o = dst + <usize>j * (<usize>D << 2);
    let d = 0;
    for (; d < D4; d += 4) v128.store(o + (<usize>d << 2), f32x4.mul(f16BitsToF32VC(v128.load16x4_s(s + (<usize>d << 1)), m, sc, lim, inf), vc));
    for (; d < D; d++) store<f32>(o + (<usize>d << 2), f16ToF32Scalar(<u32>load<u16>(s + (<usize>d << 1))) * c);
  }
}

/** n float16 (t = 1) or bfloat16 (t = 2) rows (stride bytes apart) → exact float32 rows of D at dst. */
function widen16Rows(dst: usize, src: usize, stride: usize, n: i32, D: i32, t: i32): void {
  if (t == 1) {
    widenF16Rows(dst, src, stride, n, D, 1);
    return;
  }
  const D4 = D & ~3;
  for (let j = 0; j < n; j++) {
    const s = src + <usize>j * stride, o = dst + <usize>j * (<usize>D << 2);
    let d = 0;
    for (; d < D4; d += 4) v128.store(o + (<usize>d << 2), loadBF16x4(s + (<usize>d << 1)));
    for (; d < D; d++) store<f32>(o + (<usize>d << 2), bf16ToF32Scalar(<u32>load<u16>(s + (<usize>d << 1))));
  }
}

// Rows far apart (packed [T,H,D]: one head's rows are H·D elements apart) share few L1
// sets, so a tile with several row groups would keep evicting the block it re-reads.
// Then the block's rows are first copied next to each other into scratch (one read of
// each row, as before, plus an L1-resident copy).
@inline function gatherRows(dst: usize, src: usize, stride: usize, rowBytes: usize, n: i32): void {
  for (let j = 0; j < n; j++) memory.copy(dst + <usize>j * rowBytes, src + <usize>j * stride, rowBytes);
}

/**
 * A sequence's n rows of one head (stride bytes apart, D elements of dtype t) copied next to
 * each other at dst, widened to float32 when `wide` (16-bit rows, SIMD); returns the copy's
 * row stride in bytes.
 */
function seqRows(dst: usize, src: usize, stride: usize, n: i32, D: i32, t: i32, wide: bool): usize {
  if (ASC_FEATURE_SIMD && wide) {
    widen16Rows(dst, src, stride, n, D, t);
    return <usize>D << 2;
  }
  const rowBytes = <usize>D * esize(t);
  gatherRows(dst, src, stride, rowBytes, n);
  return rowBytes;
}

function scoresMaybeGathered(kRow: usize, kStride: usize, nb: i32, nR4: i32, sOff: usize, tK: usize = 0, tV: usize = 0, tStride: usize = 0, tN: i32 = 0): void {
  const rowBytes = <usize>gD * esize(gKT);
  if (nR4 > 4 && kStride >= rowBytes * 2) {
    gatherRows(sKb, kRow, kStride, rowBytes, nb);
    scores(sKb, rowBytes, nb, nR4, sOff);
  } else scores(kRow, kStride, nb, nR4, sOff, tK, tV, tStride, nR4 == 4 ? tN : 0);
}

function pvMaybeGathered(vRow: usize, vStride: usize, nb: i32, nR4: i32, sOff: usize, touch: bool = false): void {
  const rowBytes = <usize>gDv * esize(gVT);
  if (nR4 > 4 && vStride >= rowBytes * 2) {
    gatherRows(sVb, vRow, vStride, rowBytes, nb);
    pv(sVb, rowBytes, nb, nR4, sOff);
  } else pv(vRow, vStride, nb, nR4, sOff, touch);
}

// ---- one tile ----------------------------------------------------------------------------

// Touch-ahead target of the block at j0: the K and V rows 2·KB keys ahead. Past the
// tile's last blocks it continues with the first rows of the next tile's KV head when
// attention() named one (gNextK ≠ 0: a decode step walks the heads one after another), so
// no head after the first starts with two blocks of cold misses (those cost ~5% of a
// 32q/8kv L=4096 step). Sets gTK / gTV; returns how many rows from there to touch (≤ 0:
// none).
//
// Paired blocks (pair = true: the float32 decode tile, which touches from P·V). A touch is
// a load: it cannot retire until its line arrives, so the misses in flight are the touches
// the reorder buffer holds, and P·V's ~30 instructions per touch keep that to ~10 lines
// (a cpu-clock profile put ~45% of P·V's samples on the touches). So the blocks go in
// pairs: the first touches the K and V rows of both blocks 2·KB and 3·KB keys ahead, twice
// as densely (two lines per P·V step, gTMul = 2), and the second touches nothing and runs
// from the caches. 32q/8kv L=4096 decode step 0.94–0.98× the time of one block's rows per
// block (bench/ab.mjs: both builds over the same memory, alternating calls); four blocks at once (four
// lines per step, three blocks without) was no faster than one. The score loop's touches
// (other dtypes, the two-phase path) stay one block per block: in pairs, bfloat16 and
// float16 decode did not change and TRT_QuantizedAttention took 1.05–1.09× the time.
// A ring (seq slot rot > 0): keys t >= gWrap are rows t − gWrap from gK0 / gV0 (row 0);
// keys before it are rows from the tile's kRow / vRow (row rot). NO_WRAP: no ring.
let gWrap: i32 = NO_DIAG;
let gK0: usize = 0;
let gV0: usize = 0;
/** Address of key t's row: from `row` (key 0) before the ring's wrap, from `row0` after it. */
@inline function ringRow(row: usize, row0: usize, stride: usize, t: i32): usize {
  return t < gWrap ? row + <usize>t * stride : row0 + <usize>(t - gWrap) * stride;
}
let gNextK: usize = 0; // key 0 of the next tile's KV head (0 = none)
let gNextV: usize = 0;
let gNextEnd: i32 = 0; // that tile's end
let gTK: usize = 0;
let gTV: usize = 0;
let gTMul: usize = 1; // target rows per row of the block: 2 on the first block of a pair
let gTSkip = false; // the block before touched this block's share: touch nothing

function touchTarget(kRow: usize, kStride: usize, vRow: usize, vStride: usize, j0: i32, tileEnd: i32, pair: bool = false): i32 {
  gTMul = 1;
  if (gTSkip) {
    gTSkip = false;
    return 0;
  }
  // (a ring's touches never run across its wrap: the rows there are not adjacent)
  const a = j0 + 2 * KB;
  if (pair && a + 2 * KB <= tileEnd && (a >= gWrap || a + 2 * KB <= gWrap)) {
    gTK = ringRow(kRow, gK0, kStride, a);
    gTV = ringRow(vRow, gV0, vStride, a);
    gTMul = 2;
    gTSkip = true;
    return KB;
  }
  if (a < tileEnd) {
    gTK = ringRow(kRow, gK0, kStride, a);
    gTV = ringRow(vRow, gV0, vStride, a);
    return a < gWrap ? min(KB, min(tileEnd, gWrap) - a) : min(KB, tileEnd - a);
  }
  if (gNextK == 0) return 0;
  const a2 = a - roundUp(tileEnd, KB);
  if (a2 >= gWrap) return 0;
  gTK = gNextK + <usize>a2 * kStride;
  gTV = gNextV + <usize>a2 * vStride;
  return min(KB, min(gNextEnd, gWrap) - a2);
}

// @ts-ignore: decorator
@inline const F16_SCALE: f32 = reinterpret<f32>(0x77800000); // 2^112
// @ts-ignore: decorator
@inline const F16_UNSCALE: f32 = reinterpret<f32>(0x07800000); // 2^−112

/** First key of the current block that row group rg's rows may see (keys before it: before every row's window). */
@inline function gFirst(rg: i32): i32 {
  return load<i32>(sGLim + R_MAX + <usize>rg);
}

/** Every row group takes all nb keys of the block (the two-phase path). */
function fillGLim(nR4: i32, nb: i32): void {
  for (let g = 0; g < nR4; g += 4) {
    store<i32>(sGLim + <usize>g, nb);
    store<i32>(sGLim + R_MAX + <usize>g, 0);
  }
}

/**
 * Runs the tile whose nRows rows are set up in scratch (Q rows, ends, mask/out/qk row
 * pointers) against K/V rows kRow/vRow (key 0 of this sequence and kv head).
 */
function runTile(kRow: usize, kStride: usize, vRow: usize, vStride: usize, nRows: i32, tileEnd: i32): void {
  const nR4 = roundUp(nRows, 4);
  const gS = <usize>gSB << 4;
  memory.fill(sAcc, 0, <usize>nR4 * <usize>gDvp * 4);
  // float16 K / V read in registers (decode tiles; prefill tiles widen, see scores())
  // (the tile's Q rows, scaled, times 2^112 in place when every |q| < 2^15: see gQPre)
  gQPre = ASC_FEATURE_SIMD && gKT == 1 && nR4 == 4 && prescaleF16(sQ, sQ, <usize>nR4 * <usize>gDp);
  gVPre = ASC_FEATURE_SIMD && gVT == 1 && gNorm == 0 && nR4 == 4;
  for (let r = 0; r < nR4; r++) {
    store<f32>(sM + (<usize>r << 2), NEG_INF);
    store<f32>(sL + (<usize>r << 2), 0);
  }
  // a decode tile (one row group) over contiguous float32 K and V rows of one head size,
  // a multiple of 8, touches ahead from P·V (see pvBlock), not from the scores, and in
  // block pairs (see touchTarget)
  const pvTouch = ASC_FEATURE_SIMD && nR4 == 4 && gD == gDv && (gDv & 7) == 0 && gKT == 0 && gVT == 0 &&
    kStride == <usize>gD * esize(gKT) && vStride == <usize>gDv * esize(gVT);
  if (!gTwoPhase) {
    // blocks before every row's sliding-window start are skipped whole
    let first = tileEnd;
    for (let r = 0; r < nR4; r++) {
      const st = load<i32>(sStart + (<usize>r << 2));
      if (load<i32>(sEnd + (<usize>r << 2)) > st) first = min(first, st);
    }
    const jFirst = first >= tileEnd ? 0 : first / KB * KB;
    gTSkip = false;
    for (let j0 = jFirst; j0 < tileEnd;) {
      // (a ring's block ends at its wrap: the rows after it start over at row 0)
      const nb = j0 < gWrap ? min(KB, min(tileEnd, gWrap) - j0) : min(KB, tileEnd - j0);
      const kB = ringRow(kRow, gK0, kStride, j0), vB = ringRow(vRow, gV0, vStride, j0);
      // per row group, the keys of this block any of its rows sees: a causal tile's later
      // keys are hidden from its first rows, and those groups skip them (scores, exp, P·V);
      // keys before every row's window start (a sliding window, a KV cache's ring) are
      // skipped by scores and P·V (postGroup hides their stale scores)
      for (let g = 0; g < nR4; g += 4) {
        let e = 0, f = nb;
        for (let r = g; r < g + 4; r++) {
          const en = load<i32>(sEnd + (<usize>r << 2)), st = load<i32>(sStart + (<usize>r << 2));
          e = max(e, en);
          if (en > st) f = min(f, st - j0);
        }
        const lim = min(nb, max(0, e - j0));
        store<i32>(sGLim + <usize>g, lim);
        store<i32>(sGLim + R_MAX + <usize>g, min(lim, max(0, f)));
      }
      const tN = touchTarget(kRow, kStride, vRow, vStride, j0, tileEnd, pvTouch);
      const inPV = pvTouch && tN >= nb;
      scoresMaybeGathered(kB, kStride, nb, nR4, 0, gTK, gTV, vStride, inPV ? 0 : tN);
      for (let g = 0; g < nR4; g += 4) {
        const blk = sS + <usize>(g >> 2) * gS;
        const n = load<i32>(sGLim + <usize>g);
        if (n == 0) continue;
        postGroup(g, blk, j0, nb, n);
        if (gNorm == 1) unhideRow(g, blk, n << 2);
        else softmaxStep(g, blk, n);
        if (gVPre) scaleRow(blk, n << 2, F16_SCALE);
      }
      gJ0 = j0;
      pvMaybeGathered(vB, vStride, nb, nR4, 0, inPV);
      j0 += nb;
    }
  } else {
    // phase 1: full score rows
    gTSkip = false;
    for (let j0 = 0; j0 < tileEnd; j0 += KB) {
      const nb = min(KB, tileEnd - j0);
      const nbPad = roundUp(nb, 4);
      fillGLim(nR4, nb);
      // the same touch-ahead as the one-pass path: K rows 2 blocks ahead for this phase,
      // V rows 2 blocks ahead so phase 2 finds them in the last-level cache (one block per
      // block: see touchTarget)
      const tN = touchTarget(kRow, kStride, vRow, vStride, j0, tileEnd);
      scoresMaybeGathered(kRow + <usize>j0 * kStride, kStride, nb, nR4, <usize>j0 << 4, gTK, gTV, vStride, tN);
      for (let g = 0; g < nR4; g += 4) postGroup(g, sS + <usize>(g >> 2) * gS + (<usize>j0 << 4), j0, nb, nbPad);
    }
    const endPad = roundUp(tileEnd, 4);
    for (let g = 0; g < nR4; g += 4) {
      const blk = sS + <usize>(g >> 2) * gS;
      if (gNorm == 1) unhideRow(g, blk, endPad << 2);
      else softmaxFull(g, blk, endPad);
      if (gQk != 0 && gQkMode == 3) {
        for (let r = g; r < min(g + 4, nRows); r++) {
          const qkRow = load<usize>(sQkRow + (<usize>r << 2));
          writeQkRow(qkRow, blk + (<usize>(r & 3) << 2), tileEnd);
        }
      }
      if (gQuant != 0) quantizeRow(blk, endPad << 2);
      if (gVPre) scaleRow(blk, endPad << 2, F16_SCALE);
    }
    // phase 2: P·V. Phase 1 brought the V rows into the last-level cache; a decode tile's
    // loads of them still waited there (a cpu-clock profile of TRT_QuantizedAttention
    // decode put a third of this loop's samples on them), so P·V touches the V rows 2·KB
    // keys ahead too, in block pairs: touchTarget with V as both of its row sets
    // (TRT_QuantizedAttention decode 0.93–0.99× the time, bench/ab.mjs)
    gTSkip = false;
    for (let j0 = 0; j0 < tileEnd; j0 += KB) {
      const nb = min(KB, tileEnd - j0);
      fillGLim(nR4, nb);
      const tN = pvTouch ? touchTarget(vRow, vStride, vRow, vStride, j0, tileEnd, true) : 0;
      gJ0 = j0;
      pvMaybeGathered(vRow + <usize>j0 * vStride, vStride, nb, nR4, <usize>j0 << 4, tN >= nb);
    }
  }
  // write the rows out. sL = 0 marks a row that sees no key (its running or full softmax
  // sum, or its count of visible keys without a softmax): it is written as zeros, not as
  // its accumulator times 0, which would be NaN when a key hidden from it (by the mask)
  // holds an Inf or NaN (0 · NaN); the other rows of its tile read such keys.
  const oneByL = gNorm == 0 && !gTwoPhase;
  for (let r = 0; r < nRows; r++) {
    const dst = load<usize>(sOutRow + (<usize>r << 2));
    const acc = sAcc + <usize>r * <usize>gDvp * 4;
    const l = load<f32>(sL + (<usize>r << 2));
    if (l == 0) {
      memory.fill(dst, 0, <usize>gDv * esize(gOutT));
      continue;
    }
    let c: f32 = 1;
    if (oneByL) c = l > 0 ? <f32>1.0 / l : 0;
    if (gOutT == 0) {
      if (ASC_FEATURE_SIMD) {
        const vc = f32x4.splat(c);
        const D4 = gDv & ~3;
        let d = 0;
        for (; d < D4; d += 4) v128.store(dst + (<usize>d << 2), f32x4.mul(v128.load(acc + (<usize>d << 2)), vc));
        for (; d < gDv; d++) store<f32>(dst + (<usize>d << 2), load<f32>(acc + (<usize>d << 2)) * c);
      } else {
        for (let d = 0; d < gDv; d++) store<f32>(dst + (<usize>d << 2), load<f32>(acc + (<usize>d << 2)) * c);
      }
    } else {
      for (let d = 0; d < gDv; d++) stAny(dst + (<usize>d << 1), gOutT, load<f32>(acc + (<usize>d << 2)) * c);
    }
  }
}

// ---- entry ---------------------------------------------------------------------------------

@inline function pi(params: usize, slot: i32): i32 {
  return load<i32>(params + (<usize>slot << 2));
}

@inline function pf(params: usize, slot: i32): f32 {
  return load<f32>(params + (<usize>slot << 2));
}

/** Attention over all sequences, heads and rows described by the parameter block. */
export function attention(params: usize): void {
  const q = <usize>pi(params, P_Q), k = <usize>pi(params, P_K), v = <usize>pi(params, P_V), out = <usize>pi(params, P_OUT);
  const seqs = <usize>pi(params, P_SEQS);
  const B = pi(params, P_B), Hq = pi(params, P_HQ), Hkv = pi(params, P_HKV);
  gD = pi(params, P_D);
  gDv = pi(params, P_DV);
  gDp = roundUp(max(gD, 1), 4);
  gDvp = roundUp(max(gDv, 1), 8);
  gSub = max(gDp, gDvp) <= 64 ? KB : 32;
  const qHS = pi(params, P_QHS), qTS = pi(params, P_QTS);
  const kHS = pi(params, P_KHS), kTS = pi(params, P_KTS);
  const vHS = pi(params, P_VHS), vTS = pi(params, P_VTS);
  const oHS = pi(params, P_OHS), oTS = pi(params, P_OTS);
  const dt = pi(params, P_DTYPES);
  const qt = dt & 15, ot = (dt >> 12) & 15;
  gOutT = ot;
  let scale = pf(params, P_SCALE);
  gPost = 1;
  if (scale > 1) {
    scale = sqrt<f32>(scale);
    gPost = scale;
  }
  gSoftcap = pf(params, P_SOFTCAP);
  const mask = <usize>pi(params, P_MASK);
  const mB = pi(params, P_MB), mH = pi(params, P_MH), mI = pi(params, P_MI), mLen = pi(params, P_MLEN);
  const wLeft = pi(params, P_WLEFT), wRight = pi(params, P_WRIGHT);
  gNorm = pi(params, P_NORM);
  gQuant = pi(params, P_QUANT);
  gQScale = pf(params, P_QSCALE);
  gQk = <usize>pi(params, P_QK);
  gQkMode = pi(params, P_QKMODE);
  gQkCols = pi(params, P_QKCOLS);
  const qkBS = pi(params, P_QKBS), qkHS = pi(params, P_QKHS);
  gTwoPhase = gQuant != 0 || gQk != 0;
  gSB = scoreStride(pi(params, P_MAXCOLS), gTwoPhase);
  // scratch layout
  let sp = <usize>pi(params, P_SCRATCH);
  sp = (sp + 15) & ~15;
  sQ = sp; sp += <usize>R_MAX * <usize>gDp * 4;
  sAcc = sp; sp += <usize>R_MAX * <usize>gDvp * 4;
  sS = sp; sp += <usize>R_MAX * <usize>gSB * 4;
  sM = sp; sp += R_MAX * 4;
  sL = sp; sp += R_MAX * 4;
  sEnd = sp; sp += R_MAX * 4;
  sStart = sp; sp += R_MAX * 4;
  sMaskRow = sp; sp += R_MAX * 4;
  sOutRow = sp; sp += R_MAX * 4;
  sQkRow = sp; sp += R_MAX * 4;
  sGLim = sp; sp += R_MAX * 4;
  sKb = sp; sp += <usize>KB * <usize>gDp * 4 + 16;
  sVb = sp; sp += <usize>KB * <usize>gDvp * 4 + 16;
  sCv = sp; sp += <usize>KB * <usize>max(gDp, gDvp) * 4 + 16;
  const sgRows = pi(params, P_SEQGATHER) != 0 ? seqGatherRows(gD, gDv, pi(params, P_MAXCOLS)) : 0;
  const sSeqK = sp; sp += <usize>sgRows * <usize>gDp * 4 + 16;
  const sSeqV = sp;

  const G = Hq / Hkv;
  gKT = (dt >> 4) & 15;
  gVT = (dt >> 8) & 15;
  const qes = esize(qt), oes = esize(ot), kes = esize(gKT), ves = esize(gVT);
  const kT0 = gKT, vT0 = gVT; // (a sequence-wide widening sets them to float32 for its tiles)
  const kStride = <usize>kTS * kes, vStride = <usize>vTS * ves;
  for (let b = 0; b < B; b++) {
    const rec = seqs + <usize>b * SEQ_SLOTS * 4;
    const qOff = load<i32>(rec), qLen = load<i32>(rec, 4), kOff = load<i32>(rec, 8), vOff = load<i32>(rec, 12);
    const kvLen = load<i32>(rec, 16), oOff = load<i32>(rec, 20), diag = load<i32>(rec, 24), woff = load<i32>(rec, 28);
    const rot = load<i32>(rec, 32);
    if (qLen <= 0) continue;
    const pairs = qLen * G;
    // Rows far apart (packed [T,H,D]) that several tiles of this sequence re-read are
    // copied next to each other once per sequence and head (the rows the tiles can see),
    // instead of once per tile and block by scoresMaybeGathered / pvMaybeGathered (the
    // ragged bench's packed batch 0.94× the time, same process). Up to SEQ_GATHER_BYTES
    // of rows, when the host reserved them (slot P_SEQGATHER); longer sequences keep the
    // per-block gathers. 16-bit K / V rows (SIMD) are widened to float32 there, once per
    // sequence and head, instead of once per block and tile (see scores(); prefill
    // (1,8,512,64) float16 0.88×, bfloat16 0.95× the time, bench/ab.mjs).
    let need = kvLen;
    if (diag != NO_DIAG) need = min(need, max(0, qLen - 1 + diag + 1));
    if (mask != 0) need = min(need, mLen);
    const kRB = <usize>gD * kes, vRB = <usize>gDv * ves;
    const wideK = ASC_FEATURE_SIMD && kT0 != 0, wideV = ASC_FEATURE_SIMD && vT0 != 0;
    const seqGather = pairs > R_MAX && gQk == 0 && need <= sgRows && (wideK || wideV || kStride >= kRB * 2 || vStride >= vRB * 2);
    for (let kh = 0; kh < Hkv; kh++) {
      gK0 = k + (<usize>kOff + <usize>kh * <usize>kHS) * kes;
      gV0 = v + (<usize>vOff + <usize>kh * <usize>vHS) * ves;
      let kRow = gK0 + <usize>rot * kStride;
      let vRow = gV0 + <usize>rot * vStride;
      gWrap = rot > 0 ? kvLen - rot : NO_DIAG;
      let kS = kStride, vS = vStride;
      if (seqGather) {
        // (a ring's rows copied in key order: the copy is no ring)
        const n1 = min(need, gWrap);
        kS = seqRows(sSeqK, kRow, kStride, n1, gD, kT0, wideK);
        vS = seqRows(sSeqV, vRow, vStride, n1, gDv, vT0, wideV);
        if (need > n1) {
          seqRows(sSeqK + <usize>n1 * kS, gK0, kStride, need - n1, gD, kT0, wideK);
          seqRows(sSeqV + <usize>n1 * vS, gV0, vStride, need - n1, gDv, vT0, wideV);
        }
        gWrap = NO_DIAG;
        if (wideK) gKT = 0;
        if (wideV) gVT = 0;
        kRow = sSeqK;
        vRow = sSeqV;
      }
      for (let p0 = 0; p0 < pairs; p0 += R_MAX) {
        const nRows = min(R_MAX, pairs - p0);
        let tileEnd = 0;
        for (let r = 0; r < nRows; r++) {
          const pr = p0 + r;
          const i = pr / G, h = kh * G + pr % G;
          gatherQ(r, q + (<usize>qOff + <usize>h * <usize>qHS + <usize>i * <usize>qTS) * qes, qt, scale);
          let end = kvLen, start = 0;
          if (diag != NO_DIAG) end = min(end, max(0, i + diag + 1));
          if (mask != 0) end = min(end, mLen);
          // a sliding window (Attention-25): the row at position p = i + woff sees p − left … p + right
          if (wRight >= 0) end = min(end, max(0, i + woff + wRight + 1));
          if (wLeft >= 0) start = max(0, i + woff - wLeft);
          store<i32>(sEnd + (<usize>r << 2), end);
          store<i32>(sStart + (<usize>r << 2), start);
          tileEnd = max(tileEnd, end);
          store<usize>(sMaskRow + (<usize>r << 2), mask != 0 ? mask + ((<usize>b * <usize>mB + <usize>h * <usize>mH + <usize>i * <usize>mI) << 2) : 0);
          store<usize>(sOutRow + (<usize>r << 2), out + (<usize>oOff + <usize>h * <usize>oHS + <usize>i * <usize>oTS) * oes);
          if (gQk != 0) store<usize>(sQkRow + (<usize>r << 2), gQk + (<usize>b * <usize>qkBS + <usize>h * <usize>qkHS + <usize>i * <usize>gQkCols) * oes);
        }
        for (let r = nRows; r < roundUp(nRows, 4); r++) {
          for (let d = 0; d < gDp; d++) store<f32>(qAddr(r, d), 0);
          store<i32>(sEnd + (<usize>r << 2), 0);
          store<i32>(sStart + (<usize>r << 2), 0);
          store<usize>(sMaskRow + (<usize>r << 2), 0);
          store<usize>(sQkRow + (<usize>r << 2), 0);
        }
        if (gQk != 0) tileEnd = gQkCols;
        // one tile per head (decode): the next head's tile has the same rows, so the same end
        gNextK = 0;
        if (pairs <= R_MAX && kh + 1 < Hkv) {
          gNextK = k + (<usize>kOff + <usize>(kh + 1) * <usize>kHS) * kes + <usize>rot * kStride;
          gNextV = v + (<usize>vOff + <usize>(kh + 1) * <usize>vHS) * ves + <usize>rot * vStride;
          gNextEnd = tileEnd;
        }
        runTile(kRow, kS, vRow, vS, nRows, tileEnd);
      }
      gKT = kT0; gVT = vT0;
    }
  }
}

// ---- strided row copies (past/present concatenation) ------------------------------------

/**
 * Copies B·H·N rows of rowBytes: row (b, h, t) from src + b·sBS + h·sHS + t·sTS to
 * dst + b·dBS + h·dHS + t·dTS (all strides in bytes). Used to build present_key /
 * present_value = concat(past, new) and to lay 3D K/V out as [B,H,N,D].
 */
export function copyRowsStrided(
  dst: usize, dBS: usize, dHS: usize, dTS: usize,
  src: usize, sBS: usize, sHS: usize, sTS: usize,
  B: i32, H: i32, N: i32, rowBytes: usize,
): void {
  for (let b = 0; b < B; b++) {
    for (let h = 0; h < H; h++) {
      const d0 = dst + <usize>b * dBS + <usize>h * dHS, s0 = src + <usize>b * sBS + <usize>h * sHS;
      if (dTS == rowBytes && sTS == rowBytes) {
        memory.copy(d0, s0, <usize>N * rowBytes);
      } else {
        for (let t = 0; t < N; t++) memory.copy(d0 + <usize>t * dTS, s0 + <usize>t * sTS, rowBytes);
      }
    }
  }
}
