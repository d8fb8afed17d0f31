import type { IncomingMessage, ServerResponse } from 'node:http'
import type { HandedOver } from '../http/exchange.js'

type RequestHandler = (request: IncomingMessage, response: ServerResponse) => void

/**
 * The framework as the handler step hands it requests: the steps are built before the framework,
 * which gives its request handler to the server it is built with (app/server.ts).
 */
export class FrameworkHandler implements HandedOver {
  private handler: RequestHandler | undefined

  readonly writtenBy = (request: IncomingMessage, response: ServerResponse): void => {
    if (this.handler === undefined) throw new Error('the framework is not built yet')
    this.handler(request, response)
  }

  attach (handler: RequestHandler): void {
    this.handler = handler
  }
}
