// Low-precision conversions on 16M values: float32 → float8e4m3fn, float8e4m3fn → float32,
// float32 → int8 and int8 → float32, with QuantizeLinear / DequantizeLinear (and Cast)
// against onnxruntime-web (wasm, 1 thread) and onnxruntime-node (CPU, 1 thread) running the
// same operator, and a memcpy of the same traffic. `bytes` = bytes read + bytes written.
//
// onnxruntime's JS API cannot hand float8 tensors in or out, so its float8 models keep them
// inside the graph: QuantizeLinear → Shape for float32 → e4m3fn (the whole tensor is
// quantized; only its shape leaves), and an e4m3fn initializer (a graph constant;
// the scale is a graph input, so nothing is folded) for DequantizeLinear.
const N = 16 << 20;

// ---- a minimal ONNX protobuf writer (multi-node graphs with initializers) ---------------
const TYPES = { float32: 1, uint8: 2, int8: 3, int64: 7, float8e4m3fn: 17 };
function varint(n) {
  const out = [];
  let v = n;
  while (v >= 0x80) { out.push((v % 0x80) | 0x80); v = Math.floor(v / 0x80); }
  out.push(v);
  return Uint8Array.from(out);
}
function concat(parts) {
  const len = parts.reduce((a, p) => a + p.length, 0);
  const out = new Uint8Array(len);
  let o = 0;
  for (const p of parts) { out.set(p, o); o += p.length; }
  return out;
}
const key = (field, wire) => varint(field * 8 + wire);
const bytesF = (field, b) => concat([key(field, 2), varint(b.length), b]);
const strF = (field, s) => bytesF(field, new TextEncoder().encode(s));
const intF = (field, n) => concat([key(field, 0), varint(n)]);
const dim = (d) => bytesF(1, typeof d === 'string' ? strF(2, d) : intF(1, d));
const valueInfoCode = (name, code, shape) => concat([
  strF(1, name),
  bytesF(2, bytesF(1, concat([intF(1, code), bytesF(2, concat(shape.map(dim)))]))),
]);
const valueInfo = (name, dtype, shape) => concat([
  strF(1, name),
  bytesF(2, bytesF(1, concat([intF(1, TYPES[dtype]), bytesF(2, concat(shape.map(dim)))]))),
]);
const attrInt = (name, v) => concat([strF(1, name), intF(3, v), intF(20, 2)]);
const node = (op, inputs, outputs, attrs = []) => concat([
  ...inputs.map((i) => strF(1, i)), ...outputs.map((o) => strF(2, o)), strF(3, `${op}_${outputs[0]}`), strF(4, op),
  ...attrs.map((a) => bytesF(5, a)),
]);
const initializer = (name, dtype, shape, raw) => concat([...shape.map((d) => intF(1, d)), intF(2, TYPES[dtype]), strF(8, name), bytesF(9, raw)]);
const initializerCode = (name, code, shape, raw) => concat([...shape.map((d) => intF(1, d)), intF(2, code), strF(8, name), bytesF(9, raw)]);
function model({ opset, nodes, inputs, outputs, inits = [] }) {
  const graph = concat([
    ...nodes.map((n) => bytesF(1, n)), strF(2, 'quant-bench'), ...inits.map((t) => bytesF(5, t)),
    ...inputs.map((i) => bytesF(11, i)), ...outputs.map((o) => bytesF(12, o)),
  ]);
  return concat([intF(1, 10), strF(2, 'edgekernels-bench'), bytesF(7, graph), bytesF(8, intF(2, opset))]);
}

/** Creates the first session whose opset (25, then lower) the runtime accepts: { run, opset, first } (first: the outputs of its first run). */
async function sessionFor(peer, build, feeds) {
  let lastErr;
  for (const opset of [25, 24, 23, 21]) {
    try {
      const s = await peer.session(build(opset));
      const run = s.prepare(feeds);
      const first = await run();
      return { run, opset, first };
    } catch (e) {
      lastErr = e;
    }
  }
  console.error(`# peer failed at every opset: ${String(lastErr?.message ?? lastErr).split('\n')[0]}`);
  return null;
}

// Every case checks its outputs before timing (h.agrees), then times its implementations in
// interleaved rounds (h.compare: paired ratios). Ours: QuantizeLinear's codes equal Cast's
// where both run, and dequantizing them gives the float32 values a plain JS decode of the
// same codes gives (float8e4m3fn, int8: exact); a peer's fetched output must equal ours
// (float32 within an ulp); a peer whose codes cannot leave its graph (float8, 4- and 2-bit
// types) is checked through a second graph that dequantizes them in the graph (Q → DQ) and
// must equal our dequantization of our codes. A peer that differs is left out.

/** float8e4m3fn code → value (plain: sign, 4-bit exponent, 3-bit mantissa, bias 7; 0x7f / 0xff NaN). */
function e4m3Value(c) {
  const e = (c >> 3) & 15, m = c & 7, sgn = c & 0x80 ? -1 : 1;
  if (e === 15 && m === 7) return NaN;
  return sgn * (e === 0 ? m / 8 * 2 ** -6 : (1 + m / 8) * 2 ** (e - 7));
}

/** Within one float32 ulp of the reference value. */
const ulp = (want) => (i) => Math.abs(want[i]) * 2 ** -23;

export default async function (h) {
  const { ek } = h;
  const x = ek.tensor('float32', [N]);
  {
    const d = x.data;
    for (let i = 0; i < N; i++) d[i] = Math.sin(i * 0.37) * 500 * ((i % 7) / 7);
  }
  const one = ek.tensor('float32', [], [1]);
  const s8 = ek.tensor('float32', [], [0.05]);
  const zp8 = ek.tensor('int8', [], [3]);
  const y8 = ek.tensor('float8e4m3fn', [N]);
  const yi = ek.tensor('int8', [N]);
  const f = ek.tensor('float32', [N]);
  const bytes = N * 5;
  const xHost = new Float32Array(x.data);
  const idx = h.sampleIdx(N, 1 << 16);
  const ours = (label, ok) => { if (!ok) throw new Error(`quant bench: our ${label} is wrong`); };
  const xFeed = { x: { dtype: 'float32', shape: [N], data: xHost } };
  const oneFeed = { s: { dtype: 'float32', shape: [], data: Float32Array.of(1) } };

  /**
   * The peers of one case, checked: `check(first, peer)` gets a peer's first outputs and says
   * whether they are ours (or, given null, the peer is checked through `checkBuild`'s graph,
   * whose output y must equal `checkWant`).
   */
  const peers = async (suite, name, build, feeds, check, checkBuild, checkWant) => {
    const out = [];
    for (const impl of ['web', 'node']) {
      const peer = h.ort[impl];
      if (!peer) continue;
      const s = await sessionFor(peer, build, feeds);
      if (!s) continue;
      const label = `ort-${impl} ${suite} ${name}`;
      let ok;
      if (check) ok = check(s.first, label);
      else {
        const c = await sessionFor(peer, checkBuild, feeds);
        ok = c ? h.agrees(`${label} (its codes dequantized in the graph)`, c.first.y.data, checkWant, 0, idx) : false;
        if (!c) console.error(`# ${label}: its output could not be checked, left out`);
      }
      if (ok) out.push({ impl: `ort-${impl}`, fn: s.run, note: `opset ${s.opset}` });
    }
    return out;
  };
  const run = (suite, name, impls) => h.compare(suite, name, impls.map((m) => ({ ...m, bytes })), { rounds: 10 });
  const qdq = (opset, code) => model({
    opset,
    nodes: [
      node('QuantizeLinear', ['x', 's'], ['q'], [attrInt('output_dtype', code), ...(code >= 17 && code <= 20 ? [attrInt('saturate', 1)] : [])]),
      node('DequantizeLinear', ['q', 's'], ['y']),
    ],
    inputs: [valueInfo('x', 'float32', ['N']), valueInfo('s', 'float32', [])],
    outputs: [valueInfo('y', 'float32', ['N'])],
  });

  // float32 → float8e4m3fn
  {
    const suite = 'QuantizeLinear', name = 'float32 → float8e4m3fn, 16M values, scale 1';
    const q = () => ek.run('QuantizeLinear', [x, one], { output_dtype: 'float8e4m3fn' }, { outputs: [y8] });
    q();
    const codes = new Uint8Array(y8.data);
    ek.run('Cast', [x], { to: 'float8e4m3fn' }, { outputs: [y8] });
    ours('QuantizeLinear codes (against Cast\'s)', h.agrees(`edgekernels ${name}`, y8.data, codes));
    ek.run('DequantizeLinear', [y8, one], {}, { outputs: [f] });
    const deq = new Float32Array(f.data);
    const want = new Float32Array(N);
    for (const i of idx) want[i] = e4m3Value(codes[i]);
    ours('DequantizeLinear of e4m3fn', h.agrees(`edgekernels ${name} (dequantized)`, deq, want, 0, idx));
    await run(suite, name, [
      { impl: 'edgekernels', fn: q },
      { impl: 'edgekernels Cast', fn: () => ek.run('Cast', [x], { to: 'float8e4m3fn' }, { outputs: [y8] }) },
      { impl: 'memcpy', fn: h.copier(bytes / 2) },
      ...await peers(suite, name, (opset) => model({
        opset,
        // The shape of the quantized tensor leaves the graph (x's length is symbolic, so it
        // cannot be folded away): the whole tensor is quantized, nothing float8 is fetched.
        nodes: [
          node('QuantizeLinear', ['x', 's'], ['q'], [attrInt('output_dtype', 17), attrInt('saturate', 1)]),
          node('Shape', ['q'], ['n']),
        ],
        inputs: [valueInfo('x', 'float32', ['N']), valueInfo('s', 'float32', [])],
        outputs: [valueInfo('n', 'int64', [1])],
      }), { ...xFeed, ...oneFeed }, null, (opset) => qdq(opset, 17), deq),
    ]);
  }

  // float8e4m3fn → float32
  {
    ek.run('Cast', [x], { to: 'float8e4m3fn' }, { outputs: [y8] });
    const codes = new Uint8Array(y8.data);
    const suite = 'DequantizeLinear', name = 'float8e4m3fn → float32, 16M values, scale 1';
    const dq = () => ek.run('DequantizeLinear', [y8, one], {}, { outputs: [f] });
    dq();
    const deq = new Float32Array(f.data);
    ek.run('Cast', [y8], { to: 'float32' }, { outputs: [f] });
    ours('Cast e4m3fn → float32 (against DequantizeLinear)', h.agrees(`edgekernels Cast ${name}`, f.data, deq));
    await run(suite, name, [
      { impl: 'edgekernels', fn: dq },
      { impl: 'edgekernels Cast', fn: () => ek.run('Cast', [y8], { to: 'float32' }, { outputs: [f] }) },
      { impl: 'memcpy', fn: h.copier(bytes / 2) },
      ...await peers(suite, name, (opset) => model({
        opset,
        nodes: [node('DequantizeLinear', ['xq', 's'], ['y'])],
        inits: [initializer('xq', 'float8e4m3fn', [N], codes)],
        inputs: [valueInfo('s', 'float32', [])],
        outputs: [valueInfo('y', 'float32', [N])],
      }), oneFeed, (r, label) => h.agrees(label, r.y.data, deq, 0, idx)),
    ]);
  }

  // float32 → int8 and back
  {
    const suite = 'QuantizeLinear', name = 'float32 → int8, 16M values, scale 0.05, zero point 3';
    const q = () => ek.run('QuantizeLinear', [x, s8, zp8], {}, { outputs: [yi] });
    q();
    const codes = new Int8Array(yi.data);
    // round half to even of x / 0.05 (float32 division), + 3, saturated
    const s = Math.fround(0.05);
    const want = new Int8Array(N);
    for (const i of idx) {
      const v = Math.fround(xHost[i] / s), r = Math.round(v), t = r - v === 0.5 && r % 2 !== 0 ? r - 1 : r;
      want[i] = Math.max(-128, Math.min(127, t + 3));
    }
    ours('QuantizeLinear int8 codes', h.agrees(`edgekernels ${name}`, codes, want, 0, idx));
    await run(suite, name, [
      { impl: 'edgekernels', fn: q },
      { impl: 'memcpy', fn: h.copier(bytes / 2) },
      ...await peers(suite, name, (opset) => h.onnxModel({
        op: 'QuantizeLinear', opset,
        inputs: [{ name: 'x', dtype: 'float32', shape: [N] }, { name: 's', dtype: 'float32', shape: [] }, { name: 'z', dtype: 'int8', shape: [] }],
        outputs: [{ name: 'y', dtype: 'int8', shape: [N] }],
      }), {
        ...xFeed,
        s: { dtype: 'float32', shape: [], data: Float32Array.of(0.05) },
        z: { dtype: 'int8', shape: [], data: Int8Array.of(3) },
      }, (r, label) => h.agrees(label, r.y.data, codes, 1, idx)), // ±1: x · (1 / s) can land across a tie from x / s
    ]);
  }
  {
    const codes = new Int8Array(yi.data);
    const suite = 'DequantizeLinear', name = 'int8 → float32, 16M values, scale 0.05, zero point 3';
    const dq = () => ek.run('DequantizeLinear', [yi, s8, zp8], {}, { outputs: [f] });
    dq();
    const deq = new Float32Array(f.data);
    const want = new Float32Array(N);
    for (const i of idx) want[i] = Math.fround((codes[i] - 3) * Math.fround(0.05));
    ours('DequantizeLinear int8', h.agrees(`edgekernels ${name}`, deq, want, 0, idx));
    await run(suite, name, [
      { impl: 'edgekernels', fn: dq },
      { impl: 'memcpy', fn: h.copier(bytes / 2) },
      ...await peers(suite, name, (opset) => h.onnxModel({
        op: 'DequantizeLinear', opset,
        inputs: [{ name: 'x', dtype: 'int8', shape: [N] }, { name: 's', dtype: 'float32', shape: [] }, { name: 'z', dtype: 'int8', shape: [] }],
        outputs: [{ name: 'y', dtype: 'float32', shape: [N] }],
      }), {
        x: { dtype: 'int8', shape: [N], data: codes },
        s: { dtype: 'float32', shape: [], data: Float32Array.of(0.05) },
        z: { dtype: 'int8', shape: [], data: Int8Array.of(3) },
      }, (r, label) => h.agrees(label, r.y.data, deq, ulp(deq), idx)),
    ]);
  }
  for (const t of [x, one, s8, zp8, y8, yi, f]) t.dispose();

  await otherFamilies(h);
}
// ---- every other low-precision family, 4M values ------------------------------------------
// QuantizeLinear / DequantizeLinear (per-tensor scale, default zero point) and, for the float
// families, Cast both ways, one case per direction with memcpy of the same traffic and the
// peers where onnxruntime runs the operator (same Shape / initializer arrangement as above;
// a peer that rejects the type at every opset is reported and left out). Each family has its
// own kernel path (castF32ToE5m2…, packBits / unpackBits for 4- and 2-bit codes, the
// float4e2m1 and 16-bit encoders), none of which the 16M cases above run. Also the blocked
// int4 dequantization of a weight matrix (block 32 along the input dimension).
const FAMILIES = [
  ['float8e4m3fnuz', 18, 8, 1], ['float8e5m2', 19, 8, 1], ['float8e5m2fnuz', 20, 8, 1], ['float4e2m1', 23, 4, 1],
  ['int4', 22, 4, 0.5], ['uint4', 21, 4, 0.5], ['int2', 26, 2, 4], ['uint2', 25, 2, 4],
  ['uint8', 2, 8, 0.05], ['int16', 5, 16, 0.01], ['uint16', 4, 16, 0.01],
];
const CAST_ONLY = [['float16', 10, 16], ['bfloat16', 16, 16]];

export async function otherFamilies(h) {
  const { ek } = h;
  const n = 4 << 20;
  const x = ek.tensor('float32', [n]);
  {
    const d = x.data;
    for (let i = 0; i < n; i++) d[i] = Math.sin(i * 0.37) * 20 * ((i % 7) / 7);
  }
  const xHost = new Float32Array(x.data);
  const f = ek.tensor('float32', [n]);
  const idx = h.sampleIdx(n, 1 << 15);
  const label = (a, b, extra = '') => `${a} → ${b}, 4M values${extra}`;
  /**
   * One case: ours (`impls`, [[impl, fn]], ours first), memcpy and the peers running
   * `peerBuild`, each peer checked first: `check(first, label)` on its first outputs, or, with
   * `qdq` ({ build, want, tol }), through a graph dequantizing its codes in the graph.
   */
  const row = async (suite, name, bytes, impls, peerBuild, feeds, check, qdq) => {
    const list = [...impls.map(([impl, fn]) => ({ impl, fn })), { impl: 'memcpy', fn: h.copier(bytes / 2) }];
    for (const impl of ['web', 'node']) {
      const peer = h.ort[impl];
      if (!peer || !peerBuild) continue;
      const s = await sessionFor(peer, peerBuild, feeds);
      if (!s) { console.error(`# ort-${impl} ${suite} ${name}: not run`); continue; }
      const tag = `ort-${impl} ${suite} ${name}`;
      let ok;
      if (check) ok = check(s.first, tag);
      else {
        const c = await sessionFor(peer, qdq.build, feeds);
        ok = c ? h.agrees(`${tag} (its codes dequantized in the graph)`, c.first.y.data, qdq.want, qdq.tol, idx) : false;
        if (!c) console.error(`# ${tag}: its codes could not be checked, left out`);
      }
      if (ok) list.push({ impl: `ort-${impl}`, fn: s.run, note: `opset ${s.opset}` });
    }
    await h.compare(suite, name, list.map((m) => ({ ...m, bytes })), { rounds: 10 });
  };
  const ours = (what, ok) => { if (!ok) throw new Error(`quant bench: our ${what} is wrong`); };
  // float32 → T by QuantizeLinear, then Shape (nothing of type T leaves the graph; onnxruntime
  // has no Shape kernel for 4- and 2-bit types), or by Cast to float16, fetched. onnxruntime's
  // optimizer removes a Cast whose only consumer is Shape (4M values: 0.07 ms against 39 ms
  // with optimizations disabled), so Cast peers run only where T can leave the graph.
  // (onnxruntime-node aborts the process fetching an int4 output: out of memory.)
  const FETCH = { float16: 'float16' };
  const toT = (op, dt, code, float8) => {
    if (op === 'Cast' && !FETCH[dt]) return null;
    return (opset) => model({
      opset,
      nodes: [
        op === 'Cast'
          ? node('Cast', ['x'], [FETCH[dt] ? 'n' : 'q'], [attrInt('to', code)])
          : node('QuantizeLinear', ['x', 's'], [FETCH[dt] ? 'n' : 'q'], [attrInt('output_dtype', code), ...(float8 ? [attrInt('saturate', 1)] : [])]),
        ...(FETCH[dt] ? [] : [node('Shape', ['q'], ['n'])]),
      ],
      inputs: [valueInfo('x', 'float32', ['N']), ...(op === 'Cast' ? [] : [valueInfo('s', 'float32', [])])],
      outputs: [FETCH[dt] ? valueInfoCode('n', code, ['N']) : valueInfo('n', 'int64', [1])],
    });
  };
  // DequantizeLinear of T codes held in an initializer (the scale is a graph input, so nothing
  // is folded). A Cast of an initializer is constant-folded at session creation (half the
  // time of the unoptimized graph), so Cast T → float32 peers take T as a graph input, where
  // the JS API has the type (float16).
  const fromT = (op, dt, code, raw, shape = [n], attrs = []) => {
    if (op === 'Cast' && !FETCH[dt]) return null;
    return (opset) => model({
      opset,
      nodes: [op === 'Cast' ? node('Cast', ['xq'], ['y'], [attrInt('to', 1)]) : node('DequantizeLinear', ['xq', 's'], ['y'], attrs)],
      inits: op === 'Cast' ? [] : [initializerCode('xq', code, shape, raw)],
      inputs: op === 'Cast' ? [valueInfoCode('xq', code, shape)] : [valueInfo('s', 'float32', op === 'blocked' ? [shape[0], shape[1] / 32] : [])],
      outputs: [valueInfo('y', 'float32', shape)],
    });
  };
  const bytesOf = (t) => new Uint8Array(t.data.buffer, t.data.byteOffset, t.data.byteLength).slice();

  // plain references for our own outputs: integer codes are round-half-to-even(x / s)
  // saturated to the type's range (checked through our dequantization, code · s); float codes
  // from QuantizeLinear (scale 1) must equal Cast's; bfloat16 is float32 rounded to nearest
  // even on its upper 16 bits; float16 is checked against the peers (fetched)
  const RANGE = { int4: [-8, 7], uint4: [0, 15], int2: [-2, 1], uint2: [0, 3], uint8: [0, 255], int16: [-32768, 32767], uint16: [0, 65535] };
  const rne = (v) => { const r = Math.round(v); return r - v === 0.5 && r % 2 !== 0 ? r - 1 : r; };
  const f32u = new Uint32Array(new Float32Array(1).buffer), f32f = new Float32Array(f32u.buffer);
  const bf16 = (v) => { f32f[0] = v; const u = f32u[0]; return ((u + 0x7fff + ((u >>> 16) & 1)) >>> 16) & 0xffff; };

  for (const [dt, code, bits, scale] of FAMILIES) {
    const float8 = dt.startsWith('float8');
    const y = ek.tensor(dt, [n]);
    const s = ek.tensor('float32', [], [scale]);
    const bytes = n * 4 + (n * bits) / 8;
    const sFeed = { s: { dtype: 'float32', shape: [], data: Float32Array.of(scale) } };
    const q = () => ek.run('QuantizeLinear', [x, s], { output_dtype: dt }, { outputs: [y] });
    const dq = () => ek.run('DequantizeLinear', [y, s], {}, { outputs: [f] });
    q(); dq();
    const deq = new Float32Array(f.data);
    if (RANGE[dt]) {
      const [lo, hi] = RANGE[dt], sf = Math.fround(scale), want = new Float32Array(n);
      for (const i of idx) want[i] = Math.fround(Math.max(lo, Math.min(hi, rne(Math.fround(xHost[i] / sf)))) * sf);
      ours(`${dt} QuantizeLinear / DequantizeLinear`, h.agrees(`edgekernels ${dt} (quantized, dequantized)`, deq, want, 0, idx));
    } else {
      const codes = bytesOf(y);
      const c = ek.tensor(dt, [n]);
      ek.run('Cast', [x], { to: dt }, { outputs: [c] });
      ours(`${dt} QuantizeLinear codes (against Cast's)`, h.agrees(`edgekernels ${dt} QuantizeLinear codes against Cast's`, bytesOf(c), codes));
      c.dispose();
    }
    // a peer's codes dequantized in its graph: exact for float codes; an integer code may
    // land across a tie (x · (1 / s) against x / s): one step of the scale
    const qdqCheck = { build: (opset) => model({
      opset,
      nodes: [
        node('QuantizeLinear', ['x', 's'], ['q'], [attrInt('output_dtype', code), ...(float8 ? [attrInt('saturate', 1)] : [])]),
        node('DequantizeLinear', ['q', 's'], ['y']),
      ],
      inputs: [valueInfo('x', 'float32', ['N']), valueInfo('s', 'float32', [])],
      outputs: [valueInfo('y', 'float32', ['N'])],
    }), want: deq, tol: RANGE[dt] ? scale * 1.0001 : 0 };
    await row('QuantizeLinear', label('float32', dt, `, scale ${scale}`), bytes, [['edgekernels', q]],
      toT('QuantizeLinear', dt, code, float8), { x: { dtype: 'float32', shape: [n], data: xHost }, ...sFeed }, null, qdqCheck);
    await row('DequantizeLinear', label(dt, 'float32', `, scale ${scale}`), bytes, [['edgekernels', dq]],
      fromT('DequantizeLinear', dt, code, bytesOf(y)), sFeed, (r, tag) => h.agrees(tag, r.y.data, deq, ulp(deq), idx));
    if (dt.startsWith('float')) {
      const back = ek.tensor('float32', [n]);
      ek.run('Cast', [y], { to: 'float32' }, { outputs: [back] });
      ours(`${dt} Cast to float32 (against DequantizeLinear, scale 1)`, scale !== 1 || h.agrees(`edgekernels Cast ${dt} → float32`, back.data, deq));
      back.dispose();
      await row('Cast', label('float32', dt), bytes, [['edgekernels', () => ek.run('Cast', [x], { to: dt }, { outputs: [y] })]],
        toT('Cast', dt, code, float8), { x: { dtype: 'float32', shape: [n], data: xHost } });
      await row('Cast', label(dt, 'float32'), bytes, [['edgekernels', () => ek.run('Cast', [y], { to: 'float32' }, { outputs: [f] })]],
        fromT('Cast', dt, code, bytesOf(y)), {});
    }
    y.dispose(); s.dispose();
  }
  for (const [dt, code, bits] of CAST_ONLY) {
    const y = ek.tensor(dt, [n]);
    const bytes = n * 4 + (n * bits) / 8;
    const cast = () => ek.run('Cast', [x], { to: dt }, { outputs: [y] });
    cast();
    const yBits = new Uint16Array(y.data);
    if (dt === 'bfloat16') {
      const want = new Uint16Array(n);
      for (const i of idx) want[i] = bf16(xHost[i]);
      ours('Cast float32 → bfloat16', h.agrees('edgekernels Cast float32 → bfloat16', yBits, want, 0, idx));
    }
    const back = () => ek.run('Cast', [y], { to: 'float32' }, { outputs: [f] });
    back();
    const wide = new Float32Array(f.data);
    if (dt === 'bfloat16') {
      const want = new Float32Array(n);
      for (const i of idx) { f32u[0] = yBits[i] << 16; want[i] = f32f[0]; }
      ours('Cast bfloat16 → float32', h.agrees('edgekernels Cast bfloat16 → float32', wide, want, 0, idx));
    }
    // float16: the peers' fetched outputs are the reference (Node 20 has no Math.f16round)
    await row('Cast', label('float32', dt), bytes, [['edgekernels', cast]],
      toT('Cast', dt, code, false), { x: { dtype: 'float32', shape: [n], data: xHost } }, (r, tag) => h.agrees(tag, r.n.data, yBits, 0, idx));
    await row('Cast', label(dt, 'float32'), bytes, [['edgekernels', back]],
      fromT('Cast', dt, code), { xq: { dtype: dt, shape: [n], data: yBits } }, (r, tag) => h.agrees(tag, r.y.data, wide, 0, idx));
    y.dispose();
  }
  // blocked int4 weights [1024, 4096], block 32 along axis 1 (as a 4-bit LLM weight matrix)
  {
    const rows = 1024, cols = 4096, shape = [rows, cols];
    const sh = [rows, cols / 32];
    const sc = new Float32Array(rows * cols / 32).map((_, i) => 0.01 + 0.001 * (i % 13));
    const w = ek.tensor('float32', shape, xHost);
    const S = ek.tensor('float32', sh, sc);
    const q = ek.tensor('int4', shape), out = ek.tensor('float32', shape);
    ek.run('QuantizeLinear', [w, S], { axis: 1, block_size: 32, output_dtype: 'int4' }, { outputs: [q] });
    const bytes = n * 4 + n / 2 + sc.byteLength;
    const dq = () => ek.run('DequantizeLinear', [q, S], { axis: 1, block_size: 32 }, { outputs: [out] });
    dq();
    const deq = new Float32Array(out.data), want = new Float32Array(n);
    for (const i of idx) {
      const sf = sc[i >> 5]; // row i / cols, block (i % cols) / 32: cols / 32 blocks a row, so i >> 5
      want[i] = Math.fround(Math.max(-8, Math.min(7, rne(Math.fround(xHost[i] / sf)))) * sf);
    }
    ours('blocked int4 QuantizeLinear / DequantizeLinear', h.agrees('edgekernels blocked int4 (quantized, dequantized)', deq, want, 0, idx));
    await row('DequantizeLinear', `int4 → float32, [${rows},${cols}] blocked (axis 1, block 32)`, bytes, [['edgekernels', dq]],
      fromT('blocked', 'int4', 22, bytesOf(q), shape, [attrInt('axis', 1), attrInt('block_size', 32)]),
      { s: { dtype: 'float32', shape: sh, data: sc } }, (r, tag) => h.agrees(tag, r.y.data, deq, ulp(deq), idx));
    for (const t of [w, S, q, out]) t.dispose();
  }
  x.dispose(); f.dispose();
}
