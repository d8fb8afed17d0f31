import { context, SpanKind, trace } from '@opentelemetry/api'
import { ATTR_DB_COLLECTION_NAME, ATTR_DB_OPERATION_NAME, ATTR_DB_SYSTEM_NAME } from '@opentelemetry/semantic-conventions'
import { childSpan, endWith } from '../services/tracing.js'
import type { Store } from './store.js'

type Observe = (operation: string, seconds: number) => void

/** `db.system.name` of each engine, as the semantic conventions spell it. */
const DB_SYSTEM = { sqlite: 'sqlite', postgres: 'postgresql' } as const

/**
 * Wraps every async method of a repository so that its duration is observed under `<repository>.<method>`,
 * and, when tracing is on, the call is a span of the request that made it: the engine, the table and
 * the repository's operation, never the values it was given.
 */
function timed<R extends object> (name: string, table: string, system: string, repository: R, observe: Observe): R {
  const wrapped: Record<string, unknown> = {}
  for (const [method, fn] of Object.entries(repository)) {
    if (typeof fn !== 'function') continue
    const operation = `${name}.${method}`
    const spanName = `${method} ${table}`
    const attributes = { [ATTR_DB_SYSTEM_NAME]: system, [ATTR_DB_COLLECTION_NAME]: table, [ATTR_DB_OPERATION_NAME]: method }
    const call = fn as (...a: unknown[]) => Promise<unknown>
    // The caller gets the method's own promise: timing it costs one reaction, not a promise and an await of its own.
    wrapped[method] = (...args: unknown[]) => {
      const started = performance.now()
      const finished = (): void => { observe(operation, (performance.now() - started) / 1000) }
      const span = childSpan(spanName, attributes, SpanKind.CLIENT)
      const result = span === undefined
        ? call.apply(repository, args)
        : context.with(trace.setSpan(context.active(), span), () => call.apply(repository, args))
      if (span !== undefined) endWith(span, result)
      result.then(finished, finished)
      return result
    }
  }
  return wrapped as R
}

/** The same store, with the time of every storage call reported to `observe` (and traced, when tracing is on). */
export function instrumentStore (store: Store, observe: Observe): Store {
  const system = DB_SYSTEM[store.engine]
  return {
    ...store,
    pets: timed('pets', 'pets', system, store.pets, observe),
    sandbox: timed('sandbox', 'sandbox_pets', system, store.sandbox, observe),
    accounts: timed('accounts', 'accounts', system, store.accounts, observe),
    apiKeys: timed('apiKeys', 'api_keys', system, store.apiKeys, observe),
    idempotency: timed('idempotency', 'idempotency_keys', system, store.idempotency, observe),
    sessions: timed('sessions', 'sessions', system, store.sessions, observe),
    twoStep: timed('twoStep', 'two_step', system, store.twoStep, observe),
    loginAttempts: timed('loginAttempts', 'login_attempts', system, store.loginAttempts, observe)
  }
}
