import { once } from 'node:events'
import type { AddressInfo } from 'node:net'
import type { TestContext } from 'node:test'
import { simpleParser, type ParsedMail } from 'mailparser'
import { SMTPServer } from 'smtp-server'

/** A message the sink received, parsed by mailparser from what came over SMTP. */
export interface SinkMessage {
  messageId: string
  to: string
  from: string
  subject: string
  text: string
  html: string
  /** Every http(s) URL in the plain-text part. */
  links: string[]
}

function toMessage (parsed: ParsedMail): SinkMessage {
  const text = parsed.text ?? ''
  const to = Array.isArray(parsed.to) ? parsed.to.map((address) => address.text).join(', ') : parsed.to?.text ?? ''
  return {
    messageId: parsed.messageId ?? '',
    to,
    from: parsed.from?.text ?? '',
    subject: parsed.subject ?? '',
    text,
    html: typeof parsed.html === 'string' ? parsed.html : '',
    links: text.match(/https?:\/\/\S+/g) ?? []
  }
}

/**
 * A real SMTP server in the test process (smtp-server) that keeps every message it accepts, parsed
 * with mailparser. It can be stopped and started again on the same port, as a mail server that goes down.
 */
export class SmtpSink {
  readonly messages: SinkMessage[] = []
  private server: SMTPServer | undefined
  port = 0

  static async start (t: TestContext, port = 0): Promise<SmtpSink> {
    const sink = new SmtpSink()
    t.after(async () => { await sink.stop() })
    await sink.listen(port)
    return sink
  }

  /** SMTP_URL of the sink. */
  get url (): string {
    return `smtp://127.0.0.1:${this.port}`
  }

  async listen (port = this.port): Promise<void> {
    const server = new SMTPServer({
      authOptional: true,
      disabledCommands: ['STARTTLS', 'AUTH'],
      logger: false,
      onData: (stream, _session, callback) => {
        simpleParser(stream).then((parsed) => {
          this.messages.push(toMessage(parsed))
          callback()
        }, callback)
      }
    })
    server.on('error', () => {})
    server.listen(port, '127.0.0.1')
    await once(server.server, 'listening')
    this.port = (server.server.address() as AddressInfo).port
    this.server = server
  }

  async stop (): Promise<void> {
    const server = this.server
    this.server = undefined
    if (server !== undefined) await new Promise<void>((resolve) => { server.close(() => { resolve() }) })
  }

  /** The messages to the recipient, oldest first. */
  to (recipient: string): SinkMessage[] {
    return this.messages.filter((message) => message.to.includes(recipient))
  }
}

/** The path and query of the one link in a message (a test opens it on its own server). */
export function linkPath (message: SinkMessage): string {
  if (message.links.length !== 1) throw new Error(`expected exactly one link in the message, found ${message.links.length}:\n${message.text}`)
  const url = new URL(message.links[0] as string)
  return url.pathname + url.search
}
