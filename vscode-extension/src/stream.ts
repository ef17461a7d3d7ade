/**
 * An answer streamed into the answer panel while the server writes it: the client passes a fresh
 * `askId` in the `codeask.ask` argument object, and the server sends the answer's text meanwhile as
 * `codeask/answerDelta` notifications `{"askId": string, "delta": string}`, in order, all before the
 * response. The response (the checked answer, with its citation links and sources) then replaces
 * the streamed text. Pure: no `vscode` import.
 */
import { randomUUID } from 'crypto';

/** The LSP notification that carries a piece of an answer's text. */
export const ANSWER_DELTA = 'codeask/answerDelta';

/** The params of {@link ANSWER_DELTA}. */
export interface AnswerDelta {
  askId: string;
  delta: string;
}

/** A fresh id for one ask (a random UUID): deltas of other asks are ignored. */
export function newAskId(): string {
  return randomUUID();
}

/** Validates the params of a {@link ANSWER_DELTA} notification (from the server: checked, not trusted). */
export function parseAnswerDelta(params: unknown): AnswerDelta | undefined {
  if (typeof params !== 'object' || params === null) return undefined;
  const { askId, delta } = params as Record<string, unknown>;
  return typeof askId === 'string' && typeof delta === 'string' ? { askId, delta } : undefined;
}

/** Where the streamed text is shown: the answer panel, given the whole text so far each time. */
export interface PartialTarget {
  showPartial(title: string, markdown: string): void;
}

/** Runs `fn` later (`setTimeout` in the extension; by hand in the tests). */
export type Scheduler = (fn: () => void) => void;

/** How long the panel waits to show more streamed text, in ms: deltas arriving meanwhile are shown together. */
export const RENDER_DELAY_MS = 60;

/**
 * The ask being streamed, at most one: `begin` starts it, `onDelta` appends text to it (the first
 * piece is shown at once, later ones together once per {@link RENDER_DELAY_MS}), `end` stops it
 * (deltas after it, or of another `askId`, are dropped).
 */
export class AnswerStream {
  private current: { askId: string; title: string; text: string; shown: number } | undefined;
  private pending = false;

  constructor(
    private readonly target: PartialTarget,
    private readonly schedule: Scheduler = (fn) => void setTimeout(fn, RENDER_DELAY_MS),
  ) {}

  begin(askId: string, title: string): void {
    this.current = { askId, title, text: '', shown: 0 };
    this.pending = false;
  }

  /** A {@link ANSWER_DELTA} notification's params. */
  onDelta(params: unknown): void {
    const delta = parseAnswerDelta(params);
    const current = this.current;
    if (!delta || !current || delta.askId !== current.askId || !delta.delta) return;
    current.text += delta.delta;
    if (current.shown === 0) {
      this.render();
    } else if (!this.pending) {
      this.pending = true;
      this.schedule(() => {
        this.pending = false;
        this.render();
      });
    }
  }

  /** Stops streaming `askId` (its response arrived, failed or was cancelled). */
  end(askId: string): void {
    if (this.current?.askId === askId) this.current = undefined;
  }

  private render(): void {
    const current = this.current;
    if (!current || current.shown === current.text.length) return;
    current.shown = current.text.length;
    this.target.showPartial(current.title, current.text);
  }
}
