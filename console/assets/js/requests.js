// requests.js: the Requests page: ledger records filtered by key, model, status, time,
// errors only and fallbacks only, newest first, with the detail of one record.
import { api, query, traceLink } from './api.js';
import { h, replace, field, table, fmt } from './dom.js';

export async function requestsPage(root) {
  const key = h('input', { name: 'key' });
  const model = h('input', { name: 'model' });
  const status = h('input', { name: 'status', type: 'number', min: 100, max: 599 });
  const from = h('input', { name: 'from', type: 'datetime-local' });
  const to = h('input', { name: 'to', type: 'datetime-local' });
  const errors = h('input', { name: 'errors', type: 'checkbox' });
  const fallbacks = h('input', { name: 'fallbacks', type: 'checkbox' });
  const check = (label, box) => h('label', { class: 'check' }, box, ' ' + label);
  const form = h('form', { class: 'filters', 'aria-label': 'Filter requests' },
    field('Key', key), field('Model', model), field('Status', status),
    field('From (UTC)', from), field('To (UTC)', to),
    check('Errors only', errors), check('Fallbacks only', fallbacks),
    h('button', { type: 'submit' }, 'Filter'));
  const detail = h('aside', { class: 'detail', 'aria-label': 'Request detail', 'aria-live': 'polite' });
  const listEl = h('div');
  const more = h('button', { type: 'button', hidden: true }, 'Older');
  root.append(form, h('div', { class: 'split' }, h('div', null, listEl, more), detail));

  const utc = v => v ? new Date(v + 'Z').toISOString().replace('.000', '') : '';
  let rows = [];
  let cursor = null;

  async function load(next) {
    const q = query({ key: key.value.trim(), model: model.value.trim(), status: status.value, from: utc(from.value), to: utc(to.value),
      errors: errors.checked, fallbacks: fallbacks.checked, limit: 50, cursor: next || '' });
    const page = await api('GET', '/admin/v1/requests' + q);
    rows = next ? rows.concat(page.data) : page.data;
    cursor = page.next_cursor;
    more.hidden = !cursor;
    replace(listEl, rows.length === 0 ? h('p', null, 'No request matches.') : table('Requests, newest first (select one for its detail)', [
      { title: 'Time', get: r => h('time', { datetime: r.time, title: r.time }, fmt.when(r.time)) },
      { title: 'Key', get: r => r.key || '—' },
      { title: 'Model', get: r => r.model },
      { title: 'Served by', get: r => !r.served_model ? '—' : r.served_model === r.model ? h('span', { title: 'the model requested' }, '=') : r.served_model },
      { title: 'API', get: r => r.api + (r.stream ? ' (stream)' : '') },
      { title: 'Status', get: r => h('span', { class: 'badge ' + (r.status >= 400 ? 'bad' : 'ok') }, r.status) },
      { title: 'Tokens in/out', num: true, get: r => fmt.int(r.prompt_tokens) + ' / ' + fmt.int(r.completion_tokens) },
      { title: 'Cost', num: true, get: r => fmt.usd(r.cost_usd) },
      { title: 'Latency', num: true, get: r => fmt.ms(r.total_ms) },
      { title: 'Fallbacks', num: true, get: r => r.fallbacks },
    ], rows, show));
  }

  // show opens the detail of record r: the listing's fields at once, then its attempts
  // and server tools (GET /admin/v1/requests/{id}).
  async function show(r) {
    render(r, null);
    try {
      render(await api('GET', '/admin/v1/requests/' + encodeURIComponent(r.id)), null);
    } catch (x) {
      render(r, x.message);
    }
  }

  function render(r, failed) {
    const dl = h('dl', { class: 'kv' });
    const add = (k, v) => dl.append(h('dt', null, k), h('dd', null, v));
    add('Request id', h('span', { class: 'mono' }, r.request_id));
    add('Time', fmt.time(r.time));
    add('Key / team', (r.key || '—') + ' / ' + (r.team || '—'));
    add('API', r.api + (r.stream ? ', streamed' : ''));
    add('Model requested', r.model);
    add('Model served', r.served_model || '—');
    add('Backend', r.backend || '—');
    add('Deployment', r.deployment || '—');
    if (r.continued_from) add('Continued from', h('span', { class: 'continued' }, r.continued_from + ' (its stream broke; a continuation finished the answer)'));
    add('Status', r.status + (r.error_type ? ' ' + r.error_type : ''));
    add('Prompt tokens', fmt.int(r.prompt_tokens) + ' (cached read ' + fmt.int(r.cached_read_tokens) + ', cache write ' + fmt.int(r.cache_write_tokens) + ')');
    add('Completion tokens', fmt.int(r.completion_tokens) + ' (reasoning ' + fmt.int(r.reasoning_tokens) + ')' + (r.usage_estimated ? ', estimated' : ''));
    add('Cost', fmt.usd(r.cost_usd));
    add('Total / first token / upstream', fmt.ms(r.total_ms) + ' / ' + fmt.ms(r.first_token_ms) + ' / ' + fmt.ms(r.upstream_ms));
    add('Tool calls', r.tool_calls);
    add('Fallbacks tried', r.fallbacks);
    add('Prompt cache hit', r.cache_hit ? 'yes' : 'no');
    const link = traceLink(r.trace_id);
    add('Trace id', !r.trace_id ? '— (tracing off)' : link
      ? h('a', { href: link, target: '_blank', rel: 'noopener noreferrer', class: 'mono trace-link' }, r.trace_id)
      : h('span', { class: 'mono' }, r.trace_id));
    if (r.prompt !== undefined) {
      add('Prompt (captured)', h('pre', null, r.prompt));
      add('Completion (captured)', h('pre', null, r.completion));
    }
    let attempts = null;
    if (failed) attempts = h('p', { class: 'error', role: 'alert' }, 'Attempts: ' + failed);
    else if (r.attempts) {
      attempts = r.attempts.length === 0 ? h('p', null, 'No upstream attempt (answered by the gateway, or refused before one).')
        : table('Upstream attempts, in order' + (r.attempts_omitted ? ' (the first ' + r.attempts.length + '; ' + r.attempts_omitted + ' more not kept)' : ''), [
          { title: '#', num: true, get: (a, i) => i + 1 },
          { title: 'Model', get: a => a.model + (a.model !== r.model ? ' (fallback)' : '') },
          { title: 'Deployment', get: a => h('span', { class: 'mono' }, a.deployment) },
          { title: 'Status', get: a => h('span', { class: 'badge ' + (a.status >= 200 && a.status < 300 ? 'ok' : 'bad') }, a.status || 'no answer') },
          { title: 'Error', get: a => a.error_type || '—' },
          { title: 'Time', num: true, get: a => fmt.ms(a.duration_ms) },
          // Records before schema version 6 have no tokens per attempt.
          { title: 'Tokens in/out', num: true, get: a => a.prompt_tokens === undefined ? '—' : fmt.int(a.prompt_tokens) + ' / ' + fmt.int(a.completion_tokens) },
          { title: 'Continuation', get: a => a.continued ? 'yes' : '' },
        ], r.attempts);
      attempts.classList.add('attempts');
    }
    // The server tools the tool loop ran, by tool (configured names; never arguments or
    // results): none for a request without a tool loop.
    let toolUse = null;
    if (!failed && r.tools && r.tools.length > 0) {
      toolUse = table('Server tools called' + (r.tools_omitted ? ' (the first ' + r.tools.length + ' tools; ' + r.tools_omitted + ' calls of others not itemized)' : ''), [
        { title: 'Tool', get: u => h('span', { class: 'mono' }, u.name) },
        { title: 'Source', get: u => u.source },
        { title: 'Calls', num: true, get: u => fmt.int(u.count) },
        { title: 'Errors', num: true, get: u => u.errors ? h('span', { class: 'badge bad' }, fmt.int(u.errors)) : '0' },
        { title: 'Time', num: true, get: u => fmt.ms(u.duration_ms) },
      ], r.tools);
      toolUse.classList.add('tools');
    }
    replace(detail, h('div', { class: 'panel' }, h('h2', { tabindex: -1 }, 'Request ' + r.id), dl, attempts, toolUse,
      h('button', { type: 'button', class: 'quiet', onclick: () => detail.replaceChildren() }, 'Close')));
    detail.querySelector('h2').focus();
  }

  form.addEventListener('submit', e => { e.preventDefault(); load().catch(x => replace(listEl, h('p', { class: 'error', role: 'alert' }, x.message))); });
  more.addEventListener('click', () => load(cursor));
  await load();
}
