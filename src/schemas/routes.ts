/**
 * The route table: every operation of the public API (operations.ts: name, method, path) with its schemas:
 * params, querystring, body, the responses by status, and what OpenAPI shows (tags, summary, description).
 * The gateway registers each route from its entry (`app.route({ ...ROUTES.search, handler })`), so the
 * validation, the serialisation and the OpenAPI document come from here; the clients' `call` reads its
 * input and answer types from here (src/client/call.ts), so a client and its route cannot drift apart.
 */
import { Type } from '@sinclair/typebox';
import { AGENDA_MAX_DAYS, AgendaAnswer, AgendaQuery, CalendarIngestRequest, CalendarIngestResponse } from './calendar.ts';
import { CatalogBatch, CatalogBatchResponse, CatalogDeleteResponse, CatalogDocParams, CatalogDocument, CatalogDocumentStatus, CatalogEmbeddingsRequest, CatalogEmbeddingsResponse, CatalogIngestResponse, CatalogSubmissionParams, CatalogVersionRequest, CatalogVersionResponse } from './catalog.ts';
import { DetailMessage, DiskFullBody, ErrorMessage, MediaResponse, ValidationErrorBody } from './common.ts';
import { ContextQuery, GeneralContextResponse } from './context.ts';
import { CoverageQuery, CoverageResponse, CoverageRunAccepted, CoverageRunReport, MissingPage, MissingQuery, ReconcileAccepted, ReconcileReport, RequestAccepted, RunsPage, RunsQuery, SourceIdParams } from './coverage.ts';
import { DocIdParams, DocumentListQuery, DocumentListResponse, DocumentUpdateRequest, DocumentUpdateResponse, DocumentViewQuery, DocumentViewResponse, StoredDocument } from './documents.ts';
import { FILE_BATCH_MAX_FILES, FileBatchResponse, FileIngestResponse, KnownFilesRequest, KnownFilesResponse, Sha256Params, SHOWN_IMAGE_TYPES, THUMBNAIL_MAX_BYTES, THUMBNAIL_MAX_PX } from './files.ts';
import { ForgetRequest, ForgetResponse } from './forget.ts';
import { BatchIngestRequest, BatchIngestResponse, IngestRequest, IngestStatusResponse, IngestSubmissionResponse, SubmissionParams } from './ingest.ts';
import { ExportQuery, GcRequest, GcResponse } from './maintenance.ts';
import { RuleDeleted, RuleDeleteQuery, RuleIdParams, SavedList, SavedListQuery, SavedParams, SavedRequest, SavedRunQuery, SavedSearch, TagChangeRequest, TagChangeResponse, TagList, TagRuleCreated, TagRuleList, TagRulePatch, TagRuleRequest, TagsOn, TagsOnQuery } from './organize.ts';
import { ORIGINAL_MIME_TYPE, ORIGINALS_MAX_PER_REQUEST, OriginalUploadResponse, ReparseResponse } from './originals.ts';
import { ChangeTokenQuery, ChangeTokenResponse, ContactExportQuery, ContactIngestRequest, ContactIngestResponse, MergeCandidatesQuery, MergeCandidatesResponse, MergeListQuery, MergeListResponse, MergeRecord, MergeRequest, PeopleSearchQuery, PeopleSearchResponse, PersonDetailResponse, PersonParams } from './people.ts';
import { RecomputeResponse, SelfPut, SelfState, TopQuery, TopResponse } from './relationships.ts';
import { AskRequest, AskResponseSchema, SearchQuery, SearchResponseSchema } from './search.ts';
import { CurrentSession, RedeemRequest, RevokedSessions, SessionIdParams, SessionList, SignInLink, SignInRequest } from './sessions.ts';
import { PauseAnswer, SourceStateAnswer, SourceStateRequest, SourceStatusAnswer, SourceStatusBatch } from './sources.ts';
import { SourcesResponse, TimelineQuery, TimelineResponse } from './stats.ts';
import { Health, Readiness, ReindexFailedResponse, StatusResponse } from './status.ts';
import { DocumentEnvelope, PersonEnvelope, PersonIngestResponse, V2BatchRequest, V2BatchResponse } from './v2.ts';
import { OPERATIONS, type OperationName, type Operations } from './operations.ts';

/** An operation's method and path with its schemas. */
function route<K extends OperationName, S extends object>(name: K, schema: S): { method: Operations[K]['method']; url: Operations[K]['url']; schema: S } {
  return { method: OPERATIONS[name].method, url: OPERATIONS[name].url, schema };
}

/** The tag routes' request and answer: POST /v1/tags/add and /v1/tags/remove differ only in what they do. */
const tagChange = <K extends 'addTag' | 'removeTag'>(name: K) =>
  route(name, {
    tags: ['organize'],
    operationId: name as string,
    summary:
      name === 'addTag'
        ? 'Tag documents (by id or every one a query matches) or conversations (their messages carry it for search)'
        : 'Remove a tag from documents (by id or by query) or conversations',
    body: TagChangeRequest,
    response: { 200: TagChangeResponse, 422: ValidationErrorBody },
  });

/** The requests to a source's collector (POST /v1/coverage/sources/{source_id}/retry and …/reconcile). */
const collectorRequest = <K extends 'coverageRetry' | 'coverageRecount'>(name: K) =>
  route(name, {
    tags: ['coverage'],
    summary:
      name === 'coverageRetry'
        ? "Ask the source's collector to retry the items that failed, at its next check"
        : "Ask the source's collector to recount the source, at its next check",
    params: SourceIdParams,
    response: { 202: RequestAccepted, 404: DetailMessage, 422: ValidationErrorBody },
  });

/** POST /v1/sources/{source_id}/pause and …/resume. */
const pauseOrResume = <K extends 'pauseSource' | 'resumeSource'>(name: K) =>
  route(name, {
    tags: ['coverage'],
    summary: name === 'pauseSource' ? 'Pause a source: its agent stops keeping it up to date until resumed' : 'Resume a paused source',
    params: SourceIdParams,
    response: { 200: PauseAnswer, 404: DetailMessage, 422: ValidationErrorBody },
  });

export const ROUTES = {
  // catalog/routes.ts (the catalog's internal API, gateway spec 4.6)
  catalogStoreEmbeddings: route('catalogStoreEmbeddings', {
    tags: ['catalog'],
    summary: 'Store chunk vectors; documents whose chunks all have one become indexed',
    body: CatalogEmbeddingsRequest,
    response: { 200: CatalogEmbeddingsResponse, 400: ErrorMessage, 404: ErrorMessage, 409: ErrorMessage, 422: ValidationErrorBody },
  }),
  catalogAddDocument: route('catalogAddDocument', {
    tags: ['catalog'],
    summary: 'Idempotent insertion of one document (202 stored, 200 already stored or kept out)',
    body: CatalogDocument,
    response: { 200: CatalogIngestResponse, 202: CatalogIngestResponse, 422: ValidationErrorBody, 507: DiskFullBody },
  }),
  catalogAddDocuments: route('catalogAddDocuments', {
    tags: ['catalog'],
    summary: 'Batch insertion with a batch record (202 all stored, 207 some failed)',
    body: CatalogBatch,
    response: { 202: CatalogBatchResponse, 207: CatalogBatchResponse, 422: ValidationErrorBody },
  }),
  catalogAddVersion: route('catalogAddVersion', {
    tags: ['catalog'],
    summary: 'A new version of a document (404 unknown, 409 not the active version)',
    params: CatalogDocParams,
    body: CatalogVersionRequest,
    response: { 200: CatalogVersionResponse, 404: ErrorMessage, 409: ErrorMessage, 422: ValidationErrorBody },
  }),
  catalogDocumentStatus: route('catalogDocumentStatus', {
    tags: ['catalog'],
    summary: 'Status and chunk counts of a document',
    params: CatalogDocParams,
    response: { 200: CatalogDocumentStatus, 404: ErrorMessage, 422: ValidationErrorBody },
  }),
  catalogSubmissionStatus: route('catalogSubmissionStatus', {
    tags: ['catalog'],
    summary: 'Submission (or batch) state and embedding progress',
    params: CatalogSubmissionParams,
    response: { 200: IngestStatusResponse, 404: ErrorMessage, 422: ValidationErrorBody },
  }),
  catalogDeleteDocument: route('catalogDeleteDocument', {
    tags: ['catalog'],
    summary: 'Soft-delete a document (accepted: 202)',
    params: CatalogDocParams,
    response: { 202: CatalogDeleteResponse, 404: ErrorMessage, 422: ValidationErrorBody },
  }),
  // routes/calendar.ts
  calendarAgenda: route('calendarAgenda', {
    tags: ['documents'],
    operationId: 'calendarAgenda',
    summary: `Events (each occurrence of a recurring one) and tasks due between two instants, by start; at most ${AGENDA_MAX_DAYS} days`,
    querystring: AgendaQuery,
    response: { 200: AgendaAnswer, 422: ValidationErrorBody },
  }),
  calendarIngest: route('calendarIngest', {
    tags: ['ingest'],
    summary: 'Store calendar events and tasks (documents) and the occurrences of recurring events',
    body: CalendarIngestRequest,
    response: { 200: CalendarIngestResponse, 422: ValidationErrorBody },
  }),
  // routes/contacts.ts
  contactsIngest: route('contactsIngest', {
    tags: ['contacts'],
    summary: 'Upsert or delete contact cards by (source, external_id); counts say what changed',
    body: ContactIngestRequest,
    response: { 200: ContactIngestResponse, 422: ValidationErrorBody },
  }),
  contactsChangeToken: route('contactsChangeToken', {
    tags: ['contacts'],
    summary: 'The change token last stored for (source, device_id)',
    querystring: ChangeTokenQuery,
    response: {
      200: ChangeTokenResponse,
      422: ValidationErrorBody,
    },
  }),
  contactsExport: route('contactsExport', {
    tags: ['contacts'],
    summary:
      'Newline-delimited JSON, one person per line with identifiers, streamed in pages. ' +
      'X-Since-Token-Next carries the token for the next incremental export.',
    querystring: ContactExportQuery,
    response: {
      200: MediaResponse('application/x-ndjson', 'One person per line, with identifiers; X-Since-Token-Next in a header'),
      422: ValidationErrorBody,
    },
  }),
  // routes/context.ts
  generalContext: route('generalContext', {
    tags: ['search'],
    summary: 'Totals, busiest threads and recent highlights of the active documents',
    querystring: ContextQuery,
    response: { 200: GeneralContextResponse, 422: ValidationErrorBody },
  }),
  // routes/coverage.ts
  coverageRetry: collectorRequest('coverageRetry'),
  coverageRecount: collectorRequest('coverageRecount'),
  coverage: route('coverage', {
    tags: ['coverage'],
    summary: 'Per source: items in the source, stored, skipped, failed and pending, what is missing and why, the last run and recount',
    querystring: CoverageQuery,
    response: { 200: CoverageResponse, 422: ValidationErrorBody },
  }),
  coverageRun: route('coverageRun', {
    tags: ['coverage'],
    summary: "A collector's report of one run over its source: counts that add up, and the items not stored with why",
    body: CoverageRunReport,
    response: { 200: CoverageRunAccepted, 422: ValidationErrorBody },
  }),
  coverageReconcile: route('coverageReconcile', {
    tags: ['coverage'],
    summary: "A collector's recount of its source, compared with its last run (drift), without importing anything",
    body: ReconcileReport,
    response: { 200: ReconcileAccepted, 422: ValidationErrorBody },
  }),
  coverageMissing: route('coverageMissing', {
    tags: ['coverage'],
    summary: "A page of a source's items seen but not stored, with their reasons",
    params: SourceIdParams,
    querystring: MissingQuery,
    response: { 200: MissingPage, 404: DetailMessage, 422: ValidationErrorBody },
  }),
  coverageRuns: route('coverageRuns', {
    tags: ['coverage'],
    summary: 'The latest runs of a source with their counts, newest first',
    params: SourceIdParams,
    querystring: RunsQuery,
    response: { 200: RunsPage, 404: DetailMessage, 422: ValidationErrorBody },
  }),
  forgetCoverageSource: route('forgetCoverageSource', {
    tags: ['coverage'],
    summary: "Forget a source's coverage record (its documents stay)",
    params: SourceIdParams,
    response: { 204: Type.Null(), 404: DetailMessage, 422: ValidationErrorBody },
  }),
  // routes/documents.ts
  listDocuments: route('listDocuments', {
    tags: ['documents'],
    summary: 'Active documents, newest first, narrowed by the filters of GET /v1/search',
    querystring: DocumentListQuery,
    response: { 200: DocumentListResponse, 422: ValidationErrorBody },
  }),
  getDocument: route('getDocument', {
    tags: ['documents'],
    summary: 'The stored document record (any version, by id)',
    params: DocIdParams,
    response: { 200: StoredDocument, 404: DetailMessage, 422: ValidationErrorBody },
  }),
  documentView: route('documentView', {
    tags: ['documents'],
    summary: 'A document with its linked people, versions and neighbouring thread messages (the web UI\'s document view)',
    params: DocIdParams,
    querystring: DocumentViewQuery,
    response: { 200: DocumentViewResponse, 404: DetailMessage, 422: ValidationErrorBody },
  }),
  updateDocument: route('updateDocument', {
    tags: ['documents'],
    summary: 'Edit text and metadata: creates a new version and queues its chunks for embedding',
    params: DocIdParams,
    body: DocumentUpdateRequest,
    response: { 200: DocumentUpdateResponse, 404: DetailMessage, 409: DetailMessage, 422: ValidationErrorBody },
  }),
  // routes/file-download.ts
  downloadFile: route('downloadFile', {
    tags: ['files'],
    summary: 'Download a stored file by its SHA-256',
    params: Sha256Params,
    response: { 200: MediaResponse('application/octet-stream', 'The file as stored'), 404: DetailMessage },
  }),
  fileImage: route('fileImage', {
    tags: ['files'],
    summary: 'A stored raster image, to show in a page',
    description:
      'The bytes of a stored PNG, JPEG, GIF, WebP or BMP with the type read from the bytes (never the declared one), inline, with `X-Content-Type-Options: nosniff` and `Content-Security-Policy: sandbox`. 404 for every other file, SVG included (its download is GET /v1/files/{sha256}).',
    params: Sha256Params,
    response: {
      200: {
        description: 'The image as stored',
        content: Object.fromEntries(
          Object.values(SHOWN_IMAGE_TYPES).map((t) => [t, { schema: { type: 'string', format: 'binary' } }]),
        ),
      },
      404: DetailMessage,
    },
  }),
  fileThumbnail: route('fileThumbnail', {
    tags: ['files'],
    summary: 'Thumbnail of a stored image or PDF',
    description: `A WebP at most ${THUMBNAIL_MAX_PX} px on its longer side and ${THUMBNAIL_MAX_BYTES / 1024} KB: the image, or a PDF's first page. Made on the first request and kept beside the file; 404 for files of other types.`,
    params: Sha256Params,
    response: { 200: MediaResponse('image/webp', 'The thumbnail'), 404: DetailMessage },
  }),
  // routes/files.ts
  ingestFile: route('ingestFile', {
    tags: ['ingest'],
    summary: 'Upload one file (multipart: meta JSON + upload); stored once by SHA-256, text extracted and indexed',
    deprecated: true,
    consumes: ['multipart/form-data'],
    response: {
      200: FileIngestResponse,
      202: FileIngestResponse,
      400: ErrorMessage,
      413: ErrorMessage,
      422: ValidationErrorBody,
      503: ErrorMessage,
      507: DiskFullBody,
    },
  }),
  ingestFileBatch: route('ingestFileBatch', {
    tags: ['ingest'],
    summary: `Upload up to ${FILE_BATCH_MAX_FILES} files at once (multipart: meta JSON then upload, repeated)`,
    description:
      'Each file is handled as POST /v1/ingest/file would handle it, and answered in `results` by its position ' +
      '(`status_code` is what the single route would have answered). One bad file never stops the others: the ' +
      'answer is 202 when every file was accepted, else 207. The documents are cataloged together (one batch), ' +
      'which is much cheaper than one request per file.',
    consumes: ['multipart/form-data'],
    response: {
      202: FileBatchResponse,
      207: FileBatchResponse,
      400: ErrorMessage,
      413: ErrorMessage,
      422: ValidationErrorBody,
      503: ErrorMessage,
      507: DiskFullBody,
    },
  }),
  knownFiles: route('knownFiles', {
    tags: ['ingest'],
    summary: 'Which uploads the server already holds (same source path and bytes), and its instance id',
    description:
      'Clients that remember what they uploaded (memex ingest) confirm it here before skipping a file: only files ' +
      'listed in `known` would be answered as duplicates. `instance_id` changes with a new data directory or database.',
    body: KnownFilesRequest,
    response: { 200: KnownFilesResponse, 422: ValidationErrorBody },
  }),
  // routes/forget.ts
  forget: route('forget', {
    tags: ['forget'],
    operationId: 'forget',
    summary: 'Erase a person, document, source or identifier with everything derived from it (dry_run counts first)',
    body: ForgetRequest,
    response: { 200: ForgetResponse, 404: DetailMessage, 422: ValidationErrorBody },
  }),
  // routes/ingest.ts
  ingest: route('ingest', {
    tags: ['ingest'],
    summary: 'Ingest one text document',
    body: IngestRequest,
    response: { 200: IngestSubmissionResponse, 202: IngestSubmissionResponse, 422: ValidationErrorBody, 507: DiskFullBody },
  }),
  ingestBatch: route('ingestBatch', {
    tags: ['ingest'],
    summary: 'Ingest several documents; one bad item never stops the others',
    body: BatchIngestRequest,
    response: { 202: BatchIngestResponse, 207: BatchIngestResponse, 422: ValidationErrorBody },
  }),
  submissionStatus: route('submissionStatus', {
    tags: ['ingest'],
    summary: 'Status of a submission, or of a batch by its batch_id',
    params: SubmissionParams,
    response: { 200: IngestStatusResponse, 404: DetailMessage, 422: ValidationErrorBody },
  }),
  // routes/maintenance.ts
  collectGarbage: route('collectGarbage', {
    tags: ['admin'],
    operationId: 'collectGarbage',
    summary: 'Collect chunks, vectors, files and stored objects that no document references',
    body: Type.Optional(GcRequest),
    response: { 200: GcResponse, 422: ValidationErrorBody },
  }),
  exportNdjson: route('exportNdjson', {
    tags: ['admin'],
    operationId: 'exportNdjson',
    summary:
      'Everything as NDJSON: a header line with counts, then active documents (metadata, people, files), threads and people',
    querystring: ExportQuery,
    response: {
      200: MediaResponse('application/x-ndjson', 'A header line with counts, then one JSON object per line'),
      422: ValidationErrorBody,
    },
  }),
  backup: route('backup', {
    tags: ['admin'],
    operationId: 'backup',
    summary: 'A consistent copy of everything (database and stored files) as one tar file, made while the server runs',
    response: {
      200: MediaResponse('application/x-tar', 'The backup (docs/forget.md): a manifest first, memex\'s table rows as NDJSON, the stored objects, an end member last'),
      409: ErrorMessage,
    },
  }),
  // routes/organize.ts
  addTag: tagChange('addTag'),
  removeTag: tagChange('removeTag'),
  listTags: route('listTags', { tags: ['organize'], operationId: 'listTags', summary: 'Every tag with its documents, conversations and rules', response: { 200: TagList } }),
  tagsOn: route('tagsOn', {
    tags: ['organize'],
    summary: "A document's tags (its own and its conversation's) or a conversation's",
    querystring: TagsOnQuery,
    response: { 200: TagsOn, 404: DetailMessage, 422: ValidationErrorBody },
  }),
  listTagRules: route('listTagRules', { tags: ['organize'], operationId: 'listTagRules', summary: 'Tagging rules', response: { 200: TagRuleList } }),
  addTagRule: route('addTagRule', {
    tags: ['organize'],
    operationId: 'addTagRule',
    summary: 'A rule: tags every document its query matches now, and every one ingested later',
    body: TagRuleRequest,
    response: { 201: TagRuleCreated, 422: ValidationErrorBody },
  }),
  updateTagRule: route('updateTagRule', {
    tags: ['organize'],
    summary: "Change a rule's tag (its tags follow) or query (applied again)",
    params: RuleIdParams,
    body: TagRulePatch,
    response: { 200: TagRuleCreated, 404: DetailMessage, 422: ValidationErrorBody },
  }),
  deleteTagRule: route('deleteTagRule', {
    tags: ['organize'],
    summary: 'Remove a rule (remove_tags=true: and the tags it gave)',
    params: RuleIdParams,
    querystring: RuleDeleteQuery,
    response: { 200: RuleDeleted, 404: DetailMessage },
  }),
  listSavedSearches: route('listSavedSearches', {
    tags: ['organize'],
    operationId: 'listSavedSearches',
    summary: 'Saved searches, with what each matches now and how much of it is new since it was last looked at',
    querystring: SavedListQuery,
    response: { 200: SavedList },
  }),
  saveSearch: route('saveSearch', {
    tags: ['organize'],
    summary: 'Save a search (a query with its filters) under a name, or replace it',
    params: SavedParams,
    body: SavedRequest,
    response: { 200: SavedSearch, 422: ValidationErrorBody },
  }),
  getSavedSearch: route('getSavedSearch', { tags: ['organize'], summary: 'One saved search with its counts', params: SavedParams, response: { 200: SavedSearch, 404: DetailMessage } }),
  deleteSavedSearch: route('deleteSavedSearch', { tags: ['organize'], summary: 'Remove a saved search', params: SavedParams, response: { 204: { type: 'null' }, 404: DetailMessage } }),
  runSavedSearch: route('runSavedSearch', {
    tags: ['organize'],
    operationId: 'runSavedSearch',
    summary: 'Run a saved search (as GET /v1/search with its query and filters); marks it looked at unless seen=false',
    params: SavedParams,
    querystring: SavedRunQuery,
    response: { 200: SearchResponseSchema, 404: DetailMessage },
  }),
  // routes/originals.ts
  ingestOriginals: route('ingestOriginals', {
    tags: ['ingest'],
    summary: `Keep the raw bytes of ingested messages (multipart: meta JSON then original, repeated, up to ${ORIGINALS_MAX_PER_REQUEST})`,
    description:
      'Each original is stored once by SHA-256 (the same message from two folders is one object) and linked to the ' +
      'document version named by `meta.doc_id` (an email document). Answered per original by position: 201 linked, ' +
      '200 already linked, 404 no such document, 413 larger than the largest message, 422 a bad meta or not a message. ' +
      'The answer is 202 when every original was linked, else 207.',
    consumes: ['multipart/form-data'],
    response: { 202: OriginalUploadResponse, 207: OriginalUploadResponse, 400: ErrorMessage, 413: ErrorMessage, 422: ValidationErrorBody, 503: ErrorMessage },
  }),
  documentOriginal: route('documentOriginal', {
    tags: ['documents'],
    summary: 'The original of a message document: its raw RFC 5322 bytes as collected (message/rfc822, a download)',
    description:
      'The original linked to this version, else the newest linked to another version of the same document. ' +
      '404 when none is kept (a document that is no message, or mail stored before memex kept originals: ' +
      '`memex import mail --rescan PATH` stores them).',
    params: DocIdParams,
    response: { 200: MediaResponse(ORIGINAL_MIME_TYPE, 'The message as collected'), 404: DetailMessage, 422: ValidationErrorBody },
  }),
  reparseEmail: route('reparseEmail', {
    tags: ['admin'],
    summary: 'Rebuild every stored message from its original with the current parser; a changed result is a new version',
    description:
      'What `memex reindex --reparse` runs. Answers when done: how many documents were repaired (a new version), ' +
      'unchanged, failed, and how many email documents have no original (`memex import mail --rescan PATH` stores them).',
    response: { 200: ReparseResponse },
  }),
  // routes/people.ts
  mergeCandidates: route('mergeCandidates', {
    tags: ['people'],
    summary: 'People with the same name under different addresses: offered for merging, never merged by themselves',
    querystring: MergeCandidatesQuery,
    response: { 200: MergeCandidatesResponse, 422: ValidationErrorBody },
  }),
  mergePeople: route('mergePeople', {
    tags: ['people'],
    summary: 'Merge one person into another (the owner says they are one); recorded with reason manual',
    body: MergeRequest,
    response: { 200: MergeRecord, 404: ErrorMessage, 422: ValidationErrorBody },
  }),
  searchPeople: route('searchPeople', {
    tags: ['people'],
    summary: 'Find people by name, nickname, organisation, email or phone (any format)',
    querystring: PeopleSearchQuery,
    response: { 200: PeopleSearchResponse, 422: ValidationErrorBody },
  }),
  listMerges: route('listMerges', {
    tags: ['people'],
    summary: 'Merges of people, newest first (optionally those involving one person)',
    querystring: MergeListQuery,
    response: { 200: MergeListResponse, 422: ValidationErrorBody },
  }),
  getPerson: route('getPerson', {
    tags: ['people'],
    summary: 'A person with identifiers, addresses, urls and sources; a merged id answers with its survivor',
    params: PersonParams,
    response: { 200: PersonDetailResponse, 404: ErrorMessage, 422: ValidationErrorBody },
  }),
  // routes/relationships.ts
  topRelationships: route('topRelationships', {
    tags: ['crm'],
    summary: 'People ranked by relationship score (edges self -> person, explained by their features)',
    querystring: TopQuery,
    response: { 200: TopResponse, 404: ErrorMessage, 422: ValidationErrorBody },
  }),
  getSelfPerson: route('getSelfPerson', {
    tags: ['admin'],
    summary: 'The self person in use, the stored override and what detection finds',
    response: { 200: SelfState },
  }),
  setSelfPerson: route('setSelfPerson', {
    tags: ['admin'],
    summary: 'Override the self person by id or by one of their identifiers (merged ids resolve to the survivor)',
    body: SelfPut,
    response: { 200: SelfState, 404: ErrorMessage, 422: ValidationErrorBody },
  }),
  clearSelfPerson: route('clearSelfPerson', { tags: ['admin'], summary: 'Remove the override; detection decides again', response: { 200: SelfState } }),
  recomputeRelationships: route('recomputeRelationships', {
    tags: ['admin'],
    summary: 'Recompute every relationship edge of the self person now',
    response: {
      200: RecomputeResponse,
    },
  }),
  // routes/search.ts
  search: route('search', {
    tags: ['search'],
    summary: 'Hybrid search (BM25 + vectors) with filters, facets and thread context',
    querystring: SearchQuery,
    response: { 200: SearchResponseSchema, 422: ValidationErrorBody },
  }),
  ask: route('ask', {
    tags: ['search'],
    summary: 'Answer a question from the retrieved documents, with citations',
    body: AskRequest,
    response: { 200: AskResponseSchema, 422: ValidationErrorBody },
  }),
  // routes/sources.ts
  reportSourceStatus: route('reportSourceStatus', {
    tags: ['coverage'],
    summary: "An agent's report of how fresh each of its sources is; the answer says which a person paused",
    body: SourceStatusBatch,
    response: { 200: SourceStatusAnswer, 422: ValidationErrorBody },
  }),
  pauseSource: pauseOrResume('pauseSource'),
  resumeSource: pauseOrResume('resumeSource'),
  sourceState: route('sourceState', {
    tags: ['documents'],
    summary: 'What changed at the source for stored documents (folder, flags, deleted_at_source), recorded without a new version',
    body: SourceStateRequest,
    response: { 200: SourceStateAnswer, 422: ValidationErrorBody },
  }),
  // routes/stats.ts
  timeline: route('timeline', {
    tags: ['stats'],
    summary: 'Active documents per time bucket and source type (the timeline chart)',
    querystring: TimelineQuery,
    response: { 200: TimelineResponse, 422: ValidationErrorBody },
  }),
  sourceStats: route('sourceStats', {
    tags: ['stats'],
    summary: 'Active documents per source type and account, with the last ingest time',
    response: { 200: SourcesResponse },
  }),
  // routes/status.ts
  status: route('status', {
    tags: ['status'],
    summary: 'Documents per source and status, the embedding queue, throughput and failures with reasons',
    response: { 200: StatusResponse },
  }),
  metrics: route('metrics', {
    tags: ['status'],
    summary: 'Prometheus metrics: request latency per route, ingest outcomes, embedding queue, search legs',
    response: { 200: MediaResponse('text/plain', 'Prometheus text exposition format') },
  }),
  reindexFailed: route('reindexFailed', {
    tags: ['status'],
    summary: 'Put failed chunks back in the embedding queue',
    response: { 200: ReindexFailedResponse },
  }),
  // routes/v2.ts
  v2IngestDocument: route('v2IngestDocument', {
    tags: ['v2'],
    summary: 'Ingest a document envelope (schema_version 2.x, kind document)',
    body: DocumentEnvelope,
    response: { 200: IngestSubmissionResponse, 202: IngestSubmissionResponse, 422: ValidationErrorBody, 507: DiskFullBody },
  }),
  v2IngestPerson: route('v2IngestPerson', {
    tags: ['v2'],
    summary: 'Upsert or delete a person envelope (schema_version 2.x, kind person)',
    body: PersonEnvelope,
    response: {
      200: PersonIngestResponse,
      404: { ...ErrorMessage, description: 'A deletion of a person this source never sent' },
      409: { ...ErrorMessage, description: 'The version is older than the stored one' },
      422: ValidationErrorBody,
    },
  }),
  v2IngestBatch: route('v2IngestBatch', {
    tags: ['v2'],
    summary: 'An array of document and person envelopes; one bad envelope never stops the others',
    body: V2BatchRequest,
    response: { 202: V2BatchResponse, 207: V2BatchResponse, 422: ValidationErrorBody },
  }),
  // sessions.ts
  signIn: route('signIn', {
    tags: ['session'],
    security: [],
    summary: 'Sign in with the access token: opens a web session (an HttpOnly cookie) and answers its CSRF token',
    body: SignInRequest,
    response: {
      200: CurrentSession,
      401: Type.Object({ detail: Type.String() }, { description: 'No token was given' }),
      403: Type.Object({ detail: Type.String() }, { description: 'The token is not valid' }),
    },
  }),
  redeemSignInCode: route('redeemSignInCode', {
    tags: ['session'],
    security: [],
    summary: "Sign in with the one-time code of `memex serve`'s link: opens a web session (the token itself is never sent)",
    body: RedeemRequest,
    response: { 200: CurrentSession, 403: Type.Object({ detail: Type.String() }) },
  }),
  createSignInLink: route('createSignInLink', {
    tags: ['session'],
    summary: 'A fresh one-time sign-in link for the web UI (`memex signin-link`); bearer token only',
    response: {
      200: SignInLink,
      403: Type.Object({ detail: Type.String() }, { description: 'Asked with a web session, not the bearer token' }),
      409: Type.Object({ detail: Type.String() }, { description: 'The server has no access token: the UI needs no sign-in' }),
    },
  }),
  currentSession: route('currentSession', {
    tags: ['session'],
    summary: 'Who asks: 200 for a valid bearer token or web session, with the session\'s CSRF token',
    response: { 200: CurrentSession },
  }),
  signOut: route('signOut', {
    tags: ['session'],
    summary: 'Sign out: ends the web session that asks and clears its cookie',
    response: { 200: RevokedSessions },
  }),
  listSessions: route('listSessions', {
    tags: ['session'],
    summary: 'Web sessions that are signed in, most recently used first (`memex sessions`)',
    response: { 200: SessionList },
  }),
  revokeSession: route('revokeSession', {
    tags: ['session'],
    summary: 'Revoke a web session: its browser is signed out at its next request',
    params: SessionIdParams,
    response: { 200: RevokedSessions, 404: Type.Object({ detail: Type.String() }) },
  }),
  revokeOtherSessions: route('revokeOtherSessions', { tags: ['session'], summary: 'Revoke every web session (bearer-token clients are not affected)', response: { 200: RevokedSessions } }),
  // app.ts
  health: route('health', {
    tags: ['health'],
    security: [],
    summary: 'Liveness and database reachability (503 when the database does not answer)',
    response: { 200: Health, 503: Health },
  }),
  readiness: route('readiness', {
    tags: ['health'],
    security: [],
    summary: 'Readiness: 503 while the search index is prepared, 200 once searches are answered from a complete index',
    response: { 200: Readiness, 503: Readiness },
  }),
} satisfies { [K in OperationName]: { method: Operations[K]['method']; url: Operations[K]['url']; schema: object } };

export type Routes = typeof ROUTES;
