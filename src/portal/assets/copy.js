// The developer portal's only script: copy buttons. Without it the pages work the same and
// the text can still be selected and copied by hand. Served as a file: the CSP forbids inline scripts.
'use strict'

for (const button of document.querySelectorAll('button[data-copy]')) {
  const source = document.getElementById(button.dataset.copy)
  const status = document.getElementById(button.dataset.status)
  if (source === null) continue
  button.hidden = false
  button.addEventListener('click', async () => {
    const text = source.textContent
    try {
      await navigator.clipboard.writeText(text)
      if (status) status.textContent = 'Copied to the clipboard.'
    } catch {
      // No clipboard access (an insecure origin, a denied permission): select the text instead.
      const range = document.createRange()
      range.selectNodeContents(source)
      const selection = window.getSelection()
      selection.removeAllRanges()
      selection.addRange(range)
      if (status) status.textContent = 'Selected: press Ctrl+C (or ⌘C) to copy.'
    }
  })
}
