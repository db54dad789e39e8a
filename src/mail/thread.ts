/**
 * The conversation rule for email, shared by the collectors (which send a provisional thread) and the
 * catalog (which links messages and merges threads): a message's thread is the root of its `References`
 * chain, else its `In-Reply-To`, else the message itself — the way notmuch and mu group mail. The thread
 * id is a uuid derived from the root's Message-ID only, so every collector path computes the same id
 * without coordination.
 */
import crypto from 'node:crypto';

/** Message-IDs longer than this are not used for threading (RFC 5322 lines stop at 998 characters). */
export const MAX_MESSAGE_ID_CHARS = 998;

/** `<id@host>` -> `id@host` (trimmed, surrounding angle brackets removed); null when empty or too long. */
export function normaliseMessageId(id: string | null | undefined): string | null {
  if (!id) return null;
  const s = id.trim().replace(/^<+/, '').replace(/>+$/, '').trim();
  return s === '' || s.length > MAX_MESSAGE_ID_CHARS ? null : s;
}

/**
 * UUID from the first 16 bytes of SHA-256(name) with the version nibble set to 5 and the RFC 4122
 * variant bits (10xx) — the spec's deterministic thread id.
 */
export function uuidFromName(name: string): string {
  const b = crypto.createHash('sha256').update(name).digest().subarray(0, 16);
  b[6] = (b[6] & 0x0f) | 0x50;
  b[8] = (b[8] & 0x3f) | 0x80;
  const h = b.toString('hex');
  return `${h.slice(0, 8)}-${h.slice(8, 12)}-${h.slice(12, 16)}-${h.slice(16, 20)}-${h.slice(20)}`;
}

/** Thread external id of the conversation rooted at `root` (a Message-ID, or a collector's message key). */
export function emailThreadExternalId(root: string): string {
  return `email-root:${crypto.createHash('sha256').update(root).digest('hex')}`;
}

/** Thread id of the conversation rooted at `root`. */
export function emailThreadId(root: string): string {
  return uuidFromName(emailThreadExternalId(root));
}

export interface MessageLinks {
  /** The message's own id (null when it has none). */
  id: string | null;
  /** child -> parent edges the headers state: References in order, then the message under its parent. */
  edges: [string, string][];
  /** The root the message's own headers name: References[0], else In-Reply-To, else the message itself. */
  root: string | null;
}

/**
 * The parent edges stated by one message's headers. References lists the ancestors root first; the
 * direct parent is In-Reply-To when present (it may be missing from a truncated References), else the
 * last reference. Self-references are ignored.
 */
export function messageLinks(messageId: string | null, inReplyTo: string | null, references: readonly string[]): MessageLinks {
  const id = normaliseMessageId(messageId);
  const refs: string[] = [];
  for (const r of references) {
    const n = normaliseMessageId(r);
    if (n && n !== id && !refs.includes(n)) refs.push(n);
  }
  const irt = normaliseMessageId(inReplyTo);
  const chain = irt && irt !== id && refs[refs.length - 1] !== irt ? [...refs.filter((r) => r !== irt), irt] : refs;
  const edges: [string, string][] = [];
  for (let i = 1; i < chain.length; i++) edges.push([chain[i], chain[i - 1]]);
  if (id && chain.length) edges.push([id, chain[chain.length - 1]]);
  return { id, edges, root: chain[0] ?? id };
}

/** `Re: Fwd: [x] Subject` -> the subject without reply/forward prefixes (Re, Fwd, Fw, Aw, Sv, Antw, Wg, Tr, Rif). */
export function baseSubject(subject: string | null | undefined): string | null {
  if (subject === null || subject === undefined) return null;
  let s = subject.trim();
  for (;;) {
    const next = s.replace(/^(re|fwd?|aw|sv|antw|wg|tr|rif)(\s*\[\d+\])?\s*:\s*/i, '');
    if (next === s) break;
    s = next;
  }
  return s;
}
