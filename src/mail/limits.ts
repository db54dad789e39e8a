/**
 * Limits of the mail readers, in a module of their own: what only lists and compares files (an unchanged
 * rescan) needs them without loading the MIME parser.
 */

/** Largest message file accepted by the parse route and the collectors. */
export const MAX_EMAIL_FILE_BYTES = 64 * 1024 * 1024;
