/** Small shared pieces. Everything stored is rendered as text nodes: nothing from the API becomes HTML. */
import type { ComponentChildren } from 'preact';
import { useState } from 'preact/hooks';
import { thumbnailUrl } from './api.ts';
import { Icon, SOURCE_ICONS } from './icons.tsx';
import { href } from './router.ts';

/** Splits a snippet on the API's « » markers; marked parts become <mark>, all of it text. */
export function snippetParts(text: string): { text: string; mark: boolean }[] {
  const out: { text: string; mark: boolean }[] = [];
  const re = /«([^«»]*)»/g;
  let last = 0;
  for (let m = re.exec(text); m; m = re.exec(text)) {
    if (m.index > last) out.push({ text: text.slice(last, m.index), mark: false });
    out.push({ text: m[1], mark: true });
    last = m.index + m[0].length;
  }
  if (last < text.length) out.push({ text: text.slice(last), mark: false });
  return out;
}

export function Snippet({ text }: { text: string }) {
  return (
    <bdi class="snippet">
      {snippetParts(text).map((p, i) => (p.mark ? <mark key={i}>{p.text}</mark> : p.text))}
    </bdi>
  );
}

export function SourceBadge({ type }: { type: string }) {
  return (
    <span class="source" title={type}>
      <Icon name={SOURCE_ICONS[type] ?? 'dot'} /> {type}
    </span>
  );
}

export function formatDate(iso: string | null | undefined, withTime = false): string {
  if (!iso) return '';
  const d = new Date(iso);
  if (Number.isNaN(d.getTime())) return iso;
  return withTime
    ? d.toLocaleString(undefined, { dateStyle: 'medium', timeStyle: 'short' })
    : d.toLocaleDateString(undefined, { dateStyle: 'medium' });
}

export function When({ iso, withTime }: { iso: string | null | undefined; withTime?: boolean }) {
  if (!iso) return null;
  return <time dateTime={iso}>{formatDate(iso, withTime)}</time>;
}

/** A document's first line when it has no title. */
export function titleOf(title: string | null | undefined, text?: string | null): string {
  const t = title?.trim();
  if (t) return t;
  const first = (text ?? '').split('\n').find((l) => l.trim() !== '')?.trim() ?? '';
  return first ? (first.length > 120 ? `${first.slice(0, 119)}…` : first) : '(untitled)';
}

/** People as a document carries them (people[] of the API: identifier, name, role, person_id). */
export function PeopleList({ people }: { people: unknown[] }) {
  const list = people
    .map((p) => p as { name?: string; display_name?: string; identifier?: string; person_id?: string; role?: string })
    .filter((p) => p && (p.name || p.display_name || p.identifier));
  if (!list.length) return null;
  return (
    <span class="people">
      {list.slice(0, 6).map((p, i) => {
        const label = <bdi>{p.display_name || p.name || p.identifier || ''}</bdi>;
        return (
          <span key={i}>
            {i > 0 && ', '}
            {p.person_id ? <a href={href(`person/${p.person_id}`)}>{label}</a> : label}
          </span>
        );
      })}
      {list.length > 6 && ` +${list.length - 6}`}
    </span>
  );
}

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/** Ids in the address are typed or pasted by people: anything not shaped like one is simply not found. */
export function isUuid(s: string): boolean {
  return UUID.test(s);
}

/** What a link to something that does not exist (mistyped, cut short, or forgotten) shows. */
export function NotFound({ what }: { what: string }) {
  return (
    <section class="not-found" aria-labelledby="nf-title">
      <h1 id="nf-title">{what} not found</h1>
      <p>
        The link may be incomplete, or the {what.toLowerCase()} was forgotten. <a href={href('search')}>Search instead</a>.
      </p>
    </section>
  );
}

export function ErrorNote({ error }: { error: unknown }) {
  if (!error) return null;
  return (
    <p class="error" role="alert">
      {error instanceof Error ? error.message : String(error)}
    </p>
  );
}

export function Page({ title, children, actions }: { title: string; children: ComponentChildren; actions?: ComponentChildren }) {
  return (
    <section class="page" aria-labelledby="page-title">
      <header class="page-head">
        <h1 id="page-title">{title}</h1>
        {actions}
      </header>
      {children}
    </section>
  );
}

export function formatBytes(n: number): string {
  if (n < 1024) return `${n} B`;
  if (n < 1024 * 1024) return `${(n / 1024).toFixed(1)} KB`;
  return `${(n / 1024 / 1024).toFixed(1)} MB`;
}

/** The essence of a type as the server stores it: `type/subtype`, lower case (else ''). */
function essence(mimeType: string | null | undefined): string {
  const m = /^\s*([a-z0-9!#$&^_.+-]+\/[a-z0-9!#$&^_.+-]+)\s*(;|$)/i.exec(mimeType ?? '');
  return m ? m[1].toLowerCase() : '';
}

/** Raster images the server makes a thumbnail of (never SVG, which is markup and can hold script). */
const THUMBNAIL_IMAGES = new Set(['image/png', 'image/jpeg', 'image/gif', 'image/webp', 'image/bmp', 'image/tiff', 'image/x-portable-anymap', 'image/x-portable-bitmap', 'image/x-portable-graymap', 'image/x-portable-pixmap']);
/** Raster images a browser shows, which GET /v1/files/{sha}/image serves (it decides from the bytes). */
const SHOWN_IMAGES = new Set(['image/png', 'image/jpeg', 'image/gif', 'image/webp', 'image/bmp']);

/**
 * Files the server makes a thumbnail of: raster images and PDFs. An allow-list, not a deny-list: a
 * sender's `image/svg+xml x` is no image here. The kind decides only when there is no type at all.
 */
export function previewable(mimeType: string | null | undefined, kind?: string | null): boolean {
  const m = essence(mimeType);
  if (m) return m === 'application/pdf' || THUMBNAIL_IMAGES.has(m);
  return !mimeType && (kind === 'pdf' || kind === 'image');
}

/** Images the page offers to show at their own size (what it shows is what the server decides). */
export function showableImage(mimeType: string | null | undefined, kind?: string | null): boolean {
  const m = essence(mimeType);
  return m ? SHOWN_IMAGES.has(m) : !mimeType && kind === 'image';
}

/** The SHA-256 of a file document's own file (metadata.file) when it can be previewed, else null. */
export function previewOf(metadata: unknown): { sha256: string; pdf: boolean } | null {
  const file = (metadata as { file?: { sha256?: unknown; content_type?: unknown } } | null)?.file;
  if (!file || typeof file.sha256 !== 'string' || typeof file.content_type !== 'string') return null;
  return previewable(file.content_type) ? { sha256: file.sha256, pdf: /pdf/i.test(file.content_type) } : null;
}

/**
 * A stored file's thumbnail (made by the server): small in a list, large on a document page. Decorative
 * next to the file's name (alt ""); nothing at all when the server has none.
 */
export function Thumb({ sha256, size, label }: { sha256: string; size: 'small' | 'large'; label?: string }) {
  const [failed, setFailed] = useState(false);
  if (failed) return null;
  return (
    <img
      class={`thumb thumb-${size}`}
      src={thumbnailUrl(sha256)}
      alt={label ?? ''}
      loading="lazy"
      decoding="async"
      onError={() => setFailed(true)}
    />
  );
}
