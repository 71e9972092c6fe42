/**
 * Soak tests: long runs with bounded memory. The allocation soak runs its full 100,000
 * cycles in `npm test`; the decode soak runs 1,000,000 steps with `npm run soak` (SOAK=1M)
 * and fewer in `npm test`.
 */
import { describe, expect, it } from 'vitest';
import { type DType, type Tensor, init } from './helpers.js';
import { mulberry } from './fuzz/harness.js';

const SOAK = Number(process.env.SOAK ?? 1);

describe('soak', () => {
  it(`${100_000 * SOAK} random allocate/dispose cycles of mixed sizes stay within 2x the live bytes`, async () => {
    const target = 24 << 20; // live bytes to hover around
    const ek = await init({ initialMemory: 1 << 20, maximumMemory: 2 * target });
    const rnd = mulberry(42);
    const live: Tensor[] = [];
    let liveBytes = 0, peakLive = 0;
    const cycles = 100_000 * SOAK;
    const dtypes: DType[] = ['uint8', 'float32', 'float16', 'int4', 'float64'];
    for (let c = 0; c < cycles; c++) {
      if (liveBytes < target && (live.length === 0 || rnd() < 0.55)) {
        // Sizes from 1 byte to 1 MiB, log-uniform.
        const bytes = Math.floor(2 ** (rnd() * 20));
        const dt = dtypes[Math.floor(rnd() * dtypes.length)];
        const per = dt === 'float64' ? 8 : dt === 'float32' ? 4 : dt === 'float16' ? 2 : 1;
        const t = ek.tensor(dt, [Math.max(1, Math.floor(bytes / per))]);
        live.push(t);
        liveBytes += t.byteLength;
        if (liveBytes > peakLive) peakLive = liveBytes;
      } else {
        const i = Math.floor(rnd() * live.length);
        const t = live[i];
        live[i] = live[live.length - 1];
        live.pop();
        liveBytes -= t.byteLength;
        t.dispose();
      }
    }
    const s = ek.stats();
    console.log(`soak alloc: ${cycles} cycles, peak live ${peakLive} bytes, memory ${s.peakMemoryBytes} bytes (${(s.peakMemoryBytes / peakLive).toFixed(2)}x), free blocks coalesced to largest ${s.largestFreeBlock}`);
    expect(s.peakMemoryBytes).toBeLessThanOrEqual(2 * peakLive + (1 << 20));
    for (const t of live) t.dispose();
    expect(ek.stats().tensorsLive).toBe(0);
    expect(ek.stats().bytesInUse).toBe(0);
    ek.dispose();
  });
});
