// The browser demo (examples/browser/index.html) in headless Chromium, run by run.mjs: the
// page is served from 127.0.0.1 by examples/browser/serve.mjs (the server users run), fetches
// the model from there, and must print the same tokens and text as the Node package for the
// same model, prompt, steps, temperature and seed (computed here, in this process). Every
// request the page makes must go to that origin (offline), the cache check must be OK, and
// a screenshot of the text element must show text: compared with a screenshot of the same
// element emptied (which must be one flat colour), enough pixels differ.
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { startDemoServer } from '../../examples/browser/serve.mjs';
import { countDiffering, decodePng, distinctColours } from './png.mjs';

/** What `npm run demo` computes for these settings, via the node entry. */
async function nodeDemo(pkg, modelBytes, tokBytes, { prompt, steps, temperature, topp = 0.9, seed, cache = 'float32', weights }) {
  const ek = await pkg.init({ build: 'simd' });
  try {
    const model = new pkg.Llama(ek, modelBytes, { cacheDtype: cache, quantize: weights === 'q8' ? 'q8' : undefined });
    const tokenizer = pkg.Tokenizer.parse(tokBytes, model.config.vocabSize);
    const sampler = new pkg.Sampler(model.config.vocabSize, { temperature, topp, seed: BigInt(seed) });
    const res = pkg.generate(model, tokenizer, sampler, { prompt, steps });
    const out = { tokens: res.tokens, text: new TextDecoder().decode(res.text), cacheBytes: model.cache.bytes };
    model.dispose();
    return out;
  } finally {
    ek.dispose();
  }
}

const query = (o) => '?' + new URLSearchParams(Object.entries(o).map(([k, v]) => [k, String(v)])).toString();

/**
 * Runs the checks with an open playwright `browser`; `record(name, ok, detail)` is run.mjs's.
 * Returns nothing; every problem is recorded as a failure.
 */
export async function checkBrowserDemo({ browser, record, dist }) {
  const pkg = await import(pathToFileURL(join(dist, 'index.js')).href);
  const tiny = pkg.tinyModel(1), other = pkg.tinyModel(2);
  const server = await startDemoServer({ extra: { '/models/seed2.bin': other.model } });
  const page = await browser.newPage({ viewport: { width: 1000, height: 800 } });
  const requests = [], consoleLines = [];
  page.on('request', (r) => requests.push(r.url()));
  page.on('console', (m) => consoleLines.push(m.text()));
  page.on('pageerror', (e) => consoleLines.push(String(e)));
  const open = async (params) => {
    requests.length = 0;
    await page.goto(`${server.base}/examples/browser/${query(params)}`, { timeout: 30_000 });
    await page.waitForSelector('#status[data-status="done"], #status[data-status="error"]', { timeout: 60_000 });
    return page.evaluate(() => {
      const $ = (id) => document.getElementById(id);
      return {
        status: $('status').dataset.status,
        statusText: $('status').textContent,
        text: $('text').textContent,
        tokens: $('text').dataset.tokens ? JSON.parse($('text').dataset.tokens) : null,
        modelUrl: $('model').dataset.url,
        tps: $('tps').textContent,
        kv: $('kv').textContent,
        checkOk: $('check').dataset.ok,
        check: $('check').textContent,
        config: $('config').textContent,
      };
    });
  };
  const offline = (label) => {
    const foreign = requests.filter((u) => !u.startsWith(server.base + '/') && !u.startsWith('data:'));
    record(`browser demo ${label}: every request goes to ${server.base} (${requests.length} requests)`, foreign.length === 0 && requests.length > 0, foreign.join(' '));
  };
  try {
    // 1. the default model (the embedded tiny one, served at /models/), seeded sampling at temperature 1
    const settings = { prompt: 'Once upon a time', steps: 64, temperature: 1, seed: 42 };
    const want = await nodeDemo(pkg, tiny.model, tiny.tokenizer, settings);
    const got = await open(settings);
    const detail = `page: ${got.statusText} ${JSON.stringify(got.text)} ${JSON.stringify(got.tokens)}; node: ${JSON.stringify(want.text)} ${JSON.stringify(want.tokens)}; console: ${consoleLines.join(' | ').slice(-1000)}`;
    const same = got.status === 'done' && JSON.stringify(got.tokens) === JSON.stringify(want.tokens) && got.text === want.text;
    record(`browser demo: default model, same ${want.tokens.length} tokens and text as the Node demo`, same && want.tokens.length > 20 && want.text.length > 20, same ? JSON.stringify(got.text) : detail);
    record('browser demo: the model came from /models/model.bin on 127.0.0.1', got.modelUrl === `${server.base}/models/model.bin` && server.requests.includes('/models/model.bin') && server.requests.includes('/models/tokenizer.bin'), `${got.modelUrl}; server saw ${server.requests.join(' ')}`);
    const tps = Number(/^([\d.]+) \(64 positions, /.exec(got.tps)?.[1]);
    const kvBytes = Number(/^([\d,]+) bytes/.exec(got.kv)?.[1].replace(/,/g, ''));
    record('browser demo: shows tokens/s, KV-cache bytes and the cache check', tps > 0 && kvBytes === want.cacheBytes && got.checkOk === 'true' && got.check.startsWith('OK'), `tokens/s "${got.tps}", KV "${got.kv}" (node: ${want.cacheBytes} bytes), check "${got.check}"`);
    offline('(default model)');

    // 2. the screenshot: text must be visible in the output element
    const el = page.locator('#text');
    const withText = decodePng(await el.screenshot({ animations: 'disabled', caret: 'hide', timeout: 15_000 }));
    await page.evaluate(() => {
      const t = document.getElementById('text'), r = t.getBoundingClientRect();
      t.style.width = `${r.width}px`;
      t.style.height = `${r.height}px`;
      t.style.boxSizing = 'border-box';
      t.textContent = '';
    });
    const blank = decodePng(await el.screenshot({ animations: 'disabled', caret: 'hide', timeout: 15_000 }));
    const bg = Array.from(blank.rgba.subarray(0, 4));
    const ink = countDiffering(withText, bg);
    const area = withText.width * withText.height;
    const sameSize = withText.width === blank.width && withText.height === blank.height;
    const blankFlat = distinctColours(blank) === 1;
    record(
      `browser demo: screenshot of the text (${withText.width}×${withText.height}) shows text — ${ink} pixels (${((100 * ink) / area).toFixed(1)}%) differ from the emptied element's flat colour rgba(${bg})`,
      sameSize && blankFlat && area > 0 && ink >= 200 && ink >= area * 0.01 && distinctColours(withText) > 2,
      `same size ${sameSize} (${blank.width}×${blank.height}), emptied element flat ${blankFlat} (${distinctColours(blank)} colours), ${distinctColours(withText)} colours with text`,
    );

    // 3. ?model=&tokenizer= URLs, greedy decoding and another cache dtype
    const settings2 = { model: '/models/seed2.bin', tokenizer: '/models/tokenizer.bin', prompt: 'héllo wörld', steps: 40, temperature: 0, seed: 7, cache: 'float16' };
    const want2 = await nodeDemo(pkg, other.model, tiny.tokenizer, settings2);
    const got2 = await open(settings2);
    const same2 = got2.status === 'done' && JSON.stringify(got2.tokens) === JSON.stringify(want2.tokens) && got2.text === want2.text;
    record(
      'browser demo: ?model=&tokenizer= (another checkpoint, greedy, float16 cache) gives the Node result',
      same2 && got2.modelUrl === `${server.base}/models/seed2.bin` && server.requests.includes('/models/seed2.bin') && want2.text !== want.text && got2.checkOk === 'true',
      `page: ${got2.statusText} ${JSON.stringify(got2.text)} ${got2.modelUrl}; node: ${JSON.stringify(want2.text)}; console: ${consoleLines.join(' | ').slice(-1000)}`,
    );
    offline('(?model=)');

    // 3b. Q8_0 weights (quantized at load), simd build on both sides: the int8 activations make
    // the logits sensitive to last-bit differences, which the relaxed build's fused
    // multiply-adds would introduce
    const settings3 = { prompt: 'Once upon a time', steps: 48, temperature: 0, seed: 3, weights: 'q8', build: 'simd' };
    const want3 = await nodeDemo(pkg, tiny.model, tiny.tokenizer, settings3);
    const got3q = await open(settings3);
    record(
      'browser demo: ?weights=q8 (Q8_0, runq.c arithmetic, greedy) gives the Node result',
      got3q.status === 'done' && JSON.stringify(got3q.tokens) === JSON.stringify(want3.tokens) && got3q.text === want3.text && got3q.checkOk === 'true' && /weights Q8_0 \(groups of 16\)/.test(got3q.config ?? ''),
      `page: ${got3q.statusText} ${JSON.stringify(got3q.text)} config "${got3q.config}"; node: ${JSON.stringify(want3.text)}`,
    );

    // 4. a model URL that does not exist: the page says so
    const got3 = await open({ model: '/models/missing.bin' });
    record('browser demo: a missing model shows an error on the page', got3.status === 'error' && /HTTP 404/.test(got3.statusText), got3.statusText);
  } catch (e) {
    record('browser demo', false, `${e.stack}; console: ${consoleLines.join(' | ').slice(-1000)}`);
  } finally {
    await page.close().catch(() => {});
    await server.close();
  }
}
