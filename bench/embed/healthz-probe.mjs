// Child process of bench/embed/run.ts: GETs URL every INTERVAL ms from outside the server's event
// loop and reports the latencies (ms) when told to stop.
const url = process.env.PROBE_URL;
const every = Number(process.env.PROBE_INTERVAL_MS ?? 20);
const lat = [];
let stop = false;
process.on('message', (m) => {
  if (m === 'stop') stop = true;
});
while (!stop) {
  const t0 = performance.now();
  try {
    const r = await fetch(url);
    await r.text();
    lat.push(performance.now() - t0);
  } catch {
    lat.push(-1);
  }
  await new Promise((r) => setTimeout(r, every));
}
process.send({ latencies: lat }, () => process.exit(0));
