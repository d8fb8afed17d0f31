import neostandard from 'neostandard'

export default [
  ...neostandard({ ts: true, ignores: ['dist/**', 'coverage/**', 'data/**'] }),
  {
    rules: {
      // `void promise` marks a deliberately detached task (timers, schedulers).
      'no-void': ['error', { allowAsStatement: true }]
    }
  }
]
