/**
 * Fuzzing bad inputs (seeded, reproducible). Each operator family supplies a generator of
 * valid calls and a list of mutations that make a call invalid; the property is that the
 * mutated call throws a KernelError with a code, whose message names the input or
 * attribute the mutation broke, and that no byte of any tensor changed.
 *
 * Runs per family: FUZZ_RUNS (default 200 in `npm test`; `npm run fuzz` sets 10,000).
 */
import fc from 'fast-check';
import { expect } from 'vitest';
import { type Kernels, type Tensor, KernelError, rng } from '../helpers.js';

export const FUZZ_RUNS = Number(process.env.FUZZ_RUNS ?? 200);
export const FUZZ_SEED = Number(process.env.FUZZ_SEED ?? 20261129);

export interface Call {
  op: string;
  inputs: unknown[];
  attributes: Record<string, unknown>;
  options?: Record<string, unknown>;
  /** Names that the error message may mention (one of them must appear). */
  names: string[];
  /** Set when the call includes plain inputs (they are copied into fresh memory). */
  plain?: boolean;
  /** Calls that are not ek.run (scan, KVCache methods): run this instead. */
  invoke?: () => unknown;
  /** Extra state checks after the throw (e.g. a KVCache's lengths unchanged). */
  check?: () => void;
  /** Releases what `valid` made besides tensors. */
  cleanup?: () => void;
}

/** A family: builds a valid call from random numbers, and its mutations. */
export interface Family {
  name: string;
  /** Builds a valid call's tensors in `ek` from `rnd`; returns the call and its tensors. */
  valid(ek: Kernels, rnd: () => number): { call: Call; tensors: Tensor[] };
  /** Each mutation edits the call (maybe creating tensors via ek) so that it is invalid; returns false if not applicable. */
  mutations: ((ek: Kernels, call: Call, rnd: () => number, made: Tensor[]) => boolean)[];
}

/** The tests' seeded generator (test/helpers.ts). */
export const mulberry = rng;

/** Bytes of every live tensor, by offset. */
function tensorBytes(ts: Tensor[]): Map<Tensor, Uint8Array> {
  return new Map(ts.filter((t) => !t.disposed && t.dtype !== 'string').map((t) => [t, t.bytes().slice()]));
}

export interface FuzzStats {
  cases: number;
  byCode: Record<string, number>;
}

/**
 * Runs `runs` mutated calls of a family against `ek`. Returns counts by error code. Memory
 * outside the instance's scratch area is compared whole for package-tensor calls; for calls
 * with plain inputs (copied into free memory for the call) every live tensor is compared.
 */
export function fuzzFamily(ek: Kernels, fam: Family, runs = FUZZ_RUNS, seed = FUZZ_SEED): FuzzStats {
  const stats: FuzzStats = { cases: 0, byCode: {} };
  fc.assert(
    fc.property(fc.integer(), fc.nat(), (s, m) => {
      const rnd = mulberry(s);
      const { call, tensors } = fam.valid(ek, rnd);
      const made: Tensor[] = [];
      const mutation = fam.mutations[m % fam.mutations.length];
      try {
        if (!mutation(ek, call, rnd, made)) return;
        const all = [...tensors, ...made];
        const before = tensorBytes(all);
        const mem = call.plain ? null : new Uint8Array(ek.memory.buffer).slice();
        const scratch = scratchRange(ek);
        let err: unknown;
        try {
          if (call.invoke) call.invoke();
          else ek.run(call.op, call.inputs as never, call.attributes, call.options as never);
        } catch (e) {
          err = e;
        }
        const label = `${fam.name} mutation #${m % fam.mutations.length} (${mutation.name || 'anonymous'})`;
        if (!(err instanceof KernelError)) throw new Error(`${label}: expected a KernelError, got ${err === undefined ? 'no error' : String(err)}`);
        expect(typeof err.code, label).toBe('string');
        if (!call.names.some((n) => err.message.includes(n))) {
          throw new Error(`${label}: the message should name one of ${call.names.join(', ')}: ${err.message}`);
        }
        call.check?.();
        stats.cases++;
        stats.byCode[err.code] = (stats.byCode[err.code] ?? 0) + 1;
        for (const [t, b] of before) {
          if (t.disposed) continue;
          const now = t.bytes();
          for (let i = 0; i < b.length; i++) if (now[i] !== b[i]) throw new Error(`${label}: byte ${i} of a ${t.dtype}${JSON.stringify(t.shape)} tensor changed (${err.message})`);
        }
        if (mem) {
          // The scratch area may have moved (grown) during the call: skip it before and after.
          const skip = [scratch, scratchRange(ek)].sort((x, y) => x[0] - y[0]);
          const now = new Uint8Array(ek.memory.buffer);
          let from = 0;
          for (const [a, e] of [...skip, [mem.length, mem.length]]) {
            for (let i = from; i < Math.min(a, mem.length); i++) {
              if (now[i] !== mem[i]) throw new Error(`${label}: memory byte ${i} changed (${err.message})`);
            }
            from = Math.max(from, e);
          }
        }
      } finally {
        for (const t of [...tensors, ...made]) t.dispose();
        call.cleanup?.();
      }
    }),
    { seed, numRuns: runs },
  );
  return stats;
}

/**
 * [start, end) of the instance's scratch block (excluded from memory comparisons), with
 * the debug-mode guard in front and the allocation's tail padding behind.
 */
function scratchRange(ek: Kernels): [number, number] {
  const k = ek as unknown as { scratchPtr: number; scratchSize: number };
  return [k.scratchPtr - 16, k.scratchPtr + k.scratchSize + 32];
}

// ---- small helpers for families ---------------------------------------------------

export const pick = <T>(rnd: () => number, xs: readonly T[]): T => xs[Math.floor(rnd() * xs.length)];
export const int = (rnd: () => number, lo: number, hi: number): number => lo + Math.floor(rnd() * (hi - lo + 1));

/** A value that is not a valid attribute of any kind the op expects. */
export const junkAttr = (rnd: () => number): unknown => pick(rnd, [NaN, 1.5, 'nope', -1e9, {}, [1, 'x'], null as unknown, true]);
