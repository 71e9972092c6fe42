// The whole ONNX backend node-test suite of the package's six ONNX operators (Attention-23/24
// and 25's sliding-window cases, Cast-25 and the CastLike expansions, QuantizeLinear /
// DequantizeLinear-25, CumSum-14, TensorScatter-24): test/conformance/upstream/*.json,
// generated from the case generators of the `onnx` Python package by
// scripts/upstream-conformance (gen.py, then convert.py; see the README's "Reliability").
// ../shared/conformance/onnx holds a sample of the same cases; this is all of them, in both
// builds. Cases are run as the README's contract says a caller runs
// them: plain inputs, the node's attributes, its output slots asked for.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Kernels, UPSTREAM_DIR, conformanceCases, expectConformanceCase, init } from './helpers.js';

let simd: Kernels, scalar: Kernels;
beforeAll(async () => {
  simd = await init();
  scalar = await init({ build: 'scalar' });
});
afterAll(() => {
  simd.dispose();
  scalar.dispose();
});

// file name prefix → operator and its case count in onnx 1.23.1 (Attention's include the 11 of
// Attention-25's sliding window), so a family that goes missing is noticed
const FAMILIES: Record<string, { op: string; min: number }> = {
  test_attention_: { op: 'Attention', min: 93 },
  test_cast_: { op: 'Cast', min: 60 },
  test_castlike_: { op: 'Cast', min: 56 },
  test_quantizelinear: { op: 'QuantizeLinear', min: 13 },
  test_dequantizelinear: { op: 'DequantizeLinear', min: 14 },
  test_cumsum_: { op: 'CumSum', min: 9 },
  test_tensorscatter: { op: 'TensorScatter', min: 3 },
};

for (const [prefix, { op, min }] of Object.entries(FAMILIES)) {
  describe(`upstream ${prefix}* (${op})`, () => {
    const cases = conformanceCases([prefix], UPSTREAM_DIR);
    it(`has at least ${min} cases, all of ${op}`, () => {
      expect(cases.length).toBeGreaterThanOrEqual(min);
      for (const c of cases) expect(c.op, c.file).toBe(op);
    });
    for (const c of cases) {
      it(c.file, () => {
        expectConformanceCase(simd, c);
        expectConformanceCase(scalar, c);
      });
    }
  });
}
