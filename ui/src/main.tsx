/** The web UI's shell: sign-in, navigation, the page for the current hash route. */
import { render } from 'preact';
import { useEffect, useState } from 'preact/hooks';
import { api, getToken, setToken, signOut } from './api.ts';
import { ErrorNote } from './components.tsx';
import { href, navigate, useRoute } from './router.ts';
import { SearchPage } from './pages/search.tsx';
import { DocumentPage } from './pages/document.tsx';
import { AskPage } from './pages/ask.tsx';
import { PeoplePage, PersonPage } from './pages/people.tsx';
import { RelationshipsPage } from './pages/relationships.tsx';
import { TimelinePage } from './pages/timeline.tsx';
import { SourcesPage } from './pages/sources.tsx';

const NAV: [string, string][] = [
  ['search', 'Search'],
  ['ask', 'Ask'],
  ['people', 'People'],
  ['relationships', 'Relationships'],
  ['timeline', 'Timeline'],
  ['sources', 'Sources'],
];

function useSignedIn(): boolean {
  const [signedIn, setSignedIn] = useState(() => getToken() !== null);
  useEffect(() => {
    const on = () => setSignedIn(getToken() !== null);
    window.addEventListener('memex:auth', on);
    return () => window.removeEventListener('memex:auth', on);
  }, []);
  return signedIn;
}

function SignIn() {
  const [token, setValue] = useState('');
  const [error, setError] = useState<unknown>(null);
  const [busy, setBusy] = useState(false);
  async function submit(e: Event) {
    e.preventDefault();
    setBusy(true);
    setError(null);
    try {
      // Checks the token against a guarded route before keeping it.
      await api('/v1/session', { token: token.trim() });
      setToken(token.trim());
    } catch (err) {
      setError(new Error((err as { status?: number }).status === 403 ? 'That token is not valid.' : String((err as Error).message)));
    } finally {
      setBusy(false);
    }
  }
  return (
    <main id="main" class="signin">
      <h1>memex</h1>
      <form onSubmit={submit}>
        <label for="token">Access token</label>
        <input id="token" type="password" autocomplete="current-password" required value={token} onInput={(e) => setValue(e.currentTarget.value)} />
        <button type="submit" disabled={busy}>
          Sign in
        </button>
        <ErrorNote error={error} />
        <p class="hint">
          The token is in <code>data/auth-token</code> (or <code>AUTH_TOKEN</code>); <code>memex serve</code> also prints a one-time
          sign-in link.
        </p>
      </form>
    </main>
  );
}

/** `#signin=CODE` from the link `memex serve` prints: trade the one-time code for the token, then drop it from the address. */
async function redeemSignInLink(): Promise<string | null> {
  const m = /^#signin=([A-Za-z0-9_-]{16,128})$/.exec(location.hash);
  if (!m) return null;
  history.replaceState(null, '', `${location.pathname}#/search`);
  try {
    const r = await api<{ token: string }>('/v1/session/redeem', { method: 'POST', body: { code: m[1] }, anonymous: true });
    setToken(r.token);
    return null;
  } catch (err) {
    return `The sign-in link did not work: ${(err as Error).message}`;
  }
}

function App({ linkError }: { linkError: string | null }) {
  const signedIn = useSignedIn();
  const route = useRoute();
  const page = route.path[0] ?? 'search';

  useEffect(() => {
    function onKey(e: KeyboardEvent) {
      if (e.key !== '/' || e.ctrlKey || e.metaKey || e.altKey) return;
      const t = e.target as HTMLElement | null;
      if (t && (t.isContentEditable || /^(INPUT|TEXTAREA|SELECT)$/.test(t.tagName))) return;
      e.preventDefault();
      const box = document.getElementById('q') as HTMLInputElement | null;
      if (box) box.focus();
      else navigate(href('search'));
    }
    document.addEventListener('keydown', onKey);
    return () => document.removeEventListener('keydown', onKey);
  }, []);

  if (!signedIn) {
    return (
      <>
        {linkError && <p class="error banner" role="alert">{linkError}</p>}
        <SignIn />
      </>
    );
  }

  let body;
  switch (page) {
    case 'doc':
      body = <DocumentPage id={route.path[1] ?? ''} chunk={route.params.get('chunk')} />;
      break;
    case 'ask':
      body = <AskPage />;
      break;
    case 'people':
      body = <PeoplePage params={route.params} />;
      break;
    case 'person':
      body = <PersonPage id={route.path[1] ?? ''} />;
      break;
    case 'relationships':
      body = <RelationshipsPage params={route.params} />;
      break;
    case 'timeline':
      body = <TimelinePage />;
      break;
    case 'sources':
      body = <SourcesPage />;
      break;
    default:
      body = <SearchPage params={route.params} />;
  }
  const current = page === 'doc' ? 'search' : page === 'person' ? 'people' : page;
  return (
    <>
      <a class="skip" href="#main" onClick={(e) => { e.preventDefault(); document.getElementById('main')?.focus(); }}>
        Skip to content
      </a>
      <header class="top">
        <a class="brand" href={href('search')}>memex</a>
        <nav aria-label="Main">
          <ul>
            {NAV.map(([p, label]) => (
              <li key={p}>
                <a href={href(p)} aria-current={current === p ? 'page' : undefined}>
                  {label}
                </a>
              </li>
            ))}
          </ul>
        </nav>
        <button type="button" class="link" onClick={() => signOut()}>
          Sign out
        </button>
      </header>
      <main id="main" tabIndex={-1}>
        {body}
      </main>
    </>
  );
}

const linkError = await redeemSignInLink();
render(<App linkError={linkError} />, document.getElementById('app')!);
