/**
 * `memex forget`: a client of POST /v1/forget on the running server. It always asks for the dry
 * run first, prints what would be removed, and acts only after the user says yes (or with --yes).
 */
import readline from 'node:readline/promises';
import { ClientError } from '../client/errors.ts';
import type { ForgetResponseT } from '../schemas/forget.ts';
import { UsageError } from '../util/errors.ts';
import { defineVerb, runVerb, type VerbIo } from './verbs.ts';

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

export const FORGET = defineVerb({
  name: 'forget',
  help: `  forget --person ID | --doc ID | --source TYPE [--account ID] | --identifier VALUE
         [--block] [--dry-run] [--yes]
                                      erase it with everything derived from it (docs/forget.md)`,
  usage: FORGET_USAGE,
  server: true,
  options: {
    person: { kind: 'string', description: 'a person id' },
    doc: { kind: 'string', description: 'a document id (every version)' },
    source: { kind: 'string', description: 'a source type' },
    account: { kind: 'string', description: "with --source: one account's" },
    identifier: { kind: 'string', description: 'an address, phone number or handle' },
    type: { kind: 'string', description: "with --identifier: the identifier's kind" },
    block: { kind: 'boolean', description: 'keep it out from now on' },
    'dry-run': { kind: 'boolean', description: 'only count' },
    yes: { kind: 'boolean', short: 'y', description: 'do not ask' },
  },
  async run({ values, client, out, say }) {
    const targets = [values.person, values.doc, values.source, values.identifier].filter((v) => v !== undefined);
    if (targets.length !== 1) throw new UsageError('give exactly one of --person, --doc, --source, --identifier');
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
    try {
      const plan = await client.call('forget', { body: { ...body, dry_run: true } });
      out.write(`${values['dry-run'] ? 'Would remove' : 'This will remove'}:\n${describe(plan)}\n`);
      if (values['dry-run']) return 0;
      if (!values.yes) {
        if (!process.stdin.isTTY) {
          say('not a terminal, so nobody can confirm; run again with --yes to erase');
          return 2;
        }
        const rl = readline.createInterface({ input: process.stdin, output: process.stdout });
        const answer = (await rl.question('Erase this for good? Type "yes" to go on: ')).trim().toLowerCase();
        rl.close();
        if (answer !== 'yes') {
          out.write('nothing was removed\n');
          return 1;
        }
      }
      const done = await client.call('forget', { body });
      out.write(`Removed:\n${describe(done)}\n`);
      return 0;
    } catch (err) {
      // Nothing to forget is 1; a request the server refuses (a malformed id) is a usage mistake, 2.
      if (!(err instanceof ClientError)) throw err;
      say(err.message);
      return err.status === 404 ? 1 : 2;
    }
  },
});

export const runForgetCommand = (argv: string[], env: NodeJS.ProcessEnv = process.env, io: VerbIo = {}): Promise<number> => runVerb(FORGET, argv, { ...io, env });
