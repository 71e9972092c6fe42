// npm run demo [-- --model m.bin --tokenizer tokenizer.bin --prompt "..." --steps 256 --temperature 1 --seed 42 --topp 0.9 --cache float32|float16|bfloat16|int8|float8e4m3fn --quantize q8]
//
// Text generation with a Llama-style model in llama2.c's checkpoint format, driven by the
// package's kernels: matrix-vector products, RMSNorm, RoPE, SwiGLU, softmax/argmax and a
// KVCache allocated once (append in place + attention over the valid prefix).
//
// Without --model it runs the embedded tiny model, generated deterministically with RANDOM
// weights and a byte-level tokenizer: its text is noise. With --model / --tokenizer it loads
// a real llama2.c checkpoint (e.g. stories15M.bin + tokenizer.bin); at --temperature 0 the
// text is llama2.c's `run` output for the same prompt and step count. A version-2 (Q8_0)
// checkpoint (llama2.c's export.py --version 2, read by its runq.c) runs runq.c's int8 forward
// pass; --quantize q8 converts a float32 checkpoint that way at load (about 4x fewer weight
// bytes per token, 2-2.5x the tokens/s on a stories15M-sized model; the logits move by the
// quantization error, so the text is runq.c's, not run.c's).
import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { init, KernelError, Llama, Sampler, Tokenizer, generate, tinyModel } from '../dist/index.js';

/** Exits with one line on stderr (2: bad usage, 1: a file or model that cannot be used). */
function die(msg, code = 1) {
  console.error(`demo: ${msg}`);
  process.exit(code);
}
// `npm run demo` runs in the package root; relative paths mean the directory it was typed in
const here = process.env.INIT_CWD || process.cwd();
const readBytes = (path, what) => {
  try {
    return new Uint8Array(readFileSync(resolve(here, path)));
  } catch (e) {
    return die(`${what} ${path}: ${e.code === 'ENOENT' ? 'no such file' : e.code === 'EISDIR' ? 'is a directory' : e.message}`);
  }
};
// `demo | head` closes stdout early: stop quietly, as run.c does on SIGPIPE
process.stdout.on('error', (e) => (e.code === 'EPIPE' ? process.exit(0) : die(e.message)));

/** glibc's atoi of a decimal integer: strtol (saturating at ±2^63), then the low 32 bits as an int. */
function atoi(flag, v) {
  if (!/^\s*[+-]?\d+\s*$/.test(v)) die(`${flag} expects an integer, got ${v}`, 2);
  let n = BigInt(v.trim());
  const LONG = 2n ** 63n;
  n = n >= LONG ? LONG - 1n : n < -LONG ? -LONG : n;
  return BigInt.asIntN(32, n);
}

/** run.c reads -s with atoi into an unsigned long long: int32 wrap, then 64-bit unsigned; 0 means time(NULL). */
function runcSeed(v) {
  return BigInt.asUintN(64, atoi('--seed', v));
}

/** atof of a decimal number (strtod's decimal form; hex, binary, octal or words are usage errors), into a float as run.c stores it. */
function atof(flag, v) {
  if (!/^\s*[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?\s*$/.test(v)) die(`${flag} expects a decimal number, got ${v}`, 2);
  return Math.fround(Number(v.trim()));
}

function parseArgs(argv) {
  const opts = { steps: 256, temperature: 1.0, topp: 0.9, prompt: '', seed: undefined, model: undefined, tokenizer: undefined, cache: 'float32', quantize: undefined };
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i];
    const m = /^--([a-z]+)(?:=(.*))?$/s.exec(a);
    if (!m || !Object.hasOwn(opts, m[1])) {
      if (a === '--help' || a === '-h') { console.log(readFileSync(new URL(import.meta.url), 'utf8').split('\n')[0].slice(3)); process.exit(0); }
      console.error(`demo: unknown argument ${a} (flags: --model --tokenizer --prompt --steps --temperature --topp --seed --cache --quantize)`);
      process.exit(2);
    }
    const v = m[2] ?? argv[++i];
    if (v === undefined) { console.error(`demo: ${a} needs a value`); process.exit(2); }
    opts[m[1]] = v;
  }
  // run.c reads the values with atoi / atof (steps as an int: 4294967297 is 1), the floats
  // into a float (1.00000001 is 1, −1e−50 is −0, 1e39 is ∞), then corrects the out-of-range
  // ones; the same flags give the same text. Forms atoi / atof would read differently from
  // JavaScript (1e1, 0x8, 0b1) are usage errors instead.
  opts.steps = Number(typeof opts.steps === 'string' ? atoi('--steps', opts.steps) : opts.steps);
  if (typeof opts.temperature === 'string') opts.temperature = atof('--temperature', opts.temperature);
  if (typeof opts.topp === 'string') opts.topp = atof('--topp', opts.topp);
  if (opts.temperature < 0) opts.temperature = 0;
  if (opts.topp < 0 || opts.topp > 1) opts.topp = 0.9;
  if (opts.steps < 0) opts.steps = 0; // then 0 → seq_len, as run.c
  if (opts.seed !== undefined) opts.seed = runcSeed(opts.seed);
  if (opts.quantize !== undefined && opts.quantize !== 'q8') { console.error('demo: --quantize expects q8'); process.exit(2); }
  return opts;
}

const o = parseArgs(process.argv.slice(2));
let modelBytes, tokBytes, label;
if (o.model) {
  modelBytes = readBytes(o.model, '--model');
  tokBytes = readBytes(o.tokenizer ?? 'tokenizer.bin', '--tokenizer');
  label = o.model;
} else {
  const tiny = tinyModel(1);
  modelBytes = tiny.model;
  tokBytes = o.tokenizer ? readBytes(o.tokenizer, '--tokenizer') : tiny.tokenizer;
  label = 'embedded tiny model (random weights — the text is noise)';
}

// a checkpoint, tokenizer or option the package rejects is one line, not a stack trace
const orDie = (f) => {
  try {
    return f();
  } catch (e) {
    if (e instanceof KernelError) die(e.message);
    throw e;
  }
};
const ek = await init();
const model = orDie(() => new Llama(ek, modelBytes, { cacheDtype: o.cache, quantize: o.quantize }));
const c = model.config;
const tokenizer = orDie(() => Tokenizer.parse(tokBytes, c.vocabSize));
// run.c: rng_seed is unsigned, so only 0 (the default) means time(NULL)
const seed = o.seed !== undefined && o.seed !== 0n ? o.seed : BigInt(Math.floor(Date.now() / 1000));
const sampler = orDie(() => new Sampler(c.vocabSize, { temperature: o.temperature, topp: o.topp, seed }));

console.error(`model: ${label}`);
console.error(`  dim ${c.dim}, hidden ${c.hiddenDim}, layers ${c.nLayers}, heads ${c.nHeads}/${c.nKvHeads} kv, vocab ${c.vocabSize}, seq_len ${c.seqLen}; build ${ek.stats().build}`);
if (model.groupSize) console.error(`  weights: Q8_0 (int8, groups of ${model.groupSize}, runq.c's arithmetic)${o.quantize ? ', quantized at load' : ''}`);
/** The shortest decimal that reads back as the float32 x (0.9, not 0.8999999761581421). */
function f32str(x) {
  for (let p = 1; p < 9; p++) if (Math.fround(Number(x.toPrecision(p))) === x) return String(Number(x.toPrecision(p)));
  return String(x);
}
console.error(`  temperature ${f32str(o.temperature)}, topp ${f32str(o.topp)}, seed ${seed}, steps ${o.steps}`);

const cacheOffset = model.cache.byteOffset;
const memBefore = ek.stats().memoryBytes;
let moved = 0, inUse = -1;
const res = orDie(() => generate(model, tokenizer, sampler, {
  prompt: o.prompt,
  steps: o.steps,
  onPiece: (bytes) => process.stdout.write(bytes),
  onStep: () => {
    // no step allocates: the memory, the cache's place and the bytes of live tensors stay
    // (from the first step on, once the step's buffers exist)
    const now = ek.stats().bytesInUse;
    if (model.cache.byteOffset !== cacheOffset || ek.memory.buffer.byteLength !== memBefore || (inUse >= 0 && now !== inUse)) moved++;
    inUse = now;
  },
}));
process.stdout.write('\n');
const memAfter = ek.stats().memoryBytes;

// run.c reports the speed only when more than one position ran (its timer starts after the first)
if (res.steps > 1) console.error(`achieved tok/s: ${res.tokensPerSecond.toFixed(1)} (${res.steps} positions, ${res.promptTokens.length} prompt tokens)`);
console.error(`KV cache: ${model.cache.bytes} bytes (${c.nLayers} layers × K,V × ${model.cache.kvHeads} heads × ${model.cache.capacity} × ${model.cache.headDim} ${model.cache.dtype}${model.cache.dtype === 'int8' || model.cache.dtype === 'float8e4m3fn' ? ', plus one float32 scale per row' : ''}) at byte offset ${cacheOffset}`);
const ok = moved === 0 && model.cache.byteOffset === cacheOffset && memAfter === memBefore;
console.error(`cache check: ${ok ? 'OK' : 'FAILED'} — byteOffset ${cacheOffset} → ${model.cache.byteOffset}, memory ${memBefore} → ${memAfter} bytes over ${res.steps} steps`);
model.dispose();
ek.dispose();
if (!ok) process.exit(1);
