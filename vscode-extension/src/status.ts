/**
 * Status bar text and readable summaries of `codeask.status` / `codeask.reindex` results.
 * Pure: no `vscode` import (the status bar item is passed in).
 */

export interface ServerStatus {
  indexing?: boolean;
  files?: number;
  chunks_total?: number;
  vectors_pending?: number;
  index_dir?: string;
  llm?: string | null;
  /** `not-indexed`, `waiting` (another process holds the index), `indexing`, `embedding`, `ready`, `failed`. */
  index_state?: string;
  index_message?: string;
  /** True when the counts are the last snapshot of a busy index (absent when none was read yet). */
  stale?: boolean;
  /** Who holds the index's write lock while `index_state` is `waiting`. */
  lock_holder?: string | null;
  [key: string]: unknown;
}

/** The part of `vscode.StatusBarItem` this module sets. */
export interface StatusBarLike {
  text: string;
  tooltip?: unknown;
  command?: unknown;
  show(): void;
}

export type WorkDoneProgress =
  | { kind: 'begin'; title: string; message?: string; percentage?: number; cancellable?: boolean }
  | { kind: 'report'; message?: string; percentage?: number; cancellable?: boolean }
  | { kind: 'end'; message?: string };

function plural(n: number, word: string): string {
  return `${n.toLocaleString('en-US')} ${word}${n === 1 ? '' : 's'}`;
}

/** One line: `codeask: idle, 812 files, 5,400 chunks (12 embeddings pending); LLM: openai:gpt-5.4-mini`. */
export function formatStatus(status: ServerStatus): string {
  if (status.index_state === 'not-indexed') {
    const llm = status.llm ? status.llm : 'none';
    return `codeask: not indexed yet (the first question starts indexing); LLM: ${llm}`;
  }
  if (status.index_state === 'waiting') {
    return `codeask: waiting: ${status.lock_holder ?? status.index_message ?? 'another process is updating the index'}`;
  }
  const parts: string[] = [status.indexing ? 'indexing' : 'idle'];
  if (typeof status.files === 'number') parts.push(plural(status.files, 'file'));
  if (typeof status.chunks_total === 'number') {
    let chunks = plural(status.chunks_total, 'chunk');
    if (typeof status.vectors_pending === 'number' && status.vectors_pending > 0) {
      chunks += ` (${plural(status.vectors_pending, 'embedding')} pending)`;
    }
    parts.push(chunks);
  }
  const llm = status.llm ? status.llm : 'none (answers list the sources only; run "Codeask: Set API Key")';
  return `codeask: ${parts.join(', ')}; LLM: ${llm}`;
}

/** Multi-line detail (index location too). */
export function formatStatusDetail(status: ServerStatus): string {
  const lines = [formatStatus(status)];
  if (status.index_dir) lines.push(`Index: ${status.index_dir}`);
  return lines.join('\n');
}

/** `codeask: reindexed, files: 812, chunks: 5400` from whatever stats object the server returns. */
export function formatStats(stats: unknown): string {
  if (typeof stats !== 'object' || stats === null) return 'codeask: reindex finished';
  const parts: string[] = [];
  for (const [key, value] of Object.entries(stats as Record<string, unknown>)) {
    if (typeof value === 'number' || typeof value === 'boolean' || (typeof value === 'string' && value.length < 80)) {
      parts.push(`${key.replace(/_/g, ' ')}: ${value}`);
    }
  }
  return parts.length ? `codeask: reindex finished (${parts.join(', ')})` : 'codeask: reindex finished';
}

/** Drives the status bar item from progress notifications and status results. */
export class StatusBar {
  private progressTokens = new Set<string>();

  constructor(private readonly item: StatusBarLike, command = 'codeask.showStatus') {
    item.command = command;
    item.text = '$(sync~spin) codeask';
    item.tooltip = 'codeask: starting the language server';
    item.show();
  }

  get text(): string {
    return this.item.text;
  }

  /** True while some work-done progress is between begin and end. */
  get busy(): boolean {
    return this.progressTokens.size > 0;
  }

  starting(): void {
    this.item.text = '$(sync~spin) codeask';
    this.item.tooltip = 'codeask: starting the language server';
  }

  stopped(reason = 'the language server is not running'): void {
    this.progressTokens.clear();
    this.item.text = '$(error) codeask';
    this.item.tooltip = `codeask: ${reason} (click for status)`;
  }

  /** A `$/progress` value for `token`. Returns true on `end` (time to fetch the status). */
  progress(token: string | number, value: WorkDoneProgress): boolean {
    const key = String(token);
    if (value.kind === 'end') {
      this.progressTokens.delete(key);
      if (!this.busy) {
        this.item.text = '$(database) codeask';
        this.item.tooltip = value.message ? `codeask: ${value.message}` : 'codeask: index ready';
      }
      return true;
    }
    this.progressTokens.add(key);
    const pct = typeof value.percentage === 'number' ? ` ${Math.round(value.percentage)}%` : '';
    this.item.text = `$(sync~spin) codeask${pct}`;
    const title = value.kind === 'begin' ? value.title : undefined;
    const detail = [title, value.message].filter(Boolean).join(': ');
    this.item.tooltip = `codeask: ${detail || 'indexing'}`;
    return false;
  }

  /**
   * A `codeask.status` result. Progress in flight wins over it. Returns true when the result is
   * provisional (an index run under way, a stale snapshot, waiting for another process): ask
   * again soon, since no progress notification may follow (the run may already have ended).
   */
  status(status: ServerStatus): boolean {
    const provisional = statusIsProvisional(status);
    if (this.busy) return provisional;
    const files = typeof status.files === 'number' ? `: ${plural(status.files, 'file')}` : '';
    if (status.index_state === 'not-indexed') {
      this.item.text = '$(database) codeask: not indexed yet';
    } else if (status.index_state === 'waiting') {
      this.item.text = '$(watch) codeask: waiting';
    } else if (status.indexing || (status.stale && !files)) {
      // counts unknown (a stale answer before the first snapshot): a spinner, never "0 files"
      this.item.text = `$(sync~spin) codeask${files}`;
    } else {
      this.item.text = `$(database) codeask${files}`;
    }
    this.item.tooltip = formatStatusDetail(status);
    return provisional;
  }
}

/** Milliseconds between `codeask.status` requests while a result is provisional. */
export const STATUS_POLL_MS = 2000;

/** True while `status` will change without a notification: indexing, stale, or waiting. */
export function statusIsProvisional(status: ServerStatus): boolean {
  return !!status.indexing || !!status.stale || status.index_state === 'waiting';
}

/**
 * Asks for the status again every `intervalMs` while the last answer was provisional, one
 * request at a time (a call while one is scheduled or running does nothing more).
 * `fetch` resolves to true while the status stays provisional.
 */
export class StatusPoller {
  private timer: ReturnType<typeof setTimeout> | undefined;
  private running = false;
  private again = false;
  private stopped = false;

  constructor(
    private readonly fetch: () => Promise<boolean>,
    private readonly intervalMs = STATUS_POLL_MS,
    private readonly schedule: (fn: () => void, ms: number) => ReturnType<typeof setTimeout> = setTimeout,
  ) {}

  /** Fetch now (after the fetch under way, if any), then again while provisional. */
  async refresh(): Promise<void> {
    if (this.stopped) return;
    if (this.running) {
      this.again = true; // that answer may predate what prompted this call
      return;
    }
    if (this.timer !== undefined) {
      clearTimeout(this.timer);
      this.timer = undefined;
    }
    this.running = true;
    let provisional = false;
    try {
      provisional = await this.fetch();
    } finally {
      this.running = false;
    }
    if (this.again) {
      this.again = false;
      return this.refresh();
    }
    if (provisional && !this.stopped) this.timer = this.schedule(() => {
      this.timer = undefined;
      void this.refresh();
    }, this.intervalMs);
  }

  dispose(): void {
    this.stopped = true;
    if (this.timer !== undefined) clearTimeout(this.timer);
    this.timer = undefined;
  }
}

/**
 * Restart policy after a crash: restart unless the server died `max` times within `windowMs`.
 */
export class CrashTracker {
  private crashes: number[] = [];

  constructor(
    readonly max = 5,
    readonly windowMs = 3 * 60 * 1000,
  ) {}

  /** Records a crash at `now`; true when the server should be restarted. */
  shouldRestart(now = Date.now()): boolean {
    this.crashes.push(now);
    this.crashes = this.crashes.filter((t) => now - t <= this.windowMs);
    return this.crashes.length < this.max;
  }

  get recent(): number {
    return this.crashes.length;
  }

  reset(): void {
    this.crashes = [];
  }
}
