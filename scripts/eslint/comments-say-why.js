/**
 * ESLint rule: comments in src/ say why, in the present tense. A dated figure, a result file, a
 * commit hash or a host belongs in bench/results/ and docs/performance.md's table, where it is
 * kept true; in a comment it ages silently. A date or hash written as data (in quotes or
 * backticks, as an example of a format) is not flagged.
 */
const FINDINGS = [
  [/(?<![\w"'`-])20\d\d-\d\d-\d\d(?![\w"'`])/, 'a date'],
  [/bench\/results/, 'a result file'],
  [/\b(?=[0-9a-f]*\d)(?=[0-9a-f]*[a-f])[0-9a-f]{7,40}\b/, 'a commit hash'],
  [/\b(AMD|Intel|EPYC|Xeon|quiet host|busy host|loaded host)\b/i, 'a host'],
  [/\bmeasured\b.*\d/, 'a measured figure'],
  [/\d+(\.\d+)? ?(µs|ns)\b.*\bagainst\b/, 'a measured figure'],
  [/\bcost\w* (a cached read |a request )?(about )?(a fifth|a third|a quarter|half|twice)\b/, 'a measured figure'],
  [/\d+(\.\d+)? ?% (more|less) (CPU|time)/, 'a measured figure']
]

export default {
  meta: {
    type: 'suggestion',
    docs: { description: 'comments say why in the present tense: no dated figures, result files, commit hashes or hosts' },
    schema: []
  },
  create (context) {
    return {
      Program () {
        for (const comment of context.sourceCode.getAllComments()) {
          for (const [pattern, what] of FINDINGS) {
            const match = pattern.exec(comment.value)
            if (match === null) continue
            context.report({ loc: comment.loc, message: `This comment cites ${what} ("${match[0]}"): say why in the present tense; figures belong in docs/performance.md and bench/results/.` })
            break
          }
        }
      }
    }
  }
}
