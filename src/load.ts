/**
 * Turning a WasmSource into a compiled module, shared by the runtime entries.
 * Compiled modules are cached per source, so a second init() only instantiates.
 */
import { KernelError, show } from './errors.js';
import { type InitOptions, type Kernels, type WasmSource, instantiate } from './kernels.js';

export async function compile(src: WasmSource): Promise<WebAssembly.Module> {
  if (src instanceof WebAssembly.Module) return src;
  if (ArrayBuffer.isView(src) || src instanceof ArrayBuffer) return WebAssembly.compile(src as BufferSource);
  if (typeof src === 'string' || src instanceof URL) {
    return compile(fetch(src));
  }
  if (src && typeof (src as PromiseLike<Response>).then === 'function') src = await src;
  if (typeof Response !== 'undefined' && src instanceof Response) {
    if (typeof WebAssembly.compileStreaming === 'function' && src.headers.get('content-type')?.startsWith('application/wasm')) {
      return WebAssembly.compileStreaming(src);
    }
    return WebAssembly.compile(await src.arrayBuffer());
  }
  throw new KernelError('INVALID_ARGUMENT', `init wasm: expected bytes, a WebAssembly.Module, a Response or a URL, got ${show(src)}`);
}

/** Builds an entry's init(): `defaultModule` is how that runtime obtains the wasm. */
export function makeInit(defaultModule: () => Promise<WebAssembly.Module>) {
  let cached: Promise<WebAssembly.Module> | null = null;
  return async function init(opts: InitOptions = {}): Promise<Kernels> {
    if (opts === null || typeof opts !== 'object') throw new KernelError('INVALID_ARGUMENT', `init options: expected an object, got ${show(opts)}`);
    if (opts.build !== undefined && opts.build !== 'simd') {
      throw new KernelError('INVALID_ARGUMENT', `init build: expected 'simd' (the only build shipped so far), got ${show(opts.build)}`);
    }
    let module: WebAssembly.Module;
    if (opts.wasm !== undefined) module = await compile(opts.wasm);
    else {
      cached ??= defaultModule();
      try {
        module = await cached;
      } catch (e) {
        cached = null;
        throw e;
      }
    }
    return instantiate(module, opts, 'simd');
  };
}
