/**
 * Float64 reference for TRT_Attention, TRT_QuantizedAttention and ONNX Attention-23/24,
 * written straight from the operator descriptions (DESIGN.md, the ONNX spec): explicit
 * index arithmetic per form, a visibility predicate per key, a plain two-pass softmax.
 * It shares no code with src/.
 */

export interface Plain {
  dtype: string;
  shape: number[];
  data: ArrayLike<number | bigint | string | boolean>;
}

export interface RefOut {
  dtype: string;
  shape: number[];
  /** Decoded values. */
  values: number[];
  /** Extra absolute tolerance per element (quantization ties), else zeros. */
  slack: number[];
}

function f16(h: number): number {
  const s = h & 0x8000 ? -1 : 1, e = (h >> 10) & 0x1f, m = h & 0x3ff;
  if (e === 0) return s * m * 2 ** -24;
  if (e === 31) return m ? NaN : s * Infinity;
  return s * (1 + m / 1024) * 2 ** (e - 15);
}

function bf16(h: number): number {
  const b = new DataView(new ArrayBuffer(4));
  b.setUint32(0, (h & 0xffff) << 16);
  return b.getFloat32(0);
}

/** Decoded numbers of a plain tensor (bool as 1/0). */
export function decode(t: Plain): number[] {
  return Array.from(t.data as ArrayLike<unknown>, (x) => {
    const n = typeof x === 'boolean' ? Number(x) : Number(x as number);
    return t.dtype === 'float16' ? f16(n) : t.dtype === 'bfloat16' ? bf16(n) : n;
  });
}

// ---- quantization (from the float8e4m3fn / int8 definitions) ------------------------------

function roundHalfEven(x: number): number {
  const f = Math.floor(x), d = x - f;
  if (d > 0.5) return f + 1;
  if (d < 0.5) return f;
  return f % 2 === 0 ? f : f + 1;
}

/** x rounded to float8e4m3fn (saturating) and whether x is within `tol` of a rounding tie. */
export function e4m3(x: number, tol = 2e-5): { v: number; step: number; tie: boolean } {
  const a = Math.abs(x), s = Math.sign(x) || 1;
  if (a === 0) return { v: 0, step: 0, tie: false };
  const e = Math.max(-6, Math.floor(Math.log2(a)));
  const step = 2 ** (e - 3); // 3 mantissa bits; subnormals share 2^-9
  const u = a / step;
  const tie = Math.abs(u - Math.floor(u) - 0.5) < tol * Math.max(1, u) && a < 464;
  return { v: s * Math.min(448, roundHalfEven(u) * step), step, tie };
}

export function int8q(x: number, tol = 2e-5): { v: number; step: number; tie: boolean } {
  const tie = Math.abs(x - Math.floor(x) - 0.5) < tol * Math.max(1, Math.abs(x)) && x > -128.5 && x < 127.5;
  return { v: Math.max(-128, Math.min(127, roundHalfEven(x))), step: 1, tie };
}

// ---- the core -------------------------------------------------------------------------------

export interface Core {
  B: number; Hq: number; Hkv: number; D: number; Dv: number;
  qLen: number[]; kvLen: number[];
  q(b: number, h: number, i: number, d: number): number;
  k(b: number, kh: number, j: number, d: number): number;
  v(b: number, kh: number, j: number, d: number): number;
  /** Key visible (causal frontier, lengths, bool mask). */
  visible(b: number, h: number, i: number, j: number): boolean;
  /** Additive bias (float masks); may be −∞. */
  bias(b: number, h: number, i: number, j: number): number;
  scale: number;
  softcap?: number;
  norm?: 'softmax' | 'none';
  quant?: 'fp8' | 'int8' | null;
  qScale?: number;
}

/** y[b][h][i][d] and slack[b][h][i][d]. */
export function refCore(c: Core): { y: number[][][][]; slack: number[][][][] } {
  const G = c.Hq / c.Hkv;
  const y: number[][][][] = [], slack: number[][][][] = [];
  for (let b = 0; b < c.B; b++) {
    y.push([]); slack.push([]);
    for (let h = 0; h < c.Hq; h++) {
      const kh = Math.floor(h / G);
      y[b].push([]); slack[b].push([]);
      for (let i = 0; i < c.qLen[b]; i++) {
        const s: number[] = [], vis: boolean[] = [];
        for (let j = 0; j < c.kvLen[b]; j++) {
          let x = 0;
          for (let d = 0; d < c.D; d++) x += c.q(b, h, i, d) * c.k(b, kh, j, d);
          x *= c.scale;
          if (c.softcap && c.softcap > 0) x = c.softcap * Math.tanh(x / c.softcap);
          x += c.bias(b, h, i, j);
          const ok = c.visible(b, h, i, j) && x !== -Infinity;
          s.push(ok ? x : -Infinity);
          vis.push(ok);
        }
        let p: number[];
        if (c.norm === 'none') {
          p = s.map((x, j) => (vis[j] ? x : 0));
        } else {
          const m = Math.max(-Infinity, ...s);
          if (m === -Infinity) p = s.map(() => 0);
          else {
            const e = s.map((x) => (x === -Infinity ? 0 : Math.exp(x - m)));
            const sum = e.reduce((a, x) => a + x, 0);
            p = e.map((x) => x / sum);
          }
        }
        const row = new Array<number>(c.Dv).fill(0), sl = new Array<number>(c.Dv).fill(0);
        p.forEach((pj, j) => {
          let w = pj, tieStep = 0;
          if (c.quant) {
            const qs = c.qScale ?? 1;
            const r = c.quant === 'fp8' ? e4m3(pj / qs) : int8q(pj / qs);
            w = r.v * qs;
            if (r.tie) tieStep = r.step * qs;
          }
          for (let d = 0; d < c.Dv; d++) {
            const vv = c.v(b, kh, j, d);
            row[d] += w * vv;
            sl[d] += tieStep * Math.abs(vv);
          }
        });
        y[b][h].push(row);
        slack[b][h].push(sl);
      }
    }
  }
  return { y, slack };
}

// ---- forms ------------------------------------------------------------------------------------

interface Side {
  packed: boolean; onnx3d: boolean;
  B: number | null; H: number; N: number; D: number;
  vals: number[];
}

function side(t: Plain, form: string, heads?: number): Side {
  const vals = decode(t);
  if (form === 'packed_nhd') return { packed: true, onnx3d: false, B: null, N: t.shape[0], H: t.shape[1], D: t.shape[2], vals };
  if (t.shape.length === 4) return { packed: false, onnx3d: false, B: t.shape[0], H: t.shape[1], N: t.shape[2], D: t.shape[3], vals };
  return { packed: false, onnx3d: true, B: t.shape[0], H: heads!, N: t.shape[1], D: t.shape[2] / heads!, vals };
}

/** Element (b, h, i, d) of a side, i local to the sequence starting at start[b]. */
function at(s: Side, start: number[], b: number, h: number, i: number, d: number): number {
  if (s.packed) return s.vals[((start[b] + i) * s.H + h) * s.D + d];
  if (s.onnx3d) return s.vals[((b * s.N + i) * s.H + h) * s.D + d];
  return s.vals[((b * s.H + h) * s.N + i) * s.D + d];
}

function ints(t: Plain | null | undefined): number[] | null {
  return t ? Array.from(t.data as ArrayLike<unknown>, (x) => Number(x as number)) : null;
}

/** Mask lookup with broadcasting; onnx: a short last dim hides the missing keys. */
function maskFn(m: Plain | null | undefined, onnx: boolean): { vis: (b: number, h: number, i: number, j: number) => boolean; bias: (b: number, h: number, i: number, j: number) => number } {
  if (!m) return { vis: () => true, bias: () => 0 };
  const dims = [...new Array(4 - m.shape.length).fill(1), ...m.shape];
  const vals = decode(m);
  const idx = (b: number, h: number, i: number, j: number) => {
    const c = [b, h, i, j].map((x, k) => (dims[k] === 1 && !(onnx && k === 3) ? 0 : x));
    return ((c[0] * dims[1] + c[1]) * dims[2] + c[2]) * dims[3] + c[3];
  };
  const inRange = (j: number) => !onnx || j < dims[3];
  if (m.dtype === 'bool') return { vis: (b, h, i, j) => inRange(j) && vals[idx(b, h, i, j)] !== 0, bias: () => 0 };
  return { vis: (b, h, i, j) => inRange(j), bias: (b, h, i, j) => (inRange(j) ? vals[idx(b, h, i, j)] : 0) };
}

/** TRT_Attention (quantized = false) or TRT_QuantizedAttention (true). */
export function refTrt(inputs: (Plain | null | undefined)[], attrs: Record<string, unknown>, quantized: boolean): RefOut {
  const [Q, K, V, M] = inputs;
  const QS = quantized ? inputs[4] : null;
  const QL = quantized ? inputs[5] : inputs[4];
  const KL = quantized ? inputs[6] : inputs[5];
  const qForm = (attrs.query_form as string) ?? 'padded_bhnd', kvForm = (attrs.kv_form as string) ?? 'padded_bhnd';
  const qs = side(Q!, qForm, attrs.q_num_heads as number), ks = side(K!, kvForm, attrs.kv_num_heads as number), vs = side(V!, kvForm, attrs.kv_num_heads as number);
  const ql = ints(QL), kl = ints(KL);
  const B = qs.B ?? ks.B ?? ql!.length - 1;
  const qStart = qs.packed ? ql!.slice(0, B) : new Array(B).fill(0);
  const qLen = ql ? ql.slice(1).map((x, b) => x - ql[b]) : new Array(B).fill(qs.N);
  const kStart = ks.packed ? kl!.slice(0, B) : new Array(B).fill(0);
  const kvLen = ks.packed ? kl!.slice(1).map((x, b) => x - kl![b]) : kl ? kl : new Array(B).fill(ks.N);
  const mk = maskFn(M, quantized);
  let causal: (b: number, i: number, j: number) => boolean = () => true;
  if (!quantized) {
    const kind = (attrs.causal_kind as string) ?? 'none';
    if (kind === 'upper_left') causal = (b, i, j) => j <= i;
    if (kind === 'lower_right') causal = (b, i, j) => j <= i + kvLen[b] - qLen[b];
  } else if (attrs.is_causal === 1) {
    const known = qs.packed || ks.packed || !!kl;
    causal = (b, i, j) => j <= i + (known ? kvLen[b] - qLen[b] : 0);
  }
  const D = qs.D, Dv = vs.D;
  let quant: 'fp8' | 'int8' | null = null, qScale = 1;
  if (quantized) {
    const t = attrs.normalization_quantize_to_type ?? 'float8e4m3fn';
    quant = t === 'int8' || t === 3 || t === 'INT8' ? 'int8' : 'fp8';
    qScale = QS ? decode(QS)[0] : quant === 'fp8' ? 1 : 1 / 127;
  }
  const { y, slack } = refCore({
    B, Hq: qs.H, Hkv: ks.H, D, Dv, qLen, kvLen,
    q: (b, h, i, d) => at(qs, qStart, b, h, i, d),
    k: (b, h, j, d) => at(ks, kStart, b, h, j, d),
    v: (b, h, j, d) => at(vs, kStart, b, h, j, d),
    visible: (b, h, i, j) => causal(b, i, j) && mk.vis(b, h, i, j),
    bias: mk.bias,
    scale: quantized ? ((attrs.scale as number) ?? 1 / Math.sqrt(D)) : 1,
    norm: attrs.TRT_normalization_op === 'none' ? 'none' : 'softmax',
    quant, qScale,
  });
  const shape = qs.packed ? [qs.N, qs.H, Dv] : qs.onnx3d ? [B, qs.N, qs.H * Dv] : [B, qs.H, qs.N, Dv];
  const n = shape.reduce((a, x) => a * x, 1);
  const values = new Array<number>(n).fill(0), sl = new Array<number>(n).fill(0);
  const outSide: Side = { ...qs, D: Dv, vals: [] };
  for (let b = 0; b < B; b++) {
    for (let h = 0; h < qs.H; h++) {
      for (let i = 0; i < qLen[b]; i++) {
        for (let d = 0; d < Dv; d++) {
          const o = outSide.packed ? ((qStart[b] + i) * qs.H + h) * Dv + d : outSide.onnx3d ? ((b * qs.N + i) * qs.H + h) * Dv + d : ((b * qs.H + h) * qs.N + i) * Dv + d;
          values[o] = y[b][h][i][d];
          sl[o] = slack[b][h][i][d];
        }
      }
    }
  }
  return { dtype: Q!.dtype, shape, values, slack: sl };
}

/** ONNX Attention-23/24 (and 25's sliding window): [Y, present_key, present_value, qk_matmul_output]. */
export function refOnnx(inputs: (Plain | null | undefined)[], attrs: Record<string, unknown>): RefOut[] {
  const [Q, K, V, M, PK, PV, NP] = inputs;
  const rank = Q!.shape.length;
  const qh = attrs.q_num_heads as number, kvh = attrs.kv_num_heads as number;
  const form = 'padded_bhnd';
  const qs = side(Q!, form, qh), ks = side(K!, form, kvh), vs = side(V!, form, kvh);
  const B = qs.B!, Hq = qs.H, Hkv = ks.H, Sq = qs.N, S = ks.N, D = qs.D, Dv = vs.D;
  const P = PK ? PK.shape[2] : 0, T = P + S;
  const pk = PK ? decode(PK) : [], pv = PV ? decode(PV) : [];
  // present = concat(past, new) along the sequence axis, [B, Hkv, T, D]
  const kk = (b: number, h: number, j: number, d: number) => (j < P ? pk[((b * Hkv + h) * P + j) * D + d] : at(ks, [], b, h, j - P, d));
  const vv = (b: number, h: number, j: number, d: number) => (j < P ? pv[((b * Hkv + h) * P + j) * Dv + d] : at(vs, [], b, h, j - P, d));
  const np = ints(NP);
  const kvLen = new Array(B).fill(T);
  const mk = maskFn(M, true);
  const causal = attrs.is_causal === 1;
  const offset = (b: number) => (PK ? P : np ? np[b] - Sq : 0);
  // Attention-25's sliding window: position p = offset + i sees p − left ≤ j ≤ p + right (−1: unbounded)
  const left = (attrs.left_window_size as number) ?? -1, right = (attrs.right_window_size as number) ?? -1;
  const inWindow = (b: number, i: number, j: number) => (left < 0 || i + offset(b) - j <= left) && (right < 0 || j - i - offset(b) <= right);
  const visible = (b: number, h: number, i: number, j: number) => (!causal || j <= i + offset(b)) && (!np || j < np[b]) && inWindow(b, i, j) && mk.vis(b, h, i, j);
  const scale = (attrs.scale as number) ?? 1 / Math.sqrt(D);
  const softcap = (attrs.softcap as number) ?? 0;
  const core: Core = {
    B, Hq, Hkv, D, Dv, qLen: new Array(B).fill(Sq), kvLen,
    q: (b, h, i, d) => at(qs, [], b, h, i, d), k: kk, v: vv,
    visible, bias: mk.bias, scale, softcap,
  };
  const { y } = refCore(core);
  const yShape = rank === 4 ? [B, Hq, Sq, Dv] : [B, Sq, Hq * Dv];
  const yv: number[] = new Array(yShape.reduce((a, x) => a * x, 1)).fill(0);
  for (let b = 0; b < B; b++) for (let h = 0; h < Hq; h++) for (let i = 0; i < Sq; i++) for (let d = 0; d < Dv; d++) {
    yv[rank === 4 ? ((b * Hq + h) * Sq + i) * Dv + d : ((b * Sq + i) * Hq + h) * Dv + d] = y[b][h][i][d];
  }
  const pres = (f: typeof kk, Dx: number, dtype: string): RefOut => {
    const vals: number[] = [];
    for (let b = 0; b < B; b++) for (let h = 0; h < Hkv; h++) for (let j = 0; j < T; j++) for (let d = 0; d < Dx; d++) vals.push(f(b, h, j, d));
    return { dtype, shape: [B, Hkv, T, Dx], values: vals, slack: vals.map(() => 0) };
  };
  // qk_matmul_output (ONNX's pipeline order QK → softcap → mask → softmax, onnx#7867 and
  // #7913): 0 scaled QK, 1 softcapped (no mask), 2 softcapped + bias (hidden = −∞), 3 softmax
  const mode = (attrs.qk_matmul_output_mode as number) ?? 0;
  const G = Hq / Hkv;
  const qk: number[] = [];
  for (let b = 0; b < B; b++) for (let h = 0; h < Hq; h++) for (let i = 0; i < Sq; i++) {
    const row: number[] = [];
    for (let j = 0; j < T; j++) {
      let x = 0;
      for (let d = 0; d < D; d++) x += core.q(b, h, i, d) * kk(b, Math.floor(h / G), j, d);
      x *= scale;
      const hidden = !visible(b, h, i, j);
      if (mode >= 1 && softcap > 0) x = softcap * Math.tanh(x / softcap);
      if (mode <= 1) row.push(x);
      else row.push(hidden ? -Infinity : x + mk.bias(b, h, i, j));
    }
    if (mode === 3) {
      const m = Math.max(-Infinity, ...row);
      const e = row.map((x) => (m === -Infinity || x === -Infinity ? 0 : Math.exp(x - m)));
      const s = e.reduce((a, x) => a + x, 0);
      qk.push(...e.map((x) => (s > 0 ? x / s : 0)));
    } else qk.push(...row);
  }
  return [
    { dtype: Q!.dtype, shape: yShape, values: yv, slack: yv.map(() => 0) },
    pres(kk, D, K!.dtype),
    pres(vv, Dv, V!.dtype),
    { dtype: Q!.dtype, shape: [B, Hq, Sq, T], values: qk, slack: qk.map(() => 0) },
  ];
}
