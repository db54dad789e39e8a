/**
 * Renders text into a PNG for OCR tests, fully offline and without system fonts: sharp's bundled
 * libvips/Pango draws the text with DejaVu Sans from the `dejavu-fonts-ttf` npm package (fontfile), so
 * nothing depends on fontconfig having fonts installed on the machine.
 */
import { createRequire } from 'node:module';
import path from 'node:path';
import sharp from 'sharp';

const require = createRequire(import.meta.url);
export const FONT_FILE = path.join(path.dirname(require.resolve('dejavu-fonts-ttf/package.json')), 'ttf', 'DejaVuSans.ttf');

export interface RenderOptions {
  /** Point size at 72 dpi (≈ pixel height of capitals × 1.4); default 36. */
  size?: number;
  /** White margin around the text in pixels; default 40. */
  margin?: number;
  format?: 'png' | 'jpeg';
}

/** Black text on white. Lines are separated by "\n". */
export async function renderTextImage(text: string, opts: RenderOptions = {}): Promise<Buffer> {
  const size = opts.size ?? 36;
  const margin = opts.margin ?? 40;
  // Pango markup is on by default in sharp's text input: escape it so the text is drawn literally.
  const escaped = text.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;');
  // The text input is a one-channel mask (text = white); invert it to black on white like a page.
  // Two pipelines on purpose: sharp applies operations in its own fixed order (extend before negate),
  // so the white margin must be added after the inverted pixels exist.
  const inverted = await sharp({
    text: { text: escaped, font: `DejaVu Sans ${size}`, fontfile: FONT_FILE, dpi: 72, spacing: Math.round(size / 3) },
  })
    .negate({ alpha: false })
    .png()
    .toBuffer();
  const img = sharp(inverted).extend({ top: margin, bottom: margin, left: margin, right: margin, background: '#ffffff' });
  return opts.format === 'jpeg' ? img.jpeg({ quality: 90 }).toBuffer() : img.png().toBuffer();
}
