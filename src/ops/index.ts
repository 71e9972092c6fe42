/** The operator registry: every op family's definitions, by opType. */
import { attentionOps } from './attention.js';
import { cumsumOps } from './cumsum.js';
import { quantOps } from './quant.js';
import type { OpDef } from './registry.js';
import { scatterOps } from './scatter.js';

const ALL: readonly OpDef[] = [...scatterOps, ...attentionOps, ...quantOps, ...cumsumOps];

export const OPS: ReadonlyMap<string, OpDef> = new Map(ALL.map((op) => [op.name, op]));
