/**
 * The one error of every client of the public API (the CLI verbs, MCP, the web UI, the agent's submitter): a
 * request the server refused, could not answer, or kept answering "try again" until the attempts ran out.
 *
 * Browser-safe: the UI bundles it.
 */
export class ClientError extends Error {
  override name = 'ClientError';
  constructor(
    /** HTTP status; 0 when the server could not be reached, -1 when the retry attempts ran out. */
    readonly status: number,
    message: string,
    /** Response body text of the last answer (the submitter truncates it), when there was one. */
    readonly body?: string,
    /** Statuses (or 0 for transport errors) of every attempt made. */
    readonly attempts: number[] = [],
    /** What each attempt met, in words ("503", "timed out after 30 s", "connect ECONNREFUSED …"). */
    readonly reasons: string[] = [],
  ) {
    super(message);
  }

  /** The body as JSON (an error body's `detail`), or undefined when it is none. */
  get json(): unknown {
    try {
      return this.body ? JSON.parse(this.body) : undefined;
    } catch {
      return undefined;
    }
  }

  /**
   * The error for a person: the message plus what each attempt met, e.g. "Exceeded retry attempts
   * (4 attempts over 14 s: timed out after 120 s; 503; 503; 503)". The message itself stays as it was made.
   */
  describe(): string {
    if (this.reasons.length === 0) return this.message;
    return `${this.message} (${this.reasons.length} ${this.reasons.length === 1 ? 'attempt' : 'attempts'}: ${this.reasons.join('; ')})`;
  }
}

/** The first `{detail:[{loc, msg}]}` messages (loc from `locFrom`), or `detail` as a string; undefined for other bodies. */
export function errorDetail(body: unknown, locFrom = 0): string | undefined {
  const detail = (body as { detail?: unknown } | null)?.detail;
  if (typeof detail === 'string') return detail;
  if (Array.isArray(detail) && detail.length) {
    return detail
      .slice(0, 3)
      .map((d: { loc?: unknown[]; msg?: string }) => {
        const loc = (d.loc ?? []).slice(locFrom);
        return loc.length ? `${loc.join('.')}: ${d.msg}` : String(d.msg);
      })
      .join('; ');
  }
  return undefined;
}
