/** Timestamps as the API takes them (gateway spec: ISO 8601, UTC when no offset is given). */
/** Reads an ISO 8601 date or date-time; without an offset it is UTC. Returns null when invalid. */
export function parseTimestamp(value: string): Date | null {
  const s = value.trim();
  const m = /^(\d{4})-(\d{2})-(\d{2})(?:[T ](\d{2}):(\d{2})(?::(\d{2})(\.\d+)?)?(Z|[+-]\d{2}:?\d{2})?)?$/i.exec(s);
  if (!m) return null;
  const [, y, mo, d, h = '00', mi = '00', sec = '00', frac = '', tz] = m;
  const month = Number(mo), day = Number(d), hour = Number(h), minute = Number(mi), second = Number(sec);
  if (month < 1 || month > 12 || day < 1 || day > 31 || hour > 23 || minute > 59 || second > 60) return null;
  let offset = 'Z';
  if (tz && tz.toUpperCase() !== 'Z') offset = tz.length === 5 ? `${tz.slice(0, 3)}:${tz.slice(3)}` : tz;
  const date = new Date(`${y}-${mo}-${d}T${h}:${mi}:${sec}${frac}${offset}`);
  if (Number.isNaN(date.getTime())) return null;
  // Reject rolled-over dates such as 2024-02-31.
  if (!tz || tz.toUpperCase() === 'Z') {
    if (date.getUTCDate() !== day || date.getUTCMonth() + 1 !== month) return null;
  }
  return date;
}

export function toUtcIso(value: string | null | undefined): string | null {
  if (value === null || value === undefined) return null;
  const d = parseTimestamp(value);
  return d ? d.toISOString() : null;
}
