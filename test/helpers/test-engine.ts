/**
 * The engine HTTP tests run on: TEST_ENGINE=postgres runs them on PostgreSQL, anything else on SQLite.
 * A module of its own, so that a file skipped on one engine can tell without loading the application.
 */
export const TEST_ENGINE: 'sqlite' | 'postgres' = process.env.TEST_ENGINE === 'postgres' ? 'postgres' : 'sqlite'
