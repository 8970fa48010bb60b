import type { QueueSwitch } from '../breaker';
import type { Worker } from '../worker';

/**
 * The breaker pauses switch the worker's queues, and the worker asks the breakers (and so the pauses)
 * for each job: this is the pauses' end of that loop, built first and `connect`ed to the worker once it
 * exists (before anything runs a job or opens a breaker).
 */
export class WorkerSwitch implements QueueSwitch {
  #worker: Worker | undefined;

  connect(worker: Worker): void {
    this.#worker = worker;
  }

  pause(queue: string): Promise<void> {
    return this.worker().pause(queue);
  }

  resume(queue: string): Promise<void> {
    return this.worker().resume(queue);
  }

  private worker(): Worker {
    if (this.#worker === undefined)
      throw new Error('the breaker pauses switched a queue before the worker existed');
    return this.#worker;
  }
}
