/**
 * One Markdown note as Obsidian (and most Markdown notes apps) writes it: optional YAML front matter between
 * `---` lines, `#tags` in the text, `[[wiki links]]` (`[[Note]]`, `[[Note|alias]]`, `[[Note#Heading]]`,
 * `![[embedded.png]]`), Markdown links to other `.md` files, and headings.
 */
import { parse as parseYaml } from 'yaml';
import { codedError } from '../../util/errors.ts';

export interface ParsedNote {
  /** The front matter as read (an object), or {} when there is none. */
  frontMatter: Record<string, unknown>;
  /** The text after the front matter. */
  body: string;
  /** The first heading's text, if any. */
  firstHeading: string | null;
  /** Tags of the front matter (`tags:`, `tag:`) and of the text (`#tag`), without `#`, in first-seen order. */
  tags: string[];
  /** Link targets as written (`Note`, `Folder/Note`, `Note.md`), without heading or alias, in first-seen order. */
  links: string[];
  /** Embedded files (`![[image.png]]`, `![](image.png)`) that are not notes. */
  embeds: string[];
  aliases: string[];
}

export class NoteParseError extends codedError('IMPORT.UNREADABLE') {}

const FRONT_MATTER = /^\uFEFF?---[ \t]*\r?\n([\s\S]*?)\r?\n(?:---|\.\.\.)[ \t]*(?:\r?\n|$)/;

/** Text without fenced code blocks and inline code, where `#` and `[[` mean nothing. */
function withoutCode(text: string): string {
  return text.replace(/^(```|~~~)[^\n]*\n[\s\S]*?(^\1[ \t]*$|(?![\s\S]))/gm, '').replace(/`[^`\n]*`/g, '');
}

function stringList(v: unknown): string[] {
  if (v == null) return [];
  if (Array.isArray(v)) return v.flatMap(stringList);
  if (typeof v === 'string') return v.split(/[,\s]+/).filter(Boolean);
  if (typeof v === 'number') return [String(v)];
  return [];
}

/** A tag as Obsidian keeps it: without the leading `#`; letters, digits, `_`, `-`, `/` (nested tags); not only digits. */
function cleanTag(t: string): string | null {
  const s = t.trim().replace(/^#+/, '');
  if (!s || s.length > 200 || !/^[\p{L}\p{N}_\-/]+$/u.test(s) || /^[\p{N}]+$/u.test(s)) return null;
  return s;
}

export function parseNote(text: string): ParsedNote {
  let frontMatter: Record<string, unknown> = {};
  let body = text.replace(/^\uFEFF/, '');
  const fm = FRONT_MATTER.exec(text);
  if (fm) {
    let parsed: unknown;
    try {
      parsed = parseYaml(fm[1], { maxAliasCount: 50 });
    } catch (err) {
      const msg = (err as Error).message.split('\n')[0];
      throw new NoteParseError(`front matter is not valid YAML: ${msg}`);
    }
    if (parsed != null && (typeof parsed !== 'object' || Array.isArray(parsed))) throw new NoteParseError('front matter is not a YAML mapping (key: value lines)');
    frontMatter = (parsed ?? {}) as Record<string, unknown>;
    body = text.slice(fm[0].length);
  }
  const prose = withoutCode(body);
  const heading = /^#{1,6}[ \t]+(.+?)[ \t#]*$/m.exec(prose);
  const tags = new Set<string>();
  for (const t of [...stringList(frontMatter.tags), ...stringList(frontMatter.tag)]) {
    const c = cleanTag(t);
    if (c) tags.add(c);
  }
  for (const m of prose.matchAll(/(?:^|[\s(,;])#([\p{L}\p{N}_\-/]+)/gu)) {
    const c = cleanTag(m[1]);
    if (c) tags.add(c);
  }
  const links = new Set<string>();
  const embeds = new Set<string>();
  for (const m of prose.matchAll(/(!?)\[\[([^\]\n|#^]*)(?:[#^][^\]\n|]*)?(?:\|[^\]\n]*)?\]\]/g)) {
    const target = m[2].trim();
    if (!target) continue;
    if (m[1] && /\.[A-Za-z0-9]{1,8}$/.test(target) && !/\.md$/i.test(target)) embeds.add(target);
    else links.add(target);
  }
  for (const m of prose.matchAll(/(!?)\[[^\]\n]*\]\(<?([^)\s>]+)>?(?:\s+"[^"]*")?\)/g)) {
    let target = m[2];
    if (/^[a-z][a-z0-9+.-]*:/i.test(target) || target.startsWith('#')) continue; // a URL or an anchor
    target = target.split('#')[0];
    try {
      target = decodeURIComponent(target);
    } catch {
      /* keep as written */
    }
    if (!target) continue;
    if (/\.md$/i.test(target)) links.add(target);
    else if (m[1]) embeds.add(target);
  }
  return {
    frontMatter,
    body,
    firstHeading: heading ? heading[1].replace(/\[\[([^\]|]*\|)?([^\]]*)\]\]/g, '$2').trim() || null : null,
    tags: [...tags],
    links: [...links],
    embeds: [...embeds],
    aliases: (Array.isArray(frontMatter.aliases) ? frontMatter.aliases : frontMatter.aliases != null ? [frontMatter.aliases] : [])
      .filter((a): a is string | number => typeof a === 'string' || typeof a === 'number')
      .map((a) => String(a).trim())
      .filter(Boolean)
      .slice(0, 50),
  };
}

/** A front matter date (`created: 2026-03-01`, `2026-03-01 10:15`, an ISO string, a YAML timestamp), or null. */
export function frontMatterDate(fm: Record<string, unknown>, keys: string[]): Date | null {
  for (const k of keys) {
    const v = fm[k];
    if (v == null || v === '') continue;
    let d: Date | null = null;
    if (v instanceof Date) d = v;
    else if (typeof v === 'string') {
      d = new Date(v.trim().replace(/^(\d{4}-\d{2}-\d{2}) (\d{2}:\d{2})/, '$1T$2'));
    } else if (typeof v === 'number' && v > 1e9) d = new Date(v < 1e11 ? v * 1000 : v);
    if (d && !Number.isNaN(d.getTime()) && d.getUTCFullYear() > 1900 && d.getUTCFullYear() < 3000) return d;
  }
  return null;
}
