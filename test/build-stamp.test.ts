// The stamp that lets scripts/build.mjs skip the asc builds (scripts/kernels-stamp.mjs): it
// must change with the content of every input it names and with nothing else, so a kernel
// edit is never answered by a stale module and an unchanged tree is never rebuilt.
import { mkdirSync, mkdtempSync, rmSync, utimesSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
// @ts-expect-error: a plain .mjs build helper without declarations
import { filesHash, kernelInputsHash } from '../scripts/kernels-stamp.mjs';

const root = mkdtempSync(join(tmpdir(), 'ek-stamp-'));
afterAll(() => rmSync(root, { recursive: true, force: true }));
const put = (rel: string, text: string) => {
  mkdirSync(join(root, rel, '..'), { recursive: true });
  writeFileSync(join(root, rel), text);
};
put('assembly/index.ts', 'export function f(): i32 { return 1; }\n');
put('assembly/sub/g.ts', 'export function g(): i32 { return 2; }\n');
put('asconfig.json', '{"targets":{}}\n');
put('scripts/build.mjs', '// build\n');
put('node_modules/assemblyscript/package.json', '{"version":"0.28.0"}\n');
const script = join(root, 'scripts/build.mjs');
const hash = (): string => kernelInputsHash(root, script);

describe('kernel build stamp (scripts/kernels-stamp.mjs)', () => {
  const h0 = hash();

  it('is the same for the same contents, whatever the modification times', () => {
    expect(hash()).toBe(h0);
    utimesSync(join(root, 'assembly/index.ts'), new Date(2001, 0, 1), new Date(2001, 0, 1));
    expect(hash()).toBe(h0);
  });

  it('changes with every input it names, and comes back with the contents', () => {
    const edits: [string, string, string][] = [
      ['assembly/sub/g.ts', 'export function g(): i32 { return 3; }\n', 'export function g(): i32 { return 2; }\n'],
      ['asconfig.json', '{"targets":{"simd":{}}}\n', '{"targets":{}}\n'],
      ['scripts/build.mjs', '// build, changed\n', '// build\n'],
      ['node_modules/assemblyscript/package.json', '{"version":"0.28.1"}\n', '{"version":"0.28.0"}\n'],
    ];
    for (const [rel, changed, original] of edits) {
      put(rel, changed);
      expect(hash(), rel).not.toBe(h0);
      put(rel, original);
      expect(hash(), rel).toBe(h0);
    }
  });

  it('changes when a file under assembly/ is added or renamed', () => {
    put('assembly/new.ts', '');
    expect(hash()).not.toBe(h0);
    rmSync(join(root, 'assembly/new.ts'));
    expect(hash()).toBe(h0);
    rmSync(join(root, 'assembly/sub/g.ts'));
    put('assembly/sub/h.ts', 'export function g(): i32 { return 2; }\n');
    expect(hash()).not.toBe(h0);
    rmSync(join(root, 'assembly/sub/h.ts'));
    put('assembly/sub/g.ts', 'export function g(): i32 { return 2; }\n');
    expect(hash()).toBe(h0);
  });

  it('outputs: any byte of any file changes the hash', () => {
    put('dist/a.wasm', 'abc');
    put('dist/b.js', 'xyz');
    const files = [join(root, 'dist/a.wasm'), join(root, 'dist/b.js')];
    const o0 = filesHash(files);
    put('dist/b.js', 'xyZ');
    expect(filesHash(files)).not.toBe(o0);
    put('dist/b.js', 'xyz');
    expect(filesHash(files)).toBe(o0);
    // the boundary between files counts: 'ab' + 'cxyz' is not 'abc' + 'xyz'
    put('dist/a.wasm', 'ab');
    put('dist/b.js', 'cxyz');
    expect(filesHash(files)).not.toBe(o0);
  });
});
