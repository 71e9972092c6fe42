// as-pect: unit tests of the kernels themselves (assembly/__tests__/*.spec.ts), compiled
// with SIMD and bulk memory and run against raw memory, without the host in between.
export default {
  entries: ['assembly/__tests__/**/*.spec.ts'],
  include: ['assembly/__tests__/**/*.include.ts'],
  disclude: [/node_modules/],
  async instantiate(memory, createImports, instantiate, binary) {
    return instantiate(binary, createImports({ env: { memory } }));
  },
  outputBinary: false,
};
