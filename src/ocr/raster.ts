/**
 * Turns any image memex can OCR into one the OCR engine reads. tesseract.js (Leptonica in WASM) decodes PNG,
 * JPEG and WebP reliably; sharp (libvips, bundled) adds GIF, TIFF and AVIF but has no BMP or Netpbm loader in
 * its prebuilt binaries. BMP and Netpbm (PBM/PGM/PPM, P1–P6) are simple uncompressed raster formats, so they
 * are decoded here into raw pixels and handed to sharp as raw input; everything else goes through sharp.
 */
import { loadSharp } from '../util/sharp.ts';

export interface RawImage {
  data: Buffer;
  width: number;
  height: number;
  channels: 1 | 3 | 4;
}

/** Formats decoded by this module (sharp cannot read them). */
export type RasterType = 'bmp' | 'pnm';

export function sniffRaster(b: Buffer): RasterType | undefined {
  if (b.length >= 26 && b[0] === 0x42 && b[1] === 0x4d && [12, 40, 52, 56, 108, 124].includes(b.readUInt32LE(14))) return 'bmp';
  if (b.length >= 7 && b[0] === 0x50 && b[1] >= 0x31 && b[1] <= 0x36 && /^[\s#]$/.test(String.fromCharCode(b[2]))) {
    try {
      netpbmHeader(b);
      return 'pnm';
    } catch {
      return undefined;
    }
  }
  return undefined;
}

function checkSize(width: number, height: number, maxPixels: number): void {
  if (!Number.isInteger(width) || !Number.isInteger(height) || width <= 0 || height <= 0) throw new Error(`bad image size ${width}x${height}`);
  if (width * height > maxPixels) throw new Error(`image is ${width}x${height}, over the limit of ${maxPixels} pixels`);
}

// ---------------------------------------------------------------------------------------------------------------
// BMP (Windows bitmap): 1/4/8-bit palette, 16/24/32-bit direct colour, BI_RGB or BI_BITFIELDS; no RLE.

export function decodeBmp(b: Buffer, maxPixels = 40_000_000): RawImage {
  if (b.length < 26 || b.toString('latin1', 0, 2) !== 'BM') throw new Error('not a BMP file');
  const dataOffset = b.readUInt32LE(10);
  const dib = b.readUInt32LE(14);
  const core = dib === 12;
  const width = core ? b.readUInt16LE(18) : b.readInt32LE(18);
  const rawHeight = core ? b.readInt16LE(20) : b.readInt32LE(22);
  const bpp = core ? b.readUInt16LE(24) : b.readUInt16LE(28);
  const compression = core ? 0 : b.readUInt32LE(30);
  const topDown = rawHeight < 0;
  const height = Math.abs(rawHeight);
  checkSize(width, height, maxPixels);
  if (compression !== 0 && compression !== 3) throw new Error(`compressed BMP (compression ${compression}) is not supported`);
  if (![1, 4, 8, 16, 24, 32].includes(bpp)) throw new Error(`BMP with ${bpp} bits per pixel is not supported`);

  // Channel masks for 16/32-bit images: after the 40-byte header for BI_BITFIELDS, inside larger headers.
  let masks: [number, number, number] | undefined;
  if (bpp === 16 || bpp === 32) {
    if (compression === 3) {
      const at = 14 + 40;
      masks = [b.readUInt32LE(at), b.readUInt32LE(at + 4), b.readUInt32LE(at + 8)];
    } else {
      masks = bpp === 16 ? [0x7c00, 0x03e0, 0x001f] : [0x00ff0000, 0x0000ff00, 0x000000ff];
    }
  }
  const palette: number[][] = [];
  if (bpp <= 8) {
    const entry = core ? 3 : 4;
    const used = core ? 0 : b.readUInt32LE(46);
    const count = used || 1 << bpp;
    const at = 14 + dib + (compression === 3 ? 12 : 0);
    for (let i = 0; i < count && at + i * entry + 2 < b.length; i++) {
      const p = at + i * entry;
      palette.push([b[p + 2], b[p + 1], b[p]]);
    }
  }
  const stride = Math.floor((bpp * width + 31) / 32) * 4;
  if (dataOffset + stride * height > b.length) throw new Error('truncated BMP: pixel data runs past the end of the file');
  const out = Buffer.alloc(width * height * 3);
  const channel = (v: number, mask: number): number => {
    if (!mask) return 0;
    const shift = 31 - Math.clz32(mask & -mask);
    const max = mask >>> shift;
    return Math.round((((v & mask) >>> shift) * 255) / max);
  };
  for (let y = 0; y < height; y++) {
    const row = dataOffset + (topDown ? y : height - 1 - y) * stride;
    for (let x = 0; x < width; x++) {
      let r: number, g: number, bl: number;
      if (bpp <= 8) {
        const bit = x * bpp;
        const idx = (b[row + (bit >> 3)] >> (8 - bpp - (bit & 7))) & ((1 << bpp) - 1);
        [r, g, bl] = palette[idx] ?? [0, 0, 0];
      } else if (bpp === 24) {
        const p = row + x * 3;
        [r, g, bl] = [b[p + 2], b[p + 1], b[p]];
      } else {
        const v = bpp === 16 ? b.readUInt16LE(row + x * 2) : b.readUInt32LE(row + x * 4);
        [r, g, bl] = [channel(v, masks![0]), channel(v, masks![1]), channel(v, masks![2])];
      }
      const o = (y * width + x) * 3;
      out[o] = r;
      out[o + 1] = g;
      out[o + 2] = bl;
    }
  }
  return { data: out, width, height, channels: 3 };
}

// ---------------------------------------------------------------------------------------------------------------
// Netpbm: P1/P4 bitmap (1 = black), P2/P5 greymap, P3/P6 pixmap; ASCII or binary; maxval up to 65535.

interface NetpbmHeader {
  kind: number;
  width: number;
  height: number;
  maxval: number;
  /** Offset of the first byte after the header (binary) or of the first sample token (ASCII). */
  offset: number;
}

function netpbmHeader(b: Buffer): NetpbmHeader {
  const kind = b[1] - 0x30;
  const values: number[] = [];
  const need = kind === 1 || kind === 4 ? 2 : 3;
  let i = 2;
  while (values.length < need) {
    if (i >= b.length || i > 4096) throw new Error('truncated Netpbm header');
    const c = b[i];
    if (c === 0x23) {
      while (i < b.length && b[i] !== 0x0a && b[i] !== 0x0d) i++;
    } else if (c >= 0x30 && c <= 0x39) {
      let n = 0;
      while (i < b.length && b[i] >= 0x30 && b[i] <= 0x39) n = n * 10 + (b[i++] - 0x30);
      values.push(n);
      continue;
    } else if (!(c === 0x20 || (c >= 0x09 && c <= 0x0d))) {
      throw new Error('bad Netpbm header');
    }
    i++;
  }
  const [width, height, maxval = 1] = values;
  if (maxval < 1 || maxval > 65535) throw new Error(`bad Netpbm maxval ${maxval}`);
  // Exactly one whitespace byte separates the header from binary data.
  return { kind, width, height, maxval, offset: i + 1 };
}

export function decodeNetpbm(b: Buffer, maxPixels = 40_000_000): RawImage {
  const h = netpbmHeader(b);
  const { kind, width, height, maxval } = h;
  checkSize(width, height, maxPixels);
  const channels = kind === 3 || kind === 6 ? 3 : 1;
  const out = Buffer.alloc(width * height * channels);
  const scale = (v: number): number => Math.round((Math.min(v, maxval) * 255) / maxval);
  if (kind === 4) {
    const stride = Math.ceil(width / 8);
    if (h.offset + stride * height > b.length) throw new Error('truncated PBM: pixel data runs past the end of the file');
    for (let y = 0; y < height; y++)
      for (let x = 0; x < width; x++) out[y * width + x] = (b[h.offset + y * stride + (x >> 3)] >> (7 - (x & 7))) & 1 ? 0 : 255;
  } else if (kind === 5 || kind === 6) {
    const wide = maxval > 255 ? 2 : 1;
    if (h.offset + out.length * wide > b.length) throw new Error('truncated Netpbm: pixel data runs past the end of the file');
    for (let i = 0; i < out.length; i++) out[i] = scale(wide === 2 ? b.readUInt16BE(h.offset + i * 2) : b[h.offset + i]);
  } else {
    // ASCII: samples are decimal tokens; in P1 each 0/1 may be written without separators.
    let i = h.offset - 1;
    for (let n = 0; n < out.length; n++) {
      while (i < b.length && (b[i] < 0x30 || b[i] > 0x39)) {
        if (b[i] === 0x23) while (i < b.length && b[i] !== 0x0a) i++;
        else i++;
      }
      if (i >= b.length) throw new Error('truncated Netpbm: fewer samples than the header says');
      if (kind === 1) {
        out[n] = b[i++] === 0x31 ? 0 : 255;
      } else {
        let v = 0;
        while (i < b.length && b[i] >= 0x30 && b[i] <= 0x39) v = v * 10 + (b[i++] - 0x30);
        out[n] = scale(v);
      }
    }
  }
  return { data: out, width, height, channels };
}

/**
 * The image as PNG (first frame, EXIF orientation applied, alpha flattened on white). BMP and Netpbm are decoded
 * here; anything else must be readable by sharp. Throws with a readable message when the image cannot be decoded.
 */
export async function toPng(b: Buffer, maxPixels = 40_000_000): Promise<{ png: Buffer; width: number; height: number }> {
  const type = sniffRaster(b);
  const raw = type === 'bmp' ? decodeBmp(b, maxPixels) : type === 'pnm' ? decodeNetpbm(b, maxPixels) : undefined;
  const sharp = await loadSharp();
  const img = raw
    ? sharp(raw.data, { raw: { width: raw.width, height: raw.height, channels: raw.channels } })
    : sharp(b, { limitInputPixels: maxPixels }).rotate();
  const { data, info } = await img.flatten({ background: '#ffffff' }).png({ compressionLevel: 1 }).toBuffer({ resolveWithObject: true });
  return { png: data, width: info.width, height: info.height };
}
