// One decode step of a toy attention layer, the loop edgekernels is made for. Shared by
// every runtime example (node, deno, bun, worker, browser): the calls are the same
// everywhere, only the way `init` is imported differs.
//
// The K and V caches live in wasm memory; each step writes the new token's K and V rows in
// place (TRT_KVCacheUpdate) and attends the new query over the cache so far
// (TRT_Attention; no implicit scale, so q is scaled by 1/sqrt(D) here). A step allocates
// nothing: every output tensor is reused.

/** Deterministic toy activations for token t (a real model computes these). */
export function toyRow(t, salt, n) {
  const out = new Float32Array(n);
  for (let i = 0; i < n; i++) out[i] = Math.sin(0.37 * (t + 1) * (i + 1) + salt);
  return out;
}

export function createDecoder(ek, { heads = 4, headSize = 16, capacity = 64 } = {}) {
  const shape = [1, heads, 1, headSize];
  const kCache = ek.tensor('float32', [1, heads, capacity, headSize]);
  const vCache = ek.tensor('float32', [1, heads, capacity, headSize]);
  const k = ek.tensor('float32', shape), v = ek.tensor('float32', shape), q = ek.tensor('float32', shape);
  const y = ek.tensor('float32', shape);
  const pos = ek.tensor('int32', [1]), len = ek.tensor('int32', [1]);
  let t = 0;
  return {
    get position() {
      return t;
    },
    /** Runs one step with the toy activations of token t; returns the attention output. */
    step() {
      if (t === capacity) throw new Error('cache full');
      const n = heads * headSize;
      k.data.set(toyRow(t, 1, n));
      v.data.set(toyRow(t, 2, n));
      q.data.set(toyRow(t, 3, n).map((x) => x / Math.sqrt(headSize)));
      pos.data[0] = t;
      len.data[0] = t + 1;
      ek.run('TRT_KVCacheUpdate', [kCache, k, pos]); // writes row t of every head, in place
      ek.run('TRT_KVCacheUpdate', [vCache, v, pos]);
      ek.run('TRT_Attention', [q, kCache, vCache, null, null, len], {}, { outputs: [y] });
      t++;
      return y.data;
    },
    dispose() {
      for (const x of [kCache, vCache, k, v, q, y, pos, len]) x.dispose();
    },
  };
}

/** Runs `steps` decode steps; returns a small summary to print or show. */
export function runDecode(ek, steps = 4) {
  const dec = createDecoder(ek);
  let y;
  for (let i = 0; i < steps; i++) y = dec.step();
  const stats = ek.stats();
  const result = { steps, build: stats.build, y: Array.from(y.subarray(0, 6), (x) => Number(x.toFixed(6))), tensorsLive: stats.tensorsLive };
  dec.dispose();
  return result;
}
