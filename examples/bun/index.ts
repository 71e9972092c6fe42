// Bun example: `bun examples/bun/index.ts`.
// The `bun` export condition reads the .wasm file with Bun.file().
import { init } from 'edgekernels';
import { runDecode } from '../decode-step.js';

const ek = await init();
const result = runDecode(ek, 4);
console.log('decode ' + JSON.stringify(result));
ek.dispose();
