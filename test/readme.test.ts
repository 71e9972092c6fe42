/**
 * The README's code examples, run as written against the built package.
 *
 * Each ```js block of README.md is found by a line it contains and executed as is: an
 * `import { … } from 'edgekernels'` line becomes a destructuring of the package (with this
 * suite's init, so `npm run test:debug` runs them in debug mode too), and a fragment's free
 * names (`ek`, `x`, `qData`, …) are given as fixtures. What the block's comments claim is
 * then checked against independent truth: the claim's literal text must still be in the
 * block, and the value must match it or a reference in test/ref. An edited example whose
 * comment no longer holds, or an API change that breaks an example, fails here.
 */
import { readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import * as pkg from '../dist/index.js';
import { type Kernels, type Tensor, f16ToF32, init, rng } from './helpers.js';
import { type Plain, decode, refOnnx, refTrt } from './ref/attention.js';
import { refLinearScan } from './ref/scan.js';

const README = readFileSync(join(dirname(fileURLToPath(import.meta.url)), '..', 'README.md'), 'utf8');

/** The ```js blocks of the README, with the line each starts on. */
function jsBlocks(): { line: number; code: string }[] {
  const out: { line: number; code: string }[] = [];
  const lines = README.split('\n');
  for (let i = 0; i < lines.length; i++) {
    if (lines[i].trim() !== '```js') continue;
    const start = i + 1;
    let end = start;
    while (end < lines.length && lines[end].trim() !== '```') end++;
    out.push({ line: start + 1, code: lines.slice(start, end).join('\n') });
    i = end;
  }
  return out;
}

/** The one js block containing `marker`. */
function block(marker: string): string {
  const found = jsBlocks().filter((b) => b.code.includes(marker));
  expect(found.length, `README js blocks containing ${JSON.stringify(marker)}`).toBe(1);
  return found[0].code;
}

/** What the README says a line prints or holds, e.g. claim(code, 'fib.data;') → 'Int32Array [0, 1, …]'. */
function claim(code: string, lineStart: string): string {
  const line = code.split('\n').find((l) => l.trimStart().startsWith(lineStart));
  expect(line, `a line starting ${JSON.stringify(lineStart)}`).toBeDefined();
  const m = /\/\/\s*(.*)$/.exec(line!);
  expect(m, `a comment on ${JSON.stringify(line)}`).not.toBeNull();
  return m![1].trim();
}

/** `Int32Array [0, 1, 1]` / `Float32Array [10]` → [0, 1, 1] / [10]. */
function arrayClaim(text: string): number[] {
  const m = /^[A-Za-z0-9]*Array \[([^\]]*)\]/.exec(text);
  expect(m, `an array claim in ${JSON.stringify(text)}`).not.toBeNull();
  return m![1].split(',').map((s) => Number(s.trim()));
}

const AsyncFunction = Object.getPrototypeOf(async () => {}).constructor as new (...args: string[]) => (...a: unknown[]) => Promise<unknown>;

/**
 * Runs a README block: fixtures are its free names, `results` the names it defines that the
 * test reads back. Returns those and everything the block passed to console.log.
 */
async function runBlock(code: string, fixtures: Record<string, unknown>, results: string[]): Promise<{ vars: Record<string, unknown>; logs: unknown[][] }> {
  const body = code.replace(/^import \{([^}]*)\} from 'edgekernels';$/gm, 'const {$1} = __pkg;');
  expect(body).not.toMatch(/^import /m);
  const logs: unknown[][] = [];
  const console = { log: (...a: unknown[]) => { logs.push(a); } };
  const names = Object.keys(fixtures);
  const fn = new AsyncFunction('__pkg', 'console', ...names, `${body}\nreturn { ${results.join(', ')} };`);
  const vars = (await fn({ ...pkg, init }, console, ...names.map((n) => fixtures[n]))) as Record<string, unknown>;
  return { vars, logs };
}

const plainOf = (t: Tensor): Plain => ({ dtype: t.dtype, shape: [...t.shape], data: t.data as Plain['data'] });
function expectNear(got: ArrayLike<number>, want: ArrayLike<number>, label: string, tol = 2e-5): void {
  expect(got.length, `${label} length`).toBe(want.length);
  for (let i = 0; i < want.length; i++) expect(Math.abs(got[i] - want[i]), `${label}[${i}]: ${got[i]} vs ${want[i]}`).toBeLessThanOrEqual(tol * (1 + Math.abs(want[i])));
}

let ek: Kernels;
beforeAll(async () => {
  ek = await init();
});
afterAll(() => ek.dispose());

describe('README examples', () => {
  it('every js block is one of the examples tested here', () => {
    // a new example needs a test below (or a deliberate entry in this list)
    const markers = [
      "const cache = ek.tensor('float32', [1, 8, 4096, 128]);",
      'const cache = ek.kvCache({ layers: L',
      "// PyTorch's example: cumulative sum of arange(5)",
      "const cache = ek.tensor('float16', [1, 8, 4096, 128]);",
      "const [y] = ek.run('CumSum', [x, axis]",
      '// 3 sequences of lengths 5, 1 and 12 packed',
      '// one decode step over a growing cache',
    ];
    // signatures written with default values (not JavaScript): read, not run
    const signatures = ['const [finalCarry, ys] = ek.scan(combineFn, init, xs, { dim = 0, reverse = false, length });'];
    const blocks = jsBlocks();
    for (const b of blocks) expect([...markers, ...signatures].some((m) => b.code.includes(m)), `README js block at line ${b.line} has a test`).toBe(true);
    for (const m of [...markers, ...signatures]) block(m);
    expect(blocks.length).toBe(markers.length + signatures.length);
  });

  it('quick start: 16 TensorScatter steps write rows 0..15 of every head in place', async () => {
    const code = block("const cache = ek.tensor('float32', [1, 8, 4096, 128]);");
    const { vars, logs } = await runBlock(code, {}, ['ek', 'cache']);
    const own = vars.ek as Kernels, cache = vars.cache as Tensor;
    try {
      const d = cache.data as Float32Array;
      for (let h = 0; h < 8; h++) {
        for (const row of [0, 7, 15, 16, 4095]) {
          const r = d.subarray((h * 4096 + row) * 128, (h * 4096 + row + 1) * 128);
          expect(r.every((x) => x === (row < 16 ? row : 0)), `head ${h} row ${row}`).toBe(true);
        }
      }
      expect(claim(code, 'console.log(ek.stats());')).toMatch(/^\{ bytesInUse, tensorsLive, memoryBytes/);
      expect(logs.length).toBe(1);
      const stats = logs[0][0] as Record<string, number>;
      for (const k of ['bytesInUse', 'tensorsLive', 'memoryBytes']) expect(typeof stats[k], k).toBe('number');
      expect(stats.tensorsLive).toBe(3);
    } finally {
      own.dispose();
    }
  });

  it('KVCache: lengths and bytes as its comment says after 100 steps with a reset', async () => {
    const code = block('const cache = ek.kvCache({ layers: L');
    // the lengths right after setLengthsFromMask, read back by a line added behind it
    const maskLine = code.split('\n').find((l) => l.trimStart().startsWith('cache.setLengthsFromMask('))!;
    const probed = code.replace(maskLine, `${maskLine}\nconst __afterMask = Array.from(cache.lengths);`);
    const { vars, logs } = await runBlock(probed, {}, ['ek', 'L', 'B', 'Hkv', 'D', '__afterMask']);
    const own = vars.ek as Kernels;
    try {
      const said = claim(code, 'console.log(cache.lengths, cache.bytes);');
      expect(said).toMatch(/^Int32Array \[49, 104\], bytes of all layers' K and V$/);
      const [lengths, bytes] = logs[0] as [Int32Array, number];
      expect(lengths).toBeInstanceOf(Int32Array);
      expect(Array.from(lengths)).toEqual(arrayClaim(said));
      // float32 K and V of every layer, sequence and head at full capacity
      const { L, B, Hkv, D } = vars as Record<string, number>;
      expect(bytes).toBe(2 * L * B * Hkv * 1024 * D * 4);
      // the mask line's comment: the lengths that mask gives
      const m = /^lengths (\[[\d, ]*\])$/.exec(claim(code, 'cache.setLengthsFromMask('));
      expect(m).not.toBeNull();
      expect(vars.__afterMask).toEqual(JSON.parse(m![1]));
    } finally {
      own.dispose();
    }
  });

  it('scan: the cumulative sum, the pytree carry, Fibonacci and linearScan give what the comments say', async () => {
    const code = block("// PyTorch's example: cumulative sum of arange(5)");
    const T = 4, Lanes = 3, r = rng(11);
    const xsData = Array.from({ length: T * 3 }, () => Math.fround(r() * 4 - 2));
    const aData = Array.from({ length: T * Lanes }, () => Math.fround(r() * 1.8 - 0.9));
    const bData = Array.from({ length: T * Lanes }, () => Math.fround(r() * 2 - 1));
    const h0Data = Array.from({ length: Lanes }, () => Math.fround(r() * 2 - 1));
    const fixtures = {
      ek,
      xs: ek.tensor('float32', [T, 3], xsData),
      a: ek.tensor('float32', [T, Lanes], aData),
      b: ek.tensor('float32', [T, Lanes], bData),
      h0: ek.tensor('float32', [Lanes], h0Data),
    };
    const { vars } = await runBlock(code, fixtures, ['c', 'ys', 'state', 'out', 'f10', 'f11', 'fib', 'hLast', 'hs']);
    const t = (k: string) => vars[k] as Tensor;
    expect(Array.from(t('c').data as Float32Array)).toEqual(arrayClaim(claim(code, 'c.data;')));
    expect(Array.from(t('ys').data as Float32Array)).toEqual(arrayClaim(claim(code, 'ys.data;')));
    expect(Array.from(t('fib').data as Int32Array)).toEqual(arrayClaim(claim(code, 'fib.data;')));
    expect([t('f10').data[0], t('f11').data[0]]).toEqual([55, 89]);
    // running sum and count, and the running mean per step
    const state = vars.state as { sum: Tensor; n: Tensor }, out = vars.out as { mean: Tensor };
    const sums = [0, 0, 0], means: number[] = [];
    for (let s = 0; s < T; s++) {
      for (let i = 0; i < 3; i++) sums[i] = Math.fround(sums[i] + xsData[s * 3 + i]);
      for (let i = 0; i < 3; i++) means.push(Math.fround(sums[i] / (s + 1)));
    }
    expect(Array.from(state.sum.data as Float32Array)).toEqual(sums);
    expect(state.n.data[0]).toBe(T);
    expect([...out.mean.shape]).toEqual([T, 3]);
    expect(Array.from(out.mean.data as Float32Array)).toEqual(means);
    const want = refLinearScan('float32', aData, bData, h0Data, [T, Lanes], 0, false);
    expectNear(t('hs').data as Float32Array, want.hs, 'hs');
    expectNear(t('hLast').data as Float32Array, want.last, 'hLast');
  });

  it('TensorScatter circular: output 0 is the cache, rows written past the end wrap to row 0', async () => {
    const code = block("const cache = ek.tensor('float16', [1, 8, 4096, 128]);");
    expect(claim(code, 'same === cache;')).toBe('true');
    const r = rng(5);
    const rows = Array.from({ length: 8 * 2 * 128 }, () => 0x3c00 | Math.floor(r() * 1024));
    const newRows = ek.tensor('float16', [1, 8, 2, 128], rows);
    const positions = ek.tensor('int64', [1], [4095n]);
    const { vars } = await runBlock(code, { ek, newRows, positions }, ['cache', 'same']);
    const cache = vars.cache as Tensor;
    try {
      expect(vars.same).toBe(cache);
      const d = cache.data as Uint16Array;
      for (let h = 0; h < 8; h++) {
        // new row 0 at position 4095, new row 1 wraps to position 0; row 1 untouched
        for (const [src, dst] of [[0, 4095], [1, 0]]) {
          expect(Array.from(d.subarray((h * 4096 + dst) * 128, (h * 4096 + dst + 1) * 128)), `head ${h} row ${dst}`)
            .toEqual(rows.slice((h * 2 + src) * 128, (h * 2 + src + 1) * 128));
        }
        expect(d.subarray((h * 4096 + 1) * 128, (h * 4096 + 2) * 128).every((x) => x === 0)).toBe(true);
      }
      expect(f16ToF32(d[0])).toBeGreaterThanOrEqual(1);
    } finally {
      cache.dispose(); newRows.dispose(); positions.dispose();
    }
  });

  it('CumSum exclusive + reverse on the last axis: the values in the comment, then into the same output', async () => {
    const code = block("const [y] = ek.run('CumSum', [x, axis]");
    const said = claim(code, '// [[1, 2, 3], [4, 5, 6]]');
    const [input, result] = said.replace(/^\/\/\s*/, '').split('→').map((s) => (JSON.parse(s.trim()) as number[][]).flat());
    expect(result).toBeDefined();
    const x = ek.tensor('float32', [2, 3], input);
    const { vars } = await runBlock(code, { ek, x }, ['y']);
    const y = vars.y as Tensor;
    try {
      expect([...y.shape]).toEqual([2, 3]);
      expect(Array.from(y.data as Float32Array)).toEqual(result);
      // the second call wrote the same values into y (its preallocated output)
      (y.data as Float32Array).fill(-1);
      ek.run('CumSum', [x, { dtype: 'int64', shape: [], data: [-1n] }], { exclusive: 1, reverse: 1 }, { outputs: [y] });
      expect(Array.from(y.data as Float32Array)).toEqual(result);
    } finally {
      x.dispose(); y.dispose();
    }
  });

  it('TRT_Attention packed ragged GQA: y is [18, 8, 64] and matches the float64 reference', async () => {
    const code = block('// 3 sequences of lengths 5, 1 and 12 packed');
    expect(claim(code, '{ query_form:')).toBe('y: [18, 8, 64]');
    const r = rng(23);
    const data = (n: number) => Array.from({ length: n }, () => Math.fround(r() * 3 - 1.5));
    const qData = data(18 * 8 * 64), kData = data(18 * 2 * 64), vData = data(18 * 2 * 64);
    const { vars } = await runBlock(code, { ek, qData, kData, vData }, ['y', 'q', 'k', 'v', 'lens']);
    const [y, q, k, v, lens] = ['y', 'q', 'k', 'v', 'lens'].map((n) => vars[n] as Tensor);
    try {
      expect([...y.shape]).toEqual([18, 8, 64]);
      const want = refTrt([plainOf(q), plainOf(k), plainOf(v), null, plainOf(lens), plainOf(lens)],
        { query_form: 'packed_nhd', kv_form: 'packed_nhd', causal_kind: 'lower_right' }, false);
      expect(want.shape).toEqual([18, 8, 64]);
      expectNear(y.data as Float32Array, want.values, 'Y', 2e-4);
    } finally {
      for (const t of [y, q, k, v, lens]) t.dispose();
    }
  });

  it('Attention decode step: Y and the present tensors (past ++ new row) against the reference', async () => {
    const code = block('// one decode step over a growing cache');
    const r = rng(31);
    const B = 1, Hq = 8, Hkv = 2, P = 5, D = 16;
    const mk = (shape: number[]) => ek.tensor('float32', shape, Array.from({ length: shape.reduce((a, x) => a * x, 1) }, () => Math.fround(r() * 3 - 1.5)));
    const fixtures = { ek, q: mk([B, Hq, 1, D]), k: mk([B, Hkv, 1, D]), v: mk([B, Hkv, 1, D]), pastK: mk([B, Hkv, P, D]), pastV: mk([B, Hkv, P, D]) };
    const { vars } = await runBlock(code, fixtures, ['y', 'presentK', 'presentV']);
    const [y, presentK, presentV] = ['y', 'presentK', 'presentV'].map((n) => vars[n] as Tensor);
    try {
      const want = refOnnx([fixtures.q, fixtures.k, fixtures.v, null, fixtures.pastK, fixtures.pastV].map((t) => (t ? plainOf(t) : null)), { is_causal: 1 });
      expect([...y.shape]).toEqual(want[0].shape);
      expectNear(y.data as Float32Array, want[0].values, 'Y', 2e-4);
      for (const [got, w, past, nw] of [[presentK, want[1], fixtures.pastK, fixtures.k], [presentV, want[2], fixtures.pastV, fixtures.v]] as const) {
        expect([...got.shape]).toEqual([B, Hkv, P + 1, D]);
        expect(Array.from(got.data as Float32Array)).toEqual(w.values);
        // concatenation along the sequence axis, exactly
        for (let h = 0; h < Hkv; h++) {
          expect(Array.from((got.data as Float32Array).subarray(h * (P + 1) * D, (h * (P + 1) + P) * D))).toEqual(Array.from((past.data as Float32Array).subarray(h * P * D, (h + 1) * P * D)));
          expect(Array.from((got.data as Float32Array).subarray((h * (P + 1) + P) * D, (h + 1) * (P + 1) * D))).toEqual(Array.from((nw.data as Float32Array).subarray(h * D, (h + 1) * D)));
        }
      }
      expect(decode(plainOf(y)).every(Number.isFinite)).toBe(true);
    } finally {
      for (const t of [y, presentK, presentV, ...Object.values(fixtures).filter((x): x is Tensor => x !== ek)]) t.dispose();
    }
  });
});
