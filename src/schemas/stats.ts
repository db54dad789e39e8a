/** GET /v1/stats/timeline and GET /v1/stats/sources: counts for the web UI's timeline and sources pages. */
import { Type, type Static } from '@sinclair/typebox';
import { Nullable, StringEnum, Timestamp } from './common.ts';

/** The widths a timeline bar can have (UTC calendar units). */
export const TIMELINE_BUCKETS = ['day', 'week', 'month', 'year'] as const;
export type TimelineBucket = (typeof TIMELINE_BUCKETS)[number];

export const TimelineQuery = Type.Object({
  bucket: Type.Optional(StringEnum(TIMELINE_BUCKETS, { default: 'month', description: 'Width of each bar (UTC)' })),
  start_date: Type.Optional(Timestamp),
  end_date: Type.Optional({ ...Timestamp, description: 'Exclusive; a bare date excludes that day' }),
});

export const TimelineResponse = Type.Object(
  {
    bucket: Type.String(),
    buckets: Type.Array(
      Type.Object({
        start: Type.String({ description: 'Start of the bucket (UTC ISO)' }),
        source_type: Type.String(),
        count: Type.Integer(),
      }),
      { description: 'Active documents per bucket of content time and source type, oldest first; empty buckets left out' },
    ),
  },
  { title: 'TimelineResponse' },
);
export type TimelineResponseT = Static<typeof TimelineResponse>;

export const SourcesResponse = Type.Object(
  {
    sources: Type.Array(
      Type.Object({
        source_type: Type.String(),
        source_account_id: Nullable(Type.String()),
        documents: Type.Integer(),
        with_attachments: Type.Integer(),
        last_ingested_at: Nullable(Type.String({ description: 'Latest ingest of a document of this source and account' })),
        last_content_at: Nullable(Type.String({ description: 'Newest content timestamp' })),
      }),
    ),
  },
  { title: 'SourcesResponse' },
);
export type SourcesResponseT = Static<typeof SourcesResponse>;
