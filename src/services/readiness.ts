/** One dependency's state as /readyz names it: `state`, and whatever says more (a lag, a backlog). */
export interface DependencyState {
  state: string
  [detail: string]: unknown
}

/**
 * The dependencies /readyz names beside the database: those the service answers without (the
 * shared rate limit's Redis, say), so their failure is reported and readiness holds. Each is
 * read from what the service already knows, never probed here: /readyz is asked every few
 * seconds, and stays as cheap as one database round trip.
 */
export class Readiness {
  private readonly reports = new Map<string, () => DependencyState>()

  /** Names a dependency in every /readyz answer, by the key its state appears under. */
  report (name: string, read: () => DependencyState): void {
    this.reports.set(name, read)
  }

  states (): Record<string, DependencyState> {
    const states: Record<string, DependencyState> = {}
    for (const [name, read] of this.reports) states[name] = read()
    return states
  }
}
