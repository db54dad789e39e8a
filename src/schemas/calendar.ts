/** Calendar ingest (issue 42): events and tasks as documents, with a recurring series' occurrences beside it. */
import { Type, type Static } from '@sinclair/typebox';
import { IngestRequest } from './ingest.ts';
import { Nullable, Timestamp, Uuid } from './common.ts';

/** Most occurrences sent for one series (the reader's MAX_OCCURRENCES_PER_SERIES). */
export const MAX_OCCURRENCES = 5000;

export const CalendarIngestItem = Type.Object({
  document: IngestRequest,
  occurrences: Type.Optional(
    Type.Array(Type.Object({ start: Timestamp, end: Timestamp }), {
      maxItems: MAX_OCCURRENCES,
      description: 'Occurrences of a recurring (or multi-day) event inside the window; they replace the ones stored for the document',
    }),
  ),
});

export const CalendarIngestRequest = Type.Object({
  items: Type.Array(CalendarIngestItem, { minItems: 1, maxItems: 500 }),
});
export type CalendarIngestRequestT = Static<typeof CalendarIngestRequest>;
export type CalendarIngestItemT = Static<typeof CalendarIngestItem>;

export const CalendarIngestItemResult = Type.Object({
  index: Type.Integer(),
  outcome: Type.Union([Type.Literal('stored'), Type.Literal('unchanged'), Type.Literal('stale'), Type.Literal('skipped'), Type.Literal('failed')], {
    description:
      'stored: a new document or a new version; unchanged: this copy was stored before; stale: an older SEQUENCE/LAST-MODIFIED than the stored version (kept out); skipped: the block list; failed: see error',
  }),
  doc_id: Nullable(Uuid),
  version_number: Nullable(Type.Integer()),
  occurrences: Type.Integer({ description: 'Occurrences stored for the document' }),
  error: Nullable(Type.String()),
});

export const CalendarIngestResponse = Type.Object({
  stored: Type.Integer(),
  unchanged: Type.Integer(),
  stale: Type.Integer(),
  skipped: Type.Integer(),
  failed: Type.Integer(),
  occurrences: Type.Integer(),
  results: Type.Array(CalendarIngestItemResult),
});
export type CalendarIngestResponseT = Static<typeof CalendarIngestResponse>;

/** Longest agenda range, and most entries in one answer (GET /v1/calendar/agenda). */
export const AGENDA_MAX_DAYS = 92;
export const AGENDA_MAX_ENTRIES = 2000;

export const AgendaQuery = Type.Object(
  {
    from: Type.String({ ...Timestamp, description: 'Start of the range, included (a date alone is 00:00 UTC)', examples: ['2026-12-07'] }),
    to: Type.String({ ...Timestamp, description: `End of the range, left out; at most ${AGENDA_MAX_DAYS} days after from`, examples: ['2026-12-14'] }),
  },
  { additionalProperties: false },
);
export type AgendaQueryT = Static<typeof AgendaQuery>;

export const AgendaEntry = Type.Object(
  {
    doc_id: Uuid,
    kind: Type.Union([Type.Literal('event'), Type.Literal('task')]),
    title: Type.String(),
    starts_at: Type.String({ description: 'ISO 8601; a task: its due date' }),
    ends_at: Type.String({ description: 'ISO 8601; equal to starts_at for a task or a point in time' }),
    all_day: Type.Boolean(),
    recurring: Type.Boolean({ description: 'One occurrence of a recurring series' }),
    location: Nullable(Type.String()),
    status: Nullable(Type.String({ description: 'The event\'s or task\'s status at its source (confirmed, tentative, cancelled, completed, …)' })),
    completed: Nullable(Type.Boolean({ description: 'A task: done; an event: null' })),
  },
  { title: 'AgendaEntry' },
);
export type AgendaEntryT = Static<typeof AgendaEntry>;

export const AgendaAnswer = Type.Object(
  {
    from: Type.String(),
    to: Type.String(),
    entries: Type.Array(AgendaEntry),
    truncated: Type.Boolean({ description: `More than ${AGENDA_MAX_ENTRIES} entries: the first ${AGENDA_MAX_ENTRIES} by start` }),
  },
  { title: 'AgendaAnswer' },
);
export type AgendaAnswerT = Static<typeof AgendaAnswer>;
