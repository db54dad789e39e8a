/**
 * Schedules (issue 41): durations, the cron parser, ScheduledSource never overlapping a run of the collector's
 * POST …:run (409 both ways), and the agent YAML's poll_interval / schedule keys with their errors.
 */
import { describe, expect, it, vi } from 'vitest';
import { nextCronTime, parseCron, parseDuration, parseSchedule, ScheduleError } from '../../src/agent/sources/schedule.ts';
import { ScheduledSource } from '../../src/agent/sources/scheduled.ts';
import { SourceBusyError } from '../../src/agent/sources/source.ts';
import { validateAgentConfig, AgentConfigError } from '../../src/agent/config.ts';

describe('durations and cron', () => {
  it('accepts 30s, 10m, 1h and refuses what is not a duration', () => {
    expect(parseDuration('30s')).toBe(30_000);
    expect(parseDuration('10m')).toBe(600_000);
    expect(parseDuration('1h')).toBe(3_600_000);
    for (const bad of ['soon', '10x', '', '0s', -5]) expect(() => parseDuration(bad)).toThrow(ScheduleError);
  });

  it('finds the next time of an expression', () => {
    const at = (s: string) => new Date(s);
    expect(nextCronTime(parseCron('0 * * * *'), at('2026-03-01T10:15:00')).toString()).toBe(at('2026-03-01T11:00:00').toString());
    expect(nextCronTime(parseCron('*/15 * * * *'), at('2026-03-01T10:15:00')).toString()).toBe(at('2026-03-01T10:30:00').toString());
    expect(nextCronTime(parseCron('30 2 * * 1-5'), at('2026-03-06T03:00:00')).toString()).toBe(at('2026-03-09T02:30:00').toString()); // Fri → Mon
    expect(nextCronTime(parseCron('0 0 1 1 *'), at('2026-03-01T00:00:00')).toString()).toBe(at('2027-01-01T00:00:00').toString());
    expect(nextCronTime(parseCron('0 12 * * 7'), at('2026-03-01T13:00:00')).getDay()).toBe(0); // 7 is Sunday
    for (const bad of ['* * * *', '61 * * * *', '5-1 * * * *', 'a * * * *', '*/0 * * * *']) expect(() => parseCron(bad)).toThrow(ScheduleError);
  });

  it('a schedule is every or cron, exactly one', () => {
    expect(parseSchedule({ every: '15m' })).toMatchObject({ kind: 'every', ms: 900_000, text: 'every 15m' });
    expect(parseSchedule({ cron: '0 * * * *' })).toMatchObject({ kind: 'cron', text: 'cron 0 * * * *' });
    expect(() => parseSchedule({ every: '15m', cron: '0 * * * *' })).toThrow(/exactly one/);
    expect(() => parseSchedule('15m')).toThrow(/mapping/);
  });
});

describe('ScheduledSource', () => {
  const identity = { collector: 'chatapp' as const, source_type: 'chatapp' as const, source_account_id: null, source_ref: '/x/chat.db' };

  it('runs at its times, never two runs at once, and backs off after a failure', async () => {
    let runs = 0;
    let release!: () => void;
    let fail = false;
    const s = new ScheduledSource({
      identity,
      label: 'test',
      schedule: parseSchedule({ every: '1s' }),
      run: async () => {
        runs++;
        if (fail) throw new Error('chat.db cannot be read');
        await new Promise<void>((r) => (release = r));
      },
    });
    await s.start();
    expect(s.status().state).toBe('scheduled');
    // The first scheduled time comes (a second on): the run starts and holds until released.
    await vi.waitFor(() => expect(runs).toBe(1), { timeout: 30_000, interval: 20 });
    expect(s.status().state).toBe('running');
    // A run asked for while one is under way: busy (the route answers 409).
    await expect(s.runNow()).rejects.toBeInstanceOf(SourceBusyError);
    release();
    await vi.waitFor(() => expect(s.status().last_success_at).not.toBeNull(), { timeout: 30_000, interval: 10 });
    expect(s.status().state).toBe('scheduled');
    fail = true;
    await expect(s.runNow()).rejects.toThrow(/cannot be read/);
    expect(s.status()).toMatchObject({ state: 'backing_off', last_error: 'chat.db cannot be read' });
    await s.stop();
    expect(s.status().state).toBe('stopped');
  });

  it("a scheduled time that finds the route's run under way is skipped, not overlapped", async () => {
    let busy = true;
    let calls = 0;
    const s = new ScheduledSource({
      identity,
      label: 'test',
      schedule: parseSchedule({ every: '1s' }),
      run: async () => {
        calls++;
        if (busy) throw Object.assign(new Error('Collector is already running'), { status: 409 });
      },
    });
    await s.start();
    await vi.waitFor(() => expect(calls).toBeGreaterThanOrEqual(1), { timeout: 30_000, interval: 20 });
    expect(s.status()).toMatchObject({ state: 'scheduled', last_error: null, last_success_at: null });
    busy = false;
    await s.runNow();
    expect(s.status().last_success_at).not.toBeNull();
    await s.stop();
  });
});

describe('agent YAML: poll_interval, idle, mirror_deletions, schedule', () => {
  const imap = (extra: Record<string, unknown>) => ({ modules: { mail: { enabled: true, sources: [{ id: 'a', type: 'imap', host: 'imap.example.org', ...extra }] } } });

  it('reads them, with defaults', () => {
    const d = validateAgentConfig(imap({}), 'agent.yaml', {}).modules.mail.sources[0];
    expect(d).toMatchObject({ poll_interval_ms: 300_000, idle: true, mirror_deletions: false });
    expect(d.schedule).toBeUndefined();
    const s = validateAgentConfig(imap({ poll_interval: '30s', idle: false, mirror_deletions: true, schedule: { cron: '0 * * * *' } }), 'agent.yaml', {}).modules.mail.sources[0];
    expect(s).toMatchObject({ poll_interval_ms: 30_000, idle: false, mirror_deletions: true, schedule: { kind: 'cron' } });
    const chat = validateAgentConfig({ modules: { chatapp: { enabled: true, schedule: { every: '15m' } } } }, 'agent.yaml', {}).modules.chatapp;
    expect(chat.schedule).toMatchObject({ kind: 'every', ms: 900_000 });
  });

  it('a bad value names the file and the key', () => {
    expect(() => validateAgentConfig(imap({ poll_interval: 'often' }), 'agent.yaml', {})).toThrow(AgentConfigError);
    expect(() => validateAgentConfig(imap({ poll_interval: 'often' }), 'agent.yaml', {})).toThrow(/agent.yaml: modules.mail.sources\[0\].poll_interval must be a duration/);
    expect(() => validateAgentConfig(imap({ schedule: { cron: '99 * * * *' } }), 'agent.yaml', {})).toThrow(/modules.mail.sources\[0\].schedule.cron minute: 99 is outside 0-59/);
  });
});
