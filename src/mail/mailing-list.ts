/**
 * Mailing lists (issue 40, item 4): a list is a venue, not a person. A message came through a list when
 * it says so (List-Id, List-Post, X-Mailing-List) or its bounce address does (a `Sender:` or `Errors-To:`
 * like `linux-mips-owner@vger.kernel.org`), or `Precedence: list` with such an address; an address in To or
 * Cc is the list's own when it is the list's posting address or its display name says "open list:…" (the
 * form `get_maintainer.pl` writes). Pure functions: the same headers always give the same answer.
 */
import type { MailAddress } from './collected-message.ts';

export interface MailList {
  /** The List-Id's identifier, lower-cased (`linux-mips.vger.kernel.org`). */
  id: string;
  /** Its name part (`linux-mips`): what `list:` matches. */
  name: string;
  /** The posting address when the headers give it (List-Post, X-Mailing-List, or derived from a bounce address). */
  address: string | null;
}

/** Header values a list is recognised by (absent: null). */
export interface ListHeaders {
  listId?: string | null;
  listPost?: string | null;
  mailingList?: string | null;
  errorsTo?: string | null;
  precedence?: string | null;
  sender: MailAddress[];
}

/** `linux-mips-owner@…`, `owner-linux-mips@…`, `linux-mips-bounces@…`, `linux-mips-request@…`: a list's machinery. */
const BOUNCE = /^(?:owner-(?<a>.+)|(?<b>.+?)-(?:owner|bounces?|request))(?:\+[^@]*)?@(?<domain>.+)$/i;
/** "open list:MIPS", "open list", "moderated list:ARM…", "list:…", as get_maintainer.pl names lists. */
const LIST_DISPLAY_NAME = /^\s*(?:(?:open|moderated|closed|subscribers?[- ]only)\s+list\s*(?::|$)|list\s*:)/i;
const ADDRESS = /^[^@\s<>]+@[^@\s<>]+\.[^@\s<>]+$/;

/** The list a bounce address belongs to (`linux-mips-owner@vger.kernel.org` -> `linux-mips@vger.kernel.org`), or null. */
export function bounceListAddress(address: string): string | null {
  const m = BOUNCE.exec(address.trim().toLowerCase());
  if (!m?.groups) return null;
  const local = m.groups.a ?? m.groups.b;
  return local ? `${local}@${m.groups.domain}` : null;
}

/** `linux-mips@vger.kernel.org` as a List-Id (`linux-mips.vger.kernel.org`). */
export function listIdOfAddress(address: string): string {
  return address.trim().toLowerCase().replace('@', '.');
}

/** The identifier of a List-Id header value (`Linux MIPS <linux-mips.vger.kernel.org>` -> `linux-mips.vger.kernel.org`). */
export function parseListId(value: string | null | undefined): string | null {
  if (!value) return null;
  const inBrackets = /<([^<>]+)>/.exec(value)?.[1];
  const id = (inBrackets ?? value).trim().toLowerCase();
  return id && !/\s/.test(id) ? id : null;
}

/** The name part of a list id: what comes before its first dot (`linux-mips`). */
export function listName(id: string): string {
  const at = id.indexOf('.');
  return at > 0 ? id.slice(0, at) : id;
}

/** The first `mailto:` address of a List-Post value, or a bare address (X-Mailing-List). */
function mailtoAddress(value: string | null | undefined): string | null {
  if (!value) return null;
  const m = /mailto:([^>,\s?]+)/i.exec(value) ?? /<?([^<>\s,]+@[^<>\s,]+)>?/.exec(value);
  const a = m?.[1]?.trim().toLowerCase() ?? null;
  return a && ADDRESS.test(a) ? a : null;
}

/** The list this message came through, or null when it came directly. */
export function mailListOf(h: ListHeaders): MailList | null {
  const post = mailtoAddress(h.listPost) ?? mailtoAddress(h.mailingList);
  const bounce = [...h.sender.map((a) => a.address), ...(mailtoAddress(h.errorsTo) ? [mailtoAddress(h.errorsTo)!] : [])]
    .map(bounceListAddress)
    .find((a): a is string => a !== null) ?? null;
  const headerId = parseListId(h.listId);
  const address = post ?? bounce;
  const id = headerId ?? (address ? listIdOfAddress(address) : null);
  if (!id) return null;
  // A bounce address alone says "list" only with a list's Precedence (a `-request@` sender may be a service desk).
  if (!headerId && !post && !/^\s*(list|bulk)\s*$/i.test(h.precedence ?? '')) return null;
  return { id, name: listName(id), address };
}

/** Whether a To/Cc/Bcc address is a list's own: the message's list's posting address, or named like a list. */
export function listOfRecipient(a: MailAddress, list: MailList | null): string | null {
  const address = a.address.trim().toLowerCase();
  if (list && (address === list.address || listIdOfAddress(address) === list.id)) return list.id;
  if (a.name && LIST_DISPLAY_NAME.test(a.name)) return listIdOfAddress(address);
  return null;
}

/** Whether a `Sender:` address is the list (or its machinery) rather than someone sending on the author's behalf. */
export function isListSender(address: string, list: MailList | null): boolean {
  const a = address.trim().toLowerCase();
  if (bounceListAddress(a) !== null) return true;
  return list !== null && (a === list.address || listIdOfAddress(a) === list.id);
}
