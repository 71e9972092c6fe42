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
