/**
 * From a WasmSource to a running Kernels instance, shared by every runtime entry
 * (src/entries/*). An entry only says how its runtime obtains a build's module by default:
 * embedded bytes (browsers, bundlers), a file read (Node, Deno, Bun) or an imported
 * WebAssembly.Module (workerd).
 *
 * Builds. `simd` (default), `scalar` (same sources without SIMD, for engines whose
 * WebAssembly.validate rejects SIMD) and `relaxed` (simd + relaxed-simd enabled, so kernels'
 * `if (ASC_FEATURE_RELAXED_SIMD)` branches are compiled in). Every build carries a custom
 * section `edgekernels.build` naming it (written by scripts/build.mjs), so a module handed in
 * through `init({ wasm })` reports its true build in stats().build.
 *
 * Compiled modules are cached per build, so a second init() only instantiates.
 */
import { KernelError, show } from './errors.js';
import { type BuildName, type InitOptions, type Kernels, type WasmSource, instantiate } from './kernels.js';

export const BUILD_NAMES: readonly BuildName[] = ['simd', 'scalar', 'relaxed'];

/** The file of each build in dist/. */
export const BUILD_FILES: Readonly<Record<BuildName, string>> = {
  simd: 'edgekernels.wasm',
  scalar: 'edgekernels.scalar.wasm',
  relaxed: 'edgekernels.relaxed.wasm',
};

/**
 * Whether init() picks the relaxed build on its own where the engine accepts it.
 * Decided by the benchmarks: relaxed is only worth picking when it measurably beats simd.
 * The attention kernels (relaxed_madd) and the int8 / fp8 decode kernel (relaxed_swizzle,
 * relaxed_q15mulr) have relaxed branches: GQA decode, prefill and fp8 caches gain 10–22%,
 * but the small MHA decode step of bench/runtime.bench.mjs (suite 'builds') measured 7%
 * slower, so relaxed is used only when asked for with init({ build: 'relaxed' }).
 */
export const RELAXED_PREFERRED = false;

/** Name of the custom section that states a module's build. */
export const BUILD_SECTION = 'edgekernels.build';

// Smallest modules using one instruction of each feature: (func (result v128) …).
// simd: v128.const, v128.const, i32x4.add. relaxed: 3 × v128.const, f32x4.relaxed_madd.
const V128_CONST = [0xfd, 0x0c, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0];
function probe(body: number[]): Uint8Array<ArrayBuffer> {
  const code = [0x00, ...body, 0x0b];
  return new Uint8Array([0, 0x61, 0x73, 0x6d, 1, 0, 0, 0, 1, 5, 1, 0x60, 0, 1, 0x7b, 3, 2, 1, 0, 10, code.length + 2, 1, code.length, ...code]);
}
const SIMD_PROBE = probe([...V128_CONST, ...V128_CONST, 0xfd, 0xae, 0x01]);
const RELAXED_PROBE = probe([...V128_CONST, ...V128_CONST, ...V128_CONST, 0xfd, 0x85, 0x02]);

/** Whether this engine can run a build (asks WebAssembly.validate every time: cheap). */
export function engineSupports(build: BuildName): boolean {
  try {
    if (build === 'scalar') return true;
    if (!WebAssembly.validate(SIMD_PROBE)) return false;
    return build === 'simd' || WebAssembly.validate(RELAXED_PROBE);
  } catch {
    return false;
  }
}

/** The build init() uses when none is forced. */
export function defaultBuild(): BuildName {
  if (!engineSupports('simd')) return 'scalar';
  if (RELAXED_PREFERRED && engineSupports('relaxed')) return 'relaxed';
  return 'simd';
}

/** The build a module states in its custom section, or null. */
export function moduleBuild(module: WebAssembly.Module): BuildName | null {
  try {
    const sections = WebAssembly.Module.customSections(module, BUILD_SECTION);
    if (sections.length === 0) return null;
    const name = new TextDecoder().decode(sections[0]);
    return (BUILD_NAMES as readonly string[]).includes(name) ? (name as BuildName) : null;
  } catch {
    return null;
  }
}

/** How an entry reads a file: URL (file:) → its bytes. */
export type FileReader = (url: URL) => Promise<BufferSource>;

function isResponse(x: unknown): x is Response {
  return typeof Response !== 'undefined' && x instanceof Response;
}

async function compileResponse(res: Response): Promise<WebAssembly.Module> {
  if (!res.ok) throw new KernelError('INVALID_ARGUMENT', `init wasm: fetching ${res.url || 'the module'} answered ${res.status} ${res.statusText}`);
  const type = res.headers.get('content-type') ?? '';
  if (typeof WebAssembly.compileStreaming === 'function' && type.split(';')[0].trim() === 'application/wasm') {
    // Streaming compile: the module compiles while it downloads.
    return WebAssembly.compileStreaming(res);
  }
  return WebAssembly.compile(await res.arrayBuffer());
}

/** Turns any accepted source into a compiled module. `readFile` serves file: URLs. */
export async function compile(src: WasmSource, readFile?: FileReader): Promise<WebAssembly.Module> {
  try {
    return await compileRaw(src, readFile);
  } catch (e) {
    if (e instanceof WebAssembly.CompileError) {
      throw new KernelError('INVALID_ARGUMENT', `init wasm: this engine cannot compile the given module (${e.message}); a relaxed or SIMD build needs an engine that accepts it`);
    }
    if (e instanceof KernelError) throw e;
    // reading a file or fetching a URL failed (ENOENT, EISDIR, a refused connection, …)
    const why = e instanceof Error ? e.message : String(e);
    throw new KernelError('INVALID_ARGUMENT', `init wasm: could not load ${typeof src === 'string' || src instanceof URL ? show(String(src)) : 'the module'} (${why})`);
  }
}

/** A WebAssembly.Module of any realm (a vm context's, an iframe's: instanceof fails there). */
function isModule(x: unknown): boolean {
  return x instanceof WebAssembly.Module || Object.prototype.toString.call(x) === '[object WebAssembly.Module]';
}

async function compileRaw(src: WasmSource, readFile?: FileReader): Promise<WebAssembly.Module> {
  if (isModule(src)) return src as WebAssembly.Module;
  if (ArrayBuffer.isView(src) || src instanceof ArrayBuffer) return WebAssembly.compile(src as BufferSource);
  if (typeof src === 'string' || src instanceof URL) {
    let url: URL;
    try {
      url = new URL(String(src), (globalThis as { location?: { href: string } }).location?.href);
    } catch {
      throw new KernelError('INVALID_ARGUMENT', `init wasm: expected an absolute URL (or one relative to the page), got ${show(String(src))}`);
    }
    if (url.protocol === 'file:') {
      if (readFile) return WebAssembly.compile(await readFile(url));
      throw new KernelError('INVALID_ARGUMENT', `init wasm: this entry reads no files (${url.href}); pass the bytes, a Module or an http(s) URL`);
    }
    return compileResponse(await fetch(url));
  }
  if (src && typeof (src as PromiseLike<Response>).then === 'function') {
    const res = await src;
    if (isResponse(res)) return compileResponse(res);
    throw new KernelError('INVALID_ARGUMENT', `init wasm: the promise resolved to ${show(res)}, expected a Response`);
  }
  if (isResponse(src)) return compileResponse(src);
  throw new KernelError('INVALID_ARGUMENT', `init wasm: expected bytes, a WebAssembly.Module, a Response or a URL, got ${show(src)}`);
}

function checkBuildOption(build: unknown): BuildName | undefined {
  if (build === undefined) return undefined;
  if (!(BUILD_NAMES as readonly unknown[]).includes(build)) {
    throw new KernelError('INVALID_ARGUMENT', `init build: expected one of ${BUILD_NAMES.map((b) => show(b)).join(', ')}, got ${show(build)}`);
  }
  if (!engineSupports(build as BuildName)) {
    throw new KernelError('INVALID_ARGUMENT', `init build: this engine's WebAssembly.validate rejects ${build === 'relaxed' ? 'relaxed SIMD' : 'SIMD'}, so build ${show(build)} cannot run here; use 'scalar'${build === 'relaxed' && engineSupports('simd') ? " or 'simd'" : ''}`);
  }
  return build as BuildName;
}

const INIT_OPTIONS = ['initialMemory', 'maximumMemory', 'build', 'wasm', 'debug'];

/**
 * Builds an entry's init(). `defaultModule(build)` is how that runtime obtains a build;
 * `readFile` (file-system runtimes) lets init({ wasm: fileURL }) read instead of fetch;
 * `compiles: false` (workerd) says the runtime compiles no wasm, so init({ wasm }) takes only a Module.
 */
export function makeInit(defaultModule: (build: BuildName) => Promise<WebAssembly.Module>, readFile?: FileReader, { compiles = true } = {}) {
  const cached = new Map<BuildName, Promise<WebAssembly.Module>>();
  return async function init(opts: InitOptions = {}): Promise<Kernels> {
    if (opts === null || typeof opts !== 'object') throw new KernelError('INVALID_ARGUMENT', `init options: expected an object, got ${show(opts)}`);
    // a misspelt option (maxMemory) must not silently leave the default in place
    for (const key of Object.keys(opts)) {
      if (!INIT_OPTIONS.includes(key)) throw new KernelError('INVALID_ARGUMENT', `init options: unknown option ${show(key)}; expected one of ${INIT_OPTIONS.join(', ')}`);
    }
    if (opts.debug !== undefined && typeof opts.debug !== 'boolean') throw new KernelError('INVALID_ARGUMENT', `init debug: expected true or false, got ${show(opts.debug)}`);
    const forced = checkBuildOption(opts.build);
    let module: WebAssembly.Module;
    let build: BuildName;
    if (opts.wasm !== undefined && opts.wasm !== null) {
      if (!compiles && !isModule(opts.wasm)) {
        throw new KernelError('INVALID_ARGUMENT', `init wasm: this runtime compiles no wasm at run time (workerd), so it takes a WebAssembly.Module only — import the .wasm as a module (a CompiledWasm module in the config; wrangler turns a .wasm import into one) — got ${show(opts.wasm)}`);
      }
      module = await compile(opts.wasm, readFile);
      if (!WebAssembly.Module.exports(module).some((e) => e.name === 'heapBase')) {
        throw new KernelError('INVALID_ARGUMENT', 'init wasm: the module is not an edgekernels build (it has no heapBase export)');
      }
      const stated = moduleBuild(module);
      if (forced !== undefined && stated !== null && stated !== forced) {
        throw new KernelError('INVALID_ARGUMENT', `init: build ${show(forced)} was asked for, but the given wasm is the ${show(stated)} build`);
      }
      build = stated ?? forced ?? 'simd';
    } else {
      build = forced ?? defaultBuild();
      let p = cached.get(build);
      if (!p) {
        p = defaultModule(build);
        cached.set(build, p);
      }
      try {
        module = await p;
      } catch (e) {
        cached.delete(build);
        if (e instanceof KernelError) throw e;
        // the build beside the bundle is missing (ENOENT), unreadable (Deno without
        // --allow-read: NotCapable) or refused by the engine: a KernelError as every failure
        const why = e instanceof Error ? `${e.name}: ${e.message}` : String(e);
        throw new KernelError('UNAVAILABLE', `init: could not load the package's ${build} build (${why}); see the README's "Runtimes" for what each runtime needs, or pass init({ wasm })`);
      }
    }
    try {
      return await instantiate(module, opts, build);
    } catch (e) {
      if (e instanceof WebAssembly.LinkError) {
        throw new KernelError('INVALID_ARGUMENT', `init wasm: the module is not an edgekernels build (${e.message})`);
      }
      throw e;
    }
  };
}

/** Decodes base64 (embedded builds) without depending on Node's Buffer. */
export function decodeBase64(s: string): Uint8Array<ArrayBuffer> {
  const from = (Uint8Array as unknown as { fromBase64?: (s: string) => Uint8Array<ArrayBuffer> }).fromBase64;
  if (typeof from === 'function') return from(s);
  const bin = atob(s);
  const out = new Uint8Array(bin.length);
  for (let i = 0; i < bin.length; i++) out[i] = bin.charCodeAt(i);
  return out;
}
