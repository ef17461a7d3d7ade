/**
 * A small stand-in for the `vscode` module: the parts the command handlers, the hover and the
 * panel use, recording what they were asked to do.
 */

export class Position {
  constructor(
    readonly line: number,
    readonly character: number,
  ) {}
  isBefore(o: Position): boolean {
    return this.line < o.line || (this.line === o.line && this.character < o.character);
  }
  isAfter(o: Position): boolean {
    return o.isBefore(this);
  }
}

export class Range {
  readonly start: Position;
  readonly end: Position;
  constructor(a: number | Position, b: number | Position, c?: number, d?: number) {
    if (typeof a === 'number') {
      this.start = new Position(a, b as number);
      this.end = new Position(c as number, d as number);
    } else {
      this.start = a;
      this.end = b as Position;
    }
  }
  get isEmpty(): boolean {
    return this.start.line === this.end.line && this.start.character === this.end.character;
  }
  contains(p: Position): boolean {
    return !p.isBefore(this.start) && !p.isAfter(this.end);
  }
}

/** As VS Code's: `start`/`end` in document order, whichever end `anchor` and `active` (the cursor) are. */
export class Selection extends Range {
  constructor(
    readonly anchor: Position,
    readonly active: Position,
  ) {
    super(active.isBefore(anchor) ? active : anchor, active.isBefore(anchor) ? anchor : active);
  }
}

export class MarkdownString {
  isTrusted: unknown;
  constructor(readonly value: string) {}
}

export class Hover {
  constructor(
    readonly contents: MarkdownString,
    readonly range?: Range,
  ) {}
}

export const Uri = {
  parse(value: string) {
    return { scheme: value.split(':')[0], toString: () => value, fsPath: value.replace(/^file:\/\//, '') };
  },
};

type Listener<T> = (value: T) => void;

function emitter<T>() {
  const listeners: Listener<T>[] = [];
  return {
    event: (l: Listener<T>) => {
      listeners.push(l);
      return { dispose() {} };
    },
    fire: (v: T) => listeners.forEach((l) => l(v)),
  };
}

export interface MockQuickPick {
  items: { label: string }[];
  value: string;
  selectedItems: unknown[];
  activeItems: unknown[];
  title?: string;
  placeholder?: string;
  ignoreFocusOut?: boolean;
  onDidChangeValue: (l: Listener<string>) => unknown;
  onDidAccept: (l: Listener<void>) => unknown;
  onDidHide: (l: Listener<void>) => unknown;
  show(): void;
  hide(): void;
  dispose(): void;
  /** Test helpers. */
  type(value: string): void;
  accept(): void;
}

export interface MockOptions {
  /** What the user does when a quick pick opens; default: accept the typed value `typed`. */
  onQuickPick?: (qp: MockQuickPick) => void;
  inputBox?: string | undefined;
  quickPick?: (items: readonly unknown[]) => unknown;
  messageChoice?: string;
  activeTextEditor?: unknown;
  cancelProgress?: boolean;
}

export function createMockVscode(opts: MockOptions = {}) {
  const calls = {
    info: [] as string[],
    warn: [] as string[],
    error: [] as string[],
    progress: [] as { title?: string; location: unknown }[],
    shown: [] as { document: unknown; options: any }[],
    revealed: [] as unknown[],
    revealedHow: [] as unknown[],
    opened: [] as string[],
    quickPicks: [] as MockQuickPick[],
    inputBoxes: [] as any[],
  };

  function createQuickPick(): MockQuickPick {
    const changed = emitter<string>();
    const accepted = emitter<void>();
    const hidden = emitter<void>();
    const qp: MockQuickPick = {
      items: [],
      value: '',
      selectedItems: [],
      activeItems: [],
      onDidChangeValue: changed.event,
      onDidAccept: accepted.event,
      onDidHide: hidden.event,
      show() {
        queueMicrotask(() => (opts.onQuickPick ?? ((q) => q.accept()))(qp));
      },
      hide() {
        hidden.fire();
      },
      dispose() {},
      type(value: string) {
        qp.value = value;
        changed.fire(value);
        qp.activeItems = qp.items.slice(0, 1);
      },
      accept() {
        qp.selectedItems = qp.activeItems;
        accepted.fire();
      },
    };
    calls.quickPicks.push(qp);
    return qp;
  }

  const window = {
    activeTextEditor: opts.activeTextEditor as any,
    visibleTextEditors: [] as any[],
    createQuickPick,
    async showQuickPick(items: readonly unknown[]) {
      return opts.quickPick ? opts.quickPick(items) : undefined;
    },
    async showInputBox(options: unknown) {
      calls.inputBoxes.push(options);
      return opts.inputBox;
    },
    async withProgress(options: { title?: string; location: unknown }, task: (p: unknown, token: unknown) => Promise<unknown>) {
      calls.progress.push(options);
      const cancelled = emitter<void>();
      const token = { isCancellationRequested: false, onCancellationRequested: cancelled.event };
      const result = task({ report() {} }, token);
      if (opts.cancelProgress) {
        token.isCancellationRequested = true;
        cancelled.fire();
      }
      return result;
    },
    async showInformationMessage(message: string, ..._rest: unknown[]) {
      calls.info.push(message);
      return opts.messageChoice;
    },
    async showWarningMessage(message: string) {
      calls.warn.push(message);
      return undefined;
    },
    async showErrorMessage(message: string, ..._rest: unknown[]) {
      calls.error.push(message);
      return undefined;
    },
    async showTextDocument(document: unknown, options: any) {
      calls.shown.push({ document, options });
      return {
        document,
        selection: options?.selection,
        revealRange(range: unknown, how?: number) {
          calls.revealed.push(range);
          calls.revealedHow.push(how);
        },
      };
    },
  };

  const workspace = {
    async openTextDocument(uri: { toString(): string }) {
      calls.opened.push(uri.toString());
      if (uri.toString().includes('missing')) throw new Error('file not found');
      return {
        uri,
        // A 100-line document whose lines are 10 characters long.
        validateRange(r: Range) {
          const endLine = Math.min(r.end.line, 99);
          return new Range(Math.min(r.start.line, 99), 0, endLine, Math.min(r.end.character, 10));
        },
      };
    },
    asRelativePath(uri: { toString(): string }) {
      return uri.toString().replace(/^file:\/\/\/ws\//, '');
    },
  };

  const vscode = {
    window,
    workspace,
    Uri,
    Range,
    Selection,
    Position,
    MarkdownString,
    Hover,
    ProgressLocation: { SourceControl: 1, Window: 10, Notification: 15 },
    TextEditorRevealType: { Default: 0, InCenter: 1, InCenterIfOutsideViewport: 2, AtTop: 3 },
    ViewColumn: { Active: -1, Beside: -2, One: 1 },
  };
  return { vscode, calls };
}

/** A Memento backed by a Map. */
export function memento() {
  const data = new Map<string, unknown>();
  return {
    data,
    get<T>(key: string, fallback?: T): T {
      return (data.has(key) ? data.get(key) : fallback) as T;
    },
    async update(key: string, value: unknown) {
      data.set(key, value);
    },
  };
}

/** SecretStorage backed by a Map. */
export function secretStore() {
  const data = new Map<string, string>();
  return {
    data,
    async get(key: string) {
      return data.get(key);
    },
    async store(key: string, value: string) {
      data.set(key, value);
    },
    async delete(key: string) {
      data.delete(key);
    },
  };
}
