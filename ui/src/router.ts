/** Hash routes (#/search?q=…, #/doc/ID, …): the server serves one page, the fragment never reaches it. */
import { useEffect, useState } from 'preact/hooks';

export interface Route {
  path: string[];
  params: URLSearchParams;
}

export function parseHash(hash: string): Route {
  const raw = hash.replace(/^#\/?/, '');
  const [p = '', q = ''] = raw.split('?', 2);
  return { path: p.split('/').filter(Boolean).map(decodeURIComponent), params: new URLSearchParams(q) };
}

export function useRoute(): Route {
  const [route, setRoute] = useState(() => parseHash(location.hash));
  useEffect(() => {
    const on = () => setRoute(parseHash(location.hash));
    window.addEventListener('hashchange', on);
    return () => window.removeEventListener('hashchange', on);
  }, []);
  return route;
}

export function href(path: string, params: Record<string, string | undefined | null> = {}): string {
  const u = new URLSearchParams();
  for (const [k, v] of Object.entries(params)) if (v !== undefined && v !== null && v !== '') u.set(k, v);
  const s = u.toString();
  return `#/${path}${s ? `?${s}` : ''}`;
}

export function navigate(to: string): void {
  location.hash = to.replace(/^#/, '');
}

/** Updates the address without a history entry or a hashchange (typing in the search box). */
export function replaceRoute(to: string): void {
  history.replaceState(history.state, '', to);
}
