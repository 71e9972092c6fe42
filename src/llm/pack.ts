/**
 * The "rows16" weight layout that matvecRows16F32 (assembly/llm.ts) reads. A row-major
 * W[d, n] is cut into blocks of 16 rows; block b holds rows 16b … 16b + h − 1 with
 * h = min(16, d − 16b) and starts at float 16·b·n; inside it the n columns follow each
 * other, each holding its h values of consecutive rows:
 *     P[16·b·n + j·h + r] = W[16b + r, j]
 * The packed matrix has exactly d·n floats, so it can replace W where W was.
 */
import { KernelError, show } from '../errors.js';

const BLOCK = 16;

/** A Float32Array, and non-negative integer sizes and offsets (KernelError otherwise). */
function checkArgs(name: string, arrays: [string, unknown][], ints: [string, unknown][]): void {
  for (const [k, a] of arrays) if (!(a instanceof Float32Array)) throw new KernelError('INVALID_ARGUMENT', `${name} ${k}: expected a Float32Array, got ${show(a)}`);
  for (const [k, v] of ints) if (!Number.isSafeInteger(v) || (v as number) < 0) throw new KernelError('INVALID_ARGUMENT', `${name} ${k}: expected an integer >= 0, got ${show(v)}`);
}

function checkSizes(name: string, have: number, need: number): void {
  if (have < need) throw new KernelError('INVALID_SHAPE', `${name}: expected at least ${need} floats, got ${have}`);
}

/**
 * Writes W[d, n] (row-major, `src` from `srcAt`) into `dst` from `dstAt` in the rows16
 * layout. `src` and `dst` must not overlap (pack in place through a copy).
 */
export function packRows16(src: Float32Array, d: number, n: number, dst: Float32Array, srcAt = 0, dstAt = 0): void {
  checkArgs('packRows16', [['src', src], ['dst', dst]], [['d', d], ['n', n], ['srcAt', srcAt], ['dstAt', dstAt]]);
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
  checkArgs('unpackRow16', [['p', p], ['out', out]], [['at', at], ['d', d], ['n', n], ['row', row], ['outAt', outAt]]);
  if (row >= d) throw new KernelError('INVALID_ARGUMENT', `unpackRow16 row: expected an integer below d = ${d}, got ${row}`);
  checkSizes('unpackRow16 p', p.length - at, d * n);
  checkSizes('unpackRow16 out', out.length - outAt, n);
  const b = row - (row % BLOCK);
  const h = Math.min(BLOCK, d - b);
  for (let j = 0, s = at + b * n + (row - b); j < n; j++, s += h) out[outAt + j] = p[s];
}

/**
 * The "tiles" layout of Q8_0 codes that matvecQ8Tiled (assembly/q8.ts) reads: W[d, n] int8
 * (row-major) cut into tiles of 4 rows, each tile stored 8 codes of each row in turn:
 *     P[4t·n + 32c + 8r + k] = W[4t + r, 8c + k]      (c < n / 8, k < 8)
 * The last d mod 4 rows stay row-major after the full tiles, so P has W's size and every
 * row's codes start in the same tile as in W. n must be a multiple of 8.
 */
export function packQ8Tiles(src: Int8Array | Uint8Array, d: number, n: number, dst: Int8Array | Uint8Array, srcAt = 0, dstAt = 0): void {
  if (n % 8 !== 0) throw new KernelError('INVALID_SHAPE', `packQ8Tiles: expected a multiple of 8 columns, got ${n}`);
  if (src.length - srcAt < d * n) throw new KernelError('INVALID_SHAPE', `packQ8Tiles src: expected at least ${d * n} codes, got ${src.length - srcAt}`);
  if (dst.length - dstAt < d * n) throw new KernelError('INVALID_SHAPE', `packQ8Tiles dst: expected at least ${d * n} codes, got ${dst.length - dstAt}`);
  const dt = d - (d % 4);
  for (let t = 0; t < dt; t += 4) {
    let o = dstAt + t * n;
    for (let c = 0; c < n; c += 8) {
      for (let r = 0; r < 4; r++) {
        const s = srcAt + (t + r) * n + c;
        for (let k = 0; k < 8; k++) dst[o++] = src[s + k];
      }
    }
  }
  for (let i = dt * n; i < d * n; i++) dst[dstAt + i] = src[srcAt + i];
}

/** Offset (in codes, from the matrix start) of W[row, col] in the tiles layout of a W[d, n]. */
export function q8TileOffset(d: number, n: number, row: number, col: number): number {
  if (row >= d - (d % 4)) return row * n + col;
  const t = row - (row % 4);
  return t * n + (col - (col % 8)) * 4 + (row % 4) * 8 + (col % 8);
}
