/** A URL as logs may show it: host and path, never the query string or fragment (presigned signatures). */
export function urlForLog(raw: string | URL): string {
  try {
    const u = typeof raw === 'string' ? new URL(raw) : raw;
    return `${u.protocol}//${u.host}${u.pathname}`;
  } catch {
    return '(invalid URL)';
  }
}
