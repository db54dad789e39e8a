/**
 * The UI's own icons: small inline SVG line drawings in the text colour. Not emoji: a system without an
 * emoji font (Debian's Chromium by default) draws those as empty boxes. Decorative: hidden from screen
 * readers, the text next to an icon says what it means.
 */
const PATHS = {
  chat: 'M4 5h16v11H10l-6 4z',
  mail: 'M3 6h18v12H3z M3 7l9 6 9-6',
  file: 'M6 3h8l4 4v14H6z M14 3v4h4',
  cloud: 'M7 18h10a4 4 0 0 0 .6-7.96A6 6 0 0 0 6.3 9.2 4.4 4.4 0 0 0 7 18z',
  note: 'M5 3h14v18H5z M8 8h8 M8 12h8 M8 16h5',
  bell: 'M6 16v-5a6 6 0 0 1 12 0v5l2 2H4z M10 21h4',
  calendar: 'M4 6h16v14H4z M4 10h16 M8 3v4 M16 3v4',
  person: 'M12 12a4 4 0 1 0 0-8 4 4 0 0 0 0 8z M4 21a8 8 0 0 1 16 0',
  dot: 'M12 9a3 3 0 1 0 0 6 3 3 0 0 0 0-6z',
  paperclip: 'M20 11l-8 8a5 5 0 0 1-7-7l8.5-8.5a3.5 3.5 0 0 1 5 5L10 17a2 2 0 0 1-3-3l7.5-7.5',
  close: 'M6 6l12 12 M18 6L6 18',
  download: 'M12 4v11 M7 10l5 5 5-5 M5 20h14',
} as const;

export type IconName = keyof typeof PATHS;

export function Icon({ name }: { name: IconName }) {
  return (
    <svg class={`icon icon-${name}`} viewBox="0 0 24 24" aria-hidden="true" focusable="false">
      <path d={PATHS[name]} />
    </svg>
  );
}

/** The icon of each source type (gateway spec source types); anything else gets a dot. */
export const SOURCE_ICONS: Record<string, IconName> = {
  chatapp: 'chat',
  sms: 'chat',
  email: 'mail',
  email_local: 'mail',
  localfs: 'file',
  cloud_drive: 'cloud',
  note: 'note',
  reminder: 'bell',
  host_reminders: 'bell',
  calendar_event: 'calendar',
  contact: 'person',
};
