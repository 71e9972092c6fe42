// One fresh process: init() from bytes already read, then the first TensorScatter into a
// (1,8,4096,128) float32 cache. Prints the milliseconds (run by scatter.bench.mjs).
import { readFileSync } from 'node:fs';

const bytes = readFileSync(new URL('../dist/edgekernels.wasm', import.meta.url));
const { init } = await import('../dist/index.js');
const t0 = performance.now();
const ek = await init({ wasm: bytes });
const cache = ek.tensor('float32', [1, 8, 4096, 128]);
const step = ek.tensor('float32', [1, 8, 1, 128]);
ek.run('TensorScatter', [cache, step, { dtype: 'int64', shape: [1], data: [5n] }]);
console.log(performance.now() - t0);
