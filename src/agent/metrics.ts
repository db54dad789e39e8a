/**
 * Prometheus metrics of the host agent (spec §4.1). One registry per agent instance (tests start many
 * agents in one process; prom-client's global registry would refuse the second registration).
 * Collectors receive this object through the module context and update the counters directly.
 */
import { collectDefaultMetrics, Counter, Histogram, Registry } from 'prom-client';

export interface AgentMetrics {
  registry: Registry;
  /** Chat messages seen by the chat collector, by outcome (e.g. submitted, skipped, failed). */
  imsgMessagesTotal: Counter<'status'>;
  imsgAttachmentsTotal: Counter<string>;
  ocrRequestsTotal: Counter<string>;
  emailLocalFoundTotal: Counter<'mailbox'>;
  emailLocalSubmittedTotal: Counter<'mailbox'>;
  emailLocalAcceptedTotal: Counter<'mailbox' | 'duplicate'>;
  emailLocalRejectedTotal: Counter<'mailbox' | 'status'>;
  emailLocalSubmissionLatencyMs: Histogram<'mailbox'>;
  httpRequestsTotal: Counter<'method' | 'route' | 'status'>;
}

export function createAgentMetrics(opts: { defaultMetrics?: boolean } = {}): AgentMetrics {
  const registry = new Registry();
  if (opts.defaultMetrics !== false) collectDefaultMetrics({ register: registry });
  const registers = [registry];
  return {
    registry,
    imsgMessagesTotal: new Counter({ name: 'imsg_messages_total', help: 'Chat messages processed by the chat collector, by status.', labelNames: ['status'], registers }),
    imsgAttachmentsTotal: new Counter({ name: 'imsg_attachments_total', help: 'Chat attachments processed by the chat collector.', registers }),
    ocrRequestsTotal: new Counter({ name: 'ocr_requests_total', help: 'OCR requests received (POST /v1/ocr).', registers }),
    emailLocalFoundTotal: new Counter({ name: 'email_local_found_total', help: 'Messages found by the local email collector.', labelNames: ['mailbox'], registers }),
    emailLocalSubmittedTotal: new Counter({ name: 'email_local_submitted_total', help: 'Messages submitted to the gateway by the local email collector.', labelNames: ['mailbox'], registers }),
    emailLocalAcceptedTotal: new Counter({ name: 'email_local_accepted_total', help: 'Submissions accepted by the gateway, by duplicate flag.', labelNames: ['mailbox', 'duplicate'], registers }),
    emailLocalRejectedTotal: new Counter({ name: 'email_local_rejected_total', help: 'Submissions rejected by the gateway, by HTTP status.', labelNames: ['mailbox', 'status'], registers }),
    emailLocalSubmissionLatencyMs: new Histogram({
      name: 'email_local_submission_latency_ms',
      help: 'Gateway submission latency of the local email collector in milliseconds.',
      labelNames: ['mailbox'],
      buckets: [5, 10, 25, 50, 100, 250, 500, 1000, 2500, 5000, 10000, 30000],
      registers,
    }),
    httpRequestsTotal: new Counter({ name: 'agent_http_requests_total', help: 'HTTP requests served by the host agent.', labelNames: ['method', 'route', 'status'], registers }),
  };
}
