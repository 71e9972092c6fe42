#!/usr/bin/env node
// node scripts/quantize-llama2c.mjs model.bin model_q8.bin [--group-size 64]
//
// Converts a float32 llama2.c checkpoint (the `.bin` that run.c reads) into the version-2 Q8_0
// file that llama2.c's runq.c reads — what `python export.py --version 2` writes from the
// PyTorch checkpoint, computed here from the .bin alone (quantizeCheckpoint: groups of
// --group-size, halved until they divide dim and hidden_dim; torch.round's ties to even).
// `npm run demo -- --model model_q8.bin` then runs runq.c's int8 forward pass. Run
// `npm run build` first. Exit code: 0 on success, 1 on a bad checkpoint, 2 on bad arguments.
import { readFileSync, writeFileSync } from 'node:fs';

const usage = (msg) => {
  if (msg) console.error(`quantize-llama2c: ${msg}`);
  console.error('usage: node scripts/quantize-llama2c.mjs model.bin model_q8.bin [--group-size 64]');
  process.exit(2);
};
const args = process.argv.slice(2);
let groupSize = 64;
const files = [];
for (let i = 0; i < args.length; i++) {
  const m = /^--group-size(?:=(.*))?$/.exec(args[i]);
  if (m) {
    const v = m[1] ?? args[++i];
    groupSize = Number(v);
    if (!Number.isInteger(groupSize) || groupSize < 1) usage(`--group-size expects a positive integer, got ${v}`);
  } else if (args[i].startsWith('--')) usage(`unknown flag ${args[i]}`);
  else files.push(args[i]);
}
if (files.length !== 2) usage('expected an input and an output file');
const { quantizeCheckpoint, parseQ8Checkpoint } = await import(new URL('../dist/index.js', import.meta.url).href).catch(() => usage('dist/ is missing: run `npm run build` first'));
let out;
try {
  out = quantizeCheckpoint(new Uint8Array(readFileSync(files[0])), { groupSize });
  writeFileSync(files[1], out);
} catch (e) {
  // an option the checkpoint cannot take (a group size larger than its dims) is bad usage: 2
  console.error(`quantize-llama2c: ${e.message}`);
  process.exit(e.code === 'INVALID_ARGUMENT' ? 2 : 1);
}
const { config, layout } = parseQ8Checkpoint(out);
console.error(`wrote ${files[1]}: ${out.byteLength} bytes (dim ${config.dim}, hidden ${config.hiddenDim}, layers ${config.nLayers}, vocab ${config.vocabSize}, group size ${layout.groupSize})`);
