/**
 * The "rows16" weight layout that matvecRows16F32 (assembly/llm.ts) reads. A row-major
 * W[d, n] is cut into blocks of 16 rows; block b holds rows 16b … 16b + h − 1 with
 * h = min(16, d − 16b) and starts at float 16·b·n; inside it the n columns follow each
 * other, each holding its h values of consecutive rows:
 *     P[16·b·n + j·h + r] = W[16b + r, j]
 * The packed matrix has exactly d·n floats, so it can replace W where W was.
 */
import { KernelError } from '../errors.js';

const BLOCK = 16;

function checkSizes(name: string, have: number, need: number): void {
  if (have < need) throw new KernelError('INVALID_SHAPE', `${name}: expected at least ${need} floats, got ${have}`);
}

/**
 * Writes W[d, n] (row-major, `src` from `srcAt`) into `dst` from `dstAt` in the rows16
 * layout. `src` and `dst` must not overlap (pack in place through a copy).
 */
export function packRows16(src: Float32Array, d: number, n: number, dst: Float32Array, srcAt = 0, dstAt = 0): void {
  checkSizes('packRows16 src', src.length - srcAt, d * n);
  checkSizes('packRows16 dst', dst.length - dstAt, d * n);
  let o = dstAt;
  for (let b = 0; b < d; b += BLOCK) {
    const h = Math.min(BLOCK, d - b);
    const base = srcAt + b * n;
    for (let j = 0; j < n; j++) {
      for (let r = 0, s = base + j; r < h; r++, s += n) dst[o++] = src[s];
    }
  }
}

/** Copies row `row` of a rows16-packed W[d, n] (at `at` in `p`) to `out` from `outAt` (n floats). */
export function unpackRow16(p: Float32Array, at: number, d: number, n: number, row: number, out: Float32Array, outAt = 0): void {
  const b = row - (row % BLOCK);
  const h = Math.min(BLOCK, d - b);
  for (let j = 0, s = at + b * n + (row - b); j < n; j++, s += h) out[outAt + j] = p[s];
}
