import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Kernels, init } from './helpers.js';
import { FUZZ_RUNS, type Family, fuzzFamily } from './fuzz/harness.js';
import { castFamily, cumsumFamily, dequantizeFamily, kvCacheFamily, onnxAttentionFamily, quantizeFamily, scanFamily, trtAttentionFamily } from './fuzz/ops.js';
import { kvCacheUpdateFamily, tensorScatterFamily } from './fuzz/scatter.js';

const FAMILIES: Family[] = [
  tensorScatterFamily, kvCacheUpdateFamily, trtAttentionFamily, onnxAttentionFamily,
  castFamily, quantizeFamily, dequantizeFamily, cumsumFamily, scanFamily, kvCacheFamily,
];

let ek: Kernels;
beforeAll(async () => {
  ek = await init();
});
afterAll(() => ek.dispose());

describe(`fuzzed bad inputs (${FUZZ_RUNS} per family; FUZZ_RUNS=10000 npm run fuzz for the full run)`, () => {
  for (const fam of FAMILIES) {
    it(`${fam.name}: every bad call throws a KernelError naming the input, nothing written`, () => {
      const before = ek.stats();
      const s = fuzzFamily(ek, fam);
      console.log(`fuzz ${fam.name}: ${s.cases} failing calls checked`, JSON.stringify(s.byCode));
      expect(s.cases).toBeGreaterThan(FUZZ_RUNS / 2);
      // The instance is unharmed: no leaked tensors, and it still works.
      expect(ek.stats().tensorsLive).toBe(before.tensorsLive);
    });
  }
});
