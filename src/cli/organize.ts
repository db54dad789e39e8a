/**
 * `memex tag …` and `memex saved …` (issue 44, docs/organize.md): tags, tagging rules and saved searches on
 * the running server (POST /v1/tags/add|remove, GET /v1/tags, /v1/tags/rules, /v1/saved), found and
 * authenticated by the client rule (src/client/target.ts). A saved search runs as `memex search @NAME`.
 */
import { UsageError } from '../util/errors.ts';
import { CLIENT_OPTIONS_USAGE as COMMON } from './usage.ts';
import { defineVerb, runVerb, type VerbIo } from './verbs.ts';

export const TAG_USAGE = `usage: memex tag add NAME QUERY...       tag every document QUERY matches (every word required)
       memex tag remove NAME QUERY...    take the tag off every document QUERY matches
       memex tag list                    every tag with its documents, conversations and rules
       memex tag rule add NAME QUERY...  tag what QUERY matches now and every document ingested later
       memex tag rule list               the rules, with the documents each tagged
       memex tag rule remove ID [--remove-tags]
                                         remove a rule (--remove-tags: and the tags it gave)

Tag names are case-insensitive; '/' makes levels (finance/bank). QUERY is the search
language of docs/search.md, tag:NAME and tag:NAME/* included.

options:
${COMMON}`;

export const SAVED_USAGE = `usage: memex saved list                  saved searches: documents each matches, new since last looked at
       memex saved add NAME QUERY... [--type T] [--person P] [--since D] [--until D]
                                         save a search (replaces one of the same name)
       memex saved remove NAME

Run one with memex search @NAME.

options:
${COMMON}`;

interface TagCount {
  name: string;
  documents: number;
  conversations: number;
  rules: number;
}
interface Rule {
  rule_id: string;
  tag: string;
  query: string;
  documents: number;
}
interface Saved {
  name: string;
  query: string;
  filters: Record<string, unknown>;
  count?: number;
  new_since_seen?: number;
}

const plural = (n: number, one: string) => `${n} ${one}${n === 1 ? '' : 's'}`;

export const TAG = defineVerb({
  name: 'tag',
  help: `  tag add|remove NAME QUERY... | tag list | tag rule add NAME QUERY... | tag rule list | tag rule remove ID
                                      tags by hand and by rule (docs/organize.md)`,
  usage: TAG_USAGE,
  server: true,
  positionals: 'words',
  options: {
    json: { kind: 'boolean', description: "print the server's JSON answer" },
    'remove-tags': { kind: 'boolean', description: 'tag rule remove: and the tags the rule gave' },
  },
  async run({ args: words, values, client, out }) {
    {
      const [sub, a, b] = words;
      if (sub === 'add' || sub === 'remove') {
        if (!a || words.length < 3) throw new UsageError(`tag ${sub} needs NAME and QUERY`);
      } else if (sub === 'rule') {
        if (a === 'add' && (!b || words.length < 4)) throw new UsageError('tag rule add needs NAME and QUERY');
        if (a === 'remove' && !b) throw new UsageError('tag rule remove needs the rule ID (memex tag rule list)');
        if (!['add', 'list', 'remove'].includes(a ?? '')) throw new UsageError('tag rule takes add, list or remove');
      } else if (sub !== 'list') {
        throw new UsageError(sub ? `unknown tag command "${sub}"` : 'tag takes add, remove, list or rule');
      }
    }
    const json = (v: unknown) => out.write(`${JSON.stringify(v, null, 2)}\n`);
    const [sub, ...rest] = words;
    if (sub === 'add' || sub === 'remove') {
      const res = await client.call(sub === 'add' ? 'addTag' : 'removeTag', {
        body: { tag: rest[0], query: rest.slice(1).join(' ') },
      });
      if (values.json) return json(res), 0;
      out.write(
        sub === 'add'
          ? `tagged ${plural(res.changed, 'document')} ${res.tag} (${res.matched} matched; ${res.matched - res.changed} had it already)\n`
          : `took ${res.tag} off ${plural(res.changed, 'document')} (${res.matched} matched)\n`,
      );
      return 0;
    }
    if (sub === 'list') {
      const res = await client.call('listTags', {});
      if (values.json) return json(res), 0;
      if (res.tags.length === 0) out.write('no tags yet (memex tag add NAME QUERY)\n');
      for (const t of res.tags) {
        const extra = [t.conversations ? plural(t.conversations, 'conversation') : '', t.rules ? plural(t.rules, 'rule') : ''].filter(Boolean);
        out.write(`${t.name}\t${plural(t.documents, 'document')}${extra.length ? `, ${extra.join(', ')}` : ''}\n`);
      }
      return 0;
    }
    // rule add | list | remove
    const [op, ...args] = rest;
    if (op === 'add') {
      const res = await client.call('addTagRule', {
        body: { tag: args[0], query: args.slice(1).join(' ') },
      });
      if (values.json) return json(res), 0;
      out.write(`rule ${res.rule.rule_id}: ${res.rule.tag} <- ${res.rule.query}\ntagged ${plural(res.tagged, 'document')} now; new documents are tagged as they arrive\n`);
      return 0;
    }
    if (op === 'list') {
      const res = await client.call('listTagRules', {});
      if (values.json) return json(res), 0;
      if (res.rules.length === 0) out.write('no rules (memex tag rule add NAME QUERY)\n');
      for (const r of res.rules) out.write(`${r.rule_id}\t${r.tag}\t${r.query}\t${plural(r.documents, 'document')}\n`);
      return 0;
    }
    const res = await client.call('deleteTagRule', {
      params: { rule_id: args[0] },
      query: { remove_tags: values['remove-tags'] ? true : undefined },
    });
    if (values.json) return json(res), 0;
    out.write(`removed rule ${res.rule_id}${values['remove-tags'] ? ` and the ${plural(res.tags_removed, 'tag')} it gave` : ''}\n`);
    return 0;
  },
});

export const runTagCommand = (argv: string[], io: VerbIo = {}): Promise<number> => runVerb(TAG, argv, io);

export const SAVED = defineVerb({
  name: 'saved',
  help: `  saved list | saved add NAME QUERY... | saved remove NAME
                                      saved searches; run one with memex search @NAME`,
  usage: SAVED_USAGE,
  server: true,
  positionals: 'words',
  options: {
    json: { kind: 'boolean', description: "print the server's JSON answer" },
    type: { kind: 'string', description: 'saved add: only this kind' },
    person: { kind: 'string', description: 'saved add: only documents with this person' },
    since: { kind: 'string', description: 'saved add: only documents from this date on' },
    until: { kind: 'string', description: 'saved add: only documents up to this date' },
    attachments: { kind: 'boolean', description: 'saved add: only documents with attachments' },
  },
  async run({ args: words, values, client, out }) {
    {
      const [sub, name] = words;
      if (sub === 'add' && (!name || words.length < 3)) throw new UsageError('saved add needs NAME and QUERY');
      if (sub === 'remove' && !name) throw new UsageError('saved remove needs NAME');
      if (!['add', 'list', 'remove'].includes(sub ?? '')) throw new UsageError(sub ? `unknown saved command "${sub}"` : 'saved takes list, add or remove');
      if (name?.startsWith('@')) words[1] = name.slice(1);
    }
    const json = (v: unknown) => out.write(`${JSON.stringify(v, null, 2)}\n`);
    const [sub, name, ...query] = words;
    if (sub === 'list') {
      const res = await client.call('listSavedSearches', {});
      if (values.json) return json(res), 0;
      if (res.saved.length === 0) out.write('no saved searches (memex saved add NAME QUERY)\n');
      for (const s of res.saved) {
        out.write(`@${s.name}\t${plural(s.count ?? 0, 'document')}, ${s.new_since_seen ?? 0} new\t${s.query}\n`);
      }
      return 0;
    }
    if (sub === 'add') {
      const filters = {
        source_type: values.type,
        person: values.person,
        start_date: values.since,
        end_date: values.until,
        has_attachments: values.attachments ? true : undefined,
      };
      const res = await client.call('saveSearch', {
        params: { name },
        body: { query: query.join(' '), filters: Object.fromEntries(Object.entries(filters).filter(([, v]) => v !== undefined)) },
      });
      if (values.json) return json(res), 0;
      out.write(`saved @${res.name}: ${plural(res.count ?? 0, 'document')} match now (memex search @${res.name})\n`);
      return 0;
    }
    await client.call('deleteSavedSearch', { params: { name } });
    if (values.json) return json({ removed: name }), 0;
    out.write(`removed @${name}\n`);
    return 0;
  },
});

export const runSavedCommand = (argv: string[], io: VerbIo = {}): Promise<number> => runVerb(SAVED, argv, io);
