/**
 * Where a benchmark's CPU went, from Linux's own accounting: the whole machine (/proc/stat), one child
 * process (/proc/<pid>/stat, its threads included) and this process (process.cpuUsage). On a shared
 * machine "the rest" (machine minus the processes named) is the database server's backends plus whatever
 * else ran, so read it together with the load average.
 */
import fs from 'node:fs';

const TICK_MS = 10; // USER_HZ is 100 on every Linux this runs on (getconf CLK_TCK)

/** Busy CPU of the whole machine in ms (user + nice + system + irq + softirq + steal over all cores). */
function machineBusyMs(): number {
  const [, user, nice, system, , , irq, softirq, steal] = fs.readFileSync('/proc/stat', 'utf8').split('\n')[0]!.trim().split(/\s+/).map(Number);
  return (user! + nice! + system! + irq! + softirq! + steal!) * TICK_MS;
}

/** CPU of a process in ms (utime + stime), 0 once it is gone. */
export function processCpuMs(pid: number): number {
  try {
    const stat = fs.readFileSync(`/proc/${pid}/stat`, 'utf8');
    // Fields after the command name (which may hold spaces) in parentheses: utime and stime are the 12th and 13th.
    const f = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return (Number(f[11]) + Number(f[12])) * TICK_MS;
  } catch {
    return 0;
  }
}

function selfCpuMs(): number {
  const u = process.cpuUsage();
  return (u.user + u.system) / 1000;
}

export interface CpuSplit {
  wallMs: number;
  /** The whole machine's busy CPU. */
  machineMs: number;
  /** This process. */
  selfMs: number;
  /** Each child named at start. */
  children: Record<string, number>;
  /** Average cores busy over the interval. */
  coresBusy: number;
}

/** Starts measuring; call the returned function at the end of the interval. */
export function cpuMeter(children: Record<string, number> = {}): () => CpuSplit {
  const t = performance.now();
  const machine = machineBusyMs();
  const self = selfCpuMs();
  const kids = Object.fromEntries(Object.entries(children).map(([name, pid]) => [name, processCpuMs(pid)]));
  return () => {
    const wallMs = performance.now() - t;
    const machineMs = machineBusyMs() - machine;
    return {
      wallMs,
      machineMs,
      selfMs: selfCpuMs() - self,
      children: Object.fromEntries(Object.entries(children).map(([name, pid]) => [name, processCpuMs(pid) - kids[name]!])),
      coresBusy: machineMs / wallMs,
    };
  };
}
