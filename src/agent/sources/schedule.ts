/**
 * When sources run (docs/sources.md): durations (`30s`, `10m`, `1h`, `1d`) and `schedule: {every: 15m}` or
 * `schedule: {cron: "0 * * * *"}`. The cron parser is our own and small: five fields (minute hour day-of-month
 * month day-of-week), each `*`, a number, a range `a-b`, a list `a,b`, a step `*\/n` or `a-b/n`; day-of-week 0-7
 * (0 and 7 are Sunday); when both day fields are restricted a day matching either runs (as Vixie cron does).
 * Times are the host's local time, like cron's.
 */
import { codedError } from '../../util/errors.ts';

export class ScheduleError extends codedError('AGENT.SCHEDULE') {
  override name = 'ScheduleError';
}

const UNIT_MS: Record<string, number> = { s: 1000, m: 60_000, h: 3_600_000, d: 86_400_000 };

/** `30s`, `10m`, `1h`, `1d` (or a bare number of seconds) in milliseconds. */
export function parseDuration(value: unknown, what = 'duration'): number {
  if (typeof value === 'number' && Number.isFinite(value) && value > 0) return Math.round(value * 1000);
  if (typeof value !== 'string') throw new ScheduleError(`${what} must be a duration such as 30s, 10m or 1h`);
  const m = /^\s*(\d+(?:\.\d+)?)\s*(s|m|h|d)\s*$/i.exec(value);
  if (!m) throw new ScheduleError(`${what} must be a duration such as 30s, 10m or 1h, got ${JSON.stringify(value)}`);
  const ms = Math.round(Number(m[1]) * UNIT_MS[m[2].toLowerCase()]);
  if (ms < 1000) throw new ScheduleError(`${what} must be at least 1s`);
  return ms;
}

/** A duration as a person writes it: 90000 -> "1m30s". */
export function formatDuration(ms: number): string {
  const parts: string[] = [];
  let s = Math.round(ms / 1000);
  for (const [unit, size] of [['d', 86_400], ['h', 3600], ['m', 60], ['s', 1]] as const) {
    if (s >= size) {
      parts.push(`${Math.floor(s / size)}${unit}`);
      s %= size;
    }
  }
  return parts.join('') || '0s';
}

interface CronField {
  values: Set<number>;
  restricted: boolean;
}

const FIELDS = [
  { name: 'minute', min: 0, max: 59 },
  { name: 'hour', min: 0, max: 23 },
  { name: 'day of month', min: 1, max: 31 },
  { name: 'month', min: 1, max: 12 },
  { name: 'day of week', min: 0, max: 7 },
] as const;

export interface CronExpression {
  source: string;
  fields: CronField[];
}

function parseField(text: string, f: (typeof FIELDS)[number]): CronField {
  const values = new Set<number>();
  const num = (s: string) => {
    if (!/^\d+$/.test(s)) throw new ScheduleError(`cron ${f.name}: ${JSON.stringify(s)} is not a number`);
    const n = Number(s);
    if (n < f.min || n > f.max) throw new ScheduleError(`cron ${f.name}: ${n} is outside ${f.min}-${f.max}`);
    return n;
  };
  for (const part of text.split(',')) {
    const [range, stepText] = part.split('/');
    const step = stepText === undefined ? 1 : num(stepText);
    if (step < 1) throw new ScheduleError(`cron ${f.name}: a step must be at least 1`);
    let lo: number;
    let hi: number;
    if (range === '*') [lo, hi] = [f.min, f.max];
    else if (range.includes('-')) {
      const [a, b] = range.split('-');
      [lo, hi] = [num(a), num(b)];
      if (lo > hi) throw new ScheduleError(`cron ${f.name}: range ${range} runs backwards`);
    } else {
      lo = num(range);
      hi = stepText === undefined ? lo : f.max;
    }
    for (let v = lo; v <= hi; v += step) values.add(f.name === 'day of week' && v === 7 ? 0 : v);
  }
  return { values, restricted: text !== '*' && !text.startsWith('*/') };
}

export function parseCron(expr: unknown): CronExpression {
  if (typeof expr !== 'string' || expr.trim() === '') throw new ScheduleError('cron must be a string of five fields, e.g. "0 * * * *"');
  const parts = expr.trim().split(/\s+/);
  if (parts.length !== 5) throw new ScheduleError(`cron must have five fields (minute hour day month weekday), got ${parts.length} in ${JSON.stringify(expr)}`);
  return { source: expr.trim(), fields: parts.map((p, i) => parseField(p, FIELDS[i])) };
}

/** The first minute strictly after `after` that the expression names (searched up to ~5 years ahead). */
export function nextCronTime(cron: CronExpression, after: Date): Date {
  const [min, hour, dom, mon, dow] = cron.fields;
  const t = new Date(after.getTime());
  t.setSeconds(0, 0);
  t.setMinutes(t.getMinutes() + 1);
  const limit = after.getTime() + 5 * 366 * 86_400_000;
  while (t.getTime() < limit) {
    if (!mon.values.has(t.getMonth() + 1)) {
      t.setMonth(t.getMonth() + 1, 1);
      t.setHours(0, 0, 0, 0);
      continue;
    }
    const domOk = dom.values.has(t.getDate());
    const dowOk = dow.values.has(t.getDay());
    const dayOk = dom.restricted && dow.restricted ? domOk || dowOk : domOk && dowOk;
    if (!dayOk) {
      t.setDate(t.getDate() + 1);
      t.setHours(0, 0, 0, 0);
      continue;
    }
    if (!hour.values.has(t.getHours())) {
      t.setHours(t.getHours() + 1, 0, 0, 0);
      continue;
    }
    if (!min.values.has(t.getMinutes())) {
      t.setMinutes(t.getMinutes() + 1, 0, 0);
      continue;
    }
    return t;
  }
  throw new ScheduleError(`cron ${JSON.stringify(cron.source)} names no time in the next five years`);
}

export type Schedule = { kind: 'every'; ms: number; text: string } | { kind: 'cron'; cron: CronExpression; text: string };

/** `{every: 15m}` or `{cron: "0 * * * *"}`, as the agent YAML writes it. */
export function parseSchedule(value: unknown, what = 'schedule'): Schedule {
  if (value === null || typeof value !== 'object' || Array.isArray(value)) {
    throw new ScheduleError(`${what} must be a mapping: {every: 15m} or {cron: "0 * * * *"}`);
  }
  const o = value as Record<string, unknown>;
  const keys = Object.keys(o);
  if (keys.length !== 1 || !['every', 'cron'].includes(keys[0])) {
    throw new ScheduleError(`${what} must have exactly one of every or cron, got ${keys.join(', ') || 'nothing'}`);
  }
  if (keys[0] === 'every') {
    const ms = parseDuration(o.every, `${what}.every`);
    return { kind: 'every', ms, text: `every ${formatDuration(ms)}` };
  }
  try {
    const cron = parseCron(o.cron);
    return { kind: 'cron', cron, text: `cron ${cron.source}` };
  } catch (err) {
    throw new ScheduleError(`${what}.${(err as Error).message}`);
  }
}

/** When a schedule next fires after `after` (for `every`, counted from the last run's start). */
export function nextRunTime(s: Schedule, after: Date): Date {
  return s.kind === 'every' ? new Date(after.getTime() + s.ms) : nextCronTime(s.cron, after);
}
