// A TypeScript consumer of the package, type-checked by test/types.test.ts (strict,
// skipLibCheck false, declarations emitted) in a temporary project where `edgekernels` is
// installed: dist/index.d.ts through package.json `exports`.
import { init, KernelError, OPS } from 'edgekernels';

const ek = await init();

const x = ek.tensor('float32', [2, 3], [1, 2, 3, 4, 5, 6]);

// inferred types of public values must be nameable from the package root (declaration emit)
export const data = x.data;
export const outs = ek.run('Cast', [x], { to: 'float16' });
export const exportsOf = ek.exports;
export const prepare = ek.prepareOutputs;
export const ops = OPS;

try {
  ek.tensor('nope', [1]);
} catch (e) {
  if (e instanceof KernelError) console.log(e.code);
}
