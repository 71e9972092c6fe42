// One fresh process: init() as a user calls it (it reads and compiles the simd build beside
// dist/index.js), then the first TensorScatter into a (1,8,4096,128) float32 cache. Prints
// the milliseconds from the init() call (the package's import before it is not counted; run
// by scatter.bench.mjs, which also times init({ wasm: bytes }) with the bytes read first).
const { init } = await import('../dist/index.js');
const t0 = performance.now();
const ek = await init();
const cache = ek.tensor('float32', [1, 8, 4096, 128]);
const step = ek.tensor('float32', [1, 8, 1, 128]);
ek.run('TensorScatter', [cache, step, { dtype: 'int64', shape: [1], data: [5n] }]);
console.log(performance.now() - t0);
