import type { Store } from './store.js'

type Observe = (operation: string, seconds: number) => void

/** Wraps every async method of a repository so that its duration is observed under `<repository>.<method>`. */
function timed<R extends object> (name: string, repository: R, observe: Observe): R {
  const wrapped: Record<string, unknown> = {}
  for (const [method, fn] of Object.entries(repository)) {
    if (typeof fn !== 'function') continue
    const operation = `${name}.${method}`
    // The caller gets the method's own promise: timing it costs one reaction, not a promise and an await of its own.
    wrapped[method] = (...args: unknown[]) => {
      const started = performance.now()
      const finished = (): void => { observe(operation, (performance.now() - started) / 1000) }
      const result = (fn as (...a: unknown[]) => Promise<unknown>).apply(repository, args)
      result.then(finished, finished)
      return result
    }
  }
  return wrapped as R
}

/** The same store, with the time of every storage call reported to `observe`. */
export function instrumentStore (store: Store, observe: Observe): Store {
  return {
    ...store,
    pets: timed('pets', store.pets, observe),
    sandbox: timed('sandbox', store.sandbox, observe),
    accounts: timed('accounts', store.accounts, observe),
    apiKeys: timed('apiKeys', store.apiKeys, observe),
    idempotency: timed('idempotency', store.idempotency, observe),
    sessions: timed('sessions', store.sessions, observe),
    twoStep: timed('twoStep', store.twoStep, observe),
    loginAttempts: timed('loginAttempts', store.loginAttempts, observe)
  }
}
