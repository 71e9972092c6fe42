// The benchmark harness's paired ratio (bench/harness.mjs): the README's attention and
// decode-loop tables report it, so its arithmetic and its round order are tested here.
import { describe, expect, it } from 'vitest';
// @ts-expect-error: plain JavaScript module without types
import { interleave, pairedRatio, stats } from '../bench/harness.mjs';

describe('bench harness', () => {
  it('pairedRatio is the median of the per-round ratios, not the ratio of medians', () => {
    // rounds where the machine is loaded slow both sides; the overall medians' ratio is 4/2.5
    const ref = { roundMs: [1, 2, 2.5, 4, 8] };
    const a = { roundMs: [1.5, 3, 5, 6, 12] };
    expect(pairedRatio(a, ref)).toBe(1.5);
    expect(pairedRatio(ref, ref)).toBe(1);
    // an even count takes the mean of the two middle ratios
    expect(pairedRatio({ roundMs: [2, 3, 4, 10] }, { roundMs: [1, 1, 1, 1] })).toBe(3.5);
  });

  it('interleave runs the implementations in turn, round by round, after their warm-ups', async () => {
    const log: string[] = [];
    const impls = ['a', 'b', 'c'].map((name) => ({ name, fn: () => { log.push(name); } }));
    await interleave(impls, { warmMs: 0, rounds: 3, perRound: 2 });
    // warm-up: at least one call each (the loop runs until warmMs has passed, checked after a call)
    const timed = log.slice(log.length - 18);
    expect(timed.join('')).toBe('aabbcc'.repeat(3));
    for (const m of impls as any[]) {
      expect(m.samples).toHaveLength(6);
      expect(m.roundMs).toHaveLength(3);
      for (const t of m.samples) expect(t).toBeGreaterThanOrEqual(0);
    }
  });

  it('stats gives median and deciles of the samples', () => {
    const s = stats([5, 1, 4, 2, 3, 9, 8, 7, 6, 10]);
    expect(s).toEqual({ median: 6, p10: 2, p90: 10, runs: 10 });
  });
});
