/**
 * Time zones of calendar files: a wall-clock time (year … second) in a named zone as a UTC instant.
 *
 * A TZID is resolved in this order: the file's own VTIMEZONE (passed in as `fileZone`, an offset function),
 * an IANA name that the runtime's Intl knows (`Europe/Berlin`), a Windows name that Outlook writes
 * (`W. Europe Standard Time`) mapped to its IANA zone, and else the configured zone (a floating time is read
 * there too). Daylight-saving gaps move forward, as calendar programs do; ambiguous times take the first.
 */

export interface WallClock {
  year: number;
  month: number; // 1-12
  day: number;
  hour: number;
  minute: number;
  second: number;
}

/** Windows zone names (Outlook, Exchange) that files write without a VTIMEZONE, as IANA names. */
const WINDOWS_ZONES: Record<string, string> = {
  'utc': 'UTC',
  'gmt standard time': 'Europe/London',
  'greenwich standard time': 'Atlantic/Reykjavik',
  'w. europe standard time': 'Europe/Berlin',
  'central europe standard time': 'Europe/Budapest',
  'central european standard time': 'Europe/Warsaw',
  'romance standard time': 'Europe/Paris',
  'e. europe standard time': 'Europe/Chisinau',
  'fle standard time': 'Europe/Kiev',
  'gtb standard time': 'Europe/Bucharest',
  'russian standard time': 'Europe/Moscow',
  'eastern standard time': 'America/New_York',
  'central standard time': 'America/Chicago',
  'mountain standard time': 'America/Denver',
  'us mountain standard time': 'America/Phoenix',
  'pacific standard time': 'America/Los_Angeles',
  'alaskan standard time': 'America/Anchorage',
  'hawaiian standard time': 'Pacific/Honolulu',
  'atlantic standard time': 'America/Halifax',
  'e. south america standard time': 'America/Sao_Paulo',
  'india standard time': 'Asia/Kolkata',
  'china standard time': 'Asia/Shanghai',
  'tokyo standard time': 'Asia/Tokyo',
  'korea standard time': 'Asia/Seoul',
  'singapore standard time': 'Asia/Singapore',
  'aus eastern standard time': 'Australia/Sydney',
  'new zealand standard time': 'Pacific/Auckland',
  'south africa standard time': 'Africa/Johannesburg',
  'israel standard time': 'Asia/Jerusalem',
  'arabian standard time': 'Asia/Dubai',
};

const formatters = new Map<string, Intl.DateTimeFormat | null>();

function formatter(zone: string): Intl.DateTimeFormat | null {
  let f = formatters.get(zone);
  if (f === undefined) {
    try {
      f = new Intl.DateTimeFormat('en-US', {
        timeZone: zone,
        hourCycle: 'h23',
        year: 'numeric',
        month: 'numeric',
        day: 'numeric',
        hour: 'numeric',
        minute: 'numeric',
        second: 'numeric',
      });
    } catch {
      f = null;
    }
    formatters.set(zone, f);
  }
  return f;
}

/** The IANA (or Intl-known) zone a TZID names, or null. Quoted names and Mozilla's `/mozilla.org/…/` prefixes are read. */
export function ianaZone(tzid: string): string | null {
  let id = tzid.trim().replace(/^"|"$/g, '');
  // Thunderbird's old exports: /mozilla.org/20070129_1/Europe/Berlin; some programs write /Europe/Berlin.
  const moz = /^\/(?:[^/]*mozilla\.org\/[^/]+\/)?(.+)$/.exec(id);
  if (moz) id = moz[1];
  if (formatter(id)) return id;
  const win = WINDOWS_ZONES[id.toLowerCase()];
  return win ?? null;
}

/** The zone's offset from UTC in milliseconds at instant `t`. */
function offsetAt(zone: string, t: number): number {
  const f = formatter(zone)!;
  const parts: Record<string, number> = {};
  for (const p of f.formatToParts(new Date(t))) if (p.type !== 'literal') parts[p.type] = Number(p.value);
  const asUtc = Date.UTC(parts.year, parts.month - 1, parts.day, parts.hour % 24, parts.minute, parts.second);
  return asUtc - Math.floor(t / 1000) * 1000;
}

/** A wall-clock time in an Intl zone as epoch milliseconds. */
export function wallToUtc(w: WallClock, zone: string): number {
  const guess = Date.UTC(w.year, w.month - 1, w.day, w.hour, w.minute, w.second);
  if (!formatter(zone)) return guess;
  // The offsets in force half a day before and after: at most one change lies between them.
  const before = offsetAt(zone, guess - 43_200_000);
  const after = offsetAt(zone, guess + 43_200_000);
  const valid = [guess - before, guess - after].filter((t, i) => offsetAt(zone, t) === (i === 0 ? before : after));
  // Ambiguous (the hour repeated in autumn): the first. None (the hour skipped in spring): read with the offset
  // before the change, which moves it forward.
  return valid.length ? Math.min(...valid) : guess - before;
}

/** Whether the runtime knows `zone` as a time zone. */
export function isKnownZone(zone: string): boolean {
  return formatter(zone) !== null;
}

/** The system's zone (the default of the configured zone). */
export function systemZone(): string {
  return Intl.DateTimeFormat().resolvedOptions().timeZone || 'UTC';
}
