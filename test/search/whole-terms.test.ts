/**
 * Identifiers joined by underscores as whole terms (whole-terms.ts, issue 48 item 2): what counts as one, and
 * that holding them changes nothing for a query of plain words (they are no words of the passage for BM25).
 */
import { describe, expect, it } from 'vitest';
import { LexicalIndex, type IndexedDocument } from '../../src/search/index/lexical-index.ts';
import { WHOLE_PREFIX, wholeTerms, wholeTermsOfWord } from '../../src/search/whole-terms.ts';

const W = (s: string) => WHOLE_PREFIX + s;

describe('whole terms', () => {
  it('are the runs of letters, digits and underscores with an underscore inside, lower-cased', () => {
    expect(wholeTerms('call irq_domain_set_info() and AUTH_TOKEN, then auth_token again')).toEqual(
      new Map([[W('irq_domain_set_info'), 1], [W('auth_token'), 2]]),
    );
    // Inside paths, dotted names and `::`: the runs, not the compound (PostgreSQL keeps those whole already).
    expect(wholeTermsOfWord('arch/mips/kernel/setup_64.c')).toEqual([W('setup_64')]);
    expect(wholeTermsOfWord('net.ipv4.tcp_rmem')).toEqual([W('tcp_rmem')]);
    expect(wholeTermsOfWord('MyClass::my_method')).toEqual([W('my_method')]);
    // No underscore between two letters or digits: none.
    for (const w of ['__init__', 'plain', 'CamelCase', 'os.path.join', '_', 'a_']) expect(wholeTermsOfWord(w), w).toEqual([]);
    expect(wholeTerms(`x ${'a_'.repeat(60)}b`).size).toBe(0);
    expect(wholeTerms(null).size).toBe(0);
  });

  it('leave the ranking of plain words as it was', () => {
    const doc = (id: string, text: Map<string, number>, wholes?: Map<string, number>): IndexedDocument => ({
      docId: id,
      sourceType: 'email',
      hasAttachments: false,
      tsMicros: 0,
      threadId: null,
      personIds: [],
      identifiers: [],
      title: new Map(),
      passages: [{ chunkId: `${id.slice(0, -1)}f`, terms: text, ...(wholes ? { wholes } : {}) }],
    });
    const ids = ['00000000-0000-4000-8000-00000000000a', '00000000-0000-4000-8000-00000000000b'];
    const texts = [new Map([['auth', 1], ['token', 1], ['gateway', 2]]), new Map([['auth', 2], ['token', 1]])];
    const plain = new LexicalIndex({ k1: 1.2, b: 0.4, titleWeight: 2 });
    const whole = new LexicalIndex({ k1: 1.2, b: 0.4, titleWeight: 2 });
    ids.forEach((id, i) => {
      plain.upsert(doc(id, texts[i]));
      whole.upsert(doc(id, texts[i], new Map([[W('auth_token'), 3]])));
    });
    const q = [{ term: 'auth', qtf: 1 }, { term: 'gateway', qtf: 1 }];
    expect(whole.match(q, {}, 10).candidates).toEqual(plain.match(q, {}, 10).candidates);
    // The whole term is found as a term of its own, and survives a snapshot.
    const back = LexicalIndex.deserialise(whole.serialise());
    expect(back.match([{ term: W('auth_token'), qtf: 1 }], {}, 10).candidates.map((c) => c.doc_id).sort()).toEqual(ids);
    expect(back.idf('auth_token')).toBeNull();
  });

});
