/**
 * Reads a secret from standard input without it ever being an argument (visible in `ps`
 * and shell history). On a terminal: prompts and reads one line without echo. Otherwise:
 * the first line of whatever is piped in.
 */
export async function readSecret (input: NodeJS.ReadStream, output: NodeJS.WritableStream, prompt: string): Promise<string> {
  if (input.isTTY === true) return readFromTerminal(input, output, prompt)
  const chunks: Buffer[] = []
  for await (const chunk of input) chunks.push(chunk as Buffer)
  return Buffer.concat(chunks).toString('utf8').split(/\r?\n/)[0] ?? ''
}

async function readFromTerminal (input: NodeJS.ReadStream, output: NodeJS.WritableStream, prompt: string): Promise<string> {
  output.write(prompt)
  input.setRawMode(true)
  input.setEncoding('utf8')
  input.resume()
  try {
    return await new Promise<string>((resolve, reject) => {
      let typed = ''
      const onData = (text: string): void => {
        for (const character of text) {
          if (character === '\r' || character === '\n' || character === '\u0004') {
            input.off('data', onData)
            resolve(typed)
            return
          }
          if (character === '\u0003') {
            input.off('data', onData)
            reject(new Error('interrupted'))
            return
          }
          if (character === '\u007f' || character === '\b') typed = [...typed].slice(0, -1).join('')
          else typed += character
        }
      }
      input.on('data', onData)
    })
  } finally {
    input.setRawMode(false)
    input.pause()
    output.write('\n')
  }
}
