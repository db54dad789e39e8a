/**
 * Every operation of the public API by name: its method and path (Fastify's `:param` syntax). The gateway
 * registers each route from this (with its schemas, routes.ts) and every client (the web UI, the CLI, MCP)
 * reaches a route only by its name here, through `call` (src/client/call.ts).
 *
 * Apart from routes.ts so that a client loads two strings per operation, not the schemas: the CLI starts on
 * every verb and the UI is one bundle, and neither validates what the server validates. Imports nothing.
 */
export const OPERATIONS = {
  // catalog/routes.ts (the catalog's internal API, gateway spec 4.6)
  catalogStoreEmbeddings: { method: 'POST', url: '/v1/catalog/embeddings' },
  catalogAddDocument: { method: 'POST', url: '/v1/catalog/documents' },
  catalogAddDocuments: { method: 'POST', url: '/v1/catalog/documents/batch' },
  catalogAddVersion: { method: 'PATCH', url: '/v1/catalog/documents/:doc_id/version' },
  catalogDocumentStatus: { method: 'GET', url: '/v1/catalog/documents/:doc_id/status' },
  catalogSubmissionStatus: { method: 'GET', url: '/v1/catalog/submissions/:submission_id' },
  catalogDeleteDocument: { method: 'DELETE', url: '/v1/catalog/documents/:doc_id' },
  // routes/calendar.ts
  calendarAgenda: { method: 'GET', url: '/v1/calendar/agenda' },
  calendarIngest: { method: 'POST', url: '/v1/calendar/ingest' },
  // routes/contacts.ts
  contactsIngest: { method: 'POST', url: '/catalog/contacts/ingest' },
  contactsChangeToken: { method: 'GET', url: '/catalog/contacts/change-token' },
  contactsExport: { method: 'GET', url: '/catalog/contacts/export' },
  // routes/context.ts
  generalContext: { method: 'GET', url: '/v1/context/general' },
  // routes/coverage.ts
  coverageRetry: { method: 'POST', url: '/v1/coverage/sources/:source_id/retry' },
  coverageRecount: { method: 'POST', url: '/v1/coverage/sources/:source_id/reconcile' },
  coverage: { method: 'GET', url: '/v1/coverage' },
  coverageRun: { method: 'POST', url: '/v1/coverage/runs' },
  coverageReconcile: { method: 'POST', url: '/v1/coverage/reconcile' },
  coverageMissing: { method: 'GET', url: '/v1/coverage/sources/:source_id/missing' },
  coverageRuns: { method: 'GET', url: '/v1/coverage/sources/:source_id/runs' },
  forgetCoverageSource: { method: 'DELETE', url: '/v1/coverage/sources/:source_id' },
  // routes/documents.ts
  listDocuments: { method: 'GET', url: '/v1/documents' },
  getDocument: { method: 'GET', url: '/v1/doc/:doc_id' },
  documentView: { method: 'GET', url: '/v1/doc/:doc_id/view' },
  updateDocument: { method: 'PATCH', url: '/v1/documents/:doc_id' },
  // routes/file-download.ts
  downloadFile: { method: 'GET', url: '/v1/files/:sha256' },
  fileImage: { method: 'GET', url: '/v1/files/:sha256/image' },
  fileThumbnail: { method: 'GET', url: '/v1/files/:sha256/thumbnail' },
  // routes/files.ts
  ingestFile: { method: 'POST', url: '/v1/ingest/file' },
  ingestFileBatch: { method: 'POST', url: '/v1/ingest/file::batch' },
  knownFiles: { method: 'POST', url: '/v1/ingest/file/known' },
  // routes/forget.ts
  forget: { method: 'POST', url: '/v1/forget' },
  // routes/ingest.ts
  ingest: { method: 'POST', url: '/v1/ingest' },
  ingestBatch: { method: 'POST', url: '/v1/ingest::batch' },
  submissionStatus: { method: 'GET', url: '/v1/ingest/:submission_id' },
  // routes/maintenance.ts
  collectGarbage: { method: 'POST', url: '/v1/admin/gc' },
  exportNdjson: { method: 'GET', url: '/v1/export' },
  backup: { method: 'POST', url: '/v1/admin/backup' },
  // routes/organize.ts
  addTag: { method: 'POST', url: '/v1/tags/add' },
  removeTag: { method: 'POST', url: '/v1/tags/remove' },
  listTags: { method: 'GET', url: '/v1/tags' },
  tagsOn: { method: 'GET', url: '/v1/tags/on' },
  listTagRules: { method: 'GET', url: '/v1/tags/rules' },
  addTagRule: { method: 'POST', url: '/v1/tags/rules' },
  updateTagRule: { method: 'PATCH', url: '/v1/tags/rules/:rule_id' },
  deleteTagRule: { method: 'DELETE', url: '/v1/tags/rules/:rule_id' },
  listSavedSearches: { method: 'GET', url: '/v1/saved' },
  saveSearch: { method: 'PUT', url: '/v1/saved/:name' },
  getSavedSearch: { method: 'GET', url: '/v1/saved/:name' },
  deleteSavedSearch: { method: 'DELETE', url: '/v1/saved/:name' },
  runSavedSearch: { method: 'GET', url: '/v1/saved/:name/run' },
  // routes/originals.ts
  ingestOriginals: { method: 'POST', url: '/v1/ingest/originals' },
  documentOriginal: { method: 'GET', url: '/v1/documents/:doc_id/original' },
  reparseEmail: { method: 'POST', url: '/v1/admin/email/reparse' },
  // routes/people.ts
  mergeCandidates: { method: 'GET', url: '/v1/people/merge-candidates' },
  mergePeople: { method: 'POST', url: '/v1/people/merge' },
  searchPeople: { method: 'GET', url: '/search/people' },
  listMerges: { method: 'GET', url: '/v1/people/merges' },
  getPerson: { method: 'GET', url: '/v1/people/:person_id' },
  // routes/relationships.ts
  topRelationships: { method: 'GET', url: '/v1/crm/relationships/top' },
  getSelfPerson: { method: 'GET', url: '/v1/admin/self-person' },
  setSelfPerson: { method: 'PUT', url: '/v1/admin/self-person' },
  clearSelfPerson: { method: 'DELETE', url: '/v1/admin/self-person' },
  recomputeRelationships: { method: 'POST', url: '/v1/admin/relationships/recompute' },
  // routes/search.ts
  search: { method: 'GET', url: '/v1/search' },
  ask: { method: 'POST', url: '/v1/ask' },
  // routes/sources.ts
  reportSourceStatus: { method: 'PUT', url: '/v1/sources/status' },
  pauseSource: { method: 'POST', url: '/v1/sources/:source_id/pause' },
  resumeSource: { method: 'POST', url: '/v1/sources/:source_id/resume' },
  sourceState: { method: 'POST', url: '/v1/documents/source-state' },
  // routes/stats.ts
  timeline: { method: 'GET', url: '/v1/stats/timeline' },
  sourceStats: { method: 'GET', url: '/v1/stats/sources' },
  // routes/status.ts
  status: { method: 'GET', url: '/v1/status' },
  metrics: { method: 'GET', url: '/metrics' },
  reindexFailed: { method: 'POST', url: '/v1/admin/embedding/reindex-failed' },
  // routes/v2.ts
  v2IngestDocument: { method: 'POST', url: '/v2/ingest/document' },
  v2IngestPerson: { method: 'POST', url: '/v2/ingest/person' },
  v2IngestBatch: { method: 'POST', url: '/v2/ingest::batch' },
  // sessions.ts
  signIn: { method: 'POST', url: '/v1/session' },
  redeemSignInCode: { method: 'POST', url: '/v1/session/redeem' },
  createSignInLink: { method: 'POST', url: '/v1/session/link' },
  currentSession: { method: 'GET', url: '/v1/session' },
  signOut: { method: 'DELETE', url: '/v1/session' },
  listSessions: { method: 'GET', url: '/v1/sessions' },
  revokeSession: { method: 'DELETE', url: '/v1/sessions/:session_id' },
  revokeOtherSessions: { method: 'DELETE', url: '/v1/sessions' },
  // app.ts
  health: { method: 'GET', url: '/v1/healthz' },
  readiness: { method: 'GET', url: '/v1/readyz' },
} as const;

export type Operations = typeof OPERATIONS;
export type OperationName = keyof Operations;
