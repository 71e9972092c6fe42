// The stamp scripts/build.mjs keeps to skip the asc builds when nothing they read changed:
// a hash of the inputs' contents (every file under assembly/, asconfig.json, the build
// script, the compiler's version) and a hash of the outputs the last build wrote. Contents,
// not modification times: a fresh clone, a checkout of other sources or a module swapped
// into dist/ by hand all fail to match.
import { createHash } from 'node:crypto';
import { readdirSync, readFileSync } from 'node:fs';
import { join, relative } from 'node:path';

const filesUnder = (dir) =>
  readdirSync(dir, { withFileTypes: true })
    .flatMap((e) => (e.isDirectory() ? filesUnder(join(dir, e.name)) : [join(dir, e.name)]))
    .sort();

/** Hash of what the kernels' builds read under `root` (the build script at `script`). */
export function kernelInputsHash(root, script) {
  const h = createHash('sha256');
  for (const f of [...filesUnder(join(root, 'assembly')), join(root, 'asconfig.json'), script]) {
    h.update(relative(root, f)).update('\0').update(readFileSync(f)).update('\0');
  }
  h.update(JSON.parse(readFileSync(join(root, 'node_modules', 'assemblyscript', 'package.json'), 'utf8')).version);
  return h.digest('hex');
}

/** Hash of the contents of `files`, in order. */
export function filesHash(files) {
  const h = createHash('sha256');
  for (const f of files) h.update(readFileSync(f)).update('\0');
  return h.digest('hex');
}
