/**
 * The extension's process runner (common/process.ts) against real child processes: a program that prints hundreds of
 * megabytes costs the extension host a bounded tail of each stream and the log a bounded number of lines (the last
 * ones kept), and cancelling asks the program to stop (SIGTERM) before it is killed, so a tool can still report.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { LogThrottle, MAX_LOG_LINE_CHARS, runProcess } from '../../extension/src/common/process';

const NODE = process.execPath;

/** A program that writes `megabytes` MB of lines to both streams (stderr also one endless line), then markers. */
function flood(megabytes: number): string {
  return `
    const { once } = require('node:events');
    const block = ('x'.repeat(99) + '\\n').repeat(10486);
    (async () => {
      for (let left = ${megabytes}; left > 0; left -= 1) {
        if (!process.stderr.write(block)) await once(process.stderr, 'drain');
        if (!process.stdout.write(block)) await once(process.stdout, 'drain');
      }
      process.stderr.write('y'.repeat(5000000) + '\\nLAST STDERR LINE\\n');
      process.stdout.write('{"findings": []}\\n');
    })();`;
}

test('a program printing 200 MB: bounded strings, bounded memory, the tails kept, the log not flooded', async () => {
  const logged: string[] = [];
  const before = process.memoryUsage().rss;
  let peak = before;
  const sampler = setInterval(() => (peak = Math.max(peak, process.memoryUsage().rss)), 20);
  const result = await runProcess(NODE, ['-e', flood(100)], {
    maxStdoutChars: 1_000_000,
    maxStderrChars: 200_000,
    onStderr: (line) => logged.push(line),
  });
  clearInterval(sampler);
  assert.equal(result.code, 0);
  assert.ok(result.stdout.length <= 1_000_000 && result.stderr.length <= 200_000);
  assert.ok(result.stdout.endsWith('{"findings": []}\n'), 'the JSON document printed last is kept');
  assert.ok(result.stderr.endsWith('LAST STDERR LINE\n'));
  assert.ok(result.stderrDropped > 100_000_000 && result.stdoutDropped > 100_000_000);
  const loggedChars = logged.reduce((sum, line) => sum + line.length, 0);
  assert.ok(loggedChars < 2_000_000, `logged ${loggedChars} characters`);
  assert.ok(logged.length < 30_000, `logged ${logged.length} lines`);
  assert.ok(
    logged.every((line) => line.length <= MAX_LOG_LINE_CHARS + 2),
    'every logged line is cut',
  );
  assert.ok(
    logged.some((line) => /line\(s\) of output \(\d+ characters\) not logged/.test(line)),
    'says what it left',
  );
  assert.equal(logged.at(-1), 'LAST STDERR LINE', 'the last lines are logged at the end');
  assert.ok(peak - before < 150 * 1024 * 1024, `the host grew by ${((peak - before) / 2 ** 20).toFixed(0)} MB`);
});

test('cancelling sends SIGTERM first: a program that reports on SIGTERM is heard, then ends', async () => {
  const abort = new AbortController();
  const program = `
    process.on('SIGTERM', () => { process.stdout.write('{"partial": {"reason": "interrupted"}}\\n'); process.exit(143); });
    process.stderr.write('started\\n');
    setInterval(() => undefined, 1000);`;
  const running = runProcess(NODE, ['-e', program], {
    signal: abort.signal,
    onStderr: (line) => {
      if (line.trim() === 'started') abort.abort();
    },
  });
  const result = await running;
  assert.equal(result.stopped, 'cancelled');
  assert.equal(result.code, 143);
  assert.match(result.stdout, /"interrupted"/);
});

test('a program that ignores SIGTERM is killed after the grace; a timeout stops it the same way', async () => {
  const program = `process.on('SIGTERM', () => undefined); process.stderr.write('started\\n'); setInterval(() => 0, 1000);`;
  const started = Date.now();
  const result = await runProcess(NODE, ['-e', program], { timeoutMs: 300, graceMs: 300 });
  assert.equal(result.stopped, 'timeout');
  assert.equal(result.signal, 'SIGKILL');
  assert.ok(Date.now() - started < 10_000);
});

test('the log budget: a burst, then a steady rate; what is left out is counted and the last lines kept', () => {
  let now = 0;
  const lines: string[] = [];
  const log = new LogThrottle(
    (line) => lines.push(line),
    { burstChars: 100, charsPerSecond: 10 },
    () => now,
  );
  for (let i = 0; i < 50; i += 1) log.push(`line ${String(i).padStart(4, '0')}\n`); // 10 characters each
  assert.equal(lines.length, 10, 'the burst');
  now = 2000; // 20 characters more: two lines of 9
  log.push('late one\nlate two\nlate six\n');
  assert.deepEqual(lines.slice(10), ['… 40 line(s) of output (400 characters) not logged …', 'late one', 'late two']);
  log.push('z'.repeat(10_000)); // one endless line, cut
  log.end();
  assert.deepEqual(lines.slice(13), ['late six', `${'z'.repeat(MAX_LOG_LINE_CHARS)} …`], 'the last lines, at the end');
});
