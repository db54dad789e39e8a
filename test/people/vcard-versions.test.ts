/**
 * vCard 2.1, 3.0 and 4.0 in one file (issue 21 item 2). 2.1 as Android and Outlook export it: bare type
 * parameters, quoted-printable values in a CHARSET with soft line breaks, PHOTO in base64 continued on
 * indented lines up to an empty line. A property that cannot be read is skipped and reported; the card and
 * the file are still imported.
 */
import { describe, expect, it } from 'vitest';
import { parseVcf } from '../../src/people/vcard.ts';
import { sha256Hex } from '../../src/util/hash.ts';

const PHOTO_B64 = Buffer.from([0xff, 0xd8, 0xff, 0xe0, ...Array.from({ length: 60 }, (_, i) => i)]).toString('base64');

const FILE = [
  'BEGIN:VCARD',
  'VERSION:2.1',
  'N;CHARSET=UTF-8;ENCODING=QUOTED-PRINTABLE:M=C3=BCller;J=C3=BCrgen;;;',
  'FN;CHARSET=UTF-8;ENCODING=QUOTED-PRINTABLE:J=C3=BCrgen M=C3=BCller',
  'TEL;WORK;VOICE:+49 30 1234567',
  'TEL;CELL;PREF:+49 151 2345678',
  'EMAIL;PREF;INTERNET:juergen@example.de',
  'EMAIL;INTERNET;HOME:j.mueller@example.org',
  'ADR;HOME;CHARSET=ISO-8859-1;ENCODING=QUOTED-PRINTABLE:;;Hauptstra=DFe 1;Berlin;;10115;Deutschland',
  'NOTE;ENCODING=QUOTED-PRINTABLE:Erste Zeile=0D=0A=',
  'zweite Zeile, l=C3=A4nger =',
  'und fertig',
  `PHOTO;JPEG;ENCODING=BASE64:${PHOTO_B64.slice(0, 40)}`,
  `  ${PHOTO_B64.slice(40)}`,
  '',
  'X-BROKEN;TYPE="unterminated:1',
  'END:VCARD',
  'BEGIN:VCARD',
  'VERSION:3.0',
  'N:Doe;Jane;;;',
  'FN:Jane Doe',
  'EMAIL;TYPE=INTERNET,PREF:jane@example.com',
  'GARBAGE WITHOUT A COLON',
  'TEL;TYPE=CELL:+1 555 0100',
  'END:VCARD',
  'BEGIN:VCARD',
  'VERSION:4.0',
  'FN:Kai Berg',
  'TEL;VALUE=uri;TYPE=work;PREF=1:tel:+47-22-00-00-00',
  'EMAIL;TYPE=home:kai@example.no',
  'END:VCARD',
  '',
].join('\r\n');

describe('vCard 2.1, 3.0 and 4.0', () => {
  it('reads every card; 2.1 bare types, quoted-printable (soft breaks, charsets) and base64 photos', () => {
    const { cards, rejected, problems } = parseVcf(FILE);
    expect(rejected).toBe(0);
    expect(cards.map((c) => c.display_name)).toEqual(['Jürgen Müller', 'Jane Doe', 'Kai Berg']);
    const j = cards[0];
    expect(j).toMatchObject({ given_name: 'Jürgen', family_name: 'Müller' });
    expect(j.phones!.map((p) => [p.value, p.label, p.priority])).toEqual([
      ['+49 30 1234567', 'work', 100],
      ['+49 151 2345678', 'cell', 1],
    ]);
    expect(j.emails!.map((e) => [e.value, e.label, e.priority])).toEqual([
      ['juergen@example.de', null, 1],
      ['j.mueller@example.org', 'home', 100],
    ]);
    expect(j.addresses![0]).toMatchObject({ label: 'home', street: 'Hauptstraße 1', city: 'Berlin', postal_code: '10115', country: 'Deutschland' });
    expect(j.notes).toBe('Erste Zeile\nzweite Zeile, länger und fertig');
    expect(j.photo_hash).toBe(sha256Hex(PHOTO_B64));
    expect(cards[1].emails![0]).toMatchObject({ value: 'jane@example.com', priority: 1 });
    expect(cards[1].phones![0].value).toBe('+1 555 0100');
    expect(cards[2].phones![0]).toMatchObject({ value: '+47-22-00-00-00', label: 'work', priority: 1 });
    // The unreadable properties are skipped and reported with card, line and name; nothing else is lost.
    expect(problems.map((p) => [p.card, p.line, p.property])).toEqual([
      [1, 16, 'X-BROKEN'],
      [2, 23, 'GARBAGE WITHOUT A COLON'],
    ]);
  });

  it('a file of 2.1 cards with LF line ends and no trailing newline', () => {
    const { cards, problems } = parseVcf('BEGIN:VCARD\nVERSION:2.1\nN:Smith;Ann\nTEL;HOME:0201 123456\nEND:VCARD');
    expect(problems).toEqual([]);
    expect(cards[0]).toMatchObject({ display_name: 'Ann Smith', phones: [expect.objectContaining({ value: '0201 123456', label: 'home' })] });
  });
});
