// npm run build: wasm (asc) → dist/*.wasm, host bundle (esbuild) → dist/index.js,
// declarations (tsc) → dist/*.d.ts. Each output is written to a temporary name and
// renamed into place, so a test running during a rebuild never reads half a file.
import { execFileSync } from 'node:child_process';
import { mkdirSync, renameSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import * as esbuild from 'esbuild';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const dist = join(root, 'dist');
const bin = (name) => join(root, 'node_modules', '.bin', name);
mkdirSync(dist, { recursive: true });

const run = (cmd, args) => execFileSync(cmd, args, { cwd: root, stdio: 'inherit' });

// 1. kernels
const builds = [{ target: 'simd', file: 'edgekernels.wasm' }];
for (const b of builds) {
  const tmp = join(dist, `.${b.file}.${process.pid}`);
  run(bin('asc'), ['--target', b.target, '--outFile', tmp]);
  renameSync(tmp, join(dist, b.file));
}

// 2. host bundle, one per runtime entry
const entries = { index: 'src/entries/node.ts' };
for (const [name, entry] of Object.entries(entries)) {
  const tmp = join(dist, `.${name}.${process.pid}.js`);
  await esbuild.build({
    entryPoints: [join(root, entry)],
    outfile: tmp,
    bundle: true,
    format: 'esm',
    platform: 'neutral',
    target: 'es2022',
    external: ['node:*'],
    logLevel: 'warning',
  });
  renameSync(tmp, join(dist, `${name}.js`));
}

// 3. declarations
const typesTmp = join(root, `.types-${process.pid}`);
run(bin('tsc'), ['-p', 'tsconfig.json', '--emitDeclarationOnly', '--declaration', '--outDir', typesTmp]);
for (let attempt = 0; ; attempt++) {
  // Two builds racing (several people in one work tree) may both try to swap the folder.
  try {
    rmSync(join(dist, 'types'), { recursive: true, force: true });
    renameSync(typesTmp, join(dist, 'types'));
    break;
  } catch (e) {
    if (attempt >= 5) throw e;
  }
}
writeFileSync(join(dist, 'index.d.ts'), "export * from './types/entries/node.js';\n");

for (const b of builds) console.log(`${b.file}: ${statSync(join(dist, b.file)).size} bytes`);
