/**
 * Notes vaults: a Markdown file's front matter, tags, wiki links and headings become a note document's title,
 * times, metadata.tags and metadata.links; hidden folders and other files are left out; bad front matter is a
 * per-file error.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { parseNote } from '../../src/imports/notes/markdown.ts';
import { buildNote, linkResolver, looksLikeVault, scanVault } from '../../src/imports/notes/vault.ts';
import { writeVault } from './fixtures.ts';

const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'memex-vault-'));
afterAll(() => fs.rmSync(tmp, { recursive: true, force: true }));

describe('parseNote', () => {
  it('reads front matter, tags in the text (not in code), wiki links with aliases and headings, and embeds', () => {
    const n = parseNote('---\ntags: [a, "b/c"]\n---\n# Title [[X|shown]]\n\nSee [[Y#Part]] and [[Z|alias]] #d #123 `#no` ![[pic.jpg]] ![[Other note]]\n');
    expect(n.frontMatter).toEqual({ tags: ['a', 'b/c'] });
    expect(n.firstHeading).toBe('Title shown');
    expect(n.tags).toEqual(['a', 'b/c', 'd']);
    expect(n.links).toEqual(['X', 'Y', 'Z', 'Other note']);
    expect(n.embeds).toEqual(['pic.jpg']);
    expect(n.body.startsWith('# Title')).toBe(true);
  });
});

describe('a vault', () => {
  it('is scanned without its hidden folders and non-Markdown files, and each note built as a document', async () => {
    const root = path.join(tmp, 'My Vault');
    writeVault(root);
    expect(await looksLikeVault(root, fs.readdirSync(root))).toBe(true);
    const scan = await scanVault(root);
    expect(scan.obsidian).toBe(true);
    expect(scan.notes.map((n) => n.rel)).toEqual([
      'Broken.md', 'Empty.md', 'Finance/Budget 2026.md', 'Packing list.md', 'People/Priya Shah.md', 'Trips/Lisbon conference.md',
    ]);
    expect(scan.otherFiles).toBe(2);
    const resolve = linkResolver(scan.notes);
    const build = (rel: string) => buildNote(scan.notes.find((n) => n.rel === rel)!, { provider: 'obsidian', vault: scan.name }, resolve);

    const lisbon = (await build('Trips/Lisbon conference.md')).doc!.request;
    expect(lisbon).toMatchObject({
      source_type: 'note',
      source_id: 'My Vault/Trips/Lisbon conference.md',
      source_provider: 'obsidian',
      title: 'Lisbon conference 2026',
      content_created_at: '2026-03-01T08:15:00.000Z',
      content_modified_at: '2026-03-04T18:00:00.000Z',
      content: { mime_type: 'text/markdown' },
    });
    expect(lisbon.content.data).toContain('Book the train to Lisbon');
    expect(lisbon.content.data).not.toContain('status: booked');
    expect(lisbon.metadata).toMatchObject({
      vault: 'My Vault',
      path: 'Trips/Lisbon conference.md',
      folder: 'Trips',
      tags: ['travel', 'work/conferences', 'todo'],
      links: ['Packing list.md', 'People/Priya Shah.md', 'Finance/Budget 2026.md'],
      unresolved_links: ['Somewhere unknown'],
      aliases: ['Lisbon trip'],
      embeds: ['tram.png'],
      properties: { status: 'booked' },
    });

    // Title from the first heading, then from the file name; times from the file.
    expect((await build('Packing list.md')).doc!.request.title).toBe('Packing');
    expect(((await build('Packing list.md')).doc!.request.metadata as any).links).toEqual(['Trips/Lisbon conference.md']);
    const budget = (await build('Finance/Budget 2026.md')).doc!.request;
    expect(budget.title).toBe('Budget 2026');
    expect(budget.content_modified_at).toBe(fs.statSync(path.join(root, 'Finance/Budget 2026.md')).mtime.toISOString());
    expect(((await build('People/Priya Shah.md')).doc!.request.metadata as any).links).toEqual(['Trips/Lisbon conference.md']);

    expect((await build('Broken.md')).problem).toMatchObject({ kind: 'failed', reason: expect.stringMatching(/^front matter is not valid YAML/) });
    expect((await build('Empty.md')).problem).toMatchObject({ kind: 'empty' });
  });

  it('a project folder with one README is not taken for a vault', async () => {
    const dir = path.join(tmp, 'project');
    fs.mkdirSync(dir);
    for (const f of ['README.md', 'package.json', 'index.ts', 'tsconfig.json']) fs.writeFileSync(path.join(dir, f), 'x');
    expect(await looksLikeVault(dir, fs.readdirSync(dir))).toBe(false);
  });
});
