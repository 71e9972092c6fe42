// Exhaustive unit tests of the fp8 → int16 widening of assembly/kvattend.ts: every one of
// the 256 float8e4m3fn codes must become floor(32·value + 1/2) (the Q15 product's rounding),
// decoded here independently from the format's definition; K rows keep element order,
// V rows come out as (row 2t, row 2t+1) pairs element by element, an odd last row paired
// with zeros. The NaN codes (0x7F, 0xFF) have no value: they widen to ±15360 (the scale of
// a row holding NaN is NaN, which carries it).
import { widenK, widenV } from '../kvattend';

/** float8e4m3fn value of code c (bias 7, 3 mantissa bits, subnormals), NaN codes excluded. */
function e4m3(c: i32): f64 {
  const e = (c >> 3) & 15, m = c & 7;
  const mag = e == 0 ? <f64>m * Math.pow(2, -9) : (1 + <f64>m / 8) * Math.pow(2, <f64>(e - 7));
  return (c & 0x80) != 0 ? -mag : mag;
}

function want(c: i32): i32 {
  if ((c & 0x7f) == 0x7f) return (c & 0x80) != 0 ? -15360 : 15360;
  return <i32>Math.floor(32 * e4m3(c) + 0.5);
}


/** 16 bytes of 0x0f (the widening functions read their nibble mask from memory). */
function mask0f(): usize {
  const p = heap.alloc(16);
  memory.fill(p, 0x0f, 16);
  return p;
}

describe('fp8 widening (kvattend)', () => {
  it('widenK: all 256 codes, 16 rows of 16, element order kept', () => {
    const src = heap.alloc(256 + 16), dst = heap.alloc(512 + 16);
    for (let c = 0; c < 256; c++) store<u8>(src + <usize>c, <u8>c);
    widenK(dst, src, 16, 16, 16, mask0f());
    for (let c = 0; c < 256; c++) expect<i32>(<i32>load<i16>(dst + <usize>(c * 2))).toBe(want(c));
    heap.free(src); heap.free(dst);
  });

  it('widenK: D = 20 rows are read D bytes apart and written Dp = 32 apart', () => {
    const src = heap.alloc(3 * 20 + 16), dst = heap.alloc(3 * 64 + 16);
    for (let i = 0; i < 60; i++) store<u8>(src + <usize>i, <u8>((i * 37 + 11) & 0xff));
    widenK(dst, src, 3, 20, 32, mask0f());
    for (let j = 0; j < 3; j++) {
      for (let d = 0; d < 20; d++) expect<i32>(<i32>load<i16>(dst + <usize>((j * 32 + d) * 2))).toBe(want(((j * 20 + d) * 37 + 11) & 0xff));
    }
    heap.free(src); heap.free(dst);
  });

  it('widenV: pairs interleaved element by element, an odd last row paired with zeros', () => {
    const D = 16, nb = 3;
    const src = heap.alloc(nb * D + 16), zero = heap.alloc(32), dst = heap.alloc(2 * D * 4 + 16);
    memory.fill(zero, 0, 32);
    for (let i = 0; i < nb * D; i++) store<u8>(src + <usize>i, <u8>((i * 91 + 5) & 0xff));
    widenV(dst, src, nb, D, D, zero, mask0f());
    for (let t = 0; t < 2; t++) {
      for (let d = 0; d < D; d++) {
        const a = <i32>load<i16>(dst + <usize>(t * D * 4 + d * 4)), b = <i32>load<i16>(dst + <usize>(t * D * 4 + d * 4 + 2));
        expect<i32>(a).toBe(want(((2 * t * D + d) * 91 + 5) & 0xff));
        expect<i32>(b).toBe(2 * t + 1 < nb ? want((((2 * t + 1) * D + d) * 91 + 5) & 0xff) : 0);
      }
    }
    heap.free(src); heap.free(zero); heap.free(dst);
  });
});
