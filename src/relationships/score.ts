/**
 * The relationship score: a continuous, explainable function of an edge's features.
 *
 *   recency      R = 0.5 ^ (days_since_last_message / half_life_days)      (continuous decay)
 *   volume       V = 1 - exp(-messages_30d / 10)                             (saturates: 10 -> 0.63, 30 -> 0.95)
 *   breadth      B = 1 - exp(-distinct_threads_90d / 2)                      (1 -> 0.39, 2 -> 0.63, 4 -> 0.86)
 *   attachments  A = 1 - exp(-attachments_30d / 3)                           (1 -> 0.28, 3 -> 0.63)
 *   base         = 100 * (0.45 R + 0.30 V + 0.15 B + 0.10 A)                 (0..100)
 *   reply factor F = 1 when no reply was measured, else 0.75 + 0.25 * 0.5 ^ (latency_hours / 24)
 *                (an instant reply keeps the full score, a reply after a day costs 12.5 %, the floor is 0.75)
 *   score        = base * F, rounded to 4 decimals
 *
 * Every part is stored with the edge (edge_features.score_components) so a user can see why.
 */
export interface EdgeFeatures {
  days_since_last_message: number;
  messages_30d: number;
  distinct_threads_90d: number;
  attachments_30d: number;
  avg_reply_latency_seconds: number | null;
}

export interface ScoreComponents {
  recency: number;
  volume: number;
  breadth: number;
  attachments: number;
  base: number;
  reply_factor: number;
  half_life_days: number;
}

export const SCORE_WEIGHTS = { recency: 0.45, volume: 0.3, breadth: 0.15, attachments: 0.1 } as const;
export const SATURATION = { messages: 10, threads: 2, attachments: 3 } as const;

const round = (n: number, digits: number) => {
  const f = 10 ** digits;
  return Math.round(n * f) / f;
};

export function scoreComponents(f: EdgeFeatures, halfLifeDays: number): ScoreComponents {
  const recency = Math.pow(0.5, Math.max(0, f.days_since_last_message) / halfLifeDays);
  const volume = 1 - Math.exp(-f.messages_30d / SATURATION.messages);
  const breadth = 1 - Math.exp(-f.distinct_threads_90d / SATURATION.threads);
  const attachments = 1 - Math.exp(-f.attachments_30d / SATURATION.attachments);
  const base =
    100 *
    (SCORE_WEIGHTS.recency * recency +
      SCORE_WEIGHTS.volume * volume +
      SCORE_WEIGHTS.breadth * breadth +
      SCORE_WEIGHTS.attachments * attachments);
  const reply_factor =
    f.avg_reply_latency_seconds === null ? 1 : 0.75 + 0.25 * Math.pow(0.5, f.avg_reply_latency_seconds / 3600 / 24);
  return {
    recency: round(recency, 6),
    volume: round(volume, 6),
    breadth: round(breadth, 6),
    attachments: round(attachments, 6),
    base: round(base, 4),
    reply_factor: round(reply_factor, 6),
    half_life_days: halfLifeDays,
  };
}

/** The score from its components (unrounded parts, so the figure does not depend on display rounding). */
export function relationshipScore(f: EdgeFeatures, halfLifeDays: number): { score: number; components: ScoreComponents } {
  const recency = Math.pow(0.5, Math.max(0, f.days_since_last_message) / halfLifeDays);
  const base =
    100 *
    (SCORE_WEIGHTS.recency * recency +
      SCORE_WEIGHTS.volume * (1 - Math.exp(-f.messages_30d / SATURATION.messages)) +
      SCORE_WEIGHTS.breadth * (1 - Math.exp(-f.distinct_threads_90d / SATURATION.threads)) +
      SCORE_WEIGHTS.attachments * (1 - Math.exp(-f.attachments_30d / SATURATION.attachments)));
  const factor =
    f.avg_reply_latency_seconds === null ? 1 : 0.75 + 0.25 * Math.pow(0.5, f.avg_reply_latency_seconds / 3600 / 24);
  return { score: Math.max(0, round(base * factor, 4)), components: scoreComponents(f, halfLifeDays) };
}

/**
 * Decay bucket of spec 2.6 from whole days (floor) since the last contact:
 * <= 1 -> 0, <= 7 -> 1, <= 30 -> 2, <= 90 -> 3, <= 180 -> 4, else 5.
 */
export function decayBucket(daysSince: number): number {
  const d = Math.floor(Math.max(0, daysSince));
  if (d <= 1) return 0;
  if (d <= 7) return 1;
  if (d <= 30) return 2;
  if (d <= 90) return 3;
  if (d <= 180) return 4;
  return 5;
}
