// Worker example (workerd / Cloudflare Workers): every request runs one decode step over a
// KV cache that stays in wasm memory between requests.
//   npx workerd serve examples/worker/config.capnp   then   curl http://127.0.0.1:8787/
// The `workerd` export condition imports the .wasm builds as modules: workerd compiles no
// wasm from bytes. With wrangler, `import { init } from 'edgekernels'` is all it takes.
import { init } from 'edgekernels';
import { createDecoder } from './decode-step.js';

let state = null;

export default {
  async fetch(request) {
    if (new URL(request.url).pathname !== '/') return new Response('not found', { status: 404 });
    // A Worker has 128 MB: cap the wasm memory well inside it (allocations past it throw OUT_OF_MEMORY).
    state ??= init({ maximumMemory: 64 << 20 }).then((ek) => ({ ek, dec: createDecoder(ek) }));
    const { ek, dec } = await state;
    if (dec.position === 64) return new Response('cache full', { status: 409 });
    const y = dec.step();
    const stats = ek.stats();
    return Response.json({ step: dec.position, build: stats.build, y: Array.from(y.subarray(0, 6), (x) => Number(x.toFixed(6))), memoryBytes: stats.memoryBytes });
  },
};
