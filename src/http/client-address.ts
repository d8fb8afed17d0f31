import type { IncomingMessage } from 'node:http'
import proxyAddr from '@fastify/proxy-addr'

/**
 * The client's address as the audit trail records it: the connection's peer, or, behind the
 * proxies TRUST_PROXY names, the address they forwarded (X-Forwarded-For), read the way the
 * framework reads request.ip (@fastify/proxy-addr).
 */
export function clientAddressOf (trustProxy: readonly string[]): (request: IncomingMessage) => string {
  if (trustProxy.length === 0) return (request) => request.socket.remoteAddress ?? ''
  const trust = proxyAddr.compile([...trustProxy])
  return (request) => proxyAddr(request, trust)
}
