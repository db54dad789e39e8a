/**
 * Relationship scorer settings, read from the environment (documented in docs/relationships.md).
 * Kept apart from the server config so the scorer can be configured and tested on its own.
 */
import { ConfigError } from '../config/server.ts';

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

function num(env: NodeJS.ProcessEnv, key: string, def: number, min: number, max: number): number {
  const raw = env[key]?.trim();
  if (raw === undefined || raw === '') return def;
  if (!/^\d+(\.\d+)?$/.test(raw)) throw new ConfigError(`${key} must be a number, got "${raw}"`);
  const n = Number(raw);
  if (n < min || n > max) throw new ConfigError(`${key} must be between ${min} and ${max}, got ${n}`);
  return n;
}

function bool(env: NodeJS.ProcessEnv, key: string, def: boolean): boolean {
  const raw = env[key]?.trim().toLowerCase();
  if (raw === undefined || raw === '') return def;
  if (['1', 'true', 'yes', 'on'].includes(raw)) return true;
  if (['0', 'false', 'no', 'off'].includes(raw)) return false;
  throw new ConfigError(`${key} must be true or false, got "${env[key]}"`);
}

export function loadRelationshipConfig(env: NodeJS.ProcessEnv = process.env): RelationshipConfig {
  const halfLifeDays = num(env, 'RELATIONSHIP_HALF_LIFE_DAYS', DEFAULT_RELATIONSHIP_CONFIG.halfLifeDays, 0.01, 3650);
  if (halfLifeDays <= 0) throw new ConfigError('RELATIONSHIP_HALF_LIFE_DAYS must be greater than 0');
  const selfIdentifiers = (env.SELF_IDENTIFIERS ?? '')
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean);
  if (selfIdentifiers.length > 50) throw new ConfigError('SELF_IDENTIFIERS accepts at most 50 identifiers');
  const region = (env.DEFAULT_PHONE_REGION?.trim() || 'US').toUpperCase();
  return {
    halfLifeDays,
    selfIdentifiers,
    requireCatalogToken: bool(env, 'RELATIONSHIPS_REQUIRE_CATALOG_TOKEN', false),
    debounceMs: num(env, 'RELATIONSHIP_DEBOUNCE_MS', DEFAULT_RELATIONSHIP_CONFIG.debounceMs, 0, 600000),
    maxDelayMs: num(env, 'RELATIONSHIP_MAX_DELAY_MS', DEFAULT_RELATIONSHIP_CONFIG.maxDelayMs, 0, 3600000),
    refreshHours: num(env, 'RELATIONSHIP_REFRESH_HOURS', DEFAULT_RELATIONSHIP_CONFIG.refreshHours, 0, 8760),
    phoneRegion: /^[A-Z]{2}$/.test(region) ? region : 'US',
  };
}
