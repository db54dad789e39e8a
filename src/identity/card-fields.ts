/**
 * A person's descriptive fields (names, organisation, nicknames, notes, photo) as the union of what
 * its cards and merged persons said. Each source record keeps its card's fields
 * (people_source_map.fields), so a new version of one card takes back what that card gave and puts
 * in what it now says, leaving every other card's contribution alone. Names that are not the
 * display name stay as nicknames, so people search finds the person by any of them.
 */

export interface CardFields {
  display_name: string | null;
  given_name: string | null;
  family_name: string | null;
  organization: string | null;
  nicknames: string[];
  notes: string | null;
  photo_hash: string | null;
}

type Scalar = 'given_name' | 'family_name' | 'organization' | 'photo_hash';
const SCALARS: Scalar[] = ['given_name', 'family_name', 'organization', 'photo_hash'];

/** A "name" that is only an address or a number (what documents use when they know no name). */
export const looksLikeIdentifier = (name: string | null | undefined): boolean =>
  !name || /@|^\+?[\d\s().\-]+$/.test(name);

const unique = (xs: (string | null | undefined)[]): string[] => [
  ...new Set(xs.map((x) => x?.trim()).filter((x): x is string => !!x)),
];

/** Notes of several cards, one block each, none repeated. */
function joinNotes(...parts: (string | null | undefined)[]): string | null {
  const blocks: string[] = [];
  for (const p of parts) {
    const t = p?.trim();
    if (t && !blocks.some((b) => b.includes(t))) blocks.push(t);
  }
  return blocks.length ? blocks.join('\n') : null;
}

/** Fields as a stored jsonb value may hold them (older rows, other writers): always complete. */
export function asCardFields(v: Partial<CardFields> | null | undefined): CardFields {
  return {
    display_name: v?.display_name ?? null,
    given_name: v?.given_name ?? null,
    family_name: v?.family_name ?? null,
    organization: v?.organization ?? null,
    nicknames: Array.isArray(v?.nicknames) ? v!.nicknames : [],
    notes: v?.notes ?? null,
    photo_hash: v?.photo_hash ?? null,
  };
}

/**
 * The person's fields after one card changes from `old` to `next` (`old` null: the card is new to
 * this person; `next` null: the card is deleted). `others` are the fields of the person's other
 * live cards; `sole` says there are none, so a new card owns the person's fields (a person known
 * only from documents takes the card's name, and keeps the name the documents gave as a nickname).
 * A field belongs to the card when the person's value is what the card said before (or is empty);
 * only those fields change.
 */
export function applyCard(
  cur: CardFields,
  old: CardFields | null,
  next: CardFields | null,
  ctx: { sole: boolean; others: CardFields[] },
): CardFields {
  const owns = (curValue: string | null, oldValue: string | null | undefined) =>
    curValue == null || (old ? curValue === oldValue : ctx.sole);
  const out: CardFields = { ...cur };
  for (const f of SCALARS) {
    if (!owns(cur[f], old?.[f])) continue;
    const fromOthers = ctx.others.find((o) => o[f])?.[f] ?? null;
    out[f] = next?.[f] ?? fromOthers ?? (old && cur[f] === old[f] ? null : cur[f]);
  }

  const demoted: string[] = [];
  if (looksLikeIdentifier(cur.display_name) || owns(cur.display_name, old?.display_name)) {
    const others = ctx.others.map((o) => o.display_name).find((d) => !looksLikeIdentifier(d)) ?? null;
    out.display_name = next?.display_name ?? others ?? cur.display_name;
    // A real name the documents gave is kept as a nickname when the card renames the person.
    if (!looksLikeIdentifier(cur.display_name) && cur.display_name !== old?.display_name) demoted.push(cur.display_name!);
  }

  // Nicknames this card gave before go unless another card (or the new version) still says them.
  const said = (f: CardFields | null) => (f ? [...f.nicknames, f.display_name] : []);
  const stillSaid = new Set(unique([...ctx.others.flatMap(said), ...said(next)]));
  const before = new Set(unique(said(old)));
  const kept = cur.nicknames.filter((n) => !before.has(n) || stillSaid.has(n));
  const names = [...kept, ...(next?.nicknames ?? []), ...demoted];
  if (next && !looksLikeIdentifier(next.display_name)) names.push(next.display_name!);
  out.nicknames = unique(names).filter((n) => n !== out.display_name);

  // Notes: the card's old block is replaced by its new one; other blocks stay.
  let notes = cur.notes;
  if (old?.notes && notes?.includes(old.notes)) {
    notes = notes.replace(old.notes, '').replace(/\n{2,}/g, '\n').trim() || null;
  }
  out.notes = joinNotes(notes, next?.notes);
  return out;
}

/**
 * The survivor's fields after a merge: it keeps its own and takes the other's where it has none;
 * the merged person's name becomes a nickname (or the display name, when the survivor is only
 * named by an address), nicknames and notes are unioned.
 */
export function mergeFields(target: CardFields, source: CardFields): CardFields {
  const display =
    looksLikeIdentifier(target.display_name) && !looksLikeIdentifier(source.display_name)
      ? source.display_name
      : target.display_name;
  const names = [...target.nicknames, ...source.nicknames];
  for (const d of [target.display_name, source.display_name]) if (!looksLikeIdentifier(d)) names.push(d!);
  return {
    display_name: display,
    given_name: target.given_name ?? source.given_name,
    family_name: target.family_name ?? source.family_name,
    organization: target.organization ?? source.organization,
    nicknames: unique(names).filter((n) => n !== display),
    notes: joinNotes(target.notes, source.notes),
    photo_hash: target.photo_hash ?? source.photo_hash,
  };
}
