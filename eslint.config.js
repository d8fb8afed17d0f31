import neostandard from 'neostandard'

export default [
  ...neostandard({ ts: true, ignores: ['dist/**', 'coverage/**', 'data/**', 'client/dist/**', 'client/src/schema.ts'] }),
  {
    rules: {
      // `void promise` marks a deliberately detached task (timers, schedulers).
      'no-void': ['error', { allowAsStatement: true }]
    }
  }
]
