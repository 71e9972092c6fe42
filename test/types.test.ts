/**
 * The published types, as a TypeScript project sees them: test/types/consumer.ts is copied
 * into a temporary project whose node_modules/edgekernels holds package.json and dist/ (what
 * `files` publishes), and must compile under `strict` with `skipLibCheck: false`, for module
 * nodenext and for moduleResolution bundler, declarations included (an inferred type that
 * names a package file the package root does not export is TS2742 there).
 */
import { cpSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import ts from 'typescript';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
let project = '';

beforeAll(() => {
  project = mkdtempSync(join(tmpdir(), 'ek-types-'));
  const pkg = join(project, 'node_modules', 'edgekernels');
  mkdirSync(pkg, { recursive: true });
  cpSync(join(root, 'package.json'), join(pkg, 'package.json'));
  cpSync(join(root, 'dist'), join(pkg, 'dist'), { recursive: true });
  writeFileSync(join(project, 'package.json'), '{ "type": "module" }\n');
  cpSync(join(root, 'test', 'types', 'consumer.ts'), join(project, 'consumer.ts'));
});
afterAll(() => rmSync(project, { recursive: true, force: true }));

const configs: Record<string, ts.CompilerOptions> = {
  nodenext: { module: ts.ModuleKind.NodeNext, moduleResolution: ts.ModuleResolutionKind.NodeNext },
  bundler: { module: ts.ModuleKind.ESNext, moduleResolution: ts.ModuleResolutionKind.Bundler, customConditions: ['browser'] },
};

describe('types of the built package', () => {
  for (const [name, config] of Object.entries(configs)) {
    test(`a strict consumer compiles (${name})`, () => {
      const options: ts.CompilerOptions = {
        ...config,
        target: ts.ScriptTarget.ES2022,
        strict: true,
        skipLibCheck: false,
        skipDefaultLibCheck: true,
        declaration: true,
        emitDeclarationOnly: true,
        types: [],
        lib: ['lib.es2022.d.ts', 'lib.dom.d.ts'],
      };
      const program = ts.createProgram([join(project, 'consumer.ts')], options);
      const emitted = program.emit(undefined, () => {});
      const messages = [...ts.getPreEmitDiagnostics(program), ...emitted.diagnostics].map((d) => {
        const where = d.file ? `${d.file.fileName.slice(d.file.fileName.lastIndexOf('/') + 1)}:${d.file.getLineAndCharacterOfPosition(d.start!).line + 1} ` : '';
        return where + ts.flattenDiagnosticMessageText(d.messageText, '\n');
      });
      expect(messages).toEqual([]);
    }, 120_000);
  }
});
