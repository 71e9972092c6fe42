// npm run bench [-- family …]: runs bench/<family>.bench.mjs files, one JSON line per case,
// then a markdown summary with every implementation's time relative to edgekernels.
import { readdirSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { init } from '../dist/index.js';
import { makeHarness } from './harness.mjs';

const here = dirname(fileURLToPath(import.meta.url));
const wanted = process.argv.slice(2).filter((a) => !a.startsWith('-'));
const files = readdirSync(here).filter((f) => f.endsWith('.bench.mjs')).filter((f) => !wanted.length || wanted.includes(f.replace('.bench.mjs', ''))).sort();

const rows = [];
for (const f of files) {
  const ek = await init();
  const h = await makeHarness(ek, rows);
  console.error(`# ${f}`);
  await (await import(pathToFileURL(join(here, f)).href)).default(h);
  ek.dispose();
}

// Summary: per suite/case, each impl's median, throughput and ratio to edgekernels.
const groups = new Map();
for (const r of rows) {
  const k = `${r.suite}|${r.case}`;
  if (!groups.has(k)) groups.set(k, []);
  groups.get(k).push(r);
}
// time / edgekernels: the paired ratio (median over interleaved rounds of the two round
// times' ratio, harness.mjs pairedRatio) where the bench measured one, else the medians' ratio
const lines = ['| suite | case | impl | median ms | GB/s | GFLOP/s | time / edgekernels |', '|---|---|---|---:|---:|---:|---:|'];
for (const g of groups.values()) {
  const ours = g.find((r) => r.impl === 'edgekernels');
  for (const r of g) {
    const ratio = r.paired_vs_ours !== undefined ? r.paired_vs_ours.toFixed(2) : ours ? (r.median_ms / ours.median_ms).toFixed(2) : '';
    lines.push(`| ${r.suite} | ${r.case} | ${r.impl} | ${r.median_ms} | ${r.gbps ?? ''} | ${r.gflops ?? ''} | ${ratio} |`);
  }
}
console.log('\n' + lines.join('\n'));
