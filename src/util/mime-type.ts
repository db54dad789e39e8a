/**
 * MIME types as the server keeps them: a parsed `type/subtype`, lower-case, without parameters, or
 * `application/octet-stream` when what was sent does not parse (issue 47 item 1).
 *
 * A type arrives from outside at every entry point: the Content-Type of an uploaded part, the
 * `mime_type` of an email's metadata.attachments entries (taken from the sender's header), a v2
 * document's `mime_type`. Browsers read a sloppy type generously: Chromium shows `image/svg+xml x`,
 * `image/svg+xml,`, `image/svg+xml ,` and `image/svg+xml(x)` as SVG, which runs script. So a stored
 * type is only ever what the RFC 9110 grammar parses (`token "/" token`, then parameters), reduced to
 * its essence; anything else is stored as the type that browsers never render.
 */

export const OCTET_STREAM = 'application/octet-stream';

/** RFC 9110 tchar: the characters of a token. */
const TOKEN = "[!#$%&'*+.^_`|~0-9A-Za-z-]+";
const ESSENCE = new RegExp(`^(${TOKEN})/(${TOKEN})`);
/** `OWS ";" OWS` before each parameter (read one at a time from where the last ended: no backtracking). */
const SEPARATOR = /[ \t]*;[ \t]*/y;
/** `name=token` or `name="quoted string"` (RFC 9110 §5.6.6: qdtext and quoted-pair). */
const PARAMETER = new RegExp(`${TOKEN}=(?:${TOKEN}|"(?:[\\t\\x20\\x21\\x23-\\x5b\\x5d-\\x7e\\x80-\\xff]|\\\\[\\t\\x20-\\x7e\\x80-\\xff])*")`, 'y');
const BLANKS = /[ \t]*/y;
/** RFC 6838 §4.2: at most 127 characters each for type and subtype names. */
const NAME_MAX = 127;
/** Longer input is not parsed at all (no header of a real file is anywhere near). */
const INPUT_MAX = 1024;

/** Whether `s` from `at` on is `*( OWS ";" OWS [ parameter ] ) OWS`, the rest of a media type. */
function validParameters(s: string, at: number): boolean {
  let i = at;
  for (;;) {
    SEPARATOR.lastIndex = i;
    if (!SEPARATOR.test(s)) break;
    i = SEPARATOR.lastIndex;
    PARAMETER.lastIndex = i;
    if (PARAMETER.test(s)) i = PARAMETER.lastIndex;
  }
  BLANKS.lastIndex = i;
  BLANKS.test(s);
  return BLANKS.lastIndex === s.length;
}

/**
 * The stored form of a declared MIME type: `type/subtype` in lower case, or application/octet-stream
 * when `raw` is not a media type (blank, junk after the subtype, a comma list, a comment, a control
 * character, a malformed parameter, over-long names). Valid parameters are dropped: nothing
 * downstream reads them.
 */
export function normaliseMimeType(raw: unknown): string {
  if (typeof raw !== 'string' || raw.length > INPUT_MAX) return OCTET_STREAM;
  const lead = /^[ \t]*/.exec(raw)![0].length;
  const m = ESSENCE.exec(raw.slice(lead));
  if (!m || m[1].length > NAME_MAX || m[2].length > NAME_MAX) return OCTET_STREAM;
  if (!validParameters(raw, lead + m[0].length)) return OCTET_STREAM;
  return `${m[1]}/${m[2]}`.toLowerCase();
}

/** normaliseMimeType for an optional value: absent (null, undefined, '') stays absent. */
export function normaliseOptionalMimeType(raw: unknown): string | null {
  if (raw === null || raw === undefined || raw === '') return null;
  return normaliseMimeType(raw);
}
