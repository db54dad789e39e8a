/**
 * The two gateway calls of the source runner (docs/sources.md), beside the collectors' ingest and coverage calls:
 *
 * - PUT /v1/sources/status: this agent's sources and how fresh each is; the answer says which are paused (a
 *   person paused them in the web UI, the CLI or the API), so the gateway never needs to reach the agent.
 * - POST /v1/documents/source-state: what changed at the source for stored documents, without a new version:
 *   folder, flags, deleted_at_source (and, with `mirror_deletions: true`, that the document goes).
 */
import type { SourceIdentity } from '../../coverage/identity.ts';
import type { SourceStatus } from './source.ts';

export interface SourceStateUpdate {
  source_type: string;
  source_id: string;
  folder?: string;
  flags?: string[];
  /** Set when the message left the folder `folder` at the source; null when it is (again) there. */
  deleted_at_source?: string | null;
  /** With deleted_at_source: the document is deleted in memex too (mirror_deletions). */
  delete?: boolean;
}

export interface StatusEntry extends SourceIdentity, SourceStatus {
  label: string;
}

export interface SourcesGateway {
  putStatus(agent: string, sources: StatusEntry[]): Promise<{ sources: Array<{ source_id: string; paused: boolean }> }>;
  sourceState(updates: SourceStateUpdate[]): Promise<{ updated: number; deleted: number; not_found: number }>;
}

export function httpSourcesGateway(opts: { url: string; token?: string; timeoutMs?: number }): SourcesGateway {
  const base = opts.url.replace(/\/+$/, '');
  async function call<T>(method: string, path: string, body: unknown): Promise<T> {
    const headers: Record<string, string> = { accept: 'application/json', 'content-type': 'application/json' };
    if (opts.token) headers.authorization = `Bearer ${opts.token}`;
    const res = await fetch(base + path, { method, headers, body: JSON.stringify(body), signal: AbortSignal.timeout(opts.timeoutMs ?? 30_000) });
    const text = await res.text().catch(() => '');
    if (!res.ok) throw new Error(`${method} ${path}: HTTP ${res.status}: ${text.slice(0, 300)}`);
    return JSON.parse(text) as T;
  }
  return {
    putStatus: (agent, sources) => call('PUT', '/v1/sources/status', { agent, sources }),
    async sourceState(updates) {
      const out = { updated: 0, deleted: 0, not_found: 0 };
      for (let i = 0; i < updates.length; i += 500) {
        const r = await call<typeof out>('POST', '/v1/documents/source-state', { updates: updates.slice(i, i + 500) });
        out.updated += r.updated;
        out.deleted += r.deleted;
        out.not_found += r.not_found;
      }
      return out;
    },
  };
}
