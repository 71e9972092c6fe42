// Where the host's arena may start: everything below __heap_base belongs to the
// module's static data (lookup tables, constants).
export function heapBase(): usize {
  return (__heap_base + 15) & ~(<usize>15);
}
