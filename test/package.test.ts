/**
 * What `npm pack` / `npm publish` ship: `files` must hold every file the entries and their
 * declarations load, and nothing of the repository besides dist/, README.md, package.json and LICENSE;
 * dist/ is not in git, so packing must build it first (prepack).
 */
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { dirname, join, posix } from 'node:path';
import { fileURLToPath } from 'node:url';
import { expect, test } from 'vitest';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const pkg = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8'));

test('packing builds dist first (dist/ is not in git)', () => {
  expect(pkg.scripts.prepack).toBe('npm run build');
});

test('the tarball holds every file the entries and declarations load, and nothing else', () => {
  const out = execFileSync('npm', ['pack', '--dry-run', '--json', '--ignore-scripts'], { cwd: root, encoding: 'utf8' });
  const files = new Set<string>(JSON.parse(out)[0].files.map((f: { path: string }) => f.path));
  const missing: string[] = [];
  const need = (path: string, from: string) => {
    if (!files.has(path)) missing.push(`${path} (${from})`);
  };
  // package.json entry points
  need(posix.normalize(pkg.main), 'main');
  need(posix.normalize(pkg.types), 'types');
  const targets = (x: unknown): string[] => (typeof x === 'string' ? [x] : Object.values(x as object).flatMap(targets));
  for (const [subpath, target] of Object.entries(pkg.exports)) {
    for (const t of targets(target)) {
      if (t.includes('*')) {
        const re = new RegExp(`^${posix.normalize(t).replace(/\./g, '\\.').replace('*', '[^/]+')}$`);
        expect([...files].some((f) => re.test(f)), `exports ${subpath}: ${t}`).toBe(true);
      } else need(posix.normalize(t), `exports ${subpath}`);
    }
  }
  // relative imports of the bundles and declarations
  for (const f of files) {
    if (!f.endsWith('.js') && !f.endsWith('.d.ts')) continue;
    const text = readFileSync(join(root, f), 'utf8');
    for (const m of text.matchAll(/(?:from\s*|import\s*\(\s*)["'](\.{1,2}\/[^"']+)["']/g)) {
      let target = posix.join(posix.dirname(f), m[1]);
      if (f.endsWith('.d.ts')) target = target.replace(/\.js$/, '') + '.d.ts';
      need(target, `imported by ${f}`);
    }
    expect(text, `${f} points to a source map that is not shipped`).not.toMatch(/sourceMappingURL/);
  }
  expect(missing).toEqual([]);
  expect([...files].filter((f) => !f.startsWith('dist/') && f !== 'README.md' && f !== 'package.json' && f !== 'LICENSE')).toEqual([]);
  // the MIT notice package.json names ships with the package
  expect(files.has('LICENSE')).toBe(true);
});
