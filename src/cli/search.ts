/**
 * `memex search QUERY`, `memex ask QUESTION` and `memex open ID`: the running server's search, ask and document
 * routes (GET /v1/search, POST /v1/ask, GET /v1/doc/{id}/view) printed for a person, or as the server's JSON with
 * --json. The server and token are found by the client rule (src/client/target.ts).
 */
import type { DocumentViewResponseT, StoredDocumentT } from '../schemas/documents.ts';
import type { AskCitationT } from '../schemas/search.ts';
import { type ServerClient } from '../client/server.ts';
import { ClientError } from '../client/errors.ts';
import { UsageError } from '../util/errors.ts';
import { CLIENT_OPTIONS_USAGE as COMMON } from './usage.ts';
import { defineVerb, runVerb, type Output, type VerbIo } from './verbs.ts';


export const SEARCH_USAGE = `usage: memex search QUERY... [options]

Hybrid search (words and meaning) over everything the server holds. QUERY takes the
search terms of docs/search.md: '"a phrase"', -word, OR, from: to: with: subject:
type: (email, file, chat, note, event, task, web, or an exact source type) list:NAME
tag:NAME tag:NAME/* has:attachment in:thread/ID before: after: on: (2026-10-05, 2026-10).
A bare address (stable@vger.kernel.org) finds the mail it is on as sender or recipient.
@NAME runs the saved search NAME (memex saved list).

options:
  -k, --limit N      documents to show (1-50, default 10)
  --type TYPE        only this kind: email, file, chat, note, event, task, web (or a source type)
  --person WHO       only documents with this person (email, phone, handle or person id)
  --since DATE       only documents from this date on (2026-03-01 or a date-time)
  --until DATE       only documents up to this date (a bare date includes that day)
  --thread ID        only this conversation
  --attachments      only documents with attachments
${COMMON}`;

export const ASK_USAGE = `usage: memex ask QUESTION... [options]

Answers a question with the sentences of your documents that answer it (or says that
nothing does), then lists each source with the quoted sentence marked.

options:
  -k, --limit N      documents to answer from (1-20, default 5)
${COMMON}`;

export const OPEN_USAGE = `usage: memex open ID [options]

Prints a document (an id from memex search or ask): title, source, date, people, versions, text.

options:
  --no-text          headers only
  --raw              the message's original as collected (its RFC 5322 bytes) on standard output,
                     e.g. memex open --raw ID > message.eml
${COMMON}`;

/** «matched» terms in bold on a terminal, as they are otherwise. */
function highlight(text: string, tty: boolean): string {
  const flat = text.replace(/\s+/g, ' ').trim();
  return tty ? flat.replace(/«/g, '\x1b[1m').replace(/»/g, '\x1b[0m') : flat;
}

function day(ts: unknown): string {
  return typeof ts === 'string' ? ts.slice(0, 10) : '';
}

function names(people: unknown[] | undefined): string[] {
  const out: string[] = [];
  for (const p of people ?? []) {
    if (typeof p === 'string') out.push(p);
    else if (p && typeof p === 'object') {
      const o = p as Record<string, unknown>;
      const n = o.display_name ?? o.identifier ?? o.name;
      if (typeof n === 'string' && n) out.push(n);
    }
  }
  return [...new Set(out)];
}

const JSON_OPTION = { json: { kind: 'boolean', description: "print the server's JSON answer" } } as const;

export const SEARCH = defineVerb({
  name: 'search',
  help: `  search QUERY... [--type T] [--person P] [--since D] [--until D] [-k N] [--json]
                                      search the running server (memex search -h for every filter)`,
  usage: SEARCH_USAGE,
  server: true,
  positionals: 'words',
  options: {
    ...JSON_OPTION,
    limit: { kind: 'number', short: 'k', min: 1, max: 50, default: 10, description: 'documents to show' },
    type: { kind: 'string', description: 'only this kind (email, file, chat, note, event, task, web, or a source type)' },
    person: { kind: 'string', description: 'only documents with this person' },
    since: { kind: 'string', description: 'only documents from this date on' },
    until: { kind: 'string', description: 'only documents up to this date' },
    thread: { kind: 'string', description: 'only this conversation' },
    attachments: { kind: 'boolean', description: 'only documents with attachments' },
  },
  async run({ args, values, client, out }) {
    const query = args.join(' ').trim();
    if (!query) throw new UsageError('no QUERY given');
    // `memex search @NAME`: the saved search NAME (its query and filters; memex saved list).
    const saved = /^@([\p{L}\p{N}][\p{L}\p{N}_.-]*)$/u.exec(query)?.[1];
    const res = saved
      ? await client.call('runSavedSearch', {
          params: { name: saved },
          query: { k: values.limit },
        })
      : await client.call('search', {
          query: {
            q: query,
            k: values.limit,
            source_type: values.type,
            person: values.person,
            start_date: values.since,
            end_date: values.until,
            thread_id: values.thread,
            has_attachments: values.attachments ? true : undefined,
          },
        });
    if (values.json) {
      out.write(`${JSON.stringify(res, null, 2)}\n`);
      return 0;
    }
    let hits = res.hits.filter((h) => !h.context);
    if (hits.length === 0 && res.relaxed && res.relaxed.hits.length > 0) {
      // Nothing matches as written: say so, then what matches the words (the server's relaxed reading).
      out.write(`no documents match "${query}" as written (its quotes, exclusions and operators); documents that match its words:\n\n`);
      hits = res.relaxed.hits.filter((h) => !h.context);
    } else if (hits.length === 0) {
      out.write(`no documents match "${query}"\n`);
      return 0;
    }
    const tty = out.isTTY === true;
    hits.forEach((h, i) => {
      const who = names(h.people).slice(0, 3).join(', ');
      out.write(`${i + 1}. ${h.title?.trim() || '(untitled)'}\n`);
      out.write(`   ${[h.source_type, day(h.content_timestamp), who].filter(Boolean).join(' · ')}\n`);
      if (h.snippet.trim()) out.write(`   ${highlight(h.snippet, tty)}\n`);
      out.write(`   memex open ${h.document_id}\n\n`);
    });
    const total = res.hits.length === 0 && res.relaxed ? res.relaxed.total : res.total;
    out.write(`${hits.length} of ${total} matching documents${res.legs?.vector_skipped === 'budget' ? ' (words only: the embedding model was busy)' : ''}\n`);
    return 0;
  },
});

export const runSearchCommand = (argv: string[], io: VerbIo = {}): Promise<number> => runVerb(SEARCH, argv, io);

/** Characters of the source shown on each side of the quoted sentence. */
const AROUND_QUOTE = 80;

/** The quoted sentence in its place in the document: a few words around it, the quote in bold on a terminal («» otherwise). */
export function quoteInContext(text: string | undefined, c: Pick<AskCitationT, 'quote' | 'doc_start' | 'doc_end'>, tty: boolean): string {
  const mark = (s: string) => (tty ? `\x1b[1m${s}\x1b[0m` : `«${s}»`);
  const flat = (s: string) => s.replace(/\s+/g, ' ');
  if (text === undefined || c.doc_start == null || c.doc_end == null || c.doc_end > text.length) return mark(flat(c.quote ?? ''));
  let from = Math.max(0, c.doc_start - AROUND_QUOTE);
  let to = Math.min(text.length, c.doc_end + AROUND_QUOTE);
  // Whole words at the edges.
  if (from > 0) from = text.indexOf(' ', from) + 1 || from;
  if (to < text.length) to = Math.max(c.doc_end, text.lastIndexOf(' ', to));
  const before = flat(text.slice(from, c.doc_start)).trimStart();
  const after = flat(text.slice(c.doc_end, to)).trimEnd();
  return `${from > 0 ? '…' : ''}${before}${mark(flat(text.slice(c.doc_start, c.doc_end)))}${after}${to < text.length ? '…' : ''}`;
}

export const ASK = defineVerb({
  name: 'ask',
  help: `  ask QUESTION... [-k N] [--json]     answer a question from your documents, with its sources`,
  usage: ASK_USAGE,
  server: true,
  positionals: 'words',
  options: { ...JSON_OPTION, limit: { kind: 'number', short: 'k', min: 1, max: 20, default: 5, description: 'documents to answer from' } },
  async run({ args, values, client, out }) {
    const question = args.join(' ').trim();
    if (!question) throw new UsageError('no QUESTION given');
    const res = await client.call('ask', { body: { query: question, k: values.limit } });
    if (values.json) {
      out.write(`${JSON.stringify(res, null, 2)}\n`);
      return 0;
    }
    // The short answer first; then each source with the quoted sentence marked where it stands.
    out.write(`${res.answer.trim()}\n`);
    if (res.llm_error) out.write(`\n(${res.llm_error})\n`);
    if (res.citations.length) {
      out.write('\nsources:\n');
      const tty = out.isTTY === true;
      const docs = new Map<string, Promise<StoredDocumentT | null>>();
      for (const [i, c] of res.citations.entries()) {
        // A document that cannot be read is listed by id, with the quote the answer carries.
        if (!docs.has(c.document_id)) docs.set(c.document_id, client.call('getDocument', { params: { doc_id: c.document_id } }).catch(() => null));
        const doc = await docs.get(c.document_id)!;
        const title = doc?.title ?? c.title;
        const label = `${title?.trim() || '(untitled)'} (${[doc?.source_type ?? c.source_type, day(doc?.content_timestamp ?? c.content_timestamp)].filter(Boolean).join(', ')})`;
        out.write(`  [${i + 1}] ${label}  memex open ${c.document_id}\n`);
        if (c.quote) out.write(`      ${quoteInContext(doc?.text, c, tty)}\n`);
      }
    }
    return 0;
  },
});

export const runAskCommand = (argv: string[], io: VerbIo = {}): Promise<number> => runVerb(ASK, argv, io);

export const OPEN = defineVerb({
  name: 'open',
  help: `  open ID [--json] [--raw]            print a document found by search or ask (--raw: a message's
                                      original bytes)`,
  usage: OPEN_USAGE,
  server: true,
  positionals: 'any',
  options: {
    ...JSON_OPTION,
    'no-text': { kind: 'boolean', description: 'headers only' },
    raw: { kind: 'boolean', description: "the message's original bytes on standard output" },
  },
  async run({ args, values, client, out }) {
    if (args.length !== 1) throw new UsageError('give exactly one document ID');
    const id = args[0];
    if (values.raw) return writeOriginal(client, id, out);
    let view: DocumentViewResponseT;
    try {
      view = await client.call('documentView', { params: { doc_id: id } });
    } catch (e) {
      if (e instanceof ClientError && e.status === 404) throw new ClientError(404, `no document ${id}`);
      if (e instanceof ClientError && e.status === 422) throw new ClientError(422, `"${id}" is not a document id (a UUID, as memex search prints)`);
      throw e;
    }
    if (values.json) {
      out.write(`${JSON.stringify(view, null, 2)}\n`);
      return 0;
    }
    const d = view.document;
    const active = view.versions.find((v) => v.is_active_version);
    const lines = [
      d.title?.toString().trim() || '(untitled)',
      `source   ${[d.source_type, d.source_provider].filter(Boolean).join(' / ')}`,
      `date     ${d.content_timestamp ?? ''}`,
      ...(view.people.length ? [`people   ${view.people.map((p) => `${p.display_name} (${p.role})`).join(', ')}`] : []),
      ...(view.thread ? [`thread   ${view.thread.title ?? ''} (${view.thread.total} messages)`] : []),
      `version  ${d.version_number}${view.versions.length > 1 ? ` of ${view.versions.length}${d.is_active_version ? '' : `, superseded (current: ${active?.version_number ?? '?'})`}` : ''}`,
      ...(d.deleted_at ? [`deleted  ${d.deleted_at}`] : []),
      ...(typeof d.canonical_uri === 'string' ? [`uri      ${d.canonical_uri}`] : []),
    ];
    out.write(`${lines.join('\n')}\n`);
    if (!values['no-text'] && typeof d.text === 'string' && d.text.trim()) out.write(`\n${d.text.trim()}\n`);
    return 0;
  },
});

export const runOpenCommand = (argv: string[], io: VerbIo = {}): Promise<number> => runVerb(OPEN, argv, io);

/** `memex open --raw ID`: the bytes of GET /v1/documents/{id}/original, unchanged, to standard output. */
async function writeOriginal(client: Pick<ServerClient, 'download'>, id: string, out: Output): Promise<number> {
  let body: NodeJS.ReadableStream;
  try {
    body = await client.download('documentOriginal', { params: { doc_id: id } });
  } catch (e) {
    if (e instanceof ClientError && e.status === 404) throw new ClientError(404, `no original is kept for ${id} (not a message, or stored before memex kept originals: memex import mail --rescan PATH)`);
    if (e instanceof ClientError && e.status === 422) throw new ClientError(422, `"${id}" is not a document id (a UUID, as memex search prints)`);
    throw e;
  }
  for await (const chunk of body) out.write(typeof chunk === 'string' ? chunk : new Uint8Array(chunk as Buffer));
  return 0;
}
