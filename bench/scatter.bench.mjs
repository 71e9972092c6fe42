// KV-cache updates: TensorScatter decode-step appends and a prefill write, against
// onnxruntime (web: wasm, 1 thread; node: 1 intra-op thread) and a plain memcpy of the
// same bytes. `bytes` counts the traffic our kernel must do: the new rows read + written.
import { execFileSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';

const per = (s, k) => ({ median: s.median / k, p10: s.p10 / k, p90: s.p90 / k, runs: s.runs });

export default async function (h) {
  const { ek } = h;
  const H = 8, D = 128;

  const peers = async (suite, name, C, S, bytes) => {
    const model = h.onnxModel({
      op: 'TensorScatter', opset: 24,
      inputs: [{ name: 'cache', dtype: 'float32', shape: [1, H, C, D] }, { name: 'update', dtype: 'float32', shape: [1, H, S, D] }, { name: 'idx', dtype: 'int64', shape: [1] }],
      outputs: [{ name: 'present', dtype: 'float32', shape: [1, H, C, D] }],
      attributes: { axis: -2, mode: 'linear' },
    });
    const feeds = {
      cache: { dtype: 'float32', shape: [1, H, C, D], data: new Float32Array(H * C * D) },
      update: { dtype: 'float32', shape: [1, H, S, D], data: new Float32Array(H * S * D).fill(1) },
      idx: { dtype: 'int64', shape: [1], data: BigInt64Array.of(BigInt(C - S)) },
    };
    for (const impl of ['web', 'node']) {
      const peer = h.ort[impl];
      if (!peer) continue;
      const run = (await peer.session(model)).prepare(feeds);
      h.emit({ suite, case: name, impl: `ort-${impl}`, stats: await h.time(run, { minMs: 400, maxRuns: 60 }), bytes });
    }
  };

  // Decode: append one token per step; the position cycles through the cache.
  for (const C of [1024, 4096, 16384]) {
    const cache = ek.tensor('float32', [1, H, C, D]);
    const step = ek.tensor('float32', [1, H, 1, D]);
    step.data.fill(1);
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
    const bytes = 2 * H * D * 4;
    const name = `decode append 1 token, cache (1,8,${C},128) f32`;
    h.emit({ suite: 'TensorScatter', case: name, impl: 'edgekernels', stats: per(await h.time(loop, { minMs: 400 }), K), bytes });
    const { src, dst } = h.copyBuffers(H * D * 4);
    h.emit({ suite: 'TensorScatter', case: name, impl: 'memcpy', stats: per(await h.time(() => { for (let k = 0; k < K; k++) dst.set(src); }), K), bytes });
    await peers('TensorScatter', name, C, 1, bytes);
    cache.dispose(); step.dispose(); idx.dispose();
  }

  // Prefill: one 512-token write into C = 4096.
  {
    const C = 4096, S = 512;
    const cache = ek.tensor('float32', [1, H, C, D]);
    const upd = ek.tensor('float32', [1, H, S, D]);
    upd.data.fill(1);
    const idx = ek.tensor('int64', [1], [BigInt(C - S)]);
    const bytes = 2 * H * S * D * 4;
    const name = `prefill write 512 tokens, cache (1,8,4096,128) f32`;
    h.emit({ suite: 'TensorScatter', case: name, impl: 'edgekernels', stats: await h.time(() => ek.run('TensorScatter', [cache, upd, idx]), { minMs: 500 }), bytes });
    h.emit({ suite: 'TensorScatter', case: name, impl: 'memcpy', stats: await h.memcpy(H * S * D * 4, { minMs: 500 }), bytes });
    await peers('TensorScatter', name, C, S, bytes);
    cache.dispose(); upd.dispose(); idx.dispose();
  }

  // TRT_KVCacheUpdate, packed ragged form: 8 sequences appending 1..8 tokens each.
  {
    const B = 8, C = 4096;
    const cache = ek.tensor('float32', [B, H, C, D]);
    const T = 36;
    const upd = ek.tensor('float32', [T, H, D]);
    const lens = ek.tensor('int32', [B + 1], [0, 1, 3, 6, 10, 15, 21, 28, 36]);
    const idx = ek.tensor('int32', [B], [0, 100, 200, 300, 400, 500, 600, 700]);
    const K = 500;
    const name = 'packed update, 8 sequences x 1..8 tokens, cache (8,8,4096,128) f32';
    const stats = per(await h.time(() => { for (let k = 0; k < K; k++) ek.run('TRT_KVCacheUpdate', [cache, upd, idx, lens], { update_form: 'packed_nhd' }); }, { minMs: 400 }), K);
    h.emit({ suite: 'TRT_KVCacheUpdate', case: name, impl: 'edgekernels', stats, bytes: 2 * T * H * D * 4 });
    const { src, dst } = h.copyBuffers(T * H * D * 4);
    h.emit({ suite: 'TRT_KVCacheUpdate', case: name, impl: 'memcpy', stats: per(await h.time(() => { for (let k = 0; k < K; k++) dst.set(src); }), K), bytes: 2 * T * H * D * 4 });
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
