/**
 * Signature parts of signed mail (issue 31): the detached PGP/MIME signature (RFC 3156,
 * `application/pgp-signature`, usually `signature.asc`) and the S/MIME one (RFC 8551,
 * `application/pkcs7-signature` or the older `x-pkcs7-signature`, usually `smime.p7s`). They are
 * base64 noise, not something a person attached: no mail path stores them as documents (the parser
 * leaves them out of a message's attachments, and the gateway's file ingest skips an email
 * attachment upload that is one), as notmuch leaves them out of its index and attachment tag.
 */
const SIGNATURE_TYPES = new Set(['application/pgp-signature', 'application/pkcs7-signature', 'application/x-pkcs7-signature']);
const SIGNATURE_NAMES = new Set(['signature.asc', 'smime.p7s']);

/** Whether a mail part (its MIME type, file name) is a signature part. */
export function isSignaturePart(part: { mimeType?: string | null; filename?: string | null }): boolean {
  const type = (part.mimeType ?? '').split(';')[0].trim().toLowerCase();
  if (SIGNATURE_TYPES.has(type)) return true;
  const name = (part.filename ?? '').trim().toLowerCase();
  return SIGNATURE_NAMES.has(name);
}
