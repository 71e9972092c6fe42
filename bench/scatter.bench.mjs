// KV-cache updates: TensorScatter decode-step appends and a prefill write, against
// onnxruntime (web: wasm, 1 thread; node: 1 intra-op thread) and a plain memcpy of the
// same bytes. `bytes` counts the traffic our kernel must do: the new rows read + written.
import { execFileSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';

// Every case times its implementations in interleaved rounds (h.compare: paired ratios, per
// operation) after checking their outputs: our written rows hold the update (the prefill's
// whole cache is compared); each peer's present holds the update at the index and the old
// (zero) cache elsewhere (a peer that computes something else is left out).

/** The row pattern of update row s, head h, element d: distinct per row, exact in float32. */
const pat = (h, s, d) => ((h * 131 + s * 17 + d) % 251) - 125;

export default async function (h) {
  const { ek } = h;
  const H = 8, D = 128;

  /** [{ impl, fn }] for the ORT peers writing `update` into a zero cache at C − S, checked. */
  const peers = async (label, C, S, updateData) => {
    const model = h.onnxModel({
      op: 'TensorScatter', opset: 24,
      inputs: [{ name: 'cache', dtype: 'float32', shape: [1, H, C, D] }, { name: 'update', dtype: 'float32', shape: [1, H, S, D] }, { name: 'idx', dtype: 'int64', shape: [1] }],
      outputs: [{ name: 'present', dtype: 'float32', shape: [1, H, C, D] }],
      attributes: { axis: -2, mode: 'linear' },
    });
    const feeds = {
      cache: { dtype: 'float32', shape: [1, H, C, D], data: new Float32Array(H * C * D) },
      update: { dtype: 'float32', shape: [1, H, S, D], data: updateData },
      idx: { dtype: 'int64', shape: [1], data: BigInt64Array.of(BigInt(C - S)) },
    };
    const want = wantCache(C, S, updateData);
    const out = [];
    for (const impl of ['web', 'node']) {
      const peer = h.ort[impl];
      if (!peer) continue;
      const run = (await peer.session(model)).prepare(feeds);
      const r = await run();
      if (!h.agrees(`ort-${impl} ${label}: present`, r.present.data, want)) continue;
      out.push({ impl: `ort-${impl}`, fn: run });
    }
    return out;
  };
  /** A zero [1, H, C, D] cache with `updateData` ([1, H, S, D]) written at C − S. */
  const wantCache = (C, S, updateData) => {
    const want = new Float32Array(H * C * D);
    for (let hh = 0; hh < H; hh++) want.set(updateData.subarray(hh * S * D, (hh + 1) * S * D), (hh * C + C - S) * D);
    return want;
  };
  const expectRows = (label, cache, C, S, at, updateData) => {
    const got = cache.data;
    for (let hh = 0; hh < H; hh++) {
      const o = (hh * C + at) * D;
      if (!h.agrees(`edgekernels ${label}: head ${hh}`, got.subarray(o, o + S * D), updateData.subarray(hh * S * D, (hh + 1) * S * D))) {
        throw new Error(`scatter bench: our ${label} output is wrong`);
      }
    }
  };

  // Decode: append one token per step; the position cycles through the cache. One fn() call
  // is K appends (a 1.2 µs append is below the timer's resolution), reported per append.
  for (const C of [1024, 4096, 16384]) {
    const cache = ek.tensor('float32', [1, H, C, D]);
    const step = ek.tensor('float32', [1, H, 1, D]);
    const sd = new Float32Array(H * D).map((_, i) => pat(i >> 7, 0, i & 127));
    step.data.set(sd);
    const idx = ek.tensor('int64', [1]);
    const K = 2000;
    let pos = 0;
    const loop = () => {
      const wi = idx.data;
      for (let k = 0; k < K; k++) {
        wi[0] = BigInt(pos);
        ek.run('TensorScatter', [cache, step, idx], { axis: -2 });
        pos = pos + 1 === C ? 0 : pos + 1;
      }
    };
    const name = `decode append 1 token, cache (1,8,${C},128) f32`;
    loop();
    expectRows(name, cache, C, 1, (pos + C - 1) % C, sd);
    const copy = h.copier(H * D * 4);
    await h.compare('TensorScatter', name, [
      { impl: 'edgekernels', fn: loop, per: K },
      { impl: 'memcpy', fn: () => { for (let k = 0; k < K; k++) copy(); }, per: K },
      ...await peers(name, C, 1, sd),
    ].map((m) => ({ ...m, bytes: 2 * H * D * 4 })));
    cache.dispose(); step.dispose(); idx.dispose();
  }

  // Prefill: one 512-token write into C = 4096.
  {
    const C = 4096, S = 512;
    const cache = ek.tensor('float32', [1, H, C, D]);
    const ud = new Float32Array(H * S * D).map((_, i) => pat((i / (S * D)) | 0, ((i / D) | 0) % S, i % D));
    const upd = ek.tensor('float32', [1, H, S, D], ud);
    const idx = ek.tensor('int64', [1], [BigInt(C - S)]);
    const name = `prefill write 512 tokens, cache (1,8,4096,128) f32`;
    const run = () => ek.run('TensorScatter', [cache, upd, idx]);
    run();
    if (!h.agrees(`edgekernels ${name}`, cache.data, wantCache(C, S, ud))) throw new Error('scatter bench: our prefill write is wrong');
    await h.compare('TensorScatter', name, [
      { impl: 'edgekernels', fn: run },
      { impl: 'memcpy', fn: h.copier(H * S * D * 4) },
      ...await peers(name, C, S, ud),
    ].map((m) => ({ ...m, bytes: 2 * H * S * D * 4 })));
    cache.dispose(); upd.dispose(); idx.dispose();
  }

  // TRT_KVCacheUpdate, packed ragged form: 8 sequences appending 1..8 tokens each.
  {
    const B = 8, C = 4096;
    const cache = ek.tensor('float32', [B, H, C, D]);
    const T = 36;
    const ud = new Float32Array(T * H * D).map((_, i) => pat(((i / D) | 0) % H, (i / (H * D)) | 0, i % D));
    const upd = ek.tensor('float32', [T, H, D], ud);
    const cum = [0, 1, 3, 6, 10, 15, 21, 28, 36], starts = [0, 100, 200, 300, 400, 500, 600, 700];
    const lens = ek.tensor('int32', [B + 1], cum);
    const idx = ek.tensor('int32', [B], starts);
    const K = 500;
    const name = 'packed update, 8 sequences x 1..8 tokens, cache (8,8,4096,128) f32';
    const loop = () => { for (let k = 0; k < K; k++) ek.run('TRT_KVCacheUpdate', [cache, upd, idx, lens], { update_form: 'packed_nhd' }); };
    loop();
    // sequence b's token t (packed row cum[b] + t) lands at cache[b, h, starts[b] + t]
    const got = cache.data;
    for (let b = 0; b < B; b++) {
      for (let t = cum[b]; t < cum[b + 1]; t++) {
        for (let hh = 0; hh < H; hh++) {
          const o = ((b * H + hh) * C + starts[b] + t - cum[b]) * D;
          if (!h.agrees(`edgekernels ${name}: sequence ${b}, token ${t - cum[b]}, head ${hh}`, got.subarray(o, o + D), ud.subarray((t * H + hh) * D, (t * H + hh + 1) * D))) {
            throw new Error('scatter bench: our packed update is wrong');
          }
        }
      }
    }
    const copy = h.copier(T * H * D * 4);
    await h.compare('TRT_KVCacheUpdate', name, [
      { impl: 'edgekernels', fn: loop, per: K },
      { impl: 'memcpy', fn: () => { for (let k = 0; k < K; k++) copy(); }, per: K },
    ].map((m) => ({ ...m, bytes: 2 * T * H * D * 4 })));
    cache.dispose(); upd.dispose(); lens.dispose(); idx.dispose();
  }

  // Start-up: init() (reading and compiling the build, as a user's call does) to the first op,
  // each sample a fresh process; p10 / p90 as every other row's (h.stats), not min / max
  {
    const script = fileURLToPath(new URL('./first-op.mjs', import.meta.url));
    const samples = [];
    for (let i = 0; i < 15; i++) samples.push(Number(execFileSync(process.execPath, [script], { encoding: 'utf8' }).trim()));
    h.emit({ suite: 'start-up', case: 'init() to first TensorScatter, fresh process (target < 20 ms)', impl: 'edgekernels', stats: h.stats(samples) });
  }
}
