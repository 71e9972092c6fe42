// Deno without --allow-read: init() cannot read the .wasm beside dist/deno.js. The failure
// must be a KernelError (code UNAVAILABLE) like every other, not Deno's raw NotCapable.
// Prints "<name> <code>" for test/runtimes/run.mjs.
import { init } from '../../dist/deno.js';

try {
  (await init()).dispose();
  console.log('accepted');
} catch (e) {
  console.log(`${e?.name} ${e?.code}`);
}
