/**
 * Source-type families (issue 40, item 6): `type:email` means email, whichever collector stored it. A filter's
 * value is a family a person thinks in, or an exact source type; a family name wins where it is also a type
 * (`email`: IMAP mail, `email_local` and imports alike).
 */

/** Family -> the source types it covers. */
export const SOURCE_FAMILIES: Readonly<Record<string, readonly string[]>> = {
  email: ['email', 'email_local'],
  mail: ['email', 'email_local'],
  file: ['localfs', 'cloud_drive'],
  files: ['localfs', 'cloud_drive'],
  chat: ['chatapp', 'sms'],
  message: ['chatapp', 'sms'],
  imessage: ['chatapp'],
  note: ['note'],
  notes: ['note'],
  event: ['calendar_event'],
  events: ['calendar_event'],
  calendar: ['calendar_event'],
  task: ['reminder', 'host_reminders'],
  tasks: ['reminder', 'host_reminders'],
  todo: ['reminder', 'host_reminders'],
  reminder: ['reminder', 'host_reminders'],
  contact: ['contact'],
  web: ['web_page'],
  page: ['web_page'],
  history: ['web_page'],
  bookmark: ['web_page'],
};

/** The family names the help texts list. */
export const FAMILY_NAMES = ['email', 'file', 'chat', 'note', 'event', 'task', 'contact', 'web'] as const;

/** The source types a `type:` / `source_type` value selects: a family's, else the value itself. */
export function sourceTypesOf(value: string): string[] {
  const v = value.trim().toLowerCase();
  return [...(SOURCE_FAMILIES[v] ?? [v])];
}
