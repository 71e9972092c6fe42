/**
 * The arena: a first-fit allocator with coalescing over one WebAssembly.Memory.
 *
 * Contract with the kernels (DESIGN.md rule 4): every block starts 16-byte aligned and
 * is followed by at least 16 bytes that belong to it, so a kernel may read a whole v128
 * past the last element of any input without leaving the allocation.
 *
 * Free blocks are kept sorted by address; freeing merges a block with free neighbours,
 * so alternating allocate/dispose cycles of mixed sizes do not fragment the heap into
 * slivers. When nothing fits, the memory grows (by at least a quarter of its size, to
 * amortize growth) up to `maxBytes`; beyond that, OUT_OF_MEMORY with nothing changed.
 */
import { KernelError } from './errors.js';

export const ALIGN = 16;
export const TAIL_PAD = 16;
const PAGE = 65536;

export interface ArenaStats {
  /** Bytes of live blocks, padding included. */
  blockBytes: number;
  /** Number of live blocks. */
  blocks: number;
  /** Bytes in the free list (not counting never-used memory past `top`). */
  freeBytes: number;
  /** Largest contiguous free block. */
  largestFree: number;
  /** Current size of the linear memory. */
  memoryBytes: number;
  /** Highest `memoryBytes` seen. */
  peakMemoryBytes: number;
}

export class Arena {
  /** Sorted, non-adjacent free blocks: starts[i] .. starts[i] + sizes[i]. */
  private starts: number[] = [];
  private sizes: number[] = [];
  private live = new Map<number, number>();
  private liveBytes = 0;
  private peak: number;
  /**
   * Every byte from here to the end of memory is still as the engine made it — zero, since a
   * new memory and `memory.grow` are zero-filled — and has never been handed out. alloc(…,
   * zero) clears only what lies below it: zero-filling fresh pages would touch each one, and a
   * first touch is a page fault the kernel serves (~12 µs per 4 KiB page on the development
   * VM: 48 ms for a 16 MiB KV cache that a decode step then writes a few rows of).
   */
  private fresh: number;

  /**
   * @param guard bytes reserved in front of every block (debug mode puts canaries there;
   *   0 otherwise). The pointer handed out is the block start + guard, still 16-aligned.
   * @param fresh where the memory's never-written part starts (see `fresh`): `base` for a
   *   memory created for this arena and written only by the module's data segments; the
   *   default, its current end, assumes nothing.
   */
  constructor(
    readonly memory: WebAssembly.Memory,
    readonly base: number,
    readonly maxBytes: number,
    readonly guard = 0,
    fresh = memory.buffer.byteLength,
  ) {
    const b = roundUp(base, ALIGN);
    const end = memory.buffer.byteLength;
    if (end > b) this.insertFree(b, end - b);
    this.peak = end;
    this.fresh = Math.max(fresh, b);
  }

  /** Usable size of a request: aligned, plus the tail pad; never 0. */
  static blockSize(bytes: number): number {
    return roundUp(bytes, ALIGN) + TAIL_PAD;
  }

  /** A block of `bytes`; with `zero`, its first `bytes` read as zeros. */
  alloc(bytes: number, zero = false): number {
    if (!Number.isFinite(bytes) || bytes < 0) {
      throw new KernelError('INVALID_VALUE', `allocation size: expected a non-negative byte count, got ${bytes}`);
    }
    const size = Arena.blockSize(bytes) + this.guard;
    let i = this.findFit(size);
    if (i < 0) {
      this.grow(size);
      i = this.findFit(size);
      if (i < 0) throw new KernelError('OUT_OF_MEMORY', `allocation of ${bytes} bytes failed after growing`);
    }
    const start = this.starts[i];
    if (this.sizes[i] === size) {
      this.starts.splice(i, 1);
      this.sizes.splice(i, 1);
    } else {
      this.starts[i] += size;
      this.sizes[i] -= size;
    }
    const ptr = start + this.guard;
    if (zero) {
      const dirtyEnd = Math.min(ptr + bytes, this.fresh);
      if (dirtyEnd > ptr) new Uint8Array(this.memory.buffer, ptr, dirtyEnd - ptr).fill(0);
    }
    if (start + size > this.fresh) this.fresh = start + size;
    this.live.set(ptr, size);
    this.liveBytes += size;
    return ptr;
  }

  free(ptr: number): void {
    const size = this.live.get(ptr);
    if (size === undefined) throw new KernelError('INVALID_ARGUMENT', `free: ${ptr} is not a live block`);
    this.live.delete(ptr);
    this.liveBytes -= size;
    this.insertFree(ptr - this.guard, size);
  }

  /** Live blocks: pointer → block size (guard and padding included). */
  blocks(): IterableIterator<[number, number]> {
    return this.live.entries();
  }

  /** Size of the live block at ptr (including guard and padding), or undefined. */
  sizeOf(ptr: number): number | undefined {
    return this.live.get(ptr);
  }

  stats(): ArenaStats {
    let free = 0, largest = 0;
    for (const s of this.sizes) { free += s; if (s > largest) largest = s; }
    return {
      blockBytes: this.liveBytes,
      blocks: this.live.size,
      freeBytes: free,
      largestFree: largest,
      memoryBytes: this.memory.buffer.byteLength,
      peakMemoryBytes: this.peak,
    };
  }

  /** First free block that holds `size`, or −1. */
  private findFit(size: number): number {
    const sizes = this.sizes;
    for (let i = 0; i < sizes.length; i++) if (sizes[i] >= size) return i;
    return -1;
  }

  /** Grows the memory so that a block of `size` fits at the end. */
  private grow(size: number): void {
    const end = this.memory.buffer.byteLength;
    const n = this.starts.length;
    // Free space that already touches the end of memory counts toward the request.
    const tailFree = n > 0 && this.starts[n - 1] + this.sizes[n - 1] === end ? this.sizes[n - 1] : 0;
    const need = size - tailFree;
    const maxPages = Math.floor(this.maxBytes / PAGE);
    const curPages = end / PAGE;
    const minPages = Math.ceil(need / PAGE);
    if (curPages + minPages > maxPages) {
      throw new KernelError(
        'OUT_OF_MEMORY',
        `cannot allocate ${size} bytes: memory would grow to ${(curPages + minPages) * PAGE} bytes, above maximumMemory ${this.maxBytes}`,
      );
    }
    const pages = Math.min(Math.max(minPages, Math.ceil(curPages / 4)), maxPages - curPages);
    try {
      this.memory.grow(pages);
    } catch {
      try {
        this.memory.grow(minPages);
      } catch {
        throw new KernelError('OUT_OF_MEMORY', `cannot allocate ${size} bytes: the engine refused to grow memory beyond ${end} bytes`);
      }
    }
    const newEnd = this.memory.buffer.byteLength;
    if (newEnd > this.peak) this.peak = newEnd;
    this.insertFree(end, newEnd - end);
  }

  /** Inserts a free block, merging it with the free blocks it touches. */
  private insertFree(start: number, size: number): void {
    const starts = this.starts, sizes = this.sizes;
    let lo = 0, hi = starts.length;
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      if (starts[mid] < start) lo = mid + 1; else hi = mid;
    }
    const mergePrev = lo > 0 && starts[lo - 1] + sizes[lo - 1] === start;
    const mergeNext = lo < starts.length && start + size === starts[lo];
    if (mergePrev && mergeNext) {
      sizes[lo - 1] += size + sizes[lo];
      starts.splice(lo, 1);
      sizes.splice(lo, 1);
    } else if (mergePrev) {
      sizes[lo - 1] += size;
    } else if (mergeNext) {
      starts[lo] = start;
      sizes[lo] += size;
    } else {
      starts.splice(lo, 0, start);
      sizes.splice(lo, 0, size);
    }
  }
}

export function roundUp(n: number, a: number): number {
  return Math.ceil(n / a) * a;
}
