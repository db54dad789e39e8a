/**
 * Fixtures for the notes, browser and Takeout importers, written as the real programs write them: an Obsidian
 * vault (front matter, #tags, [[links]], an attachment, a .obsidian/ folder, a trash folder), and (below) browser
 * databases with the browsers' own table schemas.
 */
import fs from 'node:fs';
import path from 'node:path';

export function writeFiles(root: string, files: Record<string, string | Buffer>): void {
  for (const [rel, content] of Object.entries(files)) {
    const p = path.join(root, rel);
    fs.mkdirSync(path.dirname(p), { recursive: true });
    fs.writeFileSync(p, content);
  }
}

/** A small Obsidian vault: 5 notes (one with broken front matter), an image, the app's own folder, a trashed note. */
export function writeVault(root: string): void {
  writeFiles(root, {
    '.obsidian/app.json': '{"alwaysUpdateLinks":true}',
    '.obsidian/workspace.json': '{"main":{"id":"a1"}}',
    '.trash/Old idea.md': '# Old idea\nthrown away',
    'Trips/Lisbon conference.md': [
      '---',
      'title: Lisbon conference 2026',
      'created: 2026-03-01T10:15:00+02:00',
      'modified: 2026-03-04T18:00:00Z',
      'tags: [travel, work/conferences]',
      'aliases:',
      '  - Lisbon trip',
      'status: booked',
      '---',
      '# Lisbon',
      '',
      'Book the train to Lisbon for the conference on the 12th. Hotel near Alfama, see [[Packing list]]',
      'and [[People/Priya Shah|Priya]] who is presenting. #travel #todo',
      '',
      '![[tram.png]]',
      '',
      '```js',
      'const notATag = "#nope"; // [[Not a link]]',
      '```',
      '',
      'Budget in [the sheet](../Finance/Budget%202026.md). Also [[Somewhere unknown]].',
      '',
    ].join('\n'),
    'Packing list.md': '## Packing\n\n- passport\n- charger\n- [[Trips/Lisbon conference]]\n\n#travel\n',
    'People/Priya Shah.md': '---\ntags: person\n---\nPriya works on search ranking. Met at [[Lisbon conference]].\n',
    'Finance/Budget 2026.md': 'Plain note without heading. Rent 1200, trains 300.\n',
    'Broken.md': '---\ntitle: [unclosed\n  tags: : :\n---\nThe body of a note whose front matter is not YAML.\n',
    'Empty.md': '',
    'tram.png': Buffer.from('89504e470d0a1a0a0000000d49484452', 'hex'),
    'Drawing.canvas': '{"nodes":[]}',
  });
}

/** A small Takeout tree (the folder Google's archive unpacks to), as Takeout lays it out in 2026. */
export function writeTakeout(root: string, opts: { brokenKeep?: boolean } = {}): void {
  const crlf = (s: string) => s.replace(/\r?\n/g, '\r\n');
  const mail = (n: number, subject: string, body: string) =>
    `From 1784000000${n}@xxx Mon Jan 05 09:0${n}:00 +0000 2026\n` +
    `X-GM-THRID: 17840000000000${n}\nX-Gmail-Labels: Inbox,Opened\n` +
    `From: Ana Costa <ana${n}@example.pt>\nTo: me@gmail.com\nSubject: ${subject}\nDate: Mon, 05 Jan 2026 09:0${n}:00 +0000\n` +
    `Message-ID: <takeout-${n}@example.pt>\nMIME-Version: 1.0\nContent-Type: text/plain; charset="UTF-8"\n\n${body}\n\n`;
  writeFiles(root, {
    'Takeout/archive_browser.html': '<html><body><h1>Your Google data archive</h1></body></html>',
    'Takeout/Mail/All mail Including Spam and Trash.mbox':
      mail(1, 'Azulejo workshop on Saturday', 'The azulejo painting workshop starts at ten.') + mail(2, 'Invoice 2026-001', 'Please find the invoice for January.'),
    'Takeout/Contacts/My Contacts/My Contacts.vcf': crlf(
      'BEGIN:VCARD\nVERSION:3.0\nFN:Ana Costa\nN:Costa;Ana;;;\nEMAIL;TYPE=INTERNET:ana1@example.pt\nTEL;TYPE=CELL:+351 912 345 678\nEND:VCARD\n',
    ),
    'Takeout/Calendar/me@gmail.com.ics': crlf(
      'BEGIN:VCALENDAR\nVERSION:2.0\nPRODID:-//Google Inc//Google Calendar 70.9054//EN\nBEGIN:VEVENT\nDTSTART:20260110T100000Z\nDTEND:20260110T120000Z\nUID:abc@google.com\nSUMMARY:Azulejo workshop\nEND:VEVENT\nEND:VCALENDAR\n',
    ),
    'Takeout/Chrome/BrowserHistory.json': JSON.stringify({
      'Browser History': [
        { favicon_url: 'https://www.museudoazulejo.gov.pt/favicon.ico', page_transition: 'LINK', title: 'Museu Nacional do Azulejo', url: 'https://www.museudoazulejo.gov.pt/', client_id: 'c1', time_usec: 1767600000000000 },
        { page_transition: 'TYPED', title: 'Museu Nacional do Azulejo', url: 'https://www.museudoazulejo.gov.pt/', client_id: 'c1', time_usec: 1767603600000000 },
        { page_transition: 'LINK', title: 'Comboios de Portugal', url: 'https://www.cp.pt/', client_id: 'c1', time_usec: 1767600000000000 },
      ],
    }),
    'Takeout/Keep/Shopping.json': JSON.stringify({
      color: 'DEFAULT', isTrashed: false, isPinned: true, isArchived: false, title: 'Shopping',
      listContent: [{ text: 'bacalhau', isChecked: false }, { text: 'pastéis de nata', isChecked: true }],
      labels: [{ name: 'home' }], userEditedTimestampUsec: 1767600000000000, createdTimestampUsec: 1767500000000000,
    }),
    'Takeout/Keep/2026-01-03T10_00_00.000+01_00.json': JSON.stringify({
      color: 'YELLOW', isTrashed: false, isPinned: false, isArchived: true, title: '',
      textContent: 'Idea: tile a small table with leftover azulejos', userEditedTimestampUsec: 1767430800000000, createdTimestampUsec: 1767430800000000,
    }),
    'Takeout/Keep/Old.json': JSON.stringify({ isTrashed: true, title: 'Old', textContent: 'gone', userEditedTimestampUsec: 1767430800000000 }),
    'Takeout/Keep/Labels.txt': 'home\n',
    ...(opts.brokenKeep ? { 'Takeout/Keep/Broken.json': '{"title": "half a no' } : {}),
    'Takeout/YouTube and YouTube Music/history/watch-history.html': '<html></html>',
    'Takeout/Maps (your places)/Saved Places.json': '{"type":"FeatureCollection","features":[]}',
  });
}
