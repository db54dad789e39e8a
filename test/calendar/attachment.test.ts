/**
 * An invitation attached to an email (POST /v1/ingest/file with the message's id, text/calendar) is stored as the
 * email's attachment and is also a calendar event, whose parent is the attachment's document; a reply
 * (METHOD:REPLY) stays a file only; uploading the same invitation again stores nothing new.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { shutdownExtraction } from '../../src/files/extract.ts';
import { startTestGateway, TEST_TOKEN, type TestGateway } from '../helpers/gateway.ts';
import { fileUpload } from '../files/multipart.ts';

let gw: TestGateway;
beforeAll(async () => {
  gw = await startTestGateway({ files: {} });
}, 120_000);
afterAll(async () => {
  await gw?.close();
  await shutdownExtraction();
});

const invite = (method: string, seq: number, summary: string) =>
  Buffer.from(
    [
      'BEGIN:VCALENDAR', 'VERSION:2.0', 'PRODID:-//Google Inc//Google Calendar 70.9054//EN', `METHOD:${method}`,
      'BEGIN:VEVENT', 'DTSTART:20261215T140000Z', 'DTEND:20261215T150000Z', 'DTSTAMP:20261201T090000Z',
      'ORGANIZER;CN=Dr. Weber:mailto:praxis@weber.example', 'UID:dentist-dec@weber.example',
      'ATTENDEE;CN=Anna;PARTSTAT=NEEDS-ACTION:mailto:anna@example.org',
      `SEQUENCE:${seq}`, `SUMMARY:${summary}`, 'LOCATION:Leopoldstr. 8', 'END:VEVENT', 'END:VCALENDAR', '',
    ].join('\r\n'),
  );

async function upload(bytes: Buffer, messageId: string) {
  const body = fileUpload(
    { source: 'email', path: `email/${messageId}/invite.ics`, filename: 'invite.ics', mime_type: 'text/calendar', message_id: messageId },
    bytes,
    'invite.ics',
    'text/calendar',
  );
  const res = await gw.app.inject({ method: 'POST', url: '/v1/ingest/file', payload: body.payload, headers: { ...body.headers, authorization: `Bearer ${TEST_TOKEN}` } });
  expect(res.statusCode).toBeLessThan(300);
  return res.json() as { doc_id: string };
}

const events = async () =>
  (
    await gw.db.query<{ title: string; parent_doc_id: string | null; version_number: number; is_active_version: boolean }>(
      `SELECT title, parent_doc_id::text AS parent_doc_id, version_number, is_active_version FROM documents
        WHERE source_type = 'calendar_event' ORDER BY version_number`,
    )
  ).rows;

describe('calendar attachments of mail', () => {
  it('an invitation is the email’s attachment and an event linked to it', async () => {
    const file = await upload(invite('REQUEST', 0, 'Dentist check-up'), '<inv1@weber.example>');
    expect(await events()).toEqual([{ title: 'Dentist check-up', parent_doc_id: file.doc_id, version_number: 1, is_active_version: true }]);
    const people = await gw.db.query<{ role: string }>(
      `SELECT dp.role FROM document_people dp JOIN documents d ON d.doc_id = dp.doc_id WHERE d.source_type = 'calendar_event' ORDER BY dp.role`,
    );
    expect(people.rows.map((r) => r.role)).toEqual(['participant', 'sender']);
  }, 120_000);

  it('the same invitation again stores nothing; a reply stays a file; an update is a new version', async () => {
    await upload(invite('REQUEST', 0, 'Dentist check-up'), '<inv1@weber.example>');
    expect(await events()).toHaveLength(1);
    await upload(invite('REPLY', 0, 'Accepted: Dentist check-up'), '<reply1@example.org>');
    expect(await events()).toHaveLength(1);
    const moved = await upload(invite('REQUEST', 1, 'Dentist check-up (moved)'), '<inv2@weber.example>');
    const rows = await events();
    expect(rows.map((r) => [r.title, r.version_number, r.is_active_version])).toEqual([
      ['Dentist check-up', 1, false],
      ['Dentist check-up (moved)', 2, true],
    ]);
    expect(rows[1].parent_doc_id).toBe(moved.doc_id);
  }, 120_000);
});
