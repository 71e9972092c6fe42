// Deno example: `deno run --allow-read examples/deno/main.ts`.
// The `deno` export condition reads the .wasm file beside dist/deno.js (hence --allow-read).
import { init } from 'edgekernels';
import { runDecode } from '../decode-step.js';

const ek = await init();
const result = runDecode(ek, 4);
console.log('decode ' + JSON.stringify(result));
ek.dispose();
