// npm run exhaustive: every float32 bit pattern (2^32 of them, 16M at a time) through
// float32 → float8 in the SIMD build, compared byte for byte with the scalar build, for
// the four float8 types: Cast with saturate 1 and 0, and QuantizeLinear at scale 1
// (saturating); then float32 → float16 (NaN payloads included). The SIMD encoders (the
// byte-level saturating one, the generic one, the chunked QuantizeLinear path) and the
// scalar encoder share no code past the rounding formula, and the scalar one is held to an
// independent reference at every rounding boundary by test/cast.test.ts. ~7 minutes; not
// part of npm test.
import { init } from '../dist/index.js';

const simd = await init({ build: 'simd', maximumMemory: 2 ** 30 });
const scalar = await init({ build: 'scalar', maximumMemory: 2 ** 30 });
const N = 1 << 24;
const TYPES = ['float8e4m3fn', 'float8e4m3fnuz', 'float8e5m2', 'float8e5m2fnuz'];
const CASES = [
  ...TYPES.flatMap((to) => [
    { name: `Cast float32 → ${to} saturate=1`, op: 'Cast', to, attrs: { to, saturate: 1 } },
    { name: `Cast float32 → ${to} saturate=0`, op: 'Cast', to, attrs: { to, saturate: 0 } },
    { name: `QuantizeLinear float32 → ${to} scale 1`, op: 'QuantizeLinear', to, attrs: {} },
  ]),
  { name: 'Cast float32 → float16', op: 'Cast', to: 'float16', attrs: { to: 'float16' } },
];

const sides = [simd, scalar].map((ek) => ({ ek, x: ek.tensor('float32', [N]), one: ek.tensor('float32', [], [1]) }));
let failed = 0;
for (const c of CASES) {
  const t0 = Date.now();
  const outs = sides.map((s) => s.ek.tensor(c.to, [N]));
  const zps = sides.map((s) => s.ek.tensor(c.to, []));
  let bad = 0;
  for (let hi = 0; hi < 256; hi++) {
    for (const [i, s] of sides.entries()) {
      const u = new Uint32Array(s.x.data.buffer, s.x.data.byteOffset, N);
      for (let j = 0; j < N; j++) u[j] = ((hi << 24) | j) >>> 0;
      const inputs = c.op === 'Cast' ? [s.x] : [s.x, s.one, zps[i]];
      s.ek.run(c.op, inputs, c.attrs, { outputs: [outs[i]] });
    }
    const a = outs[0].data, b = outs[1].data;
    const nb = a.byteLength;
    if (Buffer.compare(Buffer.from(a.buffer, a.byteOffset, nb), Buffer.from(b.buffer, b.byteOffset, nb)) !== 0) {
      for (let j = 0; j < N; j++) {
        if (a[j] !== b[j] && bad++ < 5) console.log(`  float32 0x${(((hi << 24) | j) >>> 0).toString(16)}: simd 0x${a[j].toString(16)}, scalar 0x${b[j].toString(16)}`);
      }
    }
  }
  failed += bad ? 1 : 0;
  console.log(`${bad ? 'FAIL' : 'ok  '} ${c.name}: ${bad ? `${bad} of 2^32 differ` : 'all 2^32 equal'} (${((Date.now() - t0) / 1000).toFixed(0)} s)`);
  for (const t of [...outs, ...zps]) t.dispose();
}
process.exit(failed ? 1 : 0);
