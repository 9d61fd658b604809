// usage.js: the Usage page: spend and tokens grouped by key, team, model, deployment
// (<backend>/<upstream model>) or status over a range, as a chart (by day) and a table,
// with the same report as CSV.
import { api, query } from './api.js';
import { h, replace, field, table, fmt } from './dom.js';

export async function usagePage(root) {
  const day = d => d.toISOString().slice(0, 10);
  const from = h('input', { name: 'from', type: 'date', value: day(new Date(Date.now() - 29 * 86400e3)) });
  const to = h('input', { name: 'to', type: 'date', value: day(new Date()) });
  const group = h('select', { name: 'group_by' }, ['key', 'team', 'model', 'deployment', 'status'].map(g => h('option', { value: g }, g)));
  const csv = h('a', { class: 'button', download: 'agate-usage.csv' }, 'Export CSV');
  const form = h('form', { class: 'filters', 'aria-label': 'Usage report' },
    field('From (UTC date)', from), field('To (UTC date, included)', to), field('Group by', group),
    h('button', { type: 'submit' }, 'Show'), csv);
  const chart = h('div', { class: 'charts' });
  const out = h('div');
  root.append(form, chart, out);
  let plot = null;

  async function load() {
    const end = day(new Date(new Date(to.value + 'T00:00:00Z').getTime() + 86400e3));
    const base = { from: from.value, to: end, group_by: group.value };
    csv.href = '/admin/v1/usage' + query({ ...base, group_by: group.value + ',day', format: 'csv' });
    const [rows, daily] = await Promise.all([api('GET', '/admin/v1/usage' + query(base)), api('GET', '/admin/v1/usage' + query({ ...base, group_by: 'day' }))]);
    const g = group.value;
    replace(out, table('Usage by ' + g, [
      { title: g, get: r => String(r[g] ?? '') || '(none)' },
      { title: 'Requests', num: true, get: r => fmt.int(r.requests) },
      { title: 'Errors', num: true, get: r => fmt.int(r.errors) },
      { title: 'Prompt tokens', num: true, get: r => fmt.int(r.prompt_tokens) },
      { title: 'Cached read', num: true, get: r => fmt.int(r.cached_read_tokens) },
      { title: 'Completion tokens', num: true, get: r => fmt.int(r.completion_tokens) },
      { title: 'Spend', num: true, get: r => fmt.usd(r.cost_usd) },
    ], rows.data || []));
    // Every day of the range, zero where the ledger has none.
    const byDay = new Map((daily.data || []).map(r => [r.day, r]));
    const xs = [], usd = [], tok = [];
    for (let t = Date.parse(from.value + 'T00:00:00Z'); t < Date.parse(end + 'T00:00:00Z') && xs.length < 400; t += 86400e3) {
      const r = byDay.get(new Date(t).toISOString().slice(0, 10)) || {};
      xs.push(t / 1000); usd.push(r.cost_usd || 0); tok.push((r.prompt_tokens || 0) + (r.completion_tokens || 0));
    }
    const data = [xs, usd, tok];
    if (typeof uPlot === 'undefined') return;
    if (plot) { plot.setData(data); return; }
    const box = h('figure', { class: 'chart wide' }, h('figcaption', null, 'Spend (USD) and tokens a day'));
    chart.append(box);
    plot = new uPlot({ width: Math.max(320, Math.min(chart.clientWidth || 900, 1100)), height: 200,
      series: [{}, { label: 'USD', stroke: '#8b5cf6', width: 2, scale: 'usd' }, { label: 'tokens', stroke: '#10b981', width: 2, scale: 'tok' }],
      axes: [{ stroke: 'currentColor' }, { scale: 'usd', stroke: 'currentColor', size: 70, values: (u, vals) => vals.map(v => '$' + (v === 0 ? '0' : v.toPrecision(2))) }, { scale: 'tok', side: 1, stroke: 'currentColor', grid: { show: false } }] }, data, box);
  }

  form.addEventListener('submit', e => { e.preventDefault(); load().catch(x => replace(out, h('p', { class: 'error', role: 'alert' }, x.message))); });
  await load();
  return () => plot && plot.destroy();
}
