import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { ALIGN, Arena, TAIL_PAD } from '../src/memory.js';

const PAGE = 65536;
const memory = (pages: number, max: number) => new WebAssembly.Memory({ initial: pages, maximum: max });

describe('Arena', () => {
  it('returns 16-byte aligned blocks with at least 16 bytes of tail padding, never overlapping', () => {
    const a = new Arena(memory(1, 16), 8, 16 * PAGE);
    const blocks: [number, number][] = [];
    for (const n of [0, 1, 15, 16, 17, 100, 4096, 3]) {
      const p = a.alloc(n);
      expect(p % ALIGN).toBe(0);
      expect(p).toBeGreaterThanOrEqual(16);
      expect(a.sizeOf(p)!).toBeGreaterThanOrEqual(n + TAIL_PAD);
      blocks.push([p, a.sizeOf(p)!]);
    }
    blocks.sort((x, y) => x[0] - y[0]);
    for (let i = 1; i < blocks.length; i++) expect(blocks[i][0]).toBeGreaterThanOrEqual(blocks[i - 1][0] + blocks[i - 1][1]);
  });

  it('reuses freed blocks and coalesces neighbours into one', () => {
    const a = new Arena(memory(1, 16), 0, 16 * PAGE);
    const free0 = a.stats().largestFree;
    const x = a.alloc(1000), y = a.alloc(2000), z = a.alloc(3000);
    a.free(x);
    expect(a.alloc(500)).toBe(x); // first fit reuses the hole
    a.free(x);
    a.free(z);
    a.free(y);
    const s = a.stats();
    expect(s.blocks).toBe(0);
    expect(s.largestFree).toBe(free0);
    expect(s.freeBytes).toBe(free0);
  });

  it('grows on demand and says OUT_OF_MEMORY beyond maxBytes, staying usable', () => {
    const a = new Arena(memory(1, 4), 0, 4 * PAGE);
    const p = a.alloc(100_000);
    expect(a.stats().memoryBytes).toBeGreaterThanOrEqual(2 * PAGE);
    let err: unknown;
    try {
      a.alloc(4 * PAGE);
    } catch (e) {
      err = e;
    }
    expect((err as { code: string }).code).toBe('OUT_OF_MEMORY');
    expect((err as Error).message).toMatch(/maximumMemory/);
    a.free(p);
    expect(a.alloc(3 * PAGE)).toBeGreaterThanOrEqual(0);
  });

  it('alloc(n, zero) reads as zeros over reused memory, and leaves never-written memory untouched', () => {
    // fresh = 0: the whole memory is taken as never written since the engine zero-filled it.
    // The 0xAB bytes planted in it stand for pages nothing has touched: a zeroing alloc must
    // not write them (that would touch every page of a new KV cache), so they survive, while
    // a block handed out before and freed is dirty and is cleared.
    const mem = memory(1, 16);
    const a = new Arena(mem, 0, 16 * PAGE, 0, 0);
    const bytes = new Uint8Array(mem.buffer);
    bytes.fill(0xab, 0, 8192);
    const x = a.alloc(4000, true);
    expect(new Uint8Array(mem.buffer, x, 4000).every((b) => b === 0xab)).toBe(true); // fresh: not rewritten
    new Uint8Array(mem.buffer, x, 4000).fill(7);
    a.free(x);
    const y = a.alloc(6000, true); // reuses x's bytes (dirty) and runs past them (fresh)
    expect(y).toBe(x);
    const sizeX = Arena.blockSize(4000);
    const got = new Uint8Array(mem.buffer, y, 6000);
    expect(got.subarray(0, sizeX).every((b) => b === 0)).toBe(true);
    expect(got.subarray(sizeX).every((b) => b === 0xab)).toBe(true);
    // the default (fresh = the memory's end): nothing is assumed, every zeroing alloc clears
    const mem2 = memory(1, 16);
    new Uint8Array(mem2.buffer).fill(0xcd);
    const b = new Arena(mem2, 0, 16 * PAGE);
    const z = b.alloc(3000, true);
    expect(new Uint8Array(mem2.buffer, z, 3000).every((v) => v === 0)).toBe(true);
    // memory.grow's new pages count as fresh: the planted bytes past the grown block survive
    // the next zeroing alloc there, while the grown block's part below the old end was cleared
    const big = b.alloc(2 * PAGE, true);
    expect(new Uint8Array(mem2.buffer, big, 2 * PAGE).every((v) => v === 0)).toBe(true);
    const after = big + Arena.blockSize(2 * PAGE);
    expect(mem2.buffer.byteLength).toBeGreaterThan(after + 1000);
    new Uint8Array(mem2.buffer).fill(0xee, after);
    const c = b.alloc(1000, true);
    expect(c).toBe(after);
    expect(new Uint8Array(mem2.buffer, c, 1000).every((v) => v === 0xee)).toBe(true);
  });

  it('ek.tensor() is zero-filled over memory a disposed tensor left dirty, in both builds', async () => {
    const { init } = await import('./helpers.js');
    for (const build of ['simd', 'scalar'] as const) {
      const ek = await init({ build });
      const t = ek.tensor('float32', [1000], Float32Array.from({ length: 1000 }, (_, i) => i + 1));
      const at = t.byteOffset;
      t.dispose();
      const u = ek.tensor('float32', [3000]); // first fit: over t's old bytes, then fresh ones
      expect(u.byteOffset).toBe(at);
      expect((u.data as Float32Array).every((v) => v === 0)).toBe(true);
      const w = ek.tensor('int4', [7]);
      expect(Array.from(w.data as ArrayLike<number>).every((v) => v === 0)).toBe(true);
      ek.dispose();
    }
  });

  it('rejects freeing what is not a live block', () => {
    const a = new Arena(memory(1, 1), 0, PAGE);
    const p = a.alloc(10);
    a.free(p);
    expect(() => a.free(p)).toThrow(/not a live block/);
  });

  it('random allocate/free sequences keep blocks disjoint and the books balanced', () => {
    fc.assert(
      fc.property(fc.array(fc.tuple(fc.boolean(), fc.integer({ min: 0, max: 50_000 })), { maxLength: 200 }), (ops) => {
        const a = new Arena(memory(1, 64), 32, 64 * PAGE);
        const live = new Map<number, number>();
        for (const [isAlloc, n] of ops) {
          if (isAlloc || live.size === 0) {
            const p = a.alloc(n);
            for (const [q, m] of live) expect(p + n + TAIL_PAD <= q || q + m + TAIL_PAD <= p).toBe(true);
            live.set(p, n);
          } else {
            const keys = [...live.keys()];
            const k = keys[n % keys.length];
            a.free(k);
            live.delete(k);
          }
        }
        const s = a.stats();
        expect(s.blocks).toBe(live.size);
        for (const k of [...live.keys()]) a.free(k);
        // Everything coalesces back into a single block from the base to the end of memory.
        expect(a.stats().largestFree).toBe(a.stats().memoryBytes - 32);
      }),
      { seed: 3, numRuns: 100 },
    );
  });
});
