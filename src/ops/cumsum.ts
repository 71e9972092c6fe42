/** (placeholder: this family's operators land with its issue) */
import type { OpDef } from './registry.js';

export const cumsumOps: readonly OpDef[] = [];
