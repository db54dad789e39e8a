// Loaded with `node --import` into a one-shot command under test. A command that merely returns lets Node wait for
// the event loop to empty AND for V8's background work (compilation, GC) to drain before the process ends: on a
// busy machine that took seconds after `memex search` had printed its answer (issue 35). A command that ends itself
// once its output is flushed calls process.exit, which skips that wait; Node then never emits 'beforeExit'. So
// 'beforeExit' after output means the user waited on a finished command.
let printed = false;
const write = process.stdout.write.bind(process.stdout);
process.stdout.write = (...args) => {
  printed = true;
  return write(...args);
};
process.on('beforeExit', () => {
  if (printed) process.stderr.write('linger-probe: the command printed, then waited for the event loop to drain\n');
});
