/** GET /v1/context/general (spec 4.3 rule 6): its query and its answer (src/search/context.ts builds it). */
import { Type, type Static } from '@sinclair/typebox';
import { Nullable } from './common.ts';

export const ContextQuery = Type.Object({
  days: Type.Optional(Type.Integer({ minimum: 1, maximum: 3650, description: 'Only documents of the last N days' })),
  source_type: Type.Optional(Type.String({ minLength: 1, maxLength: 64 })),
  include_automated: Type.Optional(
    Type.Boolean({
      default: false,
      description:
        'Also list the threads of automated senders (machine mail, no-reply senders, one-way traffic) among the busiest; each thread says automated',
    }),
  ),
});
export type ContextQueryT = Static<typeof ContextQuery>;

export const GeneralContextResponse = Type.Object(
  {
    total_threads: Type.Integer(),
    total_messages: Type.Integer({ description: 'Active documents' }),
    last_message_ts: Nullable(Type.String()),
    top_threads: Type.Array(
      Type.Object({
        thread_id: Type.String(),
        title: Nullable(Type.String()),
        source_type: Type.String(),
        message_count: Type.Integer(),
        last_message_ts: Nullable(Type.String()),
        automated: Type.Boolean({ description: 'Every message of it (in the window) is machine mail or from an automated sender' }),
      }),
    ),
    recent_highlights: Type.Array(
      Type.Object({
        doc_id: Type.String(),
        thread_id: Nullable(Type.String()),
        source_type: Type.String(),
        title: Nullable(Type.String()),
        ts: Type.String(),
        sender: Nullable(Type.String()),
        text: Type.String(),
        people: Type.Array(Type.Unknown()),
      }),
    ),
    timeline: Type.Array(Type.Object({ date: Type.String(), count: Type.Integer() }), {
      description: 'Active documents per UTC day over the 30 days up to last_message_ts (days with none omitted)',
    }),
  },
  { title: 'GeneralContext' },
);
export type GeneralContextResponseT = Static<typeof GeneralContextResponse>;
