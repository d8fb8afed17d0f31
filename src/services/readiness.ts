/** One dependency's state as /readyz names it: `state`, and whatever says more (a lag, a backlog). */
export interface DependencyState {
  state: string
  [detail: string]: unknown
}

/** A dependency whose state is not known within this is named `unknown`: /readyz answers within its own deadline. */
const REPORT_TIMEOUT_MS = 1000

/**
 * The dependencies /readyz names beside the database: those the service answers without (the
 * shared rate limit's Redis, say), so their failure is reported and readiness holds. Each is
 * read from what the service already knows, never probed here: /readyz is asked every few
 * seconds, and stays as cheap as one database round trip.
 */
export class Readiness {
  private readonly reports = new Map<string, () => DependencyState | Promise<DependencyState>>()

  /** Names a dependency in every /readyz answer, by the key its state appears under. */
  report (name: string, read: () => DependencyState | Promise<DependencyState>): void {
    this.reports.set(name, read)
  }

  async states (): Promise<Record<string, DependencyState>> {
    const entries = await Promise.all([...this.reports].map(async ([name, read]) => [name, await withDeadline(read)] as const))
    return Object.fromEntries(entries)
  }
}

/** What `read` says, `unknown` when it fails or takes longer than REPORT_TIMEOUT_MS. */
async function withDeadline (read: () => DependencyState | Promise<DependencyState>): Promise<DependencyState> {
  let timer: NodeJS.Timeout | undefined
  const late = new Promise<DependencyState>((resolve) => {
    timer = setTimeout(() => resolve({ state: 'unknown' }), REPORT_TIMEOUT_MS)
  })
  try {
    return await Promise.race([Promise.resolve().then(read), late])
  } catch {
    return { state: 'unknown' }
  } finally {
    clearTimeout(timer)
  }
}
