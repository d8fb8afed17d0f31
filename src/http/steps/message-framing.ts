import { ApiError } from '../../core/errors.js'
import { errorAnswer } from '../exchange.js'
import { headerCount } from '../headers.js'
import type { Step } from '../pipeline.js'

/** The refusal of a transfer coding other than chunked: the parser's own refusal of one says the same (parser-refusals.ts). */
export const UNSUPPORTED_TRANSFER_CODING = new ApiError('not_implemented',
  'a Transfer-Encoding other than chunked is not implemented; send the body with Content-Length, or chunked alone')
const SEVERAL_CONTENT_TYPES = ApiError.invalidRequest('send one Content-Type header, not several')

/**
 * How the request's body is framed and typed, judged before anything reads it. Node's parser
 * takes `Transfer-Encoding: gzip, chunked` and hands over the chunked body still compressed, which
 * nothing here decodes: any coding but chunked gets 501 (RFC 9112 section 6.1). Of two Content-Type
 * fields Node keeps the first, so the body would be read as a type the client may not have meant:
 * 400. A request without either field costs two look-ups.
 */
export function messageFraming (): Step {
  return {
    name: 'message framing',
    scope: 'every request',
    onRequest: function checkFraming (exchange) {
      const headers = exchange.headers
      const coding = headers['transfer-encoding']
      if (coding !== undefined && coding !== 'chunked' && coding.toLowerCase() !== 'chunked') return errorAnswer(UNSUPPORTED_TRANSFER_CODING)
      if (headers['content-type'] !== undefined && headerCount(exchange.request, 'content-type') > 1) return errorAnswer(SEVERAL_CONTENT_TYPES)
      return undefined
    }
  }
}
