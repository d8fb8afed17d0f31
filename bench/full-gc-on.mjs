// Preloaded with `--import` (bench:compare: current:NODE_OPTIONS=--import=./bench/full-gc-on.mjs), this runs a full
// garbage collection (mark-compact) every 3 s, as often as tracing at a 10 % ratio makes V8 run one under load: what
// full collections cost a server's requests (code V8 deoptimises after one, objects' classes it lets go), no tracing.
import { setFlagsFromString } from 'node:v8'
import { runInNewContext } from 'node:vm'

setFlagsFromString('--expose-gc')
const gc = runInNewContext('gc')
setInterval(() => { gc() }, 3000).unref()
