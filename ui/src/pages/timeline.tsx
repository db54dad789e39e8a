/**
 * Timeline: documents over time per source as a stacked bar chart in plain SVG. Click a bar, or
 * drag across bars (brushing), to search within that time range; each bar is also a keyboard link.
 */
import { useEffect, useMemo, useRef, useState } from 'preact/hooks';
// The API's own response type: a type-only import, erased in the build, so no server code is bundled.
import type { TimelineResponseT } from '../../../src/schemas/stats.ts';
import { call } from '../api.ts';
import { ErrorNote, Page } from '../components.tsx';
import { href, navigate } from '../router.ts';

const BUCKETS = ['day', 'week', 'month', 'year'] as const;
type Bucket = (typeof BUCKETS)[number];
type Row = TimelineResponseT['buckets'][number];

const PALETTE = ['#1f77b4', '#d95f02', '#2ca02c', '#9467bd', '#8c564b', '#e7298a', '#7f7f7f', '#bcbd22', '#17becf', '#e41a1c', '#4daf4a'];

/** The first day after the bucket that starts at `start`. */
function nextStart(start: string, bucket: Bucket): Date {
  const d = new Date(start);
  if (bucket === 'day') d.setUTCDate(d.getUTCDate() + 1);
  else if (bucket === 'week') d.setUTCDate(d.getUTCDate() + 7);
  else if (bucket === 'month') d.setUTCMonth(d.getUTCMonth() + 1);
  else d.setUTCFullYear(d.getUTCFullYear() + 1);
  return d;
}

const day = (d: Date) => d.toISOString().slice(0, 10);

/** The search filter for buckets a..b: from the first's start to the last day of the last (a bare end date includes that day). */
export function rangeFor(starts: string[], a: number, b: number, bucket: Bucket) {
  const [i, j] = a <= b ? [a, b] : [b, a];
  const end = nextStart(starts[j], bucket);
  end.setUTCDate(end.getUTCDate() - 1);
  return { start_date: day(new Date(starts[i])), end_date: day(end) };
}

function label(start: string, bucket: Bucket): string {
  const d = new Date(start);
  if (bucket === 'year') return String(d.getUTCFullYear());
  if (bucket === 'month') return d.toLocaleDateString(undefined, { month: 'short', year: 'numeric', timeZone: 'UTC' });
  return d.toLocaleDateString(undefined, { dateStyle: 'medium', timeZone: 'UTC' });
}

/** Documents at the far ends that the first view may leave out: a few stray dates must not squeeze the rest. */
const OUTLIER_SHARE = 0.01;

/**
 * The buckets to show first: the span holding all but OUTLIER_SHARE of the documents, trimmed from both ends,
 * when that span is at most half of the whole (three months of mail beside one message of 2019 took 3 % of the
 * width). Null when the whole span is the right view.
 */
export function dataSpan(totals: number[]): { from: number; to: number; outside: number } | null {
  const all = totals.reduce((a, b) => a + b, 0);
  const allowed = Math.floor(all * OUTLIER_SHARE);
  let from = 0;
  let to = totals.length - 1;
  let outside = 0;
  while (from < to && outside + totals[from] <= allowed) outside += totals[from++];
  while (to > from && outside + totals[to] <= allowed) outside += totals[to--];
  // Empty buckets at the ends cost nothing to leave out.
  while (from < to && totals[from] === 0) from++;
  while (to > from && totals[to] === 0) to--;
  if ((to - from + 1) * 2 > totals.length) return null;
  return { from, to, outside };
}

export function TimelinePage() {
  const [bucket, setBucket] = useState<Bucket>('month');
  const [rows, setRows] = useState<Row[] | null>(null);
  const [error, setError] = useState<unknown>(null);
  const [brush, setBrush] = useState<[number, number] | null>(null);
  const [showAll, setShowAll] = useState(false);
  const dragging = useRef(false);

  useEffect(() => {
    const ctl = new AbortController();
    setRows(null);
    call('timeline', { query: { bucket } }, { signal: ctl.signal })
      .then((r) => setRows(r.buckets))
      .catch((err) => ctl.signal.aborted || setError(err));
    return () => ctl.abort();
  }, [bucket]);

  const chart = useMemo(() => {
    if (!rows) return null;
    // Every bucket from the first to the last, empty ones included, so the x axis is time.
    const seen = [...new Set(rows.map((r) => r.start))].sort();
    const starts: string[] = [];
    if (seen.length) {
      const last = new Date(seen[seen.length - 1]).getTime();
      for (let t = new Date(seen[0]); t.getTime() <= last && starts.length < 2000; t = nextStart(t.toISOString(), bucket)) {
        starts.push(t.toISOString());
      }
    }
    const sources = [...new Set(rows.map((r) => r.source_type))].sort();
    const per = new Map<string, Map<string, number>>(starts.map((x) => [x, new Map()]));
    for (const r of rows) {
      if (!per.has(r.start)) per.set(r.start, new Map());
      per.get(r.start)!.set(r.source_type, r.count);
    }
    const allTotals = starts.map((s) => [...per.get(s)!.values()].reduce((a, b) => a + b, 0));
    // Zoomed to where the documents are, unless asked for everything.
    const span = dataSpan(allTotals);
    const shown = span && !showAll ? { from: span.from, to: span.to } : { from: 0, to: starts.length - 1 };
    const visible = starts.slice(shown.from, shown.to + 1);
    const totals = allTotals.slice(shown.from, shown.to + 1);
    return { starts: visible, sources, per, totals, max: Math.max(1, ...totals), span };
  }, [rows, bucket, showAll]);

  function searchRange(a: number, b: number) {
    if (!chart) return;
    navigate(href('search', rangeFor(chart.starts, a, b, bucket)));
  }

  const W = 1000;
  const H = 260;
  const PAD = 24;
  return (
    <Page title="Timeline">
      <div class="tabs" role="group" aria-label="Bar width">
        {BUCKETS.map((b) => (
          <button key={b} type="button" class={b === bucket ? 'tab active' : 'tab'} aria-pressed={b === bucket} onClick={() => setBucket(b)}>
            {b}
          </button>
        ))}
      </div>
      <ErrorNote error={error} />
      {chart && chart.starts.length === 0 && <p class="empty">No documents yet.</p>}
      {chart && chart.starts.length > 0 && (
        <>
          <p class="hint">Click a bar, or drag across bars, to search that time range.</p>
          {chart.span && (
            <p class="timeline-span">
              {showAll
                ? 'Showing every year. '
                : `Showing ${label(chart.starts[0], bucket)} to ${label(chart.starts[chart.starts.length - 1], bucket)}, where the documents are; ${chart.span.outside} ${chart.span.outside === 1 ? 'document lies' : 'documents lie'} outside. `}
              <button type="button" class="link" onClick={() => setShowAll(!showAll)}>
                {showAll ? 'Zoom to the documents' : 'Show all'}
              </button>
            </p>
          )}
          <svg
            class="timeline"
            viewBox={`0 0 ${W} ${H + PAD}`}
            role="group"
            aria-label={`Documents per ${bucket}, by source`}
            onPointerUp={() => {
              if (dragging.current && brush) searchRange(brush[0], brush[1]);
              dragging.current = false;
            }}
            onPointerLeave={() => {
              dragging.current = false;
              setBrush(null);
            }}
          >
            {chart.starts.map((s, i) => {
              const bw = W / chart.starts.length;
              let y = H;
              const inBrush = brush && i >= Math.min(...brush) && i <= Math.max(...brush);
              const range = rangeFor(chart.starts, i, i, bucket);
              return (
                <a
                  key={s}
                  href={href('search', range)}
                  class={inBrush ? 'bar brushed' : 'bar'}
                  aria-label={`${label(s, bucket)}: ${chart.totals[i]} documents`}
                  data-start={s}
                  onPointerDown={(e) => {
                    e.preventDefault();
                    dragging.current = true;
                    setBrush([i, i]);
                  }}
                  onPointerEnter={() => dragging.current && brush && setBrush([brush[0], i])}
                  onClick={(e) => e.preventDefault()}
                  onKeyDown={(e) => {
                    if (e.key === 'Enter') searchRange(i, i);
                  }}
                >
                  <rect class="hitbox" x={i * bw} y={0} width={bw} height={H} />
                  {chart.sources.map((src, k) => {
                    const n = chart.per.get(s)!.get(src) ?? 0;
                    if (!n) return null;
                    const h = (n / chart.max) * (H - 10);
                    y -= h;
                    return <rect key={src} x={i * bw + bw * 0.1} y={y} width={bw * 0.8} height={h} fill={PALETTE[k % PALETTE.length]} />;
                  })}
                  {(chart.starts.length <= 24 || i % Math.ceil(chart.starts.length / 12) === 0) && (
                    <text x={i * bw + bw / 2} y={H + 16} text-anchor="middle" class="axis">
                      {label(s, bucket)}
                    </text>
                  )}
                </a>
              );
            })}
          </svg>
          <ul class="legend" aria-label="Sources">
            {chart.sources.map((src, k) => (
              <li key={src}>
                <svg width="12" height="12" aria-hidden="true">
                  <rect width="12" height="12" fill={PALETTE[k % PALETTE.length]} />
                </svg>{' '}
                {src}
              </li>
            ))}
          </ul>
        </>
      )}
    </Page>
  );
}
