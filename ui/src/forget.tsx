/**
 * Forgetting from the UI (docs/forget.md): the dry-run counts come first, and nothing is erased
 * until the person confirms them. The panel is a thin client of POST /v1/forget.
 */
import { useEffect, useState } from 'preact/hooks';
// The API's own response type: a type-only import, erased in the build, so no server code is bundled.
import type { ForgetResponseT } from '../../src/schemas/forget.ts';
import { call as callApi } from './api.ts';
import { ErrorNote } from './components.tsx';

type Removed = ForgetResponseT['removed'];

function Counts({ r }: { r: Removed }) {
  const rows: [string, string][] = [
    ['Documents', `${r.documents} (${r.versions} ${r.versions === 1 ? 'version' : 'versions'})`],
    ['Search passages', `${r.chunks} (${r.vectors} vectors)`],
    ['Stored files', String(r.files)],
    ['Conversations', String(r.threads)],
    ['People', `${r.people} (${r.identifiers} identifiers)`],
    ['Relationship scores', String(r.relationship_edges)],
    ['Group documents kept without them', String(r.documents_unlinked)],
  ];
  return (
    <dl class="forget-counts">
      {rows.map(([k, v]) => (
        <div key={k}>
          <dt>{k}</dt>
          <dd>{v}</dd>
        </div>
      ))}
    </dl>
  );
}

/**
 * Erasing cannot be undone, and a double click on "Forget…" once erased a person with 27 documents: the
 * second click landed on the confirmation. A forget that takes a person or more than one document asks
 * for a typed word, which no stray click can give.
 */
const CONFIRM_WORD = 'erase';
const mustType = (r: Removed) => r.people > 0 || r.documents > 1;

/**
 * `target` is the request body without dry_run/block, e.g. {person_id} or {source_type}. With
 * `ask` the dry run is asked for at once (the user already chose "Forget…" elsewhere).
 */
export function ForgetPanel(props: { target: Record<string, string | null>; what: string; onDone: () => void; ask?: boolean }) {
  const { target, what, onDone } = props;
  const [plan, setPlan] = useState<ForgetResponseT | null>(null);
  const [block, setBlock] = useState(false);
  const [busy, setBusy] = useState(false);
  const [done, setDone] = useState<ForgetResponseT | null>(null);
  const [error, setError] = useState<unknown>(null);
  const [typed, setTyped] = useState('');

  const call = async (dryRun: boolean) => {
    setBusy(true);
    setError(null);
    try {
      const answer = await callApi('forget', { body: { ...target, dry_run: dryRun, block: dryRun ? false : block } });
      if (dryRun) {
        setTyped('');
        setPlan(answer);
      } else {
        setDone(answer);
        setPlan(null);
      }
    } catch (err) {
      setError(err);
    } finally {
      setBusy(false);
    }
  };

  useEffect(() => {
    if (props.ask) void call(true);
  }, []);

  if (done) {
    return (
      <section class="forget" aria-labelledby="forget-h" role="status">
        <h2 id="forget-h">Forgotten</h2>
        <p>
          Erased {done.removed.documents} {done.removed.documents === 1 ? 'document' : 'documents'} and {done.removed.people}{' '}
          {done.removed.people === 1 ? 'person' : 'people'}
          {done.blocked ? '; later imports of it will be skipped' : ''}.
        </p>
        <button type="button" onClick={onDone}>
          Continue
        </button>
      </section>
    );
  }
  return (
    <section class="forget" aria-labelledby="forget-h">
      <h2 id="forget-h">Forget</h2>
      {error !== null && <ErrorNote error={error} />}
      {!plan ? (
        <button type="button" class="danger" disabled={busy} onClick={() => void call(true)}>
          Forget <bdi>{what}</bdi>…
        </button>
      ) : (
        <div role="alertdialog" aria-labelledby="forget-q" aria-describedby="forget-d">
          <p id="forget-q">
            <strong>Erase <bdi>{what}</bdi> for good?</strong>
          </p>
          <p id="forget-d">This removes, with everything derived from it:</p>
          <Counts r={plan.removed} />
          {mustType(plan.removed) && (
            <label class="forget-type">
              Type <kbd>{CONFIRM_WORD}</kbd> to confirm:{' '}
              <input
                type="text"
                autoComplete="off"
                spellcheck={false}
                value={typed}
                onInput={(e) => setTyped((e.target as HTMLInputElement).value)}
                ref={(el) => el?.focus()}
              />
            </label>
          )}
          <label>
            <input type="checkbox" checked={block} onChange={(e) => setBlock((e.target as HTMLInputElement).checked)} /> Keep it from
            coming back (collectors' documents from it are skipped)
          </label>
          <p class="actions">
            <button
              type="button"
              class="danger"
              disabled={busy || (mustType(plan.removed) && typed.trim().toLowerCase() !== CONFIRM_WORD)}
              onClick={() => void call(false)}
            >
              Erase for good
            </button>{' '}
            <button type="button" class="link" disabled={busy} onClick={() => setPlan(null)}>
              Cancel
            </button>
          </p>
        </div>
      )}
    </section>
  );
}
