/**
 * run.c's generate(): encode the prompt with BOS, feed the prompt tokens one by one
 * (forcing them), then sample; stop after `steps` positions or at BOS. Each piece goes
 * through decode() and safe_printf(), so the printed bytes are exactly run.c's stdout
 * (without its final newline).
 */
import { KernelError, knownOptions, show } from '../errors.js';
import { Llama } from './model.js';
import { Sampler } from './sampler.js';
import { BOS, Tokenizer } from './tokenizer.js';

export interface GenerateResult {
  /** Prompt tokens (with BOS) followed by the sampled ones: every token that was fed or produced. */
  tokens: number[];
  promptTokens: number[];
  /** The bytes run.c would print. */
  text: Uint8Array;
  /** Positions run (run.c's pos at the end). */
  steps: number;
  /** run.c's figure: (pos − 1) tokens over the time since the end of the first step, per second. */
  tokensPerSecond: number;
}

export interface GenerateOptions {
  prompt?: string | Uint8Array;
  /** Positions to run; 0 or more than seq_len means seq_len (run.c's rule). Default 256. */
  steps?: number;
  /** Called with each printed piece as it is produced. */
  onPiece?: (bytes: Uint8Array, token: number) => void;
  /** Called after each step (e.g. to check the cache). */
  onStep?: (pos: number) => void;
  now?: () => number;
}

export function generate(model: Llama, tokenizer: Tokenizer, sampler: Sampler, opts: GenerateOptions = {}): GenerateResult {
  if (!(model instanceof Llama)) throw new KernelError('INVALID_ARGUMENT', `generate model: expected a Llama, got ${show(model)}`);
  if (!(tokenizer instanceof Tokenizer)) throw new KernelError('INVALID_ARGUMENT', `generate tokenizer: expected a Tokenizer, got ${show(tokenizer)}`);
  if (!(sampler instanceof Sampler)) throw new KernelError('INVALID_ARGUMENT', `generate sampler: expected a Sampler, got ${show(sampler)}`);
  if (opts === null || typeof opts !== 'object') throw new KernelError('INVALID_ARGUMENT', `generate options: expected an object, got ${show(opts)}`);
  knownOptions(opts, ['prompt', 'steps', 'onPiece', 'onStep', 'now'], 'generate options');
  if (opts.prompt !== undefined && typeof opts.prompt !== 'string' && !(opts.prompt instanceof Uint8Array)) throw new KernelError('INVALID_ARGUMENT', `generate prompt: expected a string or a Uint8Array, got ${show(opts.prompt)}`);
  for (const k of ['onPiece', 'onStep', 'now'] as const) {
    if (opts[k] !== undefined && typeof opts[k] !== 'function') throw new KernelError('INVALID_ARGUMENT', `generate ${k}: expected a function, got ${show(opts[k])}`);
  }
  const seqLen = model.cache.capacity;
  let steps = opts.steps ?? 256;
  if (!Number.isInteger(steps) || steps < 0) throw new KernelError('INVALID_ARGUMENT', `generate steps: expected an integer >= 0, got ${show(opts.steps)}`);
  if (steps === 0 || steps > seqLen) steps = seqLen;
  const V = model.config.vocabSize;
  if (tokenizer.vocabSize !== V) throw new KernelError('INVALID_ARGUMENT', `generate tokenizer: it has ${tokenizer.vocabSize} tokens, the model ${V} (parse tokenizer.bin with the model's config.vocabSize)`);
  if (sampler.vocabSize !== V) throw new KernelError('INVALID_ARGUMENT', `generate sampler: it samples ${sampler.vocabSize} tokens, the model has ${V}`);
  const now = opts.now ?? (() => (typeof performance !== 'undefined' ? performance.now() : Date.now()));
  const prompt = tokenizer.encode(opts.prompt ?? '', true, false);
  const k = model.kernels;
  model.reset();
  const out: number[] = [];
  const tokens: number[] = [prompt[0]];
  let token = prompt[0], pos = 0, start = 0, started = false;
  while (pos < steps) {
    model.forward(token);
    const next = pos < prompt.length - 1 ? prompt[pos + 1] : sampler.sample(k, model.memory, model.logitsPtr);
    pos++;
    opts.onStep?.(pos);
    if (next === BOS) break;
    const piece = Tokenizer.printable(tokenizer.decode(token, next));
    for (const b of piece) out.push(b);
    if (piece.length > 0) opts.onPiece?.(piece, next);
    tokens.push(next);
    token = next;
    if (!started) { start = now(); started = true; }
  }
  const end = now();
  const tps = started && pos > 1 && end > start ? ((pos - 1) / (end - start)) * 1000 : 0;
  return { tokens, promptTokens: prompt, text: Uint8Array.from(out), steps: pos, tokensPerSecond: tps };
}
