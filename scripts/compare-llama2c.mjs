#!/usr/bin/env node
// node scripts/compare-llama2c.mjs --run <llama2.c run binary> --model model.bin --tokenizer tokenizer.bin
//        [--steps 64,256] [--prompt "Once upon a time" --prompt ...] [--no-prompt] [--cache float32] [--top 5]
//
// Greedy decoding (temperature 0) by llama2.c's own `run` and by this package, compared byte for
// byte: for every prompt × step count it runs
//     <run> model.bin -z tokenizer.bin -t 0 -n <steps> [-i <prompt>]
//     node examples/demo.mjs --model model.bin --tokenizer tokenizer.bin --temperature 0 --steps <steps> [--prompt <prompt>]
// and compares their stdout (both print the prompt pieces, the generated pieces and one final
// newline; run.c's tok/s line goes to stderr and is ignored). When they differ it reports the first
// differing token: its position, whether it was a forced prompt token (then the prompt encoding
// differs) or a sampled one, this package's top logits at that position, the token llama2.c must
// have chosen there (the candidate whose printed piece llama2.c's text continues with) and the logit
// margin between the two — a margin of a few float32 ulps is a near-tie decided by summation order
// or libm (expf, powf, sinf/cosf) differences, a large one is a real disagreement.
//
// Build llama2.c yourself (`make run` in a llama2.c checkout, i.e. gcc -O3 run.c -lm; -Ofast /
// `make runfast` reassociates float sums and may flip near-ties), and `npm run build` here first.
// A version-2 (Q8_0) checkpoint goes with llama2.c's `runq` (gcc -O3 runq.c -lm): the demo runs
// it as runq.c does (see the README on how far that text is guaranteed).
// An empty prompt is run without -i (run.c versions differ on `-i ""`). Exit code: 0 when every
// case is identical, 1 otherwise, 2 on bad arguments.
import { spawnSync } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

const root = fileURLToPath(new URL('..', import.meta.url));
const DEFAULT_PROMPTS = ['', 'Once upon a time', 'The little girl saw a big dog. She said,'];

function usage(msg) {
  if (msg) console.error(`compare-llama2c: ${msg}`);
  console.error(readFileSync(fileURLToPath(import.meta.url), 'utf8').split('\n').slice(1, 3).map((l) => l.slice(3)).join('\n'));
  process.exit(2);
}

function parseArgs(argv) {
  const o = { run: undefined, model: undefined, tokenizer: undefined, steps: [64, 256], prompts: [], cache: 'float32', top: 5, noPrompt: false };
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i];
    if (a === '--help' || a === '-h') usage();
    if (a === '--no-prompt') { o.noPrompt = true; continue; }
    const m = /^--([a-z]+)(?:=(.*))?$/s.exec(a);
    if (!m) usage(`unknown argument ${a}`);
    const v = m[2] ?? argv[++i];
    if (v === undefined) usage(`${a} needs a value`);
    switch (m[1]) {
      case 'run': case 'model': case 'tokenizer': case 'cache': o[m[1]] = v; break;
      case 'prompt': o.prompts.push(v); break;
      case 'steps': o.steps = v.split(',').map(Number); if (o.steps.some((s) => !Number.isInteger(s) || s < 0)) usage('--steps expects integers >= 0, comma-separated'); break;
      case 'top': o.top = Number(v); if (!Number.isInteger(o.top) || o.top < 1) usage(`--top expects a positive integer, got ${v}`); break;
      default: usage(`unknown flag ${a}`);
    }
  }
  if (!o.run || !o.model) usage('--run and --model are required');
  o.tokenizer ??= 'tokenizer.bin';
  for (const k of ['run', 'model', 'tokenizer']) if (!existsSync(o[k])) usage(`--${k} ${o[k]}: no such file`);
  if (o.prompts.length === 0) o.prompts = o.noPrompt ? [''] : DEFAULT_PROMPTS;
  return o;
}

const o = parseArgs(process.argv.slice(2));
if (!existsSync(`${root}dist/index.js`)) usage('dist/ is missing: run `npm run build` first');
const pkg = await import(`${root}dist/index.js`);

const show = (b) => JSON.stringify(Buffer.from(b).toString('latin1'));

function runC(steps, prompt) {
  const args = [o.model, '-z', o.tokenizer, '-t', '0', '-n', String(steps)];
  if (prompt !== '') args.push('-i', prompt);
  const r = spawnSync(o.run, args, { maxBuffer: 1 << 28 });
  return { out: r.stdout ?? Buffer.alloc(0), err: String(r.stderr ?? ''), status: r.status, signal: r.signal };
}

function runDemo(steps, prompt) {
  const args = [`${root}examples/demo.mjs`, '--model', o.model, '--tokenizer', o.tokenizer, '--temperature', '0', '--steps', String(steps), '--cache', o.cache];
  if (prompt !== '') args.push('--prompt', prompt);
  const r = spawnSync(process.execPath, args, { maxBuffer: 1 << 28 });
  return { out: r.stdout ?? Buffer.alloc(0), err: String(r.stderr ?? ''), status: r.status };
}

// In-process run of the same generate() the demo uses, keeping each step's top logits.
const ek = await pkg.init();
const model = new pkg.Llama(ek, new Uint8Array(readFileSync(o.model)), { cacheDtype: o.cache });
const V = model.config.vocabSize;
const tokenizer = pkg.Tokenizer.parse(new Uint8Array(readFileSync(o.tokenizer)), V);
const K = Math.max(2, o.top, 16);

function runHere(steps, prompt) {
  const tops = [];
  const res = pkg.generate(model, tokenizer, new pkg.Sampler(V, { temperature: 0 }), {
    prompt, steps,
    onStep: () => {
      const l = model.logits;
      const best = [];
      for (let i = 0; i < V; i++) {
        const v = l[i];
        if (best.length < K || v > best[best.length - 1].logit) {
          let j = best.length < K ? best.length : K - 1;
          while (j > 0 && best[j - 1].logit < v) { best[j] = best[j - 1]; j--; }
          best[j] = { token: i, logit: v };
        }
      }
      tops.push(best);
    },
  });
  return { res, tops };
}

const ulp = (x) => { const f = new Float32Array([Math.abs(x)]); const u = new Uint32Array(f.buffer); u[0]++; return f[0] - Math.abs(x); };

function firstDifference(cOut, ours, here, prompt) {
  let d = 0;
  while (d < cOut.length && d < ours.length && cOut[d] === ours[d]) d++;
  const { res, tops } = here;
  // printed bytes of each token after the first (token i was produced at position i − 1)
  let at = 0, k = 1;
  for (; k < res.tokens.length; k++) {
    const n = pkg.Tokenizer.printable(tokenizer.decode(res.tokens[k - 1], res.tokens[k])).length;
    if (at + n > d) break;
    at += n;
  }
  const lines = [`first differing byte ${d}: llama2.c ${show(cOut.subarray(d, d + 24))}… vs here ${show(ours.subarray(d, d + 24))}…`];
  if (k >= res.tokens.length) {
    // this side stopped first: at BOS (a sampled token 1 ends generation) or at the step count
    const last = tops[res.steps - 1];
    const stoppedAtBos = res.steps < tops.length + 1 && last && last[0].token === 1;
    lines.push(`  here generation ended after ${res.tokens.length - 1} tokens (${res.steps} positions${stoppedAtBos ? ', BOS sampled' : ''}); llama2.c printed more`);
    if (last) lines.push(`  top ${o.top} here at position ${res.steps - 1}: ${last.slice(0, o.top).map((c) => `${c.token} ${show(tokenizer.vocab[c.token])} ${c.logit}`).join(' | ')}`);
    return lines;
  }
  const pos = k - 1, prev = res.tokens[k - 1], mine = res.tokens[k];
  if (k < res.promptTokens.length) {
    lines.push(`  in the PROMPT: forced token ${k} (id ${mine} ${show(tokenizer.vocab[mine])}) prints differently — the prompt encoding or decode differs, not the model`);
    lines.push(`  prompt tokens here: [${res.promptTokens.join(', ')}]`);
    return lines;
  }
  const top = tops[pos];
  const rest = cOut.subarray(at);
  // llama2.c stopped here (only its final newline is left): it sampled BOS
  const cStopped = rest.length === 1 && rest[0] === 0x0a;
  const cands = top.filter((c) => c.token !== mine).map((c) => ({ ...c, piece: pkg.Tokenizer.printable(tokenizer.decode(prev, c.token)) }))
    .filter((c) => (cStopped ? c.token === 1 : c.piece.length > 0 && c.piece.every((b, i) => rest[i] === b)));
  const mineLogit = top.find((c) => c.token === mine)?.logit ?? model.logits[mine];
  lines.push(`  sampled token at position ${pos} (token ${k} of the sequence, after ${res.promptTokens.length} prompt tokens incl. BOS): here id ${mine} ${show(tokenizer.vocab[mine])} logit ${mineLogit}`);
  if (cands.length > 0) {
    const c = cands[0];
    const gap = mineLogit - c.logit;
    lines.push(`  llama2.c chose id ${c.token} ${show(tokenizer.vocab[c.token])} (${cStopped ? 'its text ends here: BOS' : "its piece continues llama2.c's text"}${cands.length > 1 ? `; ${cands.length} candidates match, the likeliest shown` : ''}), logit here ${c.logit}`);
    // float32 cache: this package's logits agree with llama2.c's to ~1e-6 relative (summation order,
    // exp/sin/cos/pow roundings); the low-precision caches move them by up to ~1e-2 relative
    const rel = gap / Math.max(1, Math.abs(mineLogit)), tol = o.cache === 'float32' ? 1e-4 : 1e-2;
    lines.push(`  margin here ${gap.toExponential(3)} (${(gap / ulp(mineLogit)).toFixed(0)} ulp, ${rel.toExponential(2)} relative) → ${rel < tol ? (o.cache === 'float32' ? 'NEAR-TIE: float32 rounding (summation order, expf/sinf/cosf/powf)' : `NEAR-TIE within the ${o.cache} cache's rounding`) : 'LARGE: a real disagreement'}`);
  } else {
    lines.push(`  llama2.c's choice is not among this package's top ${K} tokens → a real disagreement (or a token whose piece prints nothing)`);
  }
  lines.push(`  top ${o.top} here: ${top.slice(0, o.top).map((c) => `${c.token} ${show(tokenizer.vocab[c.token])} ${c.logit}`).join(' | ')}`);
  // stdout shows text only: tokens that print nothing, or other tokens printing the same bytes,
  // can hide an earlier divergence — list the closest calls before this position
  const silent = res.tokens.slice(res.promptTokens.length, k).filter((id, i) => pkg.Tokenizer.printable(tokenizer.decode(res.tokens[res.promptTokens.length + i - 1], id)).length === 0).length;
  const calls = [];
  for (let p = res.promptTokens.length - 1; p < pos; p++) calls.push({ p, gap: tops[p][0].logit - tops[p][1].logit });
  calls.sort((a, b) => a.gap - b.gap);
  if (calls.length > 0) {
    lines.push(`  caution: llama2.c prints text only, so the token sequences may part earlier${silent ? ` (${silent} earlier sampled tokens print nothing)` : ''}; closest calls here before position ${pos}: ${calls.slice(0, 3).map((c) => `position ${c.p} gap ${c.gap.toExponential(2)}`).join(', ')}`);
  }
  return lines;
}

let same = 0, total = 0;
console.log(`llama2.c: ${o.run}\nmodel: ${o.model} (dim ${model.config.dim}, hidden ${model.config.hiddenDim}, layers ${model.config.nLayers}, heads ${model.config.nHeads}/${model.config.nKvHeads} kv, vocab ${V}, seq_len ${model.config.seqLen}, ${model.config.sharedClassifier ? 'shared' : 'unshared'} classifier)\ntokenizer: ${o.tokenizer}; cache ${o.cache}`);
for (const prompt of o.prompts) {
  for (const steps of o.steps) {
    total++;
    const label = `prompt ${JSON.stringify(prompt)}, steps ${steps}`;
    const c = runC(steps, prompt);
    if (c.status !== 0) {
      console.log(`FAILED   ${label}: llama2.c exited with ${c.signal ?? c.status}${c.err ? `: ${c.err.trim().split('\n').pop()}` : ''}`);
      continue;
    }
    const demo = runDemo(steps, prompt);
    if (demo.status !== 0) {
      console.log(`FAILED   ${label}: the demo exited with ${demo.status}: ${demo.err.trim().split('\n').pop()}`);
      continue;
    }
    const here = runHere(steps, prompt);
    const inProc = Buffer.concat([Buffer.from(here.res.text), Buffer.from('\n')]);
    const note = inProc.equals(demo.out) ? '' : ' (WARNING: the demo and the in-process generate() differ)';
    const nTok = here.res.tokens.length - here.res.promptTokens.length;
    if (c.out.equals(demo.out)) {
      same++;
      // the closest call among the sampled steps: smallest top-1 − top-2 logit gap
      let close = null;
      for (let p = here.res.promptTokens.length - 1; p < here.tops.length; p++) {
        const g = here.tops[p][0].logit - here.tops[p][1].logit;
        if (!close || g < close.gap) close = { p, gap: g };
      }
      const cl = close ? `; closest call: top-2 gap ${close.gap.toExponential(2)} at position ${close.p}` : '';
      console.log(`IDENTICAL ${label}: ${demo.out.length - 1} bytes, ${here.res.steps} positions (${here.res.promptTokens.length} prompt tokens incl. BOS, ${nTok} sampled)${cl}${note}`);
    } else {
      console.log(`DIFFERENT ${label}: llama2.c ${c.out.length} bytes, demo ${demo.out.length} bytes${note}`);
      for (const l of firstDifference(c.out, demo.out, here, prompt)) console.log(l);
    }
  }
}
console.log(`${same}/${total} identical`);
model.dispose();
ek.dispose();
process.exit(same === total ? 0 : 1);
