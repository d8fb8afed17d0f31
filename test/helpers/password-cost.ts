import { HASH_COST_BOUNDS, SCRYPT_PARAMS } from '../../src/core/passwords.js'

/**
 * PASSWORD_HASH_COST of the apps, servers and CLI runs of the tests: the lowest cost, so that hashing
 * (a large fraction of a CPU-second and 128 MiB a hash at the default) does not dominate the suites.
 * Hashes are made, checked and remade as at any other cost.
 */
export const TEST_HASH_COST: number = HASH_COST_BOUNDS.min

/** TEST_HASH_COST as the environment of an app, a server or a CLI run sets it. */
export const TEST_HASH_COST_ENV = Object.freeze({ PASSWORD_HASH_COST: String(TEST_HASH_COST) })

/** For tests whose subject needs real, slow hashes: how long a check takes, or checks in flight at once. */
export const DEFAULT_HASH_COST_ENV = Object.freeze({ PASSWORD_HASH_COST: String(SCRYPT_PARAMS.logN) })
