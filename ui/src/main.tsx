/** The web UI's shell: sign-in, navigation, the page for the current hash route. */
import { render } from 'preact';
import { useEffect, useState } from 'preact/hooks';
import { ClientError, checkSession, redeemCode, sessionState, signIn, signOut, type SessionState } from './api.ts';
import { ErrorNote } from './components.tsx';
import { href, navigate, useRoute } from './router.ts';
import { SearchPage } from './pages/search.tsx';
import { DocumentPage } from './pages/document.tsx';
import { AskPage } from './pages/ask.tsx';
import { PeoplePage, PersonPage } from './pages/people.tsx';
import { RelationshipsPage } from './pages/relationships.tsx';
import { TimelinePage } from './pages/timeline.tsx';
import { AgendaPage } from './pages/agenda.tsx';
import { SourcesPage } from './pages/sources.tsx';

const NAV: [string, string][] = [
  ['search', 'Search'],
  ['ask', 'Ask'],
  ['people', 'People'],
  ['relationships', 'Relationships'],
  ['timeline', 'Timeline'],
  ['agenda', 'Agenda'],
  ['sources', 'Sources'],
];

function useSessionState(): SessionState {
  const [state, setState] = useState(sessionState);
  useEffect(() => {
    const on = () => setState(sessionState());
    window.addEventListener('memex:auth', on);
    return () => window.removeEventListener('memex:auth', on);
  }, []);
  return state;
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
      await signIn(token.trim());
    } catch (err) {
      setError(new Error(err instanceof ClientError && err.status === 403 ? 'That token is not valid.' : String((err as Error).message)));
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
          sign-in link, which you can open or paste into this tab.
        </p>
      </form>
    </main>
  );
}

const SIGNIN_LINK = /^#signin=([A-Za-z0-9_-]{16,128})$/;

/**
 * `#signin=CODE` from the link `memex serve` prints, at load or pasted into an open tab: trade the
 * one-time code for a session, and drop it from the address and the history at once.
 */
async function redeemSignInLink(): Promise<string | null> {
  const m = SIGNIN_LINK.exec(location.hash);
  if (!m) return null;
  history.replaceState(null, '', `${location.pathname}#/search`);
  window.dispatchEvent(new HashChangeEvent('hashchange'));
  try {
    await redeemCode(m[1]);
    return null;
  } catch (err) {
    return `The sign-in link did not work: ${(err as Error).message}`;
  }
}

function App({ firstError }: { firstError: string | null }) {
  const session = useSessionState();
  const route = useRoute();
  const page = route.path[0] ?? 'search';
  const [linkError, setLinkError] = useState(firstError);

  useEffect(() => {
    // A sign-in link pasted into the address bar of this tab changes only the fragment: no reload.
    function onHash() {
      if (SIGNIN_LINK.test(location.hash)) void redeemSignInLink().then(setLinkError);
    }
    window.addEventListener('hashchange', onHash);
    return () => window.removeEventListener('hashchange', onHash);
  }, []);

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

  if (session === 'unknown') return <p class="status">Loading…</p>;
  if (session === 'signed-out') {
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
      body = <DocumentPage id={route.path[1] ?? ''} chunk={route.params.get('chunk')} at={route.params.get('at')} />;
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
    case 'agenda':
      body = <AgendaPage params={route.params} />;
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
        <button type="button" class="link" onClick={() => void signOut()}>
          Sign out
        </button>
      </header>
      <main id="main" tabIndex={-1}>
        {body}
      </main>
    </>
  );
}

/** Signed in already (the session cookie), or by the link this page was opened with. */
async function start(): Promise<string | null> {
  const linkError = await redeemSignInLink();
  if (sessionState() === 'signed-in') return null;
  try {
    await checkSession();
  } catch (err) {
    return `The server did not answer: ${(err as Error).message}`;
  }
  return linkError;
}

const firstError = await start();
render(<App firstError={firstError} />, document.getElementById('app')!);
