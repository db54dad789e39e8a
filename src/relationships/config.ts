/**
 * Relationship scorer settings, read from the environment (src/config/env.ts).
 * Kept apart from the server config so the scorer can be configured and tested on its own.
 */
import { ConfigError, bool, defineSettings, list, number, read } from '../config/env.ts';
import { SERVER_SETTINGS } from '../config/server.ts';

export interface RelationshipConfig {
  /** Days after which the recency part of the score halves (continuous decay). */
  halfLifeDays: number;
  /** Identifiers (email, phone, chat handle) that belong to the user, in order of preference. */
  selfIdentifiers: string[];
  /** GET /v1/crm/relationships/top requires CATALOG_TOKEN instead of AUTH_TOKEN (spec 5.4). */
  requireCatalogToken: boolean;
  /** Quiet time after the last ingest before touched edges are refreshed. */
  debounceMs: number;
  /** Longest an ingest waits for its refresh while ingestion keeps going (bounds the debounce). */
  maxDelayMs: number;
  /** Full recompute period while the server runs (recency and 30/90-day counts age); 0 disables. */
  refreshHours: number;
  /** Region for reading national phone numbers in SELF_IDENTIFIERS. */
  phoneRegion: string;
}

export const DEFAULT_RELATIONSHIP_CONFIG: RelationshipConfig = {
  halfLifeDays: 30,
  selfIdentifiers: [],
  requireCatalogToken: false,
  debounceMs: 3000,
  maxDelayMs: 30000,
  refreshHours: 24,
  phoneRegion: 'US',
};

const D = DEFAULT_RELATIONSHIP_CONFIG;

export const RELATIONSHIP_SETTINGS = defineSettings('relationships', 'Relationships', {
  RELATIONSHIP_HALF_LIFE_DAYS: number({ default: D.halfLifeDays, min: 0.01, max: 3650, description: 'half-life of the recency part of the score, in days' }),
  SELF_IDENTIFIERS: list({ default: [], description: 'comma-separated emails/phones of the user (at most 50), used to detect the self person' }),
  RELATIONSHIPS_REQUIRE_CATALOG_TOKEN: bool({
    default: D.requireCatalogToken,
    description: '`true`: `GET /v1/crm/relationships/top` takes `CATALOG_TOKEN` instead of `AUTH_TOKEN` (spec 5.4); the server refuses to start without `CATALOG_TOKEN`',
  }),
  RELATIONSHIP_DEBOUNCE_MS: number({ default: D.debounceMs, min: 0, max: 600_000, description: 'quiet time after the last ingest before touched edges are refreshed' }),
  RELATIONSHIP_MAX_DELAY_MS: number({ default: D.maxDelayMs, min: 0, max: 3_600_000, description: 'longest an ingest waits for its refresh while ingestion keeps going' }),
  RELATIONSHIP_REFRESH_HOURS: number({ default: D.refreshHours, min: 0, max: 8760, description: 'period of the full recompute while the server runs; 0 turns it off' }),
});

export function loadRelationshipConfig(env: NodeJS.ProcessEnv = process.env): RelationshipConfig {
  const S = RELATIONSHIP_SETTINGS;
  const selfIdentifiers = read(env, S.SELF_IDENTIFIERS);
  if (selfIdentifiers.length > 50) throw new ConfigError('SELF_IDENTIFIERS accepts at most 50 identifiers');
  return {
    halfLifeDays: read(env, S.RELATIONSHIP_HALF_LIFE_DAYS),
    selfIdentifiers,
    requireCatalogToken: read(env, S.RELATIONSHIPS_REQUIRE_CATALOG_TOKEN),
    debounceMs: read(env, S.RELATIONSHIP_DEBOUNCE_MS),
    maxDelayMs: read(env, S.RELATIONSHIP_MAX_DELAY_MS),
    refreshHours: read(env, S.RELATIONSHIP_REFRESH_HOURS),
    phoneRegion: read(env, SERVER_SETTINGS.DEFAULT_PHONE_REGION).toUpperCase(),
  };
}
