/**
 * `memex people candidates` and `memex people merge A B` (issue 40, item 5): people with one name under several
 * addresses are offered, and merged only when the owner says so, through the running server
 * (GET /v1/people/merge-candidates, POST /v1/people/merge).
 */
import { UsageError } from '../util/errors.ts';
import { defineVerb, runVerb, type VerbIo } from './verbs.ts';

export const PEOPLE_USAGE = `usage: memex people candidates [--json]   people with the same name under different addresses
       memex people merge A B [--json]     A and B are one person: B is merged into A (A keeps its name)
A and B are person ids (memex people candidates lists them) or an address, phone or handle they own.
Nothing is merged unless you say so.
options: --url URL, --token TOKEN (as every client command)`;

export const PEOPLE = defineVerb({
  name: 'people',
  help: `  people candidates | merge A B       people with one name under several addresses; merge B into A`,
  usage: PEOPLE_USAGE,
  server: true,
  positionals: 'any',
  options: { json: { kind: 'boolean', description: "print the server's JSON answer" } },
  async run({ args: positionals, values, client, out }) {
    {
      const [action, ...rest] = positionals;
      if (!(action === 'candidates' && rest.length === 0)) {
        if (action !== 'merge') throw new UsageError(action ? `unknown people command "${action}"` : 'no command given');
        if (rest.length !== 2) throw new UsageError('merge takes two people: memex people merge A B');
      }
    }
    const [action, a, b] = positionals;
    if (action === 'candidates') {
      const r = await client.call('mergeCandidates', { query: { limit: 200 } });
      if (values.json) {
        out.write(`${JSON.stringify(r, null, 2)}\n`);
        return 0;
      }
      if (r.groups.length === 0) {
        out.write('no two people share a name: nothing to merge\n');
        return 0;
      }
      for (const g of r.groups) {
        out.write(`${g.display_name}\n`);
        for (const p of g.people) out.write(`  ${p.person_id}  ${[...p.emails, ...p.phones].join(', ') || '(no address)'} · ${p.message_count} messages\n`);
        out.write(`  merge: memex people merge ${g.people[0].person_id} ${g.people[1].person_id}\n\n`);
      }
      return 0;
    }
    const rec = await client.call('mergePeople', { body: { target: a, source: b } });
    if (values.json) out.write(`${JSON.stringify(rec, null, 2)}\n`);
    else out.write(`merged ${rec.source_person_id} into ${rec.target_person_id}\n`);
    return 0;
  },
});

export const runPeopleCommand = (argv: string[], io: VerbIo = {}): Promise<number> => runVerb(PEOPLE, argv, io);
