// Node example: `node examples/node/index.mjs` (in your project: import from 'edgekernels').
// The `node` export condition reads dist/edgekernels.wasm from disk.
import { init } from 'edgekernels';
import { runDecode } from '../decode-step.js';

const ek = await init(); // the SIMD build, or the scalar one where the engine lacks SIMD
const result = runDecode(ek, 4);
console.log('decode ' + JSON.stringify(result));
ek.dispose();
