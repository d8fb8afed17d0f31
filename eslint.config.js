import neostandard from 'neostandard'
import commentsSayWhy from './scripts/eslint/comments-say-why.js'

export default [
  ...neostandard({ ts: true, ignores: ['dist/**', 'coverage/**', 'data/**', 'client/dist/**', 'client/src/schema.ts'] }),
  {
    rules: {
      // `void promise` marks a deliberately detached task (timers, schedulers).
      'no-void': ['error', { allowAsStatement: true }]
    }
  },
  {
    files: ['src/**/*.ts'],
    plugins: { project: { rules: { 'comments-say-why': commentsSayWhy } } },
    rules: { 'project/comments-say-why': 'error' }
  }
]
