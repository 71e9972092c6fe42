// The browser side of `npm run demo` (examples/demo.mjs): the same model loader, tokenizer,
// sampler and generation loop, from the `browser` entry (wasm builds embedded, nothing to
// configure). The checkpoint and tokenizer are fetched from this page's origin; the query
// string carries the CLI's flags (see index.html).
//
// Results are also left in the DOM for tests: #status[data-status] is 'done' or 'error',
// #text holds the generated text and data-tokens every token fed or sampled (JSON),
// #check[data-ok] tells whether the KV cache stayed where it was allocated.
import { init, Llama, Sampler, Tokenizer, generate } from 'edgekernels';

const $ = (id) => document.getElementById(id);
const status = $('status');
const params = new URLSearchParams(location.search);
const opt = (name, fallback) => (params.has(name) && params.get(name) !== '' ? params.get(name) : fallback);

// the form shows the parameters in use; submitting it reloads the page with new ones
for (const el of $('form').elements) if (el.name && params.has(el.name)) el.value = params.get(el.name);

function number(name, fallback) {
  const v = Number(opt(name, fallback));
  if (!Number.isFinite(v)) throw new Error(`${name}: expected a number, got ${JSON.stringify(params.get(name))}`);
  return v;
}

async function fetchBytes(what, url) {
  const res = await fetch(url, { cache: 'no-store' });
  if (!res.ok) throw new Error(`${what} ${url}: HTTP ${res.status} (serve the page with node examples/browser/serve.mjs)`);
  return new Uint8Array(await res.arrayBuffer());
}

async function main() {
  const modelUrl = new URL(opt('model', '/models/model.bin'), location.href);
  const tokUrl = new URL(opt('tokenizer', '/models/tokenizer.bin'), location.href);
  const steps = number('steps', 256), temperature = number('temperature', 1), topp = number('topp', 0.9);
  const seedArg = BigInt(opt('seed', '0'));
  // run.c: seed <= 0 means time(NULL).
  const seed = seedArg > 0n ? seedArg : BigInt(Math.floor(Date.now() / 1000));
  const prompt = opt('prompt', '');
  const cacheDtype = opt('cache', 'float32');
  const quantize = opt('weights', 'float32') === 'q8' ? 'q8' : undefined;
  const build = opt('build', undefined);

  status.textContent = `fetching ${modelUrl.pathname} and ${tokUrl.pathname}…`;
  const [modelBytes, tokBytes, ek] = await Promise.all([fetchBytes('model', modelUrl), fetchBytes('tokenizer', tokUrl), init(build ? { build } : {})]);
  const model = new Llama(ek, modelBytes, { cacheDtype, quantize });
  const c = model.config;
  const tokenizer = Tokenizer.parse(tokBytes, c.vocabSize);
  const sampler = new Sampler(c.vocabSize, { temperature, topp, seed });
  $('model').textContent = `${modelUrl.href} (${modelBytes.length.toLocaleString('en')} bytes), ${tokUrl.href} (${tokBytes.length.toLocaleString('en')} bytes)`;
  $('model').dataset.url = modelUrl.href;
  $('config').textContent = `dim ${c.dim}, hidden ${c.hiddenDim}, layers ${c.nLayers}, heads ${c.nHeads}/${c.nKvHeads} kv, vocab ${c.vocabSize}, seq_len ${c.seqLen}; build ${ek.stats().build}; weights ${model.groupSize ? `Q8_0 (groups of ${model.groupSize})` : 'float32'}; temperature ${temperature}, topp ${topp}, seed ${seed}, steps ${steps}`;
  status.textContent = 'generating…';
  await new Promise((r) => setTimeout(r, 0)); // let the page paint before the (synchronous) loop

  const cacheOffset = model.cache.byteOffset;
  const memBefore = ek.stats().memoryBytes;
  let moved = 0;
  const res = generate(model, tokenizer, sampler, {
    prompt,
    steps,
    onStep: () => {
      if (model.cache.byteOffset !== cacheOffset || ek.memory.buffer.byteLength !== memBefore) moved++;
    },
  });
  const memAfter = ek.stats().memoryBytes;
  const text = new TextDecoder().decode(res.text);
  $('text').textContent = text;
  $('text').dataset.tokens = JSON.stringify(res.tokens);
  $('tps').textContent = `${res.tokensPerSecond.toFixed(1)} (${res.steps} positions, ${res.promptTokens.length} prompt tokens)`;
  const cache = model.cache;
  $('kv').textContent = `${cache.bytes.toLocaleString('en')} bytes (${c.nLayers} layers × K,V × ${cache.kvHeads} heads × ${cache.capacity} × ${cache.headDim} ${cache.dtype}${cache.dtype === 'int8' || cache.dtype === 'float8e4m3fn' ? ', plus one float32 scale per row' : ''}) at byte offset ${cacheOffset}`;
  const ok = moved === 0 && cache.byteOffset === cacheOffset && memAfter === memBefore;
  $('check').textContent = `${ok ? 'OK' : 'FAILED'} — byteOffset ${cacheOffset} → ${cache.byteOffset}, memory ${memBefore} → ${memAfter} bytes over ${res.steps} steps`;
  $('check').dataset.ok = String(ok);
  model.dispose();
  ek.dispose();
  status.textContent = `done: ${res.tokens.length - res.promptTokens.length} tokens generated`;
  status.dataset.status = 'done';
}

main().catch((e) => {
  status.textContent = `error: ${e && e.message ? e.message : e}`;
  status.dataset.status = 'error';
  console.error(e);
});
