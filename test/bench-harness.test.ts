// The benchmark harness's paired ratio (bench/harness.mjs): the README's attention and
// decode-loop tables report it, so its arithmetic and its round order are tested here.
import { describe, expect, it } from 'vitest';
// @ts-expect-error: plain JavaScript module without types
import { agrees, interleave, pairedRatio, sampleIdx, stats } from '../bench/harness.mjs';

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
    // warm-up: at least three calls each, then until warmMs has passed
    expect(log.slice(0, 9).join('')).toBe('aaabbbccc');
    const timed = log.slice(log.length - 18);
    expect(timed.join('')).toBe('aabbcc'.repeat(3));
    for (const m of impls as any[]) {
      expect(m.samples).toHaveLength(6);
      expect(m.roundMs).toHaveLength(3);
      for (const t of m.samples) expect(t).toBeGreaterThanOrEqual(0);
    }
  });

  it('agrees compares within a tolerance (a number or a function of the index), NaN matching NaN, on a sample when given', () => {
    const err = console.error;
    const said: string[] = [];
    console.error = (m: string) => { said.push(m); };
    try {
      expect(agrees('a', [1, 2, NaN], [1, 2, NaN])).toBe(true);
      expect(agrees('b', [1, 2.5], [1, 2], 0.5)).toBe(true);
      expect(agrees('c', [1, 2.5], [1, 2], 0.25)).toBe(false);
      expect(said.pop()).toMatch(/# c: element 1 is 2.5, expected 2 \(tolerance 0.25\)/);
      expect(agrees('d', [10, 1], [10, 2], (i: number) => (i === 1 ? 1 : 0))).toBe(true);
      expect(agrees('e', [NaN], [0])).toBe(false);
      expect(agrees('f', [0n, 5n], [0n, 5n])).toBe(true);
      expect(agrees('g', [1, 2, 3], [1, 2])).toBe(false); // lengths differ
      expect(agrees('h', [9, 2, 9], [1, 2, 3], 0, [1])).toBe(true); // only index 1 compared
    } finally {
      console.error = err;
    }
  });

  it('sampleIdx spreads about count indices over [0, n) and always ends at n − 1', () => {
    expect(sampleIdx(10, 4)).toEqual([0, 2, 4, 6, 8, 9]);
    expect(sampleIdx(3, 100)).toEqual([0, 1, 2]);
    expect(sampleIdx(0)).toEqual([]);
  });

  it('stats gives median and deciles of the samples', () => {
    const s = stats([5, 1, 4, 2, 3, 9, 8, 7, 6, 10]);
    expect(s).toEqual({ median: 6, p10: 2, p90: 10, runs: 10 });
  });
});
