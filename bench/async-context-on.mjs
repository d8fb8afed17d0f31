// Preloaded with `--import` (bench:compare: current:NODE_OPTIONS=--import=./bench/async-context-on.mjs), this turns
// AsyncLocalStorage's hooks on for the whole process and sets no store: what the async context costs a service that
// never enters one, as tracing's does once a request is recorded.
import { AsyncLocalStorage } from 'node:async_hooks'

new AsyncLocalStorage().run(true, () => {})
