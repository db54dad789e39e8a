/**
 * Apple Mail's `.partial.emlx`: for a message whose attachments were not downloaded with it, Mail.app
 * stores the message with each such part's body left out (the part keeps its headers plus an
 * `X-Apple-Content-Length` header with the original size) and keeps the attachment itself as a file
 * in the mailbox's `Attachments/<message number>/<IMAP part number>/<filename>` folder, next to
 * `Messages/`. This puts those files back into the message (as base64 parts) before it is parsed, so
 * attachments arrive with their content, and lists the ones that are not there.
 */
import fs from 'node:fs/promises';
import path from 'node:path';
import { headerParam, leafHeaderLines, mimeLeaves, replaceLeaves, type LeafReplacement } from './mime-structure.ts';

export interface MissingAttachment {
  /** IMAP part number of the attachment in the message ("2", "1.2"). */
  part: string;
  filename: string | null;
  /** The size Mail.app recorded for it (X-Apple-Content-Length), when readable. */
  declared_size: number | null;
  reason: string;
}

export interface RestoredMessage {
  message: Buffer;
  restored: number;
  missing: MissingAttachment[];
}

const MAX_RESTORED_BYTES = 64 * 1024 * 1024;

function isInside(child: string, root: string): boolean {
  const rel = path.relative(root, child);
  return rel === '' || (!rel.startsWith('..') && !path.isAbsolute(rel));
}

/** The message number of an .emlx path: `12345` for `12345.partial.emlx`. */
function messageNumber(emlxPath: string): string {
  return path.basename(emlxPath).replace(/\..*$/, '');
}

async function findAttachmentFile(dir: string, filename: string | null, confineTo: string): Promise<string | null> {
  let names: string[];
  try {
    names = await fs.readdir(dir);
  } catch {
    return null;
  }
  const candidates = names.filter((n) => !n.startsWith('.'));
  // Mail.app keeps the part's own filename; when it had to change it (a `/` in the name), the
  // folder still holds just that one file.
  const pick = filename && candidates.includes(filename) ? filename : candidates.length === 1 ? candidates[0] : null;
  if (!pick) return null;
  try {
    const real = await fs.realpath(path.join(dir, pick));
    if (!isInside(real, confineTo)) return null;
    const st = await fs.stat(real);
    return st.isFile() ? real : null;
  } catch {
    return null;
  }
}

/**
 * Restores the left-out attachment bodies of `message` (the RFC 822 part of the .emlx at `emlxPath`).
 * Files are read only from the `Attachments` folder beside the file's `Messages` folder, confined to
 * that mailbox folder (symlinks out of it are ignored).
 */
export async function restorePartialEmlx(message: Buffer, emlxPath: string): Promise<RestoredMessage> {
  const s = message.toString('latin1');
  if (!/^x-apple-content-length:/im.test(s)) return { message, restored: 0, missing: [] };
  const mailboxDir = path.dirname(path.dirname(emlxPath));
  const attachmentsDir = path.join(mailboxDir, 'Attachments', messageNumber(emlxPath));
  let confineTo: string;
  try {
    confineTo = await fs.realpath(mailboxDir);
  } catch {
    confineTo = mailboxDir;
  }
  const replacements: LeafReplacement[] = [];
  const missing: MissingAttachment[] = [];
  let total = 0;
  for (const leaf of mimeLeaves(s)) {
    const declared = leaf.headers.get('x-apple-content-length');
    if (declared === undefined) continue;
    const filename =
      headerParam(leaf.headers.get('content-disposition'), 'filename') ?? headerParam(leaf.headers.get('content-type'), 'name');
    const declaredSize = /^\d+$/.test(declared) ? Number(declared) : null;
    const file = await findAttachmentFile(path.join(attachmentsDir, leaf.part), filename, confineTo);
    const content = file ? await fs.readFile(file).catch(() => null) : null;
    if (!content) {
      missing.push({ part: leaf.part, filename, declared_size: declaredSize, reason: `not found in Attachments/${messageNumber(emlxPath)}/${leaf.part}/` });
      continue;
    }
    if (total + content.length > MAX_RESTORED_BYTES) {
      missing.push({ part: leaf.part, filename, declared_size: declaredSize, reason: `restored attachments would exceed ${MAX_RESTORED_BYTES} bytes` });
      continue;
    }
    total += content.length;
    // The part's headers minus Mail.app's marker; the file goes in as base64.
    const headerLines = leafHeaderLines(s, leaf).filter((l) => !/^x-apple-content-length\s*:/i.test(l));
    replacements.push({ leaf, headerLines, content });
  }
  return { message: replaceLeaves(message, s, replacements), restored: replacements.length, missing };
}
