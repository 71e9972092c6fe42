// Unit tests of matvecRows16F32 on raw memory: the rows16 layout written here from its
// definition (P[16·b·n + j·h + r] = W[16b + r, j], h = min(16, d − 16b)), products against a
// plain row-major loop, nothing written past out. Small integer weights keep every sum exact.
import { matvecRows16F32 } from '../llm';

function wAt(i: i32, j: i32): f32 {
  return <f32>(((i * 7 + j * 3) % 11) - 5);
}

function check(d: i32, n: i32): void {
  const w = heap.alloc(<usize>(d * n * 4 + 16)), x = heap.alloc(<usize>(n * 4 + 16)), out = heap.alloc(<usize>(d * 4 + 16));
  for (let i = 0; i < d; i++) {
    const b = i & ~15, h = min(16, d - b);
    for (let j = 0; j < n; j++) store<f32>(w + <usize>((b * n + j * h + (i - b)) * 4), wAt(i, j));
  }
  for (let j = 0; j < n; j++) store<f32>(x + <usize>(j * 4), <f32>((j % 5) - 2));
  for (let i = 0; i < d + 4; i++) store<f32>(out + <usize>(i * 4), 99);
  matvecRows16F32(out, w, x, d, n);
  for (let i = 0; i < d; i++) {
    let want: f32 = 0;
    for (let j = 0; j < n; j++) want += wAt(i, j) * load<f32>(x + <usize>(j * 4));
    expect<f32>(load<f32>(out + <usize>(i * 4))).toBe(want);
  }
  for (let i = d; i < d + 4; i++) expect<f32>(load<f32>(out + <usize>(i * 4))).toBe(99);
  heap.free(w); heap.free(x); heap.free(out);
}

describe('matvecRows16F32', () => {
  it('full 16-row blocks', () => { check(32, 7); });
  it('a partial last block (d = 37: two full blocks and 5 rows)', () => { check(37, 5); });
  it('fewer than 16 rows', () => { check(3, 9); });
  it('n = 0 gives zeros', () => { check(17, 0); });
});
