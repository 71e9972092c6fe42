// A minimal PNG decoder for the runtime tests' screenshot checks (node:zlib only): 8-bit
// greyscale, grey+alpha, RGB and RGBA, not interlaced — what Chromium's screenshots are.
// Returns { width, height, rgba } with 4 bytes per pixel.
import { inflateSync } from 'node:zlib';

const SIGNATURE = [137, 80, 78, 71, 13, 10, 26, 10];

export function decodePng(buf) {
  const b = Buffer.from(buf.buffer ?? buf, buf.byteOffset ?? 0, buf.byteLength ?? buf.length);
  if (!SIGNATURE.every((x, i) => b[i] === x)) throw new Error('not a PNG (bad signature)');
  let at = 8, width = 0, height = 0, depth = 0, colorType = -1, interlace = 0;
  const idat = [];
  while (at < b.length) {
    const len = b.readUInt32BE(at), type = b.toString('latin1', at + 4, at + 8), data = b.subarray(at + 8, at + 8 + len);
    at += 12 + len;
    if (type === 'IHDR') {
      width = data.readUInt32BE(0);
      height = data.readUInt32BE(4);
      depth = data[8];
      colorType = data[9];
      interlace = data[12];
    } else if (type === 'IDAT') idat.push(data);
    else if (type === 'IEND') break;
  }
  const channels = { 0: 1, 2: 3, 4: 2, 6: 4 }[colorType];
  if (depth !== 8 || !channels || interlace !== 0) throw new Error(`unsupported PNG: bit depth ${depth}, colour type ${colorType}, interlace ${interlace}`);
  const raw = inflateSync(Buffer.concat(idat));
  const stride = width * channels;
  if (raw.length !== height * (stride + 1)) throw new Error(`PNG data is ${raw.length} bytes, expected ${height * (stride + 1)}`);
  const px = new Uint8Array(height * stride);
  for (let y = 0; y < height; y++) {
    const filter = raw[y * (stride + 1)], src = raw.subarray(y * (stride + 1) + 1, (y + 1) * (stride + 1));
    const row = y * stride, prev = row - stride;
    for (let x = 0; x < stride; x++) {
      const a = x >= channels ? px[row + x - channels] : 0;
      const up = y > 0 ? px[prev + x] : 0;
      const c = y > 0 && x >= channels ? px[prev + x - channels] : 0;
      let v;
      if (filter === 0) v = src[x];
      else if (filter === 1) v = src[x] + a;
      else if (filter === 2) v = src[x] + up;
      else if (filter === 3) v = src[x] + ((a + up) >> 1);
      else if (filter === 4) {
        const p = a + up - c, pa = Math.abs(p - a), pb = Math.abs(p - up), pc = Math.abs(p - c);
        v = src[x] + (pa <= pb && pa <= pc ? a : pb <= pc ? up : c);
      } else throw new Error(`PNG row ${y}: unknown filter ${filter}`);
      px[row + x] = v & 0xff;
    }
  }
  const rgba = new Uint8Array(width * height * 4);
  for (let i = 0; i < width * height; i++) {
    const s = i * channels;
    const grey = channels <= 2;
    rgba[4 * i] = px[s];
    rgba[4 * i + 1] = grey ? px[s] : px[s + 1];
    rgba[4 * i + 2] = grey ? px[s] : px[s + 2];
    rgba[4 * i + 3] = channels === 2 ? px[s + 1] : channels === 4 ? px[s + 3] : 255;
  }
  return { width, height, rgba };
}

/** Pixels of `img` that differ (any channel by more than `tol`) from the colour `rgba`. */
export function countDiffering(img, [r, g, bl, al], tol = 24) {
  let n = 0;
  const p = img.rgba;
  for (let i = 0; i < p.length; i += 4) if (Math.abs(p[i] - r) > tol || Math.abs(p[i + 1] - g) > tol || Math.abs(p[i + 2] - bl) > tol || Math.abs(p[i + 3] - al) > tol) n++;
  return n;
}

/** Number of distinct colours in `img`. */
export function distinctColours(img) {
  const seen = new Set();
  const u = new Uint32Array(img.rgba.buffer, img.rgba.byteOffset, img.rgba.length >> 2);
  for (const v of u) seen.add(v);
  return seen.size;
}
