import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { CrashTracker, StatusBar, StatusPoller, formatStats, formatStatus, formatStatusDetail } from '../src/status';

function item() {
  return { text: '', tooltip: undefined as unknown, command: undefined as unknown, shown: 0, show() { this.shown++; } };
}

describe('formatStatus', () => {
  it('summarizes a status result', () => {
    const s = { indexing: false, files: 812, chunks_total: 5400, vectors_pending: 0, index_dir: '/c/idx', llm: 'openai:gpt-4o-mini' };
    assert.equal(formatStatus(s), 'codeask: idle, 812 files, 5,400 chunks; LLM: openai:gpt-4o-mini');
    assert.match(formatStatusDetail(s), /Index: \/c\/idx/);
  });
  it('mentions pending embeddings and a missing LLM', () => {
    const text = formatStatus({ indexing: true, files: 1, chunks_total: 3, vectors_pending: 2, llm: null });
    assert.match(text, /^codeask: indexing, 1 file, 3 chunks \(2 embeddings pending\); LLM: none/);
    assert.match(text, /Set API Key/);
  });
  it('summarizes reindex stats generically', () => {
    assert.equal(formatStats({ files: 3, chunks: 9, nested: { a: 1 } }), 'codeask: reindex finished (files: 3, chunks: 9)');
    assert.equal(formatStats(null), 'codeask: reindex finished');
  });
});

describe('StatusBar', () => {
  it('shows progress, then the index state, and runs showStatus on click', () => {
    const it_ = item();
    const bar = new StatusBar(it_);
    assert.equal(it_.command, 'codeask.showStatus');
    assert.equal(it_.shown, 1);
    assert.equal(bar.progress('t', { kind: 'begin', title: 'Indexing', percentage: 0 }), false);
    assert.equal(it_.text, '$(sync~spin) codeask 0%');
    bar.progress('t', { kind: 'report', message: 'src/a.py', percentage: 41.6 });
    assert.equal(it_.text, '$(sync~spin) codeask 42%');
    assert.equal(it_.tooltip, 'codeask: src/a.py');
    bar.status({ indexing: true, files: 3 }); // progress in flight wins
    assert.equal(it_.text, '$(sync~spin) codeask 42%');
    assert.equal(bar.progress('t', { kind: 'end' }), true);
    bar.status({ indexing: false, files: 812, chunks_total: 9000, llm: null });
    assert.equal(it_.text, '$(database) codeask: 812 files');
    bar.stopped();
    assert.equal(it_.text, '$(error) codeask');
  });
});

describe('index states', () => {
  it('says "not indexed yet" before the first question, and who holds the index while waiting', () => {
    const it_ = item();
    const bar = new StatusBar(it_);
    const notIndexed = { indexing: false, files: 0, index_state: 'not-indexed', index_message: 'not indexed yet', llm: null };
    bar.status(notIndexed);
    assert.equal(it_.text, '$(database) codeask: not indexed yet');
    assert.match(formatStatus(notIndexed), /not indexed yet \(the first question starts indexing\)/);
    const waiting = { indexing: true, index_state: 'waiting', lock_holder: 'the index /c/x is being updated by pid 42 (codeask index)' };
    bar.status(waiting);
    assert.equal(it_.text, '$(watch) codeask: waiting');
    assert.match(String(it_.tooltip), /pid 42 \(codeask index\)/);
  });
});

describe('a reopened folder with an index', () => {
  it('shows a spinner, never "0 files", while the first status has no counts, then the count', () => {
    const it_ = item();
    const bar = new StatusBar(it_);
    // the server's answer after ~30 ms while the index is busy and no snapshot was read yet
    assert.equal(bar.status({ indexing: true, index_state: 'indexing', stale: true, llm: null }), true);
    assert.equal(it_.text, '$(sync~spin) codeask');
    assert.equal(bar.status({ indexing: false, index_state: 'ready', stale: true, llm: null }), true);
    assert.equal(it_.text, '$(sync~spin) codeask');
    assert.equal(bar.status({ indexing: true, files: 812, chunks_total: 9000, stale: true }), true);
    assert.equal(it_.text, '$(sync~spin) codeask: 812 files');
    assert.equal(bar.status({ indexing: false, index_state: 'ready', files: 812, chunks_total: 9000 }), false);
    assert.equal(it_.text, '$(database) codeask: 812 files');
  });
});

describe('StatusPoller', () => {
  function fakeTimers() {
    const pending: { fn: () => void; ms: number }[] = [];
    return { pending, schedule: (fn: () => void, ms: number) => (pending.push({ fn, ms }), 0 as unknown as ReturnType<typeof setTimeout>) };
  }

  it('asks again while the status is provisional (the spinner that stayed after indexing ended)', async () => {
    const answers = [true, true, false];
    let fetched = 0;
    const timers = fakeTimers();
    const poller = new StatusPoller(async () => answers[fetched++], 2000, timers.schedule);
    await poller.refresh();
    assert.equal(fetched, 1);
    assert.deepEqual(timers.pending.map((t) => t.ms), [2000]);
    timers.pending.shift()!.fn();
    await new Promise((r) => setImmediate(r));
    assert.equal(fetched, 2);
    timers.pending.shift()!.fn();
    await new Promise((r) => setImmediate(r));
    assert.equal(fetched, 3);
    assert.equal(timers.pending.length, 0); // settled: no more requests
  });

  it('fetches once more after a fetch that was under way when asked, and nothing after dispose', async () => {
    let release!: (v: boolean) => void;
    let fetched = 0;
    const timers = fakeTimers();
    const poller = new StatusPoller(() => {
      fetched++;
      return fetched === 1 ? new Promise<boolean>((r) => (release = r)) : Promise.resolve(false);
    }, 2000, timers.schedule);
    const first = poller.refresh();
    await poller.refresh(); // e.g. the end of indexing arrives while the first request is out
    assert.equal(fetched, 1);
    release(false);
    await first;
    assert.equal(fetched, 2);
    poller.dispose();
    await poller.refresh();
    assert.equal(fetched, 2);
    assert.equal(timers.pending.length, 0);
  });
});

describe('CrashTracker', () => {
  it('allows 4 restarts within 3 minutes, then stops', () => {
    const t = new CrashTracker(5, 180_000);
    const answers = [0, 1, 2, 3, 4].map((i) => t.shouldRestart(1000 + i));
    assert.deepEqual(answers, [true, true, true, true, false]);
  });
  it('forgets old crashes', () => {
    const t = new CrashTracker(2, 1000);
    assert.equal(t.shouldRestart(0), true);
    assert.equal(t.shouldRestart(5000), true);
    assert.equal(t.shouldRestart(5500), false);
  });
});
