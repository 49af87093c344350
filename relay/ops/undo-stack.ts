/**
 * Undo steps for a start that acquires resources one after another (ports, store): when a later step fails, the
 * ones already taken are released in reverse order and the error is passed on.
 */
export class UndoStack {
  readonly #steps: Array<() => Promise<unknown>> = [];

  push(step: () => Promise<unknown>): void {
    this.#steps.push(step);
  }

  /** Runs `step`; when it throws, undoes everything pushed so far and rethrows. */
  async guard<T>(step: () => Promise<T>): Promise<T> {
    try {
      return await step();
    } catch (err) {
      return this.abort(err);
    }
  }

  /** Undoes every step (the last pushed first; a failing undo does not stop the others), then throws `err`. */
  async abort(err: unknown): Promise<never> {
    for (const step of this.#steps.splice(0).reverse()) await step().catch(() => undefined);
    throw err;
  }
}
