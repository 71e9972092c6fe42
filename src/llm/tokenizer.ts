/**
 * llama2.c's tokenizer.bin and its BPE, byte for byte as run.c does it.
 *
 * File: int32 max_token_length, then for each of vocab_size tokens (vocab_size comes from
 * the checkpoint): float32 score, int32 len, len bytes. Tokens are byte strings (C strings:
 * everything from a NUL byte on is ignored, as run.c's strcmp/printf do).
 *
 * encode (run.c): BOS (1) if asked; a dummy-prefix token " " when the text is not empty;
 * then each UTF-8 character (up to 4 bytes) as its token, or its bytes as byte-fallback
 * tokens (byte + 3); then repeatedly merge the adjacent pair whose concatenation is a token
 * with the highest score (first such pair on ties); EOS (2) if asked.
 * decode: the piece of a token; after BOS a leading space is dropped; pieces "<0xXX>" are
 * the raw byte XX. `printable` is run.c's safe_printf filter.
 */
import { KernelError, show } from '../errors.js';

export const BOS = 1;
export const EOS = 2;

function key(bytes: Uint8Array): string {
  let s = '';
  for (let i = 0; i < bytes.length; i++) s += String.fromCharCode(bytes[i]);
  return s;
}

function cString(b: Uint8Array): Uint8Array {
  const z = b.indexOf(0);
  return z < 0 ? b : b.subarray(0, z);
}

/** vocab: an array of Uint8Arrays; scores: numbers, one per token (KernelError otherwise). */
function checkVocab(what: string, vocab: unknown, scores: unknown): void {
  if (!Array.isArray(vocab)) throw new KernelError('INVALID_ARGUMENT', `${what} vocab: expected an array of Uint8Arrays, got ${show(vocab)}`);
  const bad = vocab.findIndex((v) => !(v instanceof Uint8Array));
  if (bad >= 0) throw new KernelError('INVALID_ARGUMENT', `${what} vocab[${bad}]: expected a Uint8Array, got ${show(vocab[bad])}`);
  const ok = scores !== null && typeof scores === 'object' && typeof (scores as ArrayLike<unknown>).length === 'number';
  if (!ok) throw new KernelError('INVALID_ARGUMENT', `${what} scores: expected an array of numbers, got ${show(scores)}`);
  const sc = scores as ArrayLike<unknown>;
  if (sc.length !== vocab.length) throw new KernelError('INVALID_SHAPE', `${what} scores: expected ${vocab.length} (one per token), got ${sc.length}`);
  for (let i = 0; i < sc.length; i++) {
    if (typeof sc[i] !== 'number') throw new KernelError('INVALID_ARGUMENT', `${what} scores[${i}]: expected a number, got ${show(sc[i])}`);
  }
}

export class Tokenizer {
  readonly vocab: Uint8Array[];
  readonly scores: Float32Array;
  readonly maxTokenLength: number;
  private readonly ids = new Map<string, number>();

  constructor(vocab: Uint8Array[], scores: ArrayLike<number>, maxTokenLength: number) {
    checkVocab('Tokenizer', vocab, scores);
    if (!Number.isSafeInteger(maxTokenLength) || maxTokenLength < 0) {
      throw new KernelError('INVALID_ARGUMENT', `Tokenizer maxTokenLength: expected an integer >= 0, got ${show(maxTokenLength)}`);
    }
    this.vocab = vocab.map(cString);
    this.scores = Float32Array.from(scores);
    this.maxTokenLength = maxTokenLength;
    // First id wins for duplicate strings.
    this.vocab.forEach((v, i) => {
      const k = key(v);
      if (!this.ids.has(k)) this.ids.set(k, i);
    });
  }

  get vocabSize(): number {
    return this.vocab.length;
  }

  /** Reads tokenizer.bin for a model with `vocabSize` tokens. */
  static parse(bytes: Uint8Array, vocabSize: number): Tokenizer {
    if (!(bytes instanceof Uint8Array)) throw new KernelError('INVALID_ARGUMENT', `tokenizer.bin: expected the file's bytes as a Uint8Array, got ${show(bytes)}`);
    if (!Number.isSafeInteger(vocabSize) || vocabSize < 1) throw new KernelError('INVALID_ARGUMENT', `Tokenizer.parse vocabSize: expected the model's vocabulary size (an integer >= 1), got ${show(vocabSize)}`);
    const dv = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
    const fail = (msg: string): never => { throw new KernelError('INVALID_VALUE', `tokenizer.bin: ${msg}`); };
    if (bytes.byteLength < 4) fail(`expected at least 4 bytes, got ${bytes.byteLength}`);
    const maxLen = dv.getInt32(0, true);
    let p = 4;
    const vocab: Uint8Array[] = [], scores: number[] = [];
    for (let i = 0; i < vocabSize; i++) {
      if (p + 8 > bytes.byteLength) fail(`token ${i}: file ends at byte ${bytes.byteLength} (the model has ${vocabSize} tokens)`);
      scores.push(dv.getFloat32(p, true));
      const len = dv.getInt32(p + 4, true);
      p += 8;
      if (len < 0 || p + len > bytes.byteLength) fail(`token ${i}: length ${len} at byte ${p - 4} runs past the end (${bytes.byteLength} bytes)`);
      vocab.push(bytes.slice(p, p + len));
      p += len;
    }
    return new Tokenizer(vocab, scores, maxLen);
  }

  /** Serializes in the tokenizer.bin format. */
  static write(vocab: Uint8Array[], scores: ArrayLike<number>, maxTokenLength?: number): Uint8Array {
    checkVocab('Tokenizer.write', vocab, scores);
    if (maxTokenLength !== undefined && !(Number.isInteger(maxTokenLength) && maxTokenLength >= -(2 ** 31) && maxTokenLength < 2 ** 31)) {
      throw new KernelError('INVALID_ARGUMENT', `Tokenizer.write maxTokenLength: expected an int32 or undefined, got ${show(maxTokenLength)}`);
    }
    const max = maxTokenLength ?? vocab.reduce((m, v) => Math.max(m, v.length), 0);
    const size = 4 + vocab.reduce((n, v) => n + 8 + v.length, 0);
    const out = new Uint8Array(size);
    const dv = new DataView(out.buffer);
    dv.setInt32(0, max, true);
    let p = 4;
    vocab.forEach((v, i) => {
      dv.setFloat32(p, scores[i], true);
      dv.setInt32(p + 4, v.length, true);
      out.set(v, p + 8);
      p += 8 + v.length;
    });
    return out;
  }

  /** Token id of a byte string, or −1. */
  lookup(bytes: Uint8Array | string): number {
    return this.ids.get(typeof bytes === 'string' ? bytes : key(bytes)) ?? -1;
  }

  /** run.c's encode(). `text`: a string (encoded as UTF-8) or raw bytes. */
  encode(text: string | Uint8Array, bos = true, eos = false): number[] {
    if (typeof text !== 'string' && !(text instanceof Uint8Array)) throw new KernelError('INVALID_ARGUMENT', `Tokenizer.encode text: expected a string or a Uint8Array, got ${show(text)}`);
    let t = typeof text === 'string' ? new TextEncoder().encode(text) : text;
    t = cString(t);
    const tokens: number[] = [];
    if (bos) tokens.push(BOS);
    if (t.length > 0) {
      // run.c pushes str_lookup(" ") unconditionally; a vocabulary without " " would
      // push −1 there (undefined behaviour in C), so it is skipped here.
      const dummy = this.lookup(' ');
      if (dummy >= 0) tokens.push(dummy);
    }
    let buf: number[] = [];
    for (let i = 0; i < t.length; i++) {
      const c = t[i];
      if ((c & 0xc0) !== 0x80) buf = [];
      buf.push(c);
      const next = i + 1 < t.length ? t[i + 1] : 0;
      if ((next & 0xc0) === 0x80 && buf.length < 4) continue;
      const id = this.lookup(String.fromCharCode(...buf));
      if (id !== -1) tokens.push(id);
      else {
        // byte fallback: <0xXX> is token byte + 3; a vocabulary without those tokens cannot
        // encode this character (run.c reads past its vocabulary here)
        for (const b of buf) {
          if (b + 3 >= this.vocab.length) {
            throw new KernelError('INVALID_VALUE', `tokenizer encode: ${show(new TextDecoder().decode(Uint8Array.from(buf)))} is not in the vocabulary, which has no byte-fallback tokens (<0x00>..<0xFF> at ids 3..258; this one has ${this.vocab.length} tokens)`);
          }
          tokens.push(b + 3);
        }
      }
      buf = [];
    }
    const keys = tokens.map((id) => key(this.vocab[id] ?? new Uint8Array(0)));
    for (;;) {
      let bestScore = -1e10, bestId = -1, bestIdx = -1;
      for (let i = 0; i < tokens.length - 1; i++) {
        const id = this.lookup(keys[i] + keys[i + 1]);
        if (id !== -1 && this.scores[id] > bestScore) {
          bestScore = this.scores[id]; bestId = id; bestIdx = i;
        }
      }
      if (bestIdx === -1) break;
      tokens.splice(bestIdx, 2, bestId);
      keys.splice(bestIdx, 2, key(this.vocab[bestId]));
    }
    if (eos) tokens.push(EOS);
    return tokens;
  }

  /** run.c's decode(prev, token): the bytes of the piece. */
  decode(prev: number, token: number): Uint8Array {
    const n = this.vocab.length;
    for (const [what, id] of [['prev', prev], ['token', token]] as const) {
      if (!Number.isInteger(id) || id < 0 || id >= n) throw new KernelError('INVALID_ARGUMENT', `tokenizer decode ${what}: expected a token id in [0, ${n}), got ${show(id)}`);
    }
    let piece = this.vocab[token];
    if (prev === BOS && piece[0] === 0x20) piece = piece.subarray(1);
    // glibc's sscanf(piece, "<0x%02hhX>", &byte) == 1: "<0x", then %X skips white space
    // (C's isspace) and reads a field of at most 2 characters: an optional sign, then hex
    // digits (at least one); the value is taken modulo 256 (hh), so "<0x 41>" is 'A',
    // "<0x+9>" a tab, "<0x-1>" 0xFF. The '>' after it does not change sscanf's result.
    if (piece.length >= 4 && piece[0] === 0x3c && piece[1] === 0x30 && piece[2] === 0x78) {
      const hex = (c: number) => (c >= 48 && c <= 57 ? c - 48 : c >= 65 && c <= 70 ? c - 55 : c >= 97 && c <= 102 ? c - 87 : -1);
      let i = 3;
      while (i < piece.length && (piece[i] === 0x20 || (piece[i] >= 0x09 && piece[i] <= 0x0d))) i++;
      let w = 0, neg = false, v = 0, digits = 0;
      if (i < piece.length && (piece[i] === 0x2b || piece[i] === 0x2d)) { neg = piece[i] === 0x2d; i++; w++; }
      for (; w < 2 && i < piece.length && hex(piece[i]) >= 0; i++, w++, digits++) v = v * 16 + hex(piece[i]);
      if (digits > 0) {
        const byte = (neg ? -v : v) & 0xff;
        return byte === 0 ? new Uint8Array(0) : Uint8Array.of(byte);
      }
    }
    return piece;
  }

  /** run.c's safe_printf: what gets printed for a piece (nothing for one unprintable byte). */
  static printable(piece: Uint8Array): Uint8Array {
    if (piece.length === 0) return piece;
    if (piece.length === 1) {
      const b = piece[0];
      const print = b >= 0x20 && b <= 0x7e, space = b === 0x20 || (b >= 0x09 && b <= 0x0d);
      if (!(print || space)) return new Uint8Array(0);
    }
    return piece;
  }
}
