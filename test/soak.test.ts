/**
 * Soak tests: long runs with bounded memory. The allocation soak runs its full 100,000
 * cycles in `npm test`; the decode soak runs 1,000,000 steps with `npm run soak` (SOAK=1M)
 * and fewer in `npm test`.
 */
import { describe, expect, it } from 'vitest';
import { type DType, type Tensor, init } from './helpers.js';
import { mulberry } from './fuzz/harness.js';

const SOAK = Number(process.env.SOAK ?? 1);
const DECODE_STEPS = Number(process.env.SOAK_STEPS ?? 20_000);

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

  it(`${DECODE_STEPS} decode steps (circular cache update + attention) with stats() flat`, async () => {
    const ek = await init({ initialMemory: 1 << 20 });
    const B = 2, Hq = 4, Hkv = 2, W = 16, D = 8;
    const kc = ek.tensor('float32', [B, Hkv, W, D]);
    const vc = ek.tensor('float32', [B, Hkv, W, D]);
    const k = ek.tensor('float32', [B, Hkv, 1, D]);
    const v = ek.tensor('float32', [B, Hkv, 1, D]);
    const q = ek.tensor('float32', [B, Hq, 1, D]);
    const pos = ek.tensor('int32', [B]);
    const lens = ek.tensor('int32', [B]);
    const y = ek.tensor('float32', [B, Hq, 1, D]);
    const rnd = mulberry(9);
    const step = (s: number) => {
      const kd = k.data as Float32Array, vd = v.data as Float32Array, qd = q.data as Float32Array;
      for (let i = 0; i < kd.length; i++) { kd[i] = rnd() - 0.5; vd[i] = rnd() - 0.5; }
      for (let i = 0; i < qd.length; i++) qd[i] = rnd() - 0.5;
      (pos.data as Int32Array).fill(s);
      (lens.data as Int32Array).fill(Math.min(s + 1, W));
      ek.run('TensorScatter', [kc, k, pos], { mode: 'circular' });
      ek.run('TensorScatter', [vc, v, pos], { mode: 'circular' });
      ek.run('TRT_Attention', [q, kc, vc, null, null, lens], {}, { outputs: [y] });
    };
    step(0);
    const start = ek.stats();
    let peak = start.memoryBytes;
    for (let s = 1; s < DECODE_STEPS; s++) {
      step(s);
      if ((s & 1023) === 0) {
        const now = ek.stats();
        if (now.bytesInUse !== start.bytesInUse || now.tensorsLive !== start.tensorsLive || now.memoryBytes !== start.memoryBytes || now.scratchBytes !== start.scratchBytes) {
          throw new Error(`stats moved at step ${s}: ${JSON.stringify(now)} vs ${JSON.stringify(start)}`);
        }
        peak = Math.max(peak, now.peakMemoryBytes);
      }
    }
    const end = ek.stats();
    expect(end).toEqual(start);
    // The last step's output against a plain softmax over the window (no scale: TRT_Attention has none).
    const kd = kc.data as Float32Array, vd = vc.data as Float32Array, qd = q.data as Float32Array, yd = y.data as Float32Array;
    for (let b = 0; b < B; b++) {
      for (let h = 0; h < Hq; h++) {
        const g = Math.floor(h / (Hq / Hkv));
        const sc: number[] = [];
        for (let j = 0; j < W; j++) {
          let dot = 0;
          for (let d = 0; d < D; d++) dot += qd[(b * Hq + h) * D + d] * kd[((b * Hkv + g) * W + j) * D + d];
          sc.push(dot);
        }
        const m = Math.max(...sc);
        const e = sc.map((x) => Math.exp(x - m));
        const z = e.reduce((a, c) => a + c, 0);
        for (let d = 0; d < D; d++) {
          let acc = 0;
          for (let j = 0; j < W; j++) acc += (e[j] / z) * vd[((b * Hkv + g) * W + j) * D + d];
          expect(yd[(b * Hq + h) * D + d]).toBeCloseTo(acc, 5);
        }
      }
    }
    console.log(`soak decode: ${DECODE_STEPS} steps, stats flat (bytesInUse ${end.bytesInUse}, tensorsLive ${end.tensorsLive}, memory ${end.memoryBytes} bytes, peak ${peak})`);
    ek.dispose();
  });
});
