import { html, type SafeHtml } from '../../core/html.js'
import type { AccountRow, ApiKeyRow, UsageOutcome } from '../../storage/store.js'
import { OUTCOME_WORDS, OUTCOMES, usageChart, usageLegend, type KeyUsageSummary } from '../usage-chart.js'
import { dateTime, expiryText, keyName, scopesList, statusText, modeText } from './key-table.js'
import { page, type AssetUrls } from './layout.js'

export interface KeyPageOptions {
  assets: AssetUrls
  session: { account: AccountRow, csrfToken: string }
  key: ApiKeyRow
  /** The key that replaced this one, when it was rolled and the successor is the account's. */
  successor?: ApiKeyRow | undefined
  usage: KeyUsageSummary
  now?: number
}

function outcomeCells (counts: Record<UsageOutcome, number> & { total: number }): SafeHtml {
  return html`${OUTCOMES.map((outcome) => html`<td class="number">${counts[outcome].toLocaleString('en-US')}</td>`)}<td class="number">${counts.total.toLocaleString('en-US')}</td>`
}

const outcomeHeads = html`${OUTCOMES.map((outcome) => html`<th scope="col" class="number">${outcome}</th>`)}<th scope="col" class="number">Total</th>`

export function keyPage ({ assets, session, key, successor, usage, now = Date.now() }: KeyPageOptions): string {
  const name = keyName(key)
  const days = usage.days.length
  return page({
    title: `Key ${name}`,
    assets,
    session,
    main: html`<h1>Key &ldquo;${name}&rdquo;</h1>
<dl class="terms">
  <dt>Prefix</dt><dd><code>${key.prefix}&hellip;</code></dd>
  <dt>Mode</dt><dd>${modeText(key)}${key.mode === 'test' ? html`: its requests read and write only your test data (the sandbox), never the live catalogue` : ''}</dd>
  <dt>Id</dt><dd><code>${key.id}</code></dd>
  <dt>Scopes</dt><dd>${scopesList(key.scopes)}</dd>
  <dt>Created</dt><dd>${dateTime(key.createdAt)}</dd>
  <dt>Expiry</dt><dd>${expiryText(key, now)}</dd>
  <dt>Last used</dt><dd>${key.lastUsedAt === null ? 'Never' : dateTime(key.lastUsedAt)}</dd>
  <dt>Status</dt><dd>${statusText(key, now, new Map(successor === undefined ? [] : [[successor.id, successor]]))}</dd>
</dl>
${key.live
  ? html`<p class="row-actions">${key.rolledTo === null ? html`<a href="/portal/keys/${key.id}/roll">Roll this key&hellip;</a>` : ''}
  <a class="danger-link" href="/portal/keys/${key.id}/revoke">Revoke this key&hellip;</a></p>`
  : ''}
<section aria-labelledby="usage-heading">
  <h2 id="usage-heading">${key.mode === 'test' ? 'Test requests (sandbox)' : 'Live requests'} in the last ${days} days</h2>
  <p>${usage.byOutcome.total === 0
    ? `No requests with this key in the last ${days} days.`
    : `${usage.byOutcome.total.toLocaleString('en-US')} request${usage.byOutcome.total === 1 ? '' : 's'} in the last ${days} days.`}
  Days are UTC; counts reach this page within a minute of the requests.</p>
  <figure class="chart">
    ${usageChart(usage, { id: 'usage-chart', keyName: name })}
    <figcaption>${usageLegend()}</figcaption>
  </figure>
  <details>
    <summary>Requests per day, as a table</summary>
    <div class="table-scroll">
    <table class="numbers" id="usage-table">
      <caption class="visually-hidden">Requests per day with the key ${name}</caption>
      <thead><tr><th scope="col">Day (UTC)</th>${outcomeHeads}</tr></thead>
      <tbody>
      ${usage.days.map((day) => html`<tr><th scope="row"><time datetime="${day.day}">${day.day}</time></th>${outcomeCells(day)}</tr>`)}
      </tbody>
    </table>
    </div>
  </details>
  <h3>By outcome</h3>
  <div class="table-scroll">
  <table class="numbers" id="usage-by-outcome">
    <caption class="visually-hidden">Requests in the last ${days} days by outcome</caption>
    <thead><tr>${outcomeHeads}</tr></thead>
    <tbody><tr>${outcomeCells(usage.byOutcome)}</tr></tbody>
  </table>
  </div>
  <p class="hint">${OUTCOMES.map((outcome, index) => `${index === 0 ? '' : '; '}${outcome}: ${OUTCOME_WORDS[outcome].replace(/ \(.*\)$/, '')}`).join('')}.</p>
  <h3>By operation</h3>
  ${usage.byOperation.length === 0
    ? html`<p class="muted">No operation called.</p>`
    : html`<div class="table-scroll">
  <table class="numbers" id="usage-by-operation">
    <caption class="visually-hidden">Requests in the last ${days} days by operation</caption>
    <thead><tr><th scope="col">Operation</th>${outcomeHeads}</tr></thead>
    <tbody>
    ${usage.byOperation.map((operation) => html`<tr><th scope="row"><code>${operation.operation}</code></th>${outcomeCells(operation)}</tr>`)}
    </tbody>
  </table>
  </div>`}
</section>
<p><a href="/portal/keys">Back to your keys</a> &middot; <a href="/portal/events">Events on your account</a></p>`
  })
}
