// Exit 0 when the test PostgreSQL answers, 1 when it does not (and CI=true makes that an error message).
import { POSTGRES_URL, postgresAvailable } from './postgres.js'

try {
  process.exitCode = await postgresAvailable() ? 0 : 1
} catch (error) {
  process.stderr.write(`${(error as Error).message}\n`)
  process.exitCode = 2
}
if (process.exitCode === 0) process.stdout.write(`PostgreSQL at ${POSTGRES_URL} answers\n`)
