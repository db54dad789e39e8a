/**
 * Text, HTML and JSON files: decoded (decode.ts), HTML converted to readable text off the event loop
 * (html-convert.ts), JSON flattened to `path: value` lines, and the result cut at the character limit.
 */
import { canonicalJson } from '../util/hash.ts';
import { cleanText, cleanTextWithin, decodeText } from './decode.ts';
import type { Detected } from './detect.ts';
import type { ExtractMethod, ExtractResult } from './extract-types.ts';
import { htmlToReadable } from './html-convert.ts';
import type { ExtractLimits } from './limits.ts';

/** Text of a file detected as HTML, JSON or text. Throws when the HTML conversion fails (extract.ts reports it). */
export async function extractTextual(b: Buffer, det: Detected, limits: ExtractLimits): Promise<ExtractResult> {
  const html = det.kind === 'html';
  const { text: raw, charset, warnings } = decodeText(b, html ? { html } : undefined);
  if (html) {
    const lim = limitText(cleanText(await htmlToReadable(raw, limits, warnings)), limits.maxTextChars, warnings);
    return finishText('html', lim.text, charset, warnings, det, lim.truncated);
  }
  if (det.kind === 'json') {
    let parsed: unknown;
    try {
      parsed = JSON.parse(raw);
    } catch (e) {
      warnings.push(`invalid JSON (${(e as Error).message}); indexed as plain text`);
      const lim = limitText(cleanText(raw), limits.maxTextChars, warnings);
      return finishText('text', lim.text, charset, warnings, det, lim.truncated);
    }
    const j = jsonToText(parsed, limits.maxTextChars);
    if (j.truncated) warnings.push(`text truncated at ${limits.maxTextChars} characters`);
    return finishText('json', cleanText(j.text), charset, warnings, det, j.truncated || undefined);
  }
  // Plain text is cleaned in pieces, only as far as it is kept: a 50 MB file does not hold the event loop.
  const lim = await cleanTextWithin(raw, limits.maxTextChars);
  if (lim.truncated) warnings.push(`text truncated at ${limits.maxTextChars} characters`);
  return finishText('text', lim.text, charset, warnings, det, lim.truncated || undefined);
}

function limitText(text: string, max: number, warnings: string[]): { text: string; truncated?: boolean } {
  if (text.length <= max) return { text };
  warnings.push(`text truncated at ${max} characters`);
  return { text: text.slice(0, max), truncated: true };
}

function finishText(
  method: ExtractMethod,
  text: string,
  charset: string,
  warnings: string[],
  det: Detected,
  truncated?: boolean,
): ExtractResult {
  if (!text) return { status: 'failed', method, text: '', error: 'no text found', warnings, detected: det, charset };
  return { status: 'ready', method, text, warnings, detected: det, charset, truncated };
}

/** JSON to searchable lines `a.b[0].c: value`; keys and values both kept. */
function jsonToText(value: unknown, maxChars: number): { text: string; truncated: boolean } {
  const lines: string[] = [];
  let size = 0;
  let truncated = false;
  const push = (line: string) => {
    if (truncated) return;
    if (size + line.length > maxChars) {
      truncated = true;
      return;
    }
    size += line.length + 1;
    lines.push(line);
  };
  const walk = (v: unknown, p: string, depth: number) => {
    if (truncated) return;
    if (depth > 64) {
      // canonicalJson is iterative: JSON.stringify would overflow the stack on a file nested 100,000 levels deep.
      push(`${p}: ${canonicalJson(v).slice(0, 10_000)}`);
      return;
    }
    if (Array.isArray(v)) {
      if (v.length === 0) push(`${p}: []`);
      v.forEach((x, i) => walk(x, `${p}[${i}]`, depth + 1));
    } else if (v !== null && typeof v === 'object') {
      const entries = Object.entries(v as Record<string, unknown>);
      if (entries.length === 0) push(`${p}: {}`);
      for (const [k, x] of entries) walk(x, p ? `${p}.${k}` : k, depth + 1);
    } else {
      push(p ? `${p}: ${v === null ? 'null' : String(v)}` : String(v));
    }
  };
  walk(value, '', 0);
  return { text: lines.join('\n'), truncated };
}
