/**
 * The operator registry's types. Each file in src/ops/ exports a list of OpDefs;
 * src/ops/index.ts gathers them into the one registry that `run()` dispatches through.
 *
 * An OpDef declares its input slots, output slots and attributes (kind, default and, for
 * enumerations, the allowed values); `run()` in kernels.ts checks presence, ownership and
 * liveness of inputs and the attribute kinds before calling the op. The op validates
 * everything specific to it, then prepares its outputs, then writes.
 */
import type { DType } from '../dtypes.js';
import type { Tensor } from '../tensor.js';

export type AttrKind = 'int' | 'float' | 'string' | 'ints' | 'floats' | 'dtype';

export interface AttrSpec {
  readonly kind: AttrKind;
  /** Default value; undefined means "absent unless given". */
  readonly default?: number | string | readonly number[];
  /** Allowed values for enumerated attributes. */
  readonly values?: readonly (string | number)[];
}

export type AttrValue = number | string | number[] | undefined;
export type Attrs = Readonly<Record<string, AttrValue>>;

export interface SlotSpec {
  readonly name: string;
  readonly optional?: boolean;
}

/** What the caller asked for an output slot: a tensor to fill, true (allocate), null (skip), undefined (default). */
export type OutputRequest = Tensor | true | null | undefined;

export interface OutputSpec {
  dtype: DType;
  shape: readonly number[];
}

/** The services an operator gets from the instance. */
export interface OpContext {
  /** The wasm exports (kernels take byte offsets, dims and scalars). */
  readonly exports: KernelExports;
  readonly memory: WebAssembly.Memory;
  /** Pointer to an instance-owned scratch area of at least `bytes` (valid until the next scratch call). */
  scratch(bytes: number): number;
  /**
   * Resolves output slots: validates caller-provided tensors against `specs` (dtype,
   * shape, no overlap with `inputs` or each other) and allocates the rest, all before
   * anything is written. `specs[i] === null` means the op cannot produce slot i here;
   * `defaults[i]` says whether slot i is produced when the caller did not ask.
   */
  prepareOutputs(
    op: string,
    specs: readonly (OutputSpec | null)[],
    requests: readonly OutputRequest[],
    defaults: readonly boolean[],
    inputs: readonly (Tensor | null)[],
  ): (Tensor | null)[];
}

/**
 * The wasm module's raw exports, as the operators call them: kernels take byte offsets, dims
 * and scalars (all numbers; no export takes or returns an i64). The type is loose on purpose,
 * for the host's own calls: a kernel without a result returns undefined, a `usize` result
 * arrives signed (`>>> 0`), and the object also holds `memory` (a WebAssembly.Memory).
 */
export type KernelExports = Record<string, (...args: number[]) => number>;

export interface OpDef {
  readonly name: string;
  readonly inputs: readonly SlotSpec[];
  readonly outputs: readonly SlotSpec[];
  readonly attributes: Readonly<Record<string, AttrSpec>>;
  /** For in-place operators: the input slot that output 0 is. */
  readonly inPlace?: number;
  run(ctx: OpContext, inputs: (Tensor | null)[], attrs: Attrs, outputs: readonly OutputRequest[]): (Tensor | null)[];
}
