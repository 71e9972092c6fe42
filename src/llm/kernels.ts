/**
 * Typed access to the decode-step kernels of assembly/llm.ts and the scatter kernels the
 * KV cache uses. Internal: every pointer is a byte offset in the instance's memory and the
 * caller guarantees each kernel's buffer contract (see the comments in assembly/).
 */
import type { Kernels } from '../kernels.js';

export interface LlmKernels {
  /** out[d] = W·x with W[d, n] in the rows16 layout (src/llm/pack.ts). */
  matvecRows16F32(out: number, w: number, x: number, d: number, n: number): void;
  /** runq.c's quantize(): x [n] → int16 codes at q [n], float32 scales at s [n / gs] (assembly/q8.ts). */
  quantizeQ8(q: number, s: number, x: number, n: number, gs: number): void;
  /** runq.c's matmul(): out [d] from int8 W [d, n], scales transposed [n / gs, d], codes q and scales s of x. */
  matvecQ8(out: number, w: number, sT: number, q: number, s: number, d: number, n: number, gs: number): void;
  /** matvecQ8 with W in the tiles layout (src/llm/pack.ts packQ8Tiles); gs a multiple of 8. */
  matvecQ8Tiled(out: number, w: number, sT: number, q: number, s: number, d: number, n: number, gs: number): void;
  rmsnormF32(out: number, x: number, w: number, n: number, eps: number): void;
  ropeF32(vec: number, cs: number, nHeads: number, headSize: number): void;
  swigluF32(h: number, g: number, n: number): void;
  addF32(out: number, a: number, b: number, n: number): void;
  softmaxF32(x: number, n: number): void;
  argmaxF32(x: number, n: number): number;
  attendF32(
    out: number, q: number, k: number, v: number, Hq: number, Hkv: number, S: number, qLen: number, D: number, N: number,
    qHeadStride: number, qRowStride: number, kvLen: number, window: number, causal: number, scale: number, scores: number,
    kScales?: number, vScales?: number,
  ): void;
  attendI8: LlmKernels['attendF32'];
  attendE4m3: LlmKernels['attendF32'];
  appendE4m3Rows: LlmKernels['appendInt8Rows'];
  appendInt8Rows(cache: number, scales: number, update: number, B: number, H: number, N: number, S: number, D: number, writeIdx: number, lengths: number, circular: number, packed: number): void;
  attendF16: LlmKernels['attendF32'];
  attendBF16: LlmKernels['attendF32'];
  /** Scratch bytes attendI8 / attendE4m3 need (SIMD build; 0 where absent). */
  attendQ8ScratchBytes?(G: number, D: number): number;
  appendHalfRows(cache: number, update: number, B: number, H: number, N: number, S: number, D: number, writeIdx: number, lengths: number, circular: number, packed: number, kind: number): void;
  scatterRows(cache: number, update: number, B: number, P: number, N: number, S: number, rowBytes: number, writeIdx: number, lengths: number, circular: number): void;
  scatterPackedRows(cache: number, update: number, B: number, H: number, N: number, rowBytes: number, writeIdx: number, lengths: number): void;
}

/** The instance's kernel exports, typed. */
export function llmKernels(ek: Kernels): LlmKernels {
  return ek.exports as unknown as LlmKernels;
}
