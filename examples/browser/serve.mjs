// node examples/browser/serve.mjs [--port 8080] [--model m.bin --tokenizer tokenizer.bin]
//
// A static server on 127.0.0.1 for the browser demo (examples/browser/index.html): it serves
// the package's dist/ (the browser entry and its embedded wasm builds) and examples/, and the
// model under /models/:
//   /models/model.bin, /models/tokenizer.bin   the embedded tiny model (random weights: its
//                                              text is noise), generated at start-up exactly
//                                              as `npm run demo` does, or --model / --tokenizer
// Nothing is fetched from anywhere else: open the printed URL and the page runs offline.
// `npm run build` first. The runtime tests (test/runtimes/run.mjs) use startDemoServer too.
import { existsSync, readFileSync, statSync } from 'node:fs';
import { createServer } from 'node:http';
import { dirname, extname, join, normalize, sep } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = join(dirname(fileURLToPath(import.meta.url)), '..', '..');
const TYPES = { '.html': 'text/html; charset=utf-8', '.js': 'text/javascript', '.mjs': 'text/javascript', '.wasm': 'application/wasm', '.json': 'application/json', '.bin': 'application/octet-stream' };

/**
 * Starts the server. `model` / `tokenizer`: checkpoint and tokenizer bytes served as
 * /models/model.bin and /models/tokenizer.bin (default: the embedded tiny model);
 * `extra`: more files, { '/models/name.bin': bytes }. Resolves { base, requests, close }:
 * `requests` lists every path asked for.
 */
export async function startDemoServer({ port = 0, model, tokenizer, extra = {} } = {}) {
  if (!model || !tokenizer) {
    const { tinyModel } = await import('edgekernels');
    const tiny = tinyModel(1); // the model `npm run demo` embeds
    model ??= tiny.model;
    tokenizer ??= tiny.tokenizer;
  }
  const files = new Map(Object.entries({ '/models/model.bin': model, '/models/tokenizer.bin': tokenizer, ...extra }));
  const requests = [];
  const server = createServer((req, res) => {
    const url = new URL(req.url, 'http://127.0.0.1');
    requests.push(url.pathname);
    if (files.has(url.pathname)) {
      const bytes = files.get(url.pathname);
      res.writeHead(200, { 'content-type': 'application/octet-stream', 'content-length': bytes.byteLength, 'cache-control': 'no-store' });
      res.end(bytes);
      return;
    }
    if (url.pathname === '/' || url.pathname === '/examples/browser') {
      res.writeHead(302, { location: '/examples/browser/' });
      res.end();
      return;
    }
    const rel = normalize(decodeURIComponent(url.pathname)).replace(/^[/\\]+/, '');
    const allowed = ['dist', 'examples'].some((d) => rel === d || rel.startsWith(d + sep));
    let file = join(root, rel);
    if (allowed && existsSync(file) && statSync(file).isDirectory()) file = join(file, 'index.html');
    if (!allowed || rel.includes('..') || !existsSync(file)) {
      res.writeHead(404, { 'content-type': 'text/plain' });
      res.end('not found');
      return;
    }
    res.writeHead(200, { 'content-type': TYPES[extname(file)] ?? 'application/octet-stream', 'cache-control': 'no-store' });
    res.end(readFileSync(file));
  });
  server.keepAliveTimeout = 1000;
  await new Promise((resolve, reject) => {
    server.on('error', reject);
    server.listen(port, '127.0.0.1', resolve);
  });
  const base = `http://127.0.0.1:${server.address().port}`;
  const close = () =>
    new Promise((r) => {
      server.closeAllConnections?.();
      server.close(r);
    });
  return { base, requests, close };
}

if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) {
  const opts = { port: '8080', model: undefined, tokenizer: undefined };
  const argv = process.argv.slice(2);
  for (let i = 0; i < argv.length; i++) {
    const m = /^--(port|model|tokenizer)(?:=(.*))?$/.exec(argv[i]);
    const v = m && (m[2] ?? argv[++i]);
    if (!m || v === undefined) {
      console.error(`serve: unknown or incomplete argument ${argv[i]} (flags: --port --model --tokenizer)`);
      process.exit(2);
    }
    opts[m[1]] = v;
  }
  if (opts.model && !opts.tokenizer) opts.tokenizer = 'tokenizer.bin'; // as npm run demo
  if (!existsSync(join(root, 'dist', 'browser.js'))) {
    console.error('serve: dist/browser.js is missing; run `npm run build` first');
    process.exit(1);
  }
  const read = (f) => (f ? new Uint8Array(readFileSync(f)) : undefined);
  const { base } = await startDemoServer({ port: Number(opts.port), model: read(opts.model), tokenizer: read(opts.tokenizer) });
  console.log(`model: ${opts.model ?? 'embedded tiny model (random weights — the text is noise)'}`);
  console.log(`open ${base}/examples/browser/   (decode-step example: ${base}/examples/browser/decode.html; Ctrl-C stops)`);
}
