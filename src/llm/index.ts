/** The decode-loop host side: llama2.c checkpoints and tokenizers, sampling, a Llama forward pass on the kernels. */
export {
  type LlamaConfig, type WeightLayout, type Q8Layout, type Q8Matrix, readConfig, weightLayout, parseCheckpoint, writeCheckpoint,
  isQ8Checkpoint, parseQ8Checkpoint, q8Layout, quantizeQ80, quantizeCheckpoint,
} from './checkpoint.js';
export { Tokenizer, BOS, EOS } from './tokenizer.js';
export { Sampler, XorShiftRng, sampleMult, sampleTopp, type SamplerOptions } from './sampler.js';
export { Llama, ropeTable, type LlamaOptions } from './model.js';
export { packQ8Tiles, packRows16, q8TileOffset, unpackRow16 } from './pack.js';
export { type LlmKernels } from './kernels.js';
export { generate, type GenerateOptions, type GenerateResult } from './generate.js';
export { tinyModel, randomWeights, mulberry32, TINY_CONFIG } from './tiny.js';
