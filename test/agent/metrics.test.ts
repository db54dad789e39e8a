import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createAgentServer, type AgentServer } from '../../src/agent/server.ts';
import { auth, testConfig } from './helpers.ts';

/**
 * A small parser of the Prometheus text exposition format (version 0.0.4): # HELP / # TYPE lines and
 * samples `name{label="value",...} number [timestamp]`. It throws on any line it cannot read, so the
 * test fails if the agent's output is not valid exposition.
 */
interface Family {
  help?: string;
  type?: string;
  samples: Array<{ name: string; labels: Record<string, string>; value: number }>;
}

function parseExposition(text: string): Map<string, Family> {
  const families = new Map<string, Family>();
  const fam = (name: string) => {
    let f = families.get(name);
    if (!f) families.set(name, (f = { samples: [] }));
    return f;
  };
  const METRIC = /^[a-zA-Z_:][a-zA-Z0-9_:]*$/;
  for (const [i, line] of text.split('\n').entries()) {
    if (line === '') continue;
    let m = /^# HELP (\S+) (.*)$/.exec(line);
    if (m) {
      if (!METRIC.test(m[1])) throw new Error(`line ${i + 1}: bad metric name ${m[1]}`);
      fam(m[1]).help = m[2];
      continue;
    }
    m = /^# TYPE (\S+) (counter|gauge|histogram|summary|untyped)$/.exec(line);
    if (m) {
      fam(m[1]).type = m[2];
      continue;
    }
    if (line.startsWith('#')) continue;
    m = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{(.*)\})? (\S+)( -?\d+)?$/.exec(line);
    if (!m) throw new Error(`line ${i + 1}: not a sample: ${line}`);
    const labels: Record<string, string> = {};
    if (m[3]) {
      const re = /([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"(,|$)/gy;
      let lm: RegExpExecArray | null;
      let consumed = 0;
      while ((lm = re.exec(m[3])) !== null) {
        labels[lm[1]] = lm[2];
        consumed = re.lastIndex;
      }
      if (consumed !== m[3].length) throw new Error(`line ${i + 1}: bad labels ${m[3]}`);
    }
    // Values are Go floats: Prometheus parses them with strconv.ParseFloat, which takes NaN/Inf in any case
    // (prom-client writes "Nan" for an empty event-loop histogram).
    const raw = m[4].toLowerCase();
    const value = raw === '+inf' || raw === 'inf' ? Infinity : raw === '-inf' ? -Infinity : raw === 'nan' ? NaN : Number(m[4]);
    if (Number.isNaN(value) && raw !== 'nan') throw new Error(`line ${i + 1}: bad value ${m[4]}`);
    const base = m[1].replace(/_(bucket|sum|count)$/, '');
    const family = families.has(m[1]) ? m[1] : families.has(base) ? base : m[1];
    fam(family).samples.push({ name: m[1], labels, value });
  }
  return families;
}

let app: AgentServer;
beforeAll(async () => {
  app = await createAgentServer(testConfig(), { logger: false });
});
afterAll(() => app.close());

describe('GET /v1/metrics', () => {
  it('serves valid Prometheus exposition with the spec metric names and process metrics', async () => {
    const m = app.agent.context.metrics;
    m.emailLocalFoundTotal.inc({ mailbox: 'INBOX' }, 3);
    m.emailLocalSubmittedTotal.inc({ mailbox: 'INBOX' }, 2);
    m.emailLocalAcceptedTotal.inc({ mailbox: 'INBOX', duplicate: 'false' });
    m.emailLocalRejectedTotal.inc({ mailbox: 'INBOX', status: '422' });
    m.emailLocalSubmissionLatencyMs.observe({ mailbox: 'INBOX' }, 42);
    m.imsgMessagesTotal.inc({ status: 'submitted' }, 5);
    m.imsgAttachmentsTotal.inc();

    const res = await app.inject({ method: 'GET', url: '/v1/metrics', headers: auth });
    expect(res.statusCode).toBe(200);
    expect(res.headers['content-type']).toMatch(/^text\/plain; version=0\.0\.4/);
    const families = parseExposition(res.body);

    const expected: Array<[string, string]> = [
      ['imsg_messages_total', 'counter'],
      ['imsg_attachments_total', 'counter'],
      ['ocr_requests_total', 'counter'],
      ['email_local_found_total', 'counter'],
      ['email_local_submitted_total', 'counter'],
      ['email_local_accepted_total', 'counter'],
      ['email_local_rejected_total', 'counter'],
      ['email_local_submission_latency_ms', 'histogram'],
      ['process_cpu_seconds_total', 'counter'],
      ['process_resident_memory_bytes', 'gauge'],
      ['nodejs_eventloop_lag_seconds', 'gauge'],
    ];
    for (const [name, type] of expected) {
      const f = families.get(name);
      expect(f, name).toBeDefined();
      expect(f!.type, name).toBe(type);
      expect(f!.help, name).toBeTruthy();
    }
    const sample = (family: string, name: string, labels: Record<string, string>) =>
      families.get(family)!.samples.find((s) => s.name === name && Object.entries(labels).every(([k, v]) => s.labels[k] === v));
    expect(sample('email_local_found_total', 'email_local_found_total', { mailbox: 'INBOX' })?.value).toBe(3);
    expect(sample('email_local_accepted_total', 'email_local_accepted_total', { mailbox: 'INBOX', duplicate: 'false' })?.value).toBe(1);
    expect(sample('email_local_rejected_total', 'email_local_rejected_total', { mailbox: 'INBOX', status: '422' })?.value).toBe(1);
    expect(sample('imsg_messages_total', 'imsg_messages_total', { status: 'submitted' })?.value).toBe(5);
    expect(sample('email_local_submission_latency_ms', 'email_local_submission_latency_ms_count', { mailbox: 'INBOX' })?.value).toBe(1);
    expect(sample('email_local_submission_latency_ms', 'email_local_submission_latency_ms_sum', { mailbox: 'INBOX' })?.value).toBe(42);
    expect(sample('email_local_submission_latency_ms', 'email_local_submission_latency_ms_bucket', { mailbox: 'INBOX', le: '+Inf' })?.value).toBe(1);
    expect(sample('email_local_submission_latency_ms', 'email_local_submission_latency_ms_bucket', { mailbox: 'INBOX', le: '25' })?.value).toBe(0);
    expect(sample('email_local_submission_latency_ms', 'email_local_submission_latency_ms_bucket', { mailbox: 'INBOX', le: '50' })?.value).toBe(1);
  });

  it('rejects malformed exposition (the parser can fail)', () => {
    expect(() => parseExposition('metric{a="1" 3\n')).toThrow();
    expect(() => parseExposition('metric 1 2 3\n')).toThrow();
  });
});
