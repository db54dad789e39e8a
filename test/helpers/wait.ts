/** Polls `probe` until it gives a truthy value (returned) or `ms` pass (an error naming `what`); a throwing probe counts as not yet. */
export async function waitFor<T>(what: string, probe: () => Promise<T | undefined | null | false>, ms = 30_000, everyMs = 200): Promise<T> {
  const until = Date.now() + ms;
  for (;;) {
    const v = await probe().catch(() => undefined);
    if (v) return v;
    if (Date.now() > until) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, everyMs));
  }
}
