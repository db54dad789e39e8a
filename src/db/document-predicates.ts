/**
 * SQL predicates over the `documents` table that several rooms share (catalog, people,
 * relationships). They live at the bottom so that a room filtering documents does not have to
 * import the catalog's attachment logic to say "not an email attachment".
 */

/** An email document (the partial indexes' predicate), for a table alias. */
export const isEmailSql = (a: string) => `${a}.source_type IN ('email', 'email_local')`;

/** SQL condition: the document (alias `a`) is an email attachment uploaded with its message's Message-ID. */
export const isEmailAttachmentSql = (a: string) => `(${isEmailSql(a)} AND ${a}.metadata->'email'->>'message_id' IS NOT NULL)`;
