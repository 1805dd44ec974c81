import type pg from 'pg';
import { cpuMs } from './processes.ts';

/**
 * CPU milliseconds used so far by each PostgreSQL backend serving the connections named `appName`
 * (their application_name, set through PGAPPNAME), by backend pid: PostgreSQL shares the cores, so
 * a server's CPU per request counts its backends' too. Empty without an admin connection.
 */
export async function backendCpu(
  admin: pg.Client | undefined,
  appName: string | undefined,
): Promise<Map<number, number>> {
  const cpu = new Map<number, number>();
  if (!admin || !appName) return cpu;
  const { rows } = await admin.query<{ pid: number }>('select pid from pg_stat_activity where application_name = $1', [
    appName,
  ]);
  for (const { pid } of rows) {
    try {
      cpu.set(pid, cpuMs(pid));
    } catch {
      // ended meanwhile
    }
  }
  return cpu;
}

/** The CPU milliseconds the backends of `after` used since `before` (both from backendCpu). */
export function backendMsSince(before: Map<number, number>, after: Map<number, number>): number {
  let ms = 0;
  for (const [pid, now] of after) ms += now - (before.get(pid) ?? 0);
  return ms;
}
