/**
 * `memex forget`: a client of POST /v1/forget on the running server. It always asks for the dry
 * run first, prints what would be removed, and acts only after the user says yes (or with --yes).
 */
import { parseArgs } from 'node:util';
import readline from 'node:readline/promises';
import { createServerClient } from '../client/server.ts';
import { ClientError } from '../client/errors.ts';
import { resolveServerTarget } from '../client/target.ts';
import type { ForgetResponseT } from '../schemas/forget.ts';
import { usageMessage } from './usage.ts';

export const FORGET_USAGE = `usage: memex forget (--person ID | --doc ID | --source TYPE [--account ID] | --identifier VALUE [--type KIND])
                    [--block] [--dry-run] [--yes] [--url URL] [--token TOKEN]

Erases a person, a document (every version), a source or one identifier with everything derived from
it: chunks, vectors, stored files, threads left empty, people, relationship edges, submissions.
Prints what would be removed and asks before acting (--yes skips the question; --dry-run only counts).
--block keeps the source or identifier out from now on: collectors' documents from it are skipped.
See docs/forget.md.`;

function describe(a: ForgetResponseT): string {
  const r = a.removed;
  const lines = [
    `documents       ${r.documents} (${r.versions} versions)`,
    `chunks          ${r.chunks} (${r.vectors} vectors)`,
    `stored files    ${r.files}`,
    `threads         ${r.threads}`,
    `people          ${r.people} (${r.identifiers} identifiers, ${r.relationship_edges} relationship edges)`,
    `links           ${r.document_people} document-person links; ${r.documents_unlinked} group documents kept without them`,
    `submissions     ${r.submissions}`,
    `contact sync    ${r.contact_sync_state}`,
  ];
  if (a.blocked) lines.push(`blocked         ${a.blocked} new block-list entries`);
  return lines.map((l) => `  ${l}`).join('\n');
}

export async function runForgetCommand(argv: string[], env: NodeJS.ProcessEnv = process.env): Promise<number> {
  const { values } = parseArgs({
    args: argv,
    options: {
      person: { type: 'string' },
      doc: { type: 'string' },
      source: { type: 'string' },
      account: { type: 'string' },
      identifier: { type: 'string' },
      type: { type: 'string' },
      block: { type: 'boolean', default: false },
      'dry-run': { type: 'boolean', default: false },
      yes: { type: 'boolean', short: 'y', default: false },
      url: { type: 'string' },
      token: { type: 'string' },
      help: { type: 'boolean', short: 'h', default: false },
    },
  });
  if (values.help) {
    console.log(FORGET_USAGE);
    return 0;
  }
  const targets = [values.person, values.doc, values.source, values.identifier].filter((v) => v !== undefined);
  if (targets.length !== 1) {
    console.error(usageMessage('forget', 'give exactly one of --person, --doc, --source, --identifier', FORGET_USAGE));
    return 2;
  }
  const body: Record<string, unknown> = {};
  if (values.person) body.person_id = values.person;
  if (values.doc) body.doc_id = values.doc;
  if (values.source) {
    body.source_type = values.source;
    if (values.account) body.source_account_id = values.account;
  }
  if (values.identifier) {
    body.identifier = values.identifier;
    if (values.type) body.identifier_type = values.type;
  }
  if (values.block) body.block = true;

  const client = createServerClient(resolveServerTarget({ url: values.url, token: values.token }, env));
  try {
    const plan = await client.call('forget', { body: { ...body, dry_run: true } });
    console.log(`${values['dry-run'] ? 'Would remove' : 'This will remove'}:\n${describe(plan)}`);
    if (values['dry-run']) return 0;
    if (!values.yes) {
      if (!process.stdin.isTTY) {
        console.error('memex forget: not a terminal, so nobody can confirm; run again with --yes to erase');
        return 2;
      }
      const rl = readline.createInterface({ input: process.stdin, output: process.stdout });
      const answer = (await rl.question('Erase this for good? Type "yes" to go on: ')).trim().toLowerCase();
      rl.close();
      if (answer !== 'yes') {
        console.log('nothing was removed');
        return 1;
      }
    }
    const done = await client.call('forget', { body });
    console.log(`Removed:\n${describe(done)}`);
    return 0;
  } catch (err) {
    if (err instanceof ClientError) {
      console.error(`memex forget: ${err.message}`);
      return err.status === 404 ? 1 : 2;
    }
    throw err;
  }
}
