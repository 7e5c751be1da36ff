/**
 * "Open TensorBoard" through the one seam (support/fakeVscode): a run directory without event files is not a dead end.
 * The warning offers to turn TensorBoard logging on (the setting Debug Training and Run Doctor read to pass the
 * agent's `tensorboardDir` launch option, one folder per run) or to choose a folder with runs, which is then served.
 */
import './support/seam';
import assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { beforeEach, test } from 'node:test';
import { doctorOptions } from '../../extension/src/commands/cliTools';
import { TensorBoard } from '../../extension/src/commands/tensorboard';
import { hasEventFiles, withTensorBoardLogging } from '../../extension/src/commands/tensorboardLogging';
import type { InterpreterService } from '../../extension/src/common/interpreterService';
import { extensionPaths } from '../../extension/src/common/paths';
import { ConfigurationTarget, fake, logChannel } from './support/fakeVscode';

function tensorBoard() {
  const asked: number[] = [];
  const interpreters = {
    require: () => {
      asked.push(1);
      return Promise.resolve(undefined); // stops before spawning: what is checked is what came first
    },
  } as unknown as InterpreterService;
  return { board: new TensorBoard(extensionPaths('/ext'), interpreters, logChannel() as never), asked };
}

function emptyRunDir(): string {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'ts-tb-'));
  fake.settings.set('tensorboard.logDir', dir);
  return dir;
}

beforeEach(() => fake.reset());

test('no event files: the warning offers "Turn On TensorBoard Logging" and "Choose Folder…"; logging is turned on', async () => {
  const dir = emptyRunDir();
  fs.mkdirSync(path.join(dir, 'empty-run'));
  const { board, asked } = tensorBoard();
  fake.warningChoice = 'Turn On TensorBoard Logging';
  await board.open();
  assert.equal(fake.messages[0]?.level, 'warning');
  assert.match(fake.messages[0]?.text ?? '', /No TensorBoard event files under/);
  assert.deepEqual(fake.messages[0]?.items, ['Turn On TensorBoard Logging', 'Choose Folder…']);
  assert.deepEqual(fake.updates, [{ key: 'tensorboard.logRuns', value: true, target: ConfigurationTarget.Global }]);
  assert.equal(fake.messages[1]?.level, 'info', 'says what happens next');
  assert.equal(asked.length, 0, 'nothing is served');
  // the next runs write there: the debug launch and the doctor get a tensorboardDir of their own under the folder
  const launch = withTensorBoardLogging({ program: '/w/train.py', options: { measure: true } });
  const written = (launch.options as Record<string, unknown>).tensorboardDir as string;
  assert.equal(path.dirname(written), dir);
  assert.match(path.basename(written), /^train-\d{8}-\d{6}$/);
  assert.equal((launch.options as Record<string, unknown>).measure, true);
  const own = { program: '/w/train.py', options: { tensorboardDir: '/mine' } };
  assert.equal(withTensorBoardLogging(own), own, "a configuration's own tensorboardDir wins");
  const doctor = doctorOptions('/w/train.py');
  assert.deepEqual(doctor.slice(0, 3), ['--timeout', '600', '--set']);
  assert.equal(path.dirname(String(JSON.parse((doctor[3] ?? '').replace(/^tensorboardDir=/, '')))), dir);
});

test('logging already on: only "Choose Folder…"; a chosen folder with runs is saved and served', async () => {
  emptyRunDir();
  fake.settings.set('tensorboard.logRuns', true);
  const chosen = fs.mkdtempSync(path.join(os.tmpdir(), 'ts-tb-runs-'));
  fs.mkdirSync(path.join(chosen, 'run1'));
  fs.writeFileSync(path.join(chosen, 'run1', 'events.out.tfevents.1.host'), '');
  const { board, asked } = tensorBoard();
  fake.warningChoice = 'Choose Folder…';
  fake.openDialog = [chosen];
  await board.open();
  assert.deepEqual(fake.messages[0]?.items, ['Choose Folder…']);
  assert.equal(fake.openDialogs[0]?.canSelectFolders, true);
  assert.deepEqual(fake.updates, [{ key: 'tensorboard.logDir', value: chosen, target: ConfigurationTarget.Global }]);
  assert.equal(fake.messages.length, 1, 'no second warning: the chosen folder has runs');
  assert.equal(asked.length, 1, 'serving it started (the interpreter was asked for)');
});

test('a cancelled choice leaves everything as it was; without logging the doctor gets only its time limit', async () => {
  emptyRunDir();
  const { board, asked } = tensorBoard();
  fake.warningChoice = 'Choose Folder…';
  fake.openDialog = undefined;
  await board.open();
  assert.deepEqual(fake.updates, []);
  assert.equal(asked.length, 0);
  fake.settings.set('doctor.timeout', 0);
  assert.deepEqual(doctorOptions('/w/train.py'), []);
  fake.settings.set('doctor.timeout', 90);
  assert.deepEqual(doctorOptions('/w/train.py'), ['--timeout', '90']);
});

test('event files are found below the run directory, and a missing directory has none', () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'ts-tb-deep-'));
  assert.equal(hasEventFiles(path.join(dir, 'missing')), false);
  fs.mkdirSync(path.join(dir, 'a', 'b'), { recursive: true });
  assert.equal(hasEventFiles(dir), false);
  fs.writeFileSync(path.join(dir, 'a', 'b', 'events.out.tfevents.123.host.1.0'), '');
  assert.equal(hasEventFiles(dir), true);
});
