/**
 * Wall-clock times of an export (WhatsApp writes the exporting phone's local time, with no offset) read in an IANA
 * time zone. Uses Intl only: the offset of the zone at that instant, corrected once for a DST change in between.
 */
const formatters = new Map<string, Intl.DateTimeFormat>();

function formatter(zone: string): Intl.DateTimeFormat {
  let f = formatters.get(zone);
  if (!f) {
    f = new Intl.DateTimeFormat('en-US', {
      timeZone: zone,
      hourCycle: 'h23',
      year: 'numeric', month: '2-digit', day: '2-digit', hour: '2-digit', minute: '2-digit', second: '2-digit',
    });
    formatters.set(zone, f);
  }
  return f;
}

/** True when Intl knows the zone (e.g. "Europe/London", "UTC"). */
export function isTimeZone(zone: string): boolean {
  try {
    formatter(zone);
    return true;
  } catch {
    return false;
  }
}

/** The zone's offset from UTC at an instant, in milliseconds. */
function offsetAt(ms: number, zone: string): number {
  const parts = formatter(zone).formatToParts(new Date(ms));
  const get = (t: string) => Number(parts.find((p) => p.type === t)?.value);
  const asUtc = Date.UTC(get('year'), get('month') - 1, get('day'), get('hour') % 24, get('minute'), get('second'));
  return asUtc - Math.floor(ms / 1000) * 1000;
}

/** The instant a wall-clock time names in a zone (a time skipped by DST moves forward, a repeated one takes the first). */
export function zonedTimeToUtc(y: number, mo: number, d: number, h: number, mi: number, s: number, zone: string): Date {
  const wall = Date.UTC(y, mo - 1, d, h, mi, s);
  const first = wall - offsetAt(wall, zone);
  const second = wall - offsetAt(first, zone);
  return new Date(second);
}

/** The process's zone (TZ, else the system's). */
export function localTimeZone(): string {
  return Intl.DateTimeFormat().resolvedOptions().timeZone || 'UTC';
}
