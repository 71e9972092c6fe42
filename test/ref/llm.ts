/**
 * Plain references for the decode-step kernels and a float64 Llama forward pass, written
 * independently of src/llm (own checkpoint parser and writer, own RNG and tokenizer rules).
 */

export function matvec(w: ArrayLike<number>, x: ArrayLike<number>, d: number, n: number): number[] {
  const out: number[] = [];
  for (let i = 0; i < d; i++) {
    let s = 0;
    for (let j = 0; j < n; j++) s += w[i * n + j] * x[j];
    out.push(s);
  }
  return out;
}

export function rmsnorm(x: ArrayLike<number>, w: ArrayLike<number>, eps = 1e-5): number[] {
  let ss = 0;
  for (let i = 0; i < x.length; i++) ss += x[i] * x[i];
  const inv = 1 / Math.sqrt(ss / x.length + eps);
  return Array.from(x, (v, i) => w[i] * v * inv);
}

/** llama2.c RoPE on a [heads, headSize] vector, float64 angles. */
export function rope(vec: ArrayLike<number>, pos: number, heads: number, headSize: number): number[] {
  const out = Array.from(vec);
  for (let h = 0; h < heads; h++) {
    for (let i = 0; i < headSize; i += 2) {
      const freq = 1 / Math.pow(10000, i / headSize);
      const a = pos * freq, c = Math.cos(a), s = Math.sin(a);
      const v0 = vec[h * headSize + i], v1 = vec[h * headSize + i + 1];
      out[h * headSize + i] = v0 * c - v1 * s;
      out[h * headSize + i + 1] = v0 * s + v1 * c;
    }
  }
  return out;
}

export function swiglu(h: ArrayLike<number>, g: ArrayLike<number>): number[] {
  return Array.from(h, (v, i) => (v / (1 + Math.exp(-v))) * g[i]);
}

export function softmax(x: ArrayLike<number>): number[] {
  let m = -Infinity;
  for (let i = 0; i < x.length; i++) m = Math.max(m, x[i]);
  const e = Array.from(x, (v) => Math.exp(v - m));
  const s = e.reduce((a, b) => a + b, 0);
  return e.map((v) => v / s);
}

export function argmax(x: ArrayLike<number>): number {
  let best = 0;
  for (let i = 1; i < x.length; i++) if (x[i] > x[best]) best = i;
  return best;
}

/**
 * Attention of one query row over keys/values (arrays of rows): softmax(scale·q·k) v.
 * Zero vector when there are no keys.
 */
export function attendRow(q: ArrayLike<number>, keys: ArrayLike<number>[], values: ArrayLike<number>[], scale: number): number[] {
  const D = q.length;
  if (keys.length === 0) return new Array(D).fill(0);
  const s = keys.map((k) => { let t = 0; for (let i = 0; i < D; i++) t += q[i] * k[i]; return t * scale; });
  const p = softmax(s);
  const out = new Array(D).fill(0);
  p.forEach((pi, j) => { for (let i = 0; i < D; i++) out[i] += pi * values[j][i]; });
  return out;
}

// ---- checkpoint (independent of src/llm) ----------------------------------------------

export interface RefConfig { dim: number; hidden: number; layers: number; heads: number; kvHeads: number; vocab: number; seqLen: number; shared: boolean }

export interface RefWeights {
  emb: Float32Array; rmsAtt: Float32Array; wq: Float32Array; wk: Float32Array; wv: Float32Array; wo: Float32Array;
  rmsFfn: Float32Array; w1: Float32Array; w2: Float32Array; w3: Float32Array; rmsFinal: Float32Array; wcls: Float32Array;
}

function sizes(c: RefConfig): [keyof RefWeights | 'rope', number][] {
  const hs = c.dim / c.heads, kv = c.kvHeads * hs, L = c.layers;
  const list: [keyof RefWeights | 'rope', number][] = [
    ['emb', c.vocab * c.dim], ['rmsAtt', L * c.dim], ['wq', L * c.dim * c.dim], ['wk', L * kv * c.dim], ['wv', L * kv * c.dim],
    ['wo', L * c.dim * c.dim], ['rmsFfn', L * c.dim], ['w1', L * c.hidden * c.dim], ['w2', L * c.dim * c.hidden], ['w3', L * c.hidden * c.dim],
    ['rmsFinal', c.dim], ['rope', c.seqLen * hs],
  ];
  if (!c.shared) list.push(['wcls', c.vocab * c.dim]);
  return list;
}

/** Random weights from a seeded generator (test-side LCG), written as a llama2.c .bin. */
export function makeCheckpoint(c: RefConfig, seed: number): { bytes: Uint8Array; weights: RefWeights } {
  let s = seed >>> 0;
  const rnd = () => { s = (Math.imul(s, 1664525) + 1013904223) >>> 0; return s / 4294967296 * 2 - 1; };
  const parts = sizes(c);
  const total = parts.reduce((a, [, n]) => a + n, 0);
  const bytes = new Uint8Array(28 + total * 4);
  const dv = new DataView(bytes.buffer);
  [c.dim, c.hidden, c.layers, c.heads, c.kvHeads, c.shared ? c.vocab : -c.vocab, c.seqLen].forEach((v, i) => dv.setInt32(i * 4, v, true));
  const w: Partial<RefWeights> = {};
  let p = 28;
  for (const [name, n] of parts) {
    const a = new Float32Array(n);
    const amp = name.startsWith('rms') ? 0.3 : name === 'emb' || name === 'wcls' ? 1 : 0.3;
    for (let i = 0; i < n; i++) a[i] = name.startsWith('rms') ? 1 + rnd() * amp : rnd() * amp;
    for (let i = 0; i < n; i++) { dv.setFloat32(p, a[i], true); p += 4; }
    if (name !== 'rope') w[name] = a;
  }
  if (c.shared) w.wcls = w.emb;
  return { bytes, weights: w as RefWeights };
}

// ---- Q8_0 (llama2.c's version-2 export and runq.c) -------------------------------------

const fr = Math.fround;

/** runq.c's quantize(): float32 arithmetic, C's round() (half away from zero), NaN → 0. */
export function refQuantize(x: ArrayLike<number>, gs: number): { q: number[]; s: number[] } {
  const q: number[] = [], s: number[] = [];
  for (let g = 0; g < x.length / gs; g++) {
    let wmax = 0;
    for (let i = g * gs; i < (g + 1) * gs; i++) if (Math.abs(x[i]) > wmax) wmax = Math.abs(x[i]);
    const scale = fr(wmax / 127);
    s.push(scale);
    for (let i = g * gs; i < (g + 1) * gs; i++) {
      const v = fr(x[i] / scale);
      q.push(Number.isNaN(v) ? 0 : Math.sign(v) * Math.floor(Math.abs(v) + 0.5));
    }
  }
  return { q, s };
}

/** runq.c's matmul() in float32: per row, Σ over groups of ((float) int sum · w scale) · x scale. */
export function refMatmulQ8(wq: ArrayLike<number>, ws: ArrayLike<number>, xq: ArrayLike<number>, xs: ArrayLike<number>, d: number, n: number, gs: number): number[] {
  const out: number[] = [];
  for (let i = 0; i < d; i++) {
    let val = 0;
    for (let j = 0; j < n; j += gs) {
      let ival = 0;
      for (let k = 0; k < gs; k++) ival += xq[j + k] * wq[i * n + j + k];
      val = fr(val + fr(fr(ival * ws[(i * n + j) / gs]) * xs[j / gs]));
    }
    out.push(val);
  }
  return out;
}

/** export.py's quantize_q80: float32 w / (wmax / 127) rounded half to even (torch.round). */
export function refQuantizeQ80(w: ArrayLike<number>, gs: number): { q: Int8Array; s: Float32Array } {
  const q = new Int8Array(w.length), s = new Float32Array(w.length / gs);
  for (let g = 0; g < s.length; g++) {
    let wmax = 0;
    for (let i = g * gs; i < (g + 1) * gs; i++) wmax = Math.max(wmax, Math.abs(w[i]));
    s[g] = wmax / 127;
    for (let i = g * gs; i < (g + 1) * gs; i++) {
      const v = fr(w[i] / s[g]), lo = Math.floor(v);
      q[i] = Number.isNaN(v) ? 0 : v - lo > 0.5 || (v - lo === 0.5 && lo % 2 !== 0) ? lo + 1 : lo;
    }
  }
  return { q, s };
}

/**
 * The weights as a version-2 (Q8_0) checkpoint, written here from the format's description
 * (llama2.c export.py version2_export), and the weights runq.c effectively multiplies by:
 * each matrix dequantized (code · scale, float32).
 */
export function makeQ8Checkpoint(c: RefConfig, w: RefWeights, gs: number): { bytes: Uint8Array; deq: RefWeights } {
  const L = c.layers, hs = c.dim / c.heads, kv = c.kvHeads * hs;
  const mats: [keyof RefWeights, number][] = [['emb', c.vocab * c.dim]];
  for (const [name, per] of [['wq', c.dim * c.dim], ['wk', kv * c.dim], ['wv', kv * c.dim], ['wo', c.dim * c.dim], ['w1', c.hidden * c.dim], ['w2', c.dim * c.hidden], ['w3', c.hidden * c.dim]] as const) {
    for (let l = 0; l < L; l++) mats.push([name, per]);
  }
  if (!c.shared) mats.push(['wcls', c.vocab * c.dim]);
  const chunks: Uint8Array[] = [];
  const head = new Uint8Array(256), hv = new DataView(head.buffer);
  hv.setUint32(0, 0x616b3432, true); hv.setInt32(4, 2, true);
  [c.dim, c.hidden, c.layers, c.heads, c.kvHeads, c.vocab, c.seqLen].forEach((v, i) => hv.setInt32(8 + i * 4, v, true));
  head[36] = c.shared ? 1 : 0; hv.setInt32(37, gs, true);
  chunks.push(head);
  const f32bytes = (a: Float32Array) => new Uint8Array(a.slice().buffer);
  chunks.push(f32bytes(w.rmsAtt), f32bytes(w.rmsFfn), f32bytes(w.rmsFinal));
  const deq: Partial<RefWeights> = { rmsAtt: w.rmsAtt, rmsFfn: w.rmsFfn, rmsFinal: w.rmsFinal };
  const seen: Partial<Record<keyof RefWeights, number>> = {};
  for (const [name, n] of mats) {
    const at = seen[name] ?? 0; seen[name] = at + n;
    const { q, s } = refQuantizeQ80(w[name].subarray(at, at + n), gs);
    chunks.push(new Uint8Array(q.buffer), f32bytes(s));
    const dst = (deq[name] ??= new Float32Array(w[name].length));
    for (let i = 0; i < n; i++) dst[at + i] = fr(q[i] * s[Math.floor(i / gs)]);
  }
  if (c.shared) deq.wcls = deq.emb;
  const bytes = new Uint8Array(chunks.reduce((a, b) => a + b.length, 0));
  let p = 0;
  for (const ch of chunks) { bytes.set(ch, p); p += ch.length; }
  return { bytes, deq: deq as RefWeights };
}

/**
 * float64 llama2.c forward pass with its own KV cache. With `quantizeGroup` it is runq.c's
 * instead: every matrix-vector input goes through refQuantize and back (code · scale) first,
 * and `w` should hold the dequantized weights (makeQ8Checkpoint's deq).
 */
export class RefLlama {
  private kc: number[][][] = []; // [layer][pos] -> kvDim
  private vc: number[][][] = [];
  pos = 0;
  constructor(readonly c: RefConfig, readonly w: RefWeights, readonly quantizeGroup?: number) {
    for (let l = 0; l < c.layers; l++) { this.kc.push([]); this.vc.push([]); }
  }
  private mv(w: ArrayLike<number>, x: ArrayLike<number>, d: number, n: number): number[] {
    const gs = this.quantizeGroup;
    if (gs === undefined) return matvec(w, x, d, n);
    const { q, s } = refQuantize(Array.from(x, fr), gs);
    return matvec(w, q.map((v, i) => v * s[Math.floor(i / gs)]), d, n);
  }
  forward(token: number): number[] {
    const c = this.c, w = this.w, hs = c.dim / c.heads, kvDim = c.kvHeads * hs, group = c.heads / c.kvHeads;
    const sl = (a: Float32Array, at: number, n: number) => a.subarray(at, at + n);
    let x = Array.from(sl(w.emb, token * c.dim, c.dim));
    for (let l = 0; l < c.layers; l++) {
      const xb = rmsnorm(x, sl(w.rmsAtt, l * c.dim, c.dim));
      const q = rope(this.mv(sl(w.wq, l * c.dim * c.dim, c.dim * c.dim), xb, c.dim, c.dim), this.pos, c.heads, hs);
      const k = rope(this.mv(sl(w.wk, l * kvDim * c.dim, kvDim * c.dim), xb, kvDim, c.dim), this.pos, c.kvHeads, hs);
      const v = this.mv(sl(w.wv, l * kvDim * c.dim, kvDim * c.dim), xb, kvDim, c.dim);
      this.kc[l].push(k);
      this.vc[l].push(v);
      const att: number[] = [];
      for (let h = 0; h < c.heads; h++) {
        const kh = Math.floor(h / group);
        const keys = this.kc[l].map((r) => r.slice(kh * hs, (kh + 1) * hs));
        const vals = this.vc[l].map((r) => r.slice(kh * hs, (kh + 1) * hs));
        att.push(...attendRow(q.slice(h * hs, (h + 1) * hs), keys, vals, 1 / Math.sqrt(hs)));
      }
      const o = this.mv(sl(w.wo, l * c.dim * c.dim, c.dim * c.dim), att, c.dim, c.dim);
      x = x.map((a, i) => a + o[i]);
      const xb2 = rmsnorm(x, sl(w.rmsFfn, l * c.dim, c.dim));
      const h1 = this.mv(sl(w.w1, l * c.hidden * c.dim, c.hidden * c.dim), xb2, c.hidden, c.dim);
      const h3 = this.mv(sl(w.w3, l * c.hidden * c.dim, c.hidden * c.dim), xb2, c.hidden, c.dim);
      const f = this.mv(sl(w.w2, l * c.dim * c.hidden, c.dim * c.hidden), swiglu(h1, h3), c.dim, c.hidden);
      x = x.map((a, i) => a + f[i]);
    }
    this.pos++;
    return this.mv(w.wcls, rmsnorm(x, w.rmsFinal), c.vocab, c.dim);
  }
}

/** llama2.c's xorshift RNG (BigInt), independent of src/llm/sampler.ts. */
export function refRng(seed: bigint): () => number {
  let st = seed;
  const M = 0xffffffffffffffffn;
  return () => {
    st ^= st >> 12n; st = (st ^ (st << 25n)) & M; st ^= st >> 27n;
    const u = Number(((st * 0x2545f4914f6cdd1dn) & M) >> 32n);
    return Math.fround((u >>> 8) / 16777216);
  };
}

/** top-p sampling in float64 (run.c's algorithm). */
export function refTopp(probs: number[], topp: number, coin: number): number {
  const n = probs.length, cutoff = (1 - topp) / (n - 1);
  // the cutoff only prunes tokens outside the nucleus while at least one token reaches it (the
  // pruned mass is then < 1 − topp); when none does, the nucleus comes from all tokens
  const kept = probs.map((p, i) => i).filter((i) => probs[i] >= cutoff);
  const idx = (kept.length ? kept : probs.map((p, i) => i)).sort((a, b) => probs[b] - probs[a] || a - b);
  let cum = 0, last = idx.length - 1;
  for (let i = 0; i < idx.length; i++) { cum += probs[idx[i]]; if (cum > topp) { last = i; break; } }
  const r = coin * cum;
  let cdf = 0;
  for (let i = 0; i <= last; i++) { cdf += probs[idx[i]]; if (r < cdf) return idx[i]; }
  return idx[last];
}

/** tokenizer.bin bytes from a vocabulary of strings (latin1 / byte strings) and scores. */
export function makeTokenizer(vocab: (string | Uint8Array)[], scores: number[]): Uint8Array {
  const enc = vocab.map((v) => (typeof v === 'string' ? Uint8Array.from(v, (ch) => ch.charCodeAt(0)) : v));
  const size = 4 + enc.reduce((n, v) => n + 8 + v.length, 0);
  const out = new Uint8Array(size);
  const dv = new DataView(out.buffer);
  dv.setInt32(0, Math.max(...enc.map((v) => v.length)), true);
  let p = 4;
  enc.forEach((v, i) => { dv.setFloat32(p, scores[i], true); dv.setInt32(p + 4, v.length, true); out.set(v, p + 8); p += 8 + v.length; });
  return out;
}
