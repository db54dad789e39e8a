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
