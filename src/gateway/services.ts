/**
 * What the gateway's routes stand on, built before the gateway by the program's composition root
 * (src/app/gateway-services.ts): the gateway registers routes over these and builds none of them.
 */
import type { Logger } from 'pino';
import type { Catalog } from '../catalog/catalog.ts';
import type { ServerConfig } from '../config/server.ts';
import type { Database } from '../db/types.ts';
import type { EmbeddingService, EmbeddingStart } from '../embedding/index.ts';
import type { FilesConfig } from '../files/config.ts';
import type { FileIngestService } from '../files/ingest-service.ts';
import type { ObjectStore } from '../files/object-store.ts';
import type { ForgetService } from '../forget/forget.ts';
import type { OcrEngine } from '../ocr/engine.ts';
import type { TagRules } from '../organize/rules.ts';
import type { SavedSearches } from '../organize/saved.ts';
import type { RelationshipService } from '../relationships/service.ts';
import type { Search } from '../search/search.ts';
import type { GatewayMetrics } from './metrics.ts';
import type { WebSessions } from './sessions.ts';
import type { SignInCodes } from './ui.ts';

export interface GatewayServices {
  config: ServerConfig;
  db: Database;
  /** Where the services write their warnings (the gateway writes its request lines to its own). */
  log: Logger;
  catalog: Catalog;
  search: Search;
  relationships: RelationshipService;
  embedding?: EmbeddingService | EmbeddingStart;
  /** The embedding service now: undefined without one, or while its model threads start. */
  embeddingNow(): EmbeddingService | undefined;
  metrics: GatewayMetrics;
  /** The web UI's sessions: they stand for the access token wherever it is accepted. */
  sessions: WebSessions;
  signInCodes: SignInCodes;
  files?: { store: ObjectStore; config: FilesConfig; ocrEngine?: OcrEngine; ingest: FileIngestService };
  forget: ForgetService;
  /** Tags, tagging rules and saved searches (issue 44). */
  rules: TagRules;
  saved: SavedSearches;
  mcpAllowWrite: boolean;
  /** Starts the background work: the relationship scorer's periodic refresh, the tagging rules' poll. */
  start(): void;
  /** Stops the background work; closes the search service when it was built here (one passed in is its owner's). */
  close(): Promise<void>;
}
